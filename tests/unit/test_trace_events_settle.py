"""A traced session's events read once they stop arriving (casstrace.node.tracing): a node writes a
session's duration without waiting for its events, so the first read after it can miss the last ones."""

import datetime
import uuid
from types import SimpleNamespace

from casstrace.node import tracing

SESSION_ID = str(uuid.uuid4())


class LateEvents:
    """A driver session whose system_traces holds a finished session, its events arriving one read late."""

    def __init__(self, arriving: list[int]) -> None:
        self.arriving = arriving  # how many events each read of the events finds
        self.event_reads = 0

    def execute(self, query: str) -> list[SimpleNamespace]:
        if "system_traces.sessions" in query:
            started = datetime.datetime(2026, 11, 30, 12, 0, 0)
            row = SimpleNamespace(session_id=SESSION_ID, started_at=started, duration=800, parameters={}, client=None)
            return [row]
        count = self.arriving[min(self.event_reads, len(self.arriving) - 1)]
        self.event_reads += 1
        return [
            SimpleNamespace(
                session_id=SESSION_ID,
                event_id=uuid.uuid1(),
                source_elapsed=100 * k,
                thread=f"ReadStage-{k}",
                activity="Appending to commitlog",
                source=None,
            )
            for k in range(count)
        ]


def test_events_that_arrive_after_the_sessions_duration_are_read_too(monkeypatch):
    monkeypatch.setattr(tracing, "EVENTS_SETTLE_S", 0.0)
    node = LateEvents([27, 30, 30])
    (session,) = tracing.traced_sessions(node, [SESSION_ID], "INSERT")
    assert session.mutations == 30 and len(session.spans) == 30
    assert node.event_reads == 3  # the second read found more, the third none


def test_events_all_there_cost_one_read_more():
    node = LateEvents([5])
    tracing.traced_sessions(node, [SESSION_ID], "SELECT")
    assert node.event_reads == 2
