"""watch's reads of the node's sampled sessions: what a read returns depends on its span, not on the
sessions the table already holds (a day of them by the evening: 864,000 at 0.01 of 1,000 requests/s)."""

import time
import uuid
from typing import Any

import pytest
from cassandra.concurrent import execute_concurrent_with_args

from casstrace.node.tracing import read_sessions

pytestmark = pytest.mark.integration

OLD_SESSIONS = 3000  # rows of an earlier hour added between the two reads
TTL_S = 900  # the synthetic rows leave the node's table by themselves


class CountingSession:
    """A driver session that counts the rows its reads return to casstrace."""

    def __init__(self, session: Any):
        self.session = session
        self.rows = 0

    def execute(self, *args: Any, **kwargs: Any) -> list[Any]:
        rows = list(self.session.execute(*args, **kwargs))
        self.rows += len(rows)
        return rows


def add_sessions(cql_session: Any, count: int, started_ms: int, query: str) -> None:
    insert = cql_session.prepare(
        "INSERT INTO system_traces.sessions (session_id, started_at, duration, request, parameters)"
        f" VALUES (?, ?, 1000, 'Execute CQL3 query', ?) USING TTL {TTL_S}"
    )
    rows = [(uuid.uuid1(), started_ms, {"query": query}) for _ in range(count)]
    for success, result in execute_concurrent_with_args(cql_session, insert, rows, concurrency=64):
        assert success, result


def test_a_read_returns_the_sessions_of_its_span_whatever_the_table_holds(cql_session):
    now_ms = time.time_ns() // 1_000_000
    marker = f"SELECT * FROM span_{uuid.uuid4().hex} WHERE k = 1"
    add_sessions(cql_session, 5, now_ms - 1000, marker)
    span = ((now_ms - 5000) * 1_000_000, (now_ms + 5000) * 1_000_000)

    def read() -> tuple[int, set[str]]:
        counting = CountingSession(cql_session)
        sessions = read_sessions(counting, *span)
        return counting.rows, {s.session_id for s in sessions if s.statement.startswith("SELECT * FROM span_")}

    rows_before, ours_before = read()
    add_sessions(cql_session, OLD_SESSIONS, now_ms - 3_600_000, marker)  # an hour before the span
    rows_after, ours_after = read()
    assert len(ours_before) == 5 and ours_after == ours_before
    # Every row returned started in the span: the 3,000 older ones never reach casstrace.
    assert rows_after == rows_before < OLD_SESSIONS
