"""`casstrace watch` ranks write statements beside reads, with what they cost: a real node takes, during
one watch that traces every request (--sample 1), N INSERTs of a known size, unlogged batches of many
partitions and of one, then a driver's batches back to back while the test forces full GCs (`GC.run`, through the JVM's
attach socket).

Each workload connects from a loopback address of its own (127.0.0.2, .3, .4, .5), so the bytes the node
read from that client's connections are that statement's alone, whatever else the shared node serves.

The truths: the bytes the driver itself pushed onto those connections during the workload (its encoded
frames, counted as the driver writes them), the rows and cells the test sent, Cassandra's batch limits
(5 KiB, 10 partitions), the trace's own sessions and pauses (which executions a pause overlapped), and
the serving CPU `casstrace run` measures of the same INSERT, one execution at a time, on the same node.
"""

import json
import re
import statistics
import subprocess
import threading
import time
import urllib.request
from contextlib import contextmanager
from pathlib import Path

import pytest
from cassandra.cluster import Cluster, DefaultConnection
from cassandra.policies import WhiteListRoundRobinPolicy
from cassandra.query import BatchStatement, BatchType

from casstrace.analyses.attribution import served_cpu_ns, slot_spans
from casstrace.analyses.watch import DRIVER_BATCH_UNNAMED
from casstrace.node.thread_pools import trace_writes_done
from casstrace.traces import Trace, queries
from casstrace.traces.activities import DRIVER_BATCH_STATEMENT
from casstrace_cli import casstrace
from hotspot_attach import force_full_gc
from watching import PREVIOUS, free_port, nodetool, start_watch, watch_command  # noqa: F401 (fixtures)

pytestmark = pytest.mark.integration

KEYSPACE = "casstrace_watch_writes"
# Paced so that the node's tracing keeps up: its stage drops trace writes when its queue is full (at 32
# in flight unpaced, a quarter of the sessions were lost, and every estimate with them)
INSERT = f"INSERT INTO {KEYSPACE}.t (k, c, v) VALUES (?, ?, ?)"
INSERTS, VALUE_BYTES, IN_FLIGHT, INSERT_RATE = 1000, 1000, 8, 500
# Writes the forced GCs stop: a driver's batches (a statement of their own: its session names none),
# several in flight, so that one is inside the node when a pause begins (one that arrives during it
# starts after it: not overlapped). Batches of 10 rows, 8 in flight, keep the node's tracing stage
# within its queue (at 30 rows, or 16 in flight, it dropped half the sessions). The client, not the
# node, sets their pace: the node holds one about half the time, so each pause has about even odds
# of meeting one, and GC_FORCED of them, each GC_EVERY_S after the last (unsynchronised with the
# client's completions, which come when the node is idle), meet at least one.
GC_BATCH_ROWS, GC_BATCH_VALUE, GC_IN_FLIGHT, GC_FORCED, GC_EVERY_S = 10, 1000, 8, 12, 0.15
LARGE_BATCHES, LARGE_ROWS, LARGE_VALUE = 10, 30, 1000  # 30 partitions, ~31 KB: past 5 KiB, under the 50 KiB refusal
# The node's tracing stage queues at most 1,000 writes and drops the rest (counted as dropped _TRACE
# messages, which casstrace cannot read without JMX). A large batch traces ~100 events: ten of them
# back to back, behind the inserts' backlog, filled it, and the node dropped a batch's session (its
# wire bytes then split by 9), three of its events (29.7 partitions) or all the small batches after
# them (seen in 3 of 9 runs on a loaded machine). Each workload waits until the stage caught up.
TRACING_CAUGHT_UP_S = 30
SMALL_BATCHES, SMALL_ROWS, SMALL_VALUE = 10, 3, 20  # one partition, ~0.3 KB
# The last GC begins WATCH_MARGIN_S before the watch ends at the latest; the watch lasts long enough for
# its metrics page to be refreshed once every insert was sampled (a refresh every few s, the first
# later: it reads the node's sessions; 14 s gave a loaded machine a single page)
WATCH_S, WATCH_MARGIN_S = 22, 2.0
WIRE_TOLERANCE = 0.02  # the node's reads of a connection against the driver's writes: heartbeats at most
# The watch's inserts run 8 in flight at 500/s on the shared request workers, so a 1 ms slot of one
# worker can hold a neighbouring insert's CPU too (charged to both), and they meet the node warm from
# one another; `run`'s run one at a time on an otherwise idle client. The same kernel counts both.
CPU_FACTOR = 3.0
RUN_REPEAT, RUN_WARMUP = 20, 5


def _client_connection(source: str) -> type:
    """The driver's connection bound to `source` (a loopback address), counting the bytes it pushes."""

    class Bound(DefaultConnection):
        pushed = 0

        def _initiate_connection(self, sockaddr):
            self._socket.bind((source, 0))
            super()._initiate_connection(sockaddr)

        def push(self, data):
            type(self).pushed += len(data)
            super().push(data)

    return Bound


@contextmanager
def _client(sandbox, source: str):
    connection = _client_connection(source)
    cluster = Cluster(
        [sandbox.host],
        port=sandbox.native_port,
        connection_class=connection,
        load_balancing_policy=WhiteListRoundRobinPolicy([sandbox.host]),
        protocol_version=4,
        # no requests of its own when other clients change the schema (its refresh, the agreement
        # checks) or the ring: its requests are the workload's
        schema_metadata_enabled=False,
        token_metadata_enabled=False,
        schema_event_refresh_window=-1,
        topology_event_refresh_window=-1,
        status_event_refresh_window=-1,
        max_schema_agreement_wait=0,
    )
    try:
        yield cluster.connect(), connection
    finally:
        cluster.shutdown()


def _batch(rows: int, value_bytes: int, key: int, one_partition: bool) -> str:
    inserts = " ".join(
        f"INSERT INTO {KEYSPACE}.t (k, c, v) VALUES ({key if one_partition else key * 1000 + row}, {row}, "
        f"'{'b' * value_bytes}');"
        for row in range(rows)
    )
    return f"BEGIN UNLOGGED BATCH {inserts} APPLY BATCH"


def _gc_during_writes(session, pid: int, until: float) -> list[tuple[int, int]]:
    """Full GCs forced GC_EVERY_S apart (until the monotonic time `until`) while a driver's batches run,
    GC_IN_FLIGHT at a time; the calls' spans (monotonic ns)."""
    calls: list[tuple[int, int]] = []

    def force() -> None:
        while len(calls) < GC_FORCED and (not calls or time.monotonic() < until):
            time.sleep(GC_EVERY_S)
            calls.append(force_full_gc(pid))

    insert = session.prepare(INSERT)
    batch = BatchStatement(batch_type=BatchType.UNLOGGED)
    for row in range(GC_BATCH_ROWS):
        batch.add(insert, (100_000 + row, 2, "g" * GC_BATCH_VALUE))
    forcing = threading.Thread(target=force, daemon=True)
    forcing.start()
    pending = []
    while forcing.is_alive():
        pending.append(session.execute_async(batch))
        if len(pending) >= GC_IN_FLIGHT:
            pending.pop(0).result()
    for future in pending:
        future.result()
    forcing.join()
    return calls


@pytest.fixture(scope="module")
def watched(sandbox, nodetool, tmp_path_factory):
    """One watch of the three workloads: (its JSON report, its trace, the GC.run calls' spans, the bytes
    each workload's driver pushed: inserts, large batches, small batches, and its metrics pages: each
    different one served during the watch)."""
    nodetool.set_trace_probability(PREVIOUS)
    out = tmp_path_factory.mktemp("writes") / "watch.trace"
    with sandbox.connect() as session:
        session.execute(
            f"CREATE KEYSPACE IF NOT EXISTS {KEYSPACE} WITH replication = "
            "{'class': 'SimpleStrategy', 'replication_factor': 1}"
        )
        session.execute(f"CREATE TABLE IF NOT EXISTS {KEYSPACE}.t (k int, c int, v text, PRIMARY KEY (k, c))")
    calls: list[tuple[int, int]] = []
    pushed = []
    with (
        _client(sandbox, "127.0.0.2") as (inserting, insert_connection),
        _client(sandbox, "127.0.0.3") as (large, large_connection),
        _client(sandbox, "127.0.0.4") as (small, small_connection),
        _client(sandbox, "127.0.0.5") as (paused, _),
        sandbox.connect() as pacing,
    ):
        insert = inserting.prepare(INSERT)
        metrics, watch_over = free_port(), threading.Event()
        pages: list[str] = []
        watcher = start_watch(
            watch_command(
                sandbox, out, "--duration", str(WATCH_S), "--format", "json", "--metrics-port", str(metrics), sample=1.0
            )
        )
        watching = time.monotonic()
        scraping = threading.Thread(target=_scrape, args=(metrics, pages, watch_over), daemon=True)
        scraping.start()
        for connection in (insert_connection, large_connection, small_connection):
            connection.pushed = 0

        value = "v" * VALUE_BYTES
        pending = []
        began = time.monotonic()
        for key in range(INSERTS):
            pending.append(inserting.execute_async(insert, (key, 0, value)))
            if len(pending) >= IN_FLIGHT:
                pending.pop(0).result()
            time.sleep(max(0.0, began + (key + 1) / INSERT_RATE - time.monotonic()))
        for future in pending:
            future.result()
        pushed.append(insert_connection.pushed)
        assert trace_writes_done(pacing, TRACING_CAUGHT_UP_S)
        for key in range(LARGE_BATCHES):
            large.execute(_batch(LARGE_ROWS, LARGE_VALUE, key, one_partition=False))
            assert trace_writes_done(pacing, TRACING_CAUGHT_UP_S)
        pushed.append(large_connection.pushed)
        for key in range(SMALL_BATCHES):
            small.execute(_batch(SMALL_ROWS, SMALL_VALUE, key, one_partition=True))
        pushed.append(small_connection.pushed)
        calls += _gc_during_writes(paused, sandbox.pid(), until=watching + WATCH_S - WATCH_MARGIN_S)
        report, errors = watcher.communicate(timeout=300)
        watch_over.set()
        scraping.join()
    assert watcher.returncode == 0, errors
    yield json.loads(report), out, calls, pushed, pages
    with sandbox.connect() as session:
        session.execute(f"DROP KEYSPACE IF EXISTS {KEYSPACE}")


def _scrape(port: int, pages: list[str], watch_over: threading.Event) -> None:
    """The watch's metrics page every half second, each different one kept (a refresh comes every few s)."""
    while not watch_over.wait(0.5):
        try:
            page = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5).read().decode()
        except OSError:  # not served yet, or no more
            continue
        if page and (not pages or pages[-1] != page):
            pages.append(page)


def _statement(report: dict, query: str) -> dict:
    found = [s for s in report["statements"] if s["query"] == query]
    assert len(found) == 1, [s["query"][:80] for s in report["statements"]]
    return found[0]


def _batch_statement(report: dict, rows: int) -> dict:
    """The batch statement of `rows` statements (its text says how many)."""
    found = [s for s in report["statements"] if s["write"] and s["write"]["statements_per_execution"] == rows]
    assert len(found) == 1 and found[0]["write"]["kind"] == "BATCH", [s["query"][:60] for s in found]
    return found[0]


def test_the_insert_s_wire_bytes_rows_and_cells(watched):
    report, _, _, pushed, _ = watched
    insert = _statement(report, INSERT)
    write = insert["write"]
    assert insert["sampled_executions"] == INSERTS
    assert write["kind"] == "INSERT" and write["rows_per_execution"] == 1 and write["cells_per_execution"] == 1
    assert write["estimated_rows"] == INSERTS and write["estimated_cells"] == INSERTS
    assert write["partitions_per_execution"] == 1  # one mutation each, in its trace events
    assert not write["wire_estimated"]  # its client ran nothing else
    sent = pushed[0] / INSERTS  # the driver's own frames, per execution
    assert sent > VALUE_BYTES
    assert abs(write["wire_bytes_per_execution"] - sent) <= WIRE_TOLERANCE * sent, (write, sent)
    # ranked by what it moved, not at 0 B; the node's time split adds up
    assert report["statements"][0]["query"] == insert["query"] or insert["write"]["estimated_storage_bytes"] > 0
    parts = sum(write[part] or 0 for part in ("commitlog_ns_per_execution", "pause_ns_per_execution"))
    parts += write["cpu_ns_per_execution"]
    assert write["rest_ns_per_execution"] == pytest.approx(max(0.0, write["node_ns_per_execution"] - parts))
    # the dev node is casstrace's own sandbox: `run` may write to it, so the run command is offered
    assert insert["run_command"].startswith("casstrace run") and insert["run_command"].endswith("'")


def test_a_large_batch_is_flagged_with_its_cause_and_a_small_one_is_not(watched):
    report, _, _, pushed, _ = watched
    large, small = _batch_statement(report, LARGE_ROWS), _batch_statement(report, SMALL_ROWS)
    assert large["write"]["partitions_per_execution"] == LARGE_ROWS
    assert small["write"]["partitions_per_execution"] == 1
    for batch, sent in ((large, pushed[1] / LARGE_BATCHES), (small, pushed[2] / SMALL_BATCHES)):
        assert abs(batch["write"]["wire_bytes_per_execution"] - sent) <= WIRE_TOLERANCE * sent, (batch["write"], sent)
    assert large["verdict"] == "flagged" and [f["cause"] for f in large["findings"]][:1] == ["large_batch"]
    assert "30.0 partitions per batch" in " ".join(large["findings"][0]["evidence"])
    # weighed by what a split by partition saves: the batch's node time less one partition's
    node_ns = large["write"]["node_ns_per_execution"]
    assert large["findings"][0]["saves_ns"] == pytest.approx(node_ns * (1 - 1 / LARGE_ROWS))
    assert small["verdict"] == "not flagged" and "large_batch" not in [f["cause"] for f in small["findings"]]


def test_a_forced_gc_shows_in_exactly_the_writes_it_overlapped(watched, tmp_path):
    report, out, calls, _, _ = watched
    batch = _statement(report, DRIVER_BATCH_STATEMENT)
    # a driver's batch is seen (its session names no statement); its mutations are counted from its
    # events, some of which the node's tracing drops at this rate: at most its partitions
    assert 0 < batch["write"]["partitions_per_execution"] <= GC_BATCH_ROWS
    assert batch["run_command"] == DRIVER_BATCH_UNNAMED
    with Trace(out) as trace:
        pauses = trace.meta["jvm_pauses"]
        sessions = [s for s in queries.statement_sessions(trace) if s.statement == batch["query"]]
    forced = [p for p in pauses if p["kind"] == "gc" and "Diagnostic Command" in p["what"]]
    assert forced and all(any(b <= p["start_ns"] <= p["end_ns"] <= a for b, a in calls) for p in forced)

    def overlap(session, which) -> int:
        """ns of the session inside any of the pauses (a GC's lies inside its safepoint: counted once)."""
        end = session.started_ns + session.duration_ns
        inside = [(max(session.started_ns, p["start_ns"]), min(end, p["end_ns"])) for p in which]
        covered, reached = 0, session.started_ns
        for start, stop in sorted(span for span in inside if span[0] < span[1]):
            covered += max(0, stop - max(start, reached))
            reached = max(reached, stop)
        return covered

    by_forced = [s for s in sessions if overlap(s, forced)]
    by_any = [s for s in sessions if overlap(s, pauses)]
    assert by_forced, "no batch was inside the node when a forced GC began"
    assert batch["sampled_executions"] == len(sessions)
    assert batch["paused_executions"] == len(by_any) >= len(by_forced)
    expected = sum(overlap(s, pauses) for s in sessions) / len(sessions)
    assert batch["write"]["pause_ns_per_execution"] == pytest.approx(expected)
    assert batch["write"]["pause_ns_per_execution"] <= batch["write"]["node_ns_per_execution"]
    gc = [f for f in batch["findings"] if f["cause"] == "gc_pauses"]
    gc_paused = [s for s in sessions if overlap(s, [p for p in pauses if p["kind"] == "gc"])]
    assert gc and gc[0]["evidence"][0].startswith(f"{len(gc_paused)} of {len(sessions)} executions overlapped")
    for fmt in ("text", "md", "html"):
        shown = tmp_path / f"report.{fmt}"
        done = casstrace("report", out, "--format", fmt, "--output", shown)
        assert done.returncode == 0, done.stderr
        text = shown.read_text()
        assert "GC pauses during the executions" in text and "Large batches" in text, fmt


def _series(page: str, name: str, statement: str) -> dict[str, float]:
    """The series of one metric for one statement, by its other label's value."""
    pattern = re.compile(rf'^{name}{{statement="{re.escape(statement)}",\w+="(\w+)"}} (\S+)$', re.M)
    return {label: float(value) for label, value in pattern.findall(page)}


def test_the_metrics_page_has_the_writes_figures_of_the_report(watched):
    """The page served once every insert was sampled (live figures, the watch still going) against the
    report of the same watch at its end: the inserts' bytes on the wire and in the commit log, their node time."""
    report, _, _, _, pages = watched
    counted = [p for p in pages if _series(p, "casstrace_statement_executions_total", INSERT).get("sampled") == INSERTS]
    shown = [_series(p, "casstrace_statement_executions_total", INSERT).get("sampled") for p in pages]
    assert counted, f"no page had every insert sampled: the inserts sampled on each, {shown}"
    page = counted[-1]
    checked = subprocess.run(["promtool", "check", "metrics"], input=page, capture_output=True, text=True)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    insert = _statement(report, INSERT)
    write, sampled = insert["write"], insert["sampled_executions"]
    assert sampled == INSERTS
    moved = _series(page, "casstrace_statement_write_bytes_total", INSERT)
    assert moved["wire"] == pytest.approx(write["wire_bytes_per_execution"] * sampled, rel=WIRE_TOLERANCE)
    node = _series(page, "casstrace_statement_write_node_seconds_per_execution", INSERT)
    figures = {"total": "node_ns_per_execution", "commit_log": "commitlog_ns_per_execution"}
    figures |= {"pauses": "pause_ns_per_execution", "cpu": "cpu_ns_per_execution", "rest": "rest_ns_per_execution"}
    assert node == pytest.approx({part: write[key] / 1e9 for part, key in figures.items()}, rel=0.02, abs=1e-6)
    # The commit-log pages a session claims are its threads': live, a thread the pools started during the
    # watch is known by its /proc name only (15 characters: no worker id), and the report's, at the end,
    # by the JVM's list of threads too; so the live figure is a part of the report's
    assert 0 < moved["commit_log"] <= write["commitlog_bytes_per_execution"] * sampled * 1.05


@pytest.fixture(scope="module")
def run_insert(watched, sandbox, tmp_path_factory):
    """`casstrace run` of the watch's INSERT (its value a literal of the same size) on the same node, after
    the watch: its JSON report."""
    out = tmp_path_factory.mktemp("run") / "insert.trace"
    statement = f"INSERT INTO {KEYSPACE}.t (k, c, v) VALUES (?, ?, '{'v' * VALUE_BYTES}')"
    done = casstrace(
        "run", statement, "--host", sandbox.host, "--port", sandbox.native_port,
        "--repeat", RUN_REPEAT, "--warmup", RUN_WARMUP, "--out", out, "--no-html",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    reported = casstrace("report", out, "--format", "json")
    assert reported.returncode == 0, reported.stderr
    return json.loads(reported.stdout)


def test_a_write_s_cpu_is_what_run_measures_of_it_and_a_part_of_its_node_time(watched, run_insert):
    """The CPU of the threads that served each sampled INSERT, against `run`'s serving CPU of the same
    INSERT: medians within CPU_FACTOR; and per write statement, a part of its node time that leaves
    the others theirs (the four add up to it)."""
    report, out, _, _, _ = watched
    insert = _statement(report, INSERT)
    with Trace(out) as trace:
        sessions = {s.session for s in queries.statement_sessions(trace) if s.statement == INSERT}
        served: dict[int, list] = {}
        for span in slot_spans(trace):
            if span.session in sessions:
                served.setdefault(span.session, []).append(span)
        per_session = served_cpu_ns(served, queries.thread_cpu(trace))
    [run_cpu] = [m for m in run_insert["measures_per_execution"] if m["name"] == "serving_cpu_ns"]
    assert run_cpu["executions"] == RUN_REPEAT and run_cpu["median"] > 0
    assert len(per_session) >= 0.9 * INSERTS, "the CPU of most sampled inserts' threads was measured"
    watched_median = statistics.median(per_session.values())
    assert run_cpu["median"] / CPU_FACTOR <= watched_median <= run_cpu["median"] * CPU_FACTOR, (
        watched_median,
        run_cpu["median"],
    )
    # the report's CPU part: of each execution, what its threads ran outside the commit log and the pauses
    write = insert["write"]
    assert 0 < write["cpu_ns_per_execution"] <= statistics.mean(per_session.values())
    for statement in report["statements"]:
        if (write := statement["write"]) is not None and write["cpu_ns_per_execution"] is not None:
            parts = ("commitlog_ns_per_execution", "pause_ns_per_execution", "cpu_ns_per_execution")
            assert write["cpu_ns_per_execution"] <= write["node_ns_per_execution"], statement["query"][:60]
            assert (
                sum(write[part] or 0 for part in parts) + write["rest_ns_per_execution"]
                == pytest.approx(write["node_ns_per_execution"])
                or write["rest_ns_per_execution"] == 0
            ), statement["query"][:60]


def test_the_commit_logs_sync_mode_is_the_nodes_configured_one(watched, sandbox):
    """The report's context names the commit log's sync and segment access modes: those of the yaml the
    node started with (the sandbox's own; 5.0 defaults the access mode to legacy: mapped segments)."""
    report = watched[0]
    configured = (Path(sandbox.data_dir) / "conf" / "cassandra.yaml").read_text()
    (sync,) = re.findall(r"^commitlog_sync: (\w+)$", configured, re.M)
    access = re.findall(r"^commitlog_disk_access_mode: (\w+)$", configured, re.M) or ["legacy"]
    assert (report["context"]["commitlog_sync"], report["context"]["commitlog_disk_access_mode"]) == (sync, access[0])


def test_a_write_s_measures_per_execution_are_those_run_gives_it(watched, run_insert):
    """One model for both: the watch's sampled INSERTs and `run`'s executions of it carry the same
    registered measures (Cassandra's traced time, the commit log's part of it, the serving CPU); the
    watch's add up to its write split, and its metrics page has them as summaries."""
    report, _, _, _, pages = watched
    insert = _statement(report, INSERT)
    write = insert["write"]
    watched_measures = {m["name"]: m for m in insert["measures_per_execution"]}
    run_measures = {m["name"]: m for m in run_insert["measures_per_execution"]}
    for name in ("traced_ns", "commitlog_ns", "serving_cpu_ns"):
        assert name in watched_measures and name in run_measures, name
    assert run_measures["commitlog_ns"]["executions"] == RUN_REPEAT
    for measures in (watched_measures, run_measures):  # the commit log's time is a part of the traced time
        assert 0 < measures["commitlog_ns"]["median"] <= measures["traced_ns"]["median"]
    traced, commitlog = watched_measures["traced_ns"], watched_measures["commitlog_ns"]
    assert traced["executions"] == INSERTS and traced["median"] == pytest.approx(insert["latency_p50_s"] * 1e9)
    assert traced["total"] / traced["executions"] == pytest.approx(write["node_ns_per_execution"])
    assert commitlog["total"] / commitlog["executions"] == pytest.approx(write["commitlog_ns_per_execution"])
    counted = [p for p in pages if _series(p, "casstrace_statement_executions_total", INSERT).get("sampled") == INSERTS]
    label = f'{{statement="{INSERT}"}}'
    (summed,) = re.findall(rf"^casstrace_statement_traced_seconds_sum{re.escape(label)} (\S+)$", counted[-1], re.M)
    assert float(summed) == pytest.approx(traced["total"] / 1e9, rel=0.02)
