"""What one read of the sampled sessions costs `casstrace watch`'s node when system_traces.sessions holds
a day of them (prints figures; not a test).

    .venv/bin/python benchmarks/watch_sessions_read.py --port 9042 [--rows 800000] [--reads 3]

First tops the table up to --rows synthetic sessions (an hour old, TTL --ttl-s, so they leave by
themselves; rows already there count), then reads the last minute's sessions both ways, interleaved:
- whole: the table read whole, as watch read it at every refresh before (casstrace filtered);
- span: node.tracing.read_sessions, the node filtering by started_at, slice by slice of the ring.
Per read: the rows and bytes that reach casstrace, and the wall time. Medians printed.
The node looks at every row either way: the table is keyed by session id alone, with no index by time.
"""

import argparse
import os
import statistics
import time
import uuid
from collections.abc import Callable
from typing import Any

from cassandra.cluster import Cluster
from cassandra.concurrent import execute_concurrent_with_args
from cassandra.query import SimpleStatement

from casstrace.node.tracing import read_sessions
from figures import report

WHOLE = "SELECT session_id, started_at, duration, request, parameters, client FROM system_traces.sessions"
QUERY = "SELECT v FROM casstrace_watch_shift.kv WHERE k = ?"  # what a sampled session's statement looks like


def top_up(session: Any, rows: int, ttl_s: int) -> int:
    # Counted page by page: a count(*) of the whole table is one request, which times out on the node.
    held = sum(
        1 for _ in session.execute(SimpleStatement("SELECT session_id FROM system_traces.sessions", fetch_size=5000))
    )
    insert = session.prepare(
        "INSERT INTO system_traces.sessions (session_id, started_at, duration, request, parameters, client)"
        f" VALUES (?, ?, 800, 'Execute CQL3 prepared query', ?, '127.0.0.1') USING TTL {ttl_s}"
    )
    hour_ago_ms = (time.time_ns() // 1_000_000) - 3_600_000
    parameters = {"query": QUERY, "consistency_level": "ONE", "page_size": "5000"}
    missing = max(0, rows - held)
    for start in range(0, missing, 20_000):
        batch = [(uuid.uuid1(), hour_ago_ms + i, parameters) for i in range(min(20_000, missing - start))]
        for _ in range(5):  # a loaded machine times some out: those are sent again
            results = execute_concurrent_with_args(session, insert, batch, concurrency=32, raise_on_first_error=False)
            batch = [row for row, (success, _) in zip(batch, results) if not success]
            if not batch:
                break
        else:
            raise SystemExit(f"{len(batch)} inserts failed 5 times")
    return held + missing


class Counting:
    """A driver session that counts the rows and value bytes its reads return."""

    def __init__(self, session: Any):
        self.session, self.rows, self.values = session, 0, 0

    def execute(self, query: str, parameters: tuple = ()) -> list[Any]:
        rows = list(self.session.execute(SimpleStatement(query, fetch_size=5000), parameters, timeout=600))
        self.rows += len(rows)
        self.values += sum(len(str(value)) for row in rows for value in row if value is not None)
        return rows


Read = Callable[[Any, tuple[int, int]], None]  # one way of reading a span's sessions


def whole(session: Any, span_ns: tuple[int, int]) -> None:
    list(session.execute(WHOLE))


def span(session: Any, span_ns: tuple[int, int]) -> None:
    read_sessions(session, *span_ns)


def timed(
    session: Any, read: Callable[[Any, tuple[int, int]], None], span_ns: tuple[int, int]
) -> tuple[int, int, float]:
    """(rows, bytes of their values, wall s) of one read."""
    counting = Counting(session)
    began = time.perf_counter()
    read(counting, span_ns)
    return counting.rows, counting.values, time.perf_counter() - began


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=9042)
    parser.add_argument("--rows", type=int, default=800_000)
    parser.add_argument("--ttl-s", type=int, default=7200)
    parser.add_argument("--reads", type=int, default=3)
    arguments = parser.parse_args()
    cluster = Cluster([arguments.host], port=arguments.port)
    session = cluster.connect()
    session.default_timeout = 120
    held = top_up(session, arguments.rows, arguments.ttl_s)
    print(f"system_traces.sessions holds {held:,} rows; load average {' '.join(f'{v:.2f}' for v in os.getloadavg())}")
    now_ns = time.time_ns()
    span_ns = (now_ns - 60_000_000_000, now_ns)
    ways: dict[str, Read] = {"whole": whole, "span": span}
    measured: dict[str, list[tuple[int, int, float]]] = {way: [] for way in ways}
    for _ in range(arguments.reads):
        for way, read in ways.items():
            measured[way].append(timed(session, read, span_ns))
    for way, reads in measured.items():
        rows, values, wall = (statistics.median(column) for column in zip(*reads))
        print(f"{way:>5}: {rows:,.0f} rows, {values / 1e6:.2f} MB of values, wall {wall:.2f} s")
        report(f"watch_sessions_read_{way}_rows", rows)
        report(f"watch_sessions_read_{way}_s", wall)
    cluster.shutdown()


if __name__ == "__main__":
    main()
