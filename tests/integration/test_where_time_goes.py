"""Where the node's time goes, on a real node: the same time series as 100 text columns and as one frozen
UDT of the same 100 fields (the many-columns study), read `SELECT * ... WHERE pk = ? LIMIT 20`; and a GC
pause forced during the executions.

Truths: the layout of the data (2,000 cells a row-slice against 20 cells, same bytes); the kernel's own
CPU accounting of the process (/proc/PID/stat) against the BPF program's; the moments the
test asked the JVM for a full GC (`GC.run`, whose pause lies inside the call) against the
executions the pause is charged to.
"""

import json
import os
import random
import threading
import time
from pathlib import Path

import pytest
from cassandra.cluster import Cluster
from cassandra.concurrent import execute_concurrent_with_args

from casstrace.analyses import analyse
from casstrace.analyses.measures import by_window
from casstrace.analyses.model import Analysis
from casstrace.node.connection import resolve_settings
from casstrace.orchestration.kept_capture import KeptCapture
from casstrace.orchestration.runner import RunOptions
from casstrace.reports import common
from casstrace.sandbox.control import Sandbox
from casstrace.traces import Trace, queries
from casstrace_cli import casstrace
from hotspot_attach import force_full_gc

pytestmark = pytest.mark.integration

KEYSPACE = "where_time_goes"
FIELDS = [f"c{i}" for i in range(100)]
ROWS = 200  # per partition: a LIMIT 20 slice of a time series
PARTITIONS = 3
LOADED = "loaded v1"
SETTLE_AFTER_LOAD_S = 2 * Cluster.schema_event_refresh_window + 1
WARM_UP_READS = 1000
QUERY = "SELECT * FROM {ks}.{table} WHERE pk = 1 LIMIT 20"


def load(node: Sandbox) -> None:
    with node.connect() as session:
        marked = list(
            session.execute(
                "SELECT comment FROM system_schema.tables WHERE keyspace_name = %s AND table_name = 'udt'", (KEYSPACE,)
            )
        )
        if marked and marked[0].comment == LOADED:
            return
        session.execute(f"DROP KEYSPACE IF EXISTS {KEYSPACE}")
        session.execute(
            f"CREATE KEYSPACE {KEYSPACE} WITH replication = {{'class': 'SimpleStrategy', 'replication_factor': 1}}"
        )
        session.execute(f"CREATE TYPE {KEYSPACE}.fields ({', '.join(f'{name} text' for name in FIELDS)})")
        session.execute(
            f"CREATE TABLE {KEYSPACE}.columns (pk int, ts int, {', '.join(f'{name} text' for name in FIELDS)},"
            " PRIMARY KEY (pk, ts))"
        )
        session.execute(f"CREATE TABLE {KEYSPACE}.udt (pk int, ts int, v frozen<fields>, PRIMARY KEY (pk, ts))")
        values = random.Random(34)
        rows = [
            (pk, ts, [values.randbytes(values.randint(5, 10)).hex() for _ in FIELDS])
            for pk in range(PARTITIONS)
            for ts in range(ROWS)
        ]
        columns = session.prepare(
            f"INSERT INTO {KEYSPACE}.columns (pk, ts, {', '.join(FIELDS)}) VALUES (?, ?{', ?' * len(FIELDS)})"
        )
        execute_concurrent_with_args(
            session, columns, [(pk, ts, *cells) for pk, ts, cells in rows], concurrency=16, raise_on_first_error=True
        )
        udt = session.prepare(
            f"INSERT INTO {KEYSPACE}.udt (pk, ts, v) VALUES (?, ?, {{{', '.join(f'{name}: ?' for name in FIELDS)}}})"
        )
        execute_concurrent_with_args(
            session, udt, [(pk, ts, *cells) for pk, ts, cells in rows], concurrency=16, raise_on_first_error=True
        )
        node.nodetool("flush", KEYSPACE)
        session.execute(f"ALTER TABLE {KEYSPACE}.udt WITH comment = '{LOADED}'")
        # A fresh load leaves the node far from idle: every open driver session (the suite's own among
        # them) refreshes its schema within the driver's refresh window, which would land in the measured
        # windows, and neither layout's read path is compiled yet. The tests measure an idle, warm node.
        time.sleep(SETTLE_AFTER_LOAD_S)
        for table in ("columns", "udt"):
            for _ in range(WARM_UP_READS):
                session.execute(QUERY.format(ks=KEYSPACE, table=table))


@pytest.fixture(scope="module")
def layouts(sandbox: Sandbox) -> Sandbox:
    load(sandbox)
    return sandbox


def ran(node: Sandbox, table: str, out: Path, repeat: int, capture: KeptCapture) -> Path:
    """`casstrace run` of the LIMIT 20 slice of `table`, through the module's kept capture; the trace's path."""
    options = RunOptions(
        query=QUERY.format(ks=KEYSPACE, table=table),
        connection=resolve_settings(node.host, node.native_port),
        out=out,
        repeat=repeat,
    )
    return capture.run(options)


def traced(node: Sandbox, table: str, out: Path, capture: KeptCapture, repeat: int = 15) -> Analysis:
    return analyse(ran(node, table, out, repeat, capture))


def median(analysis: Analysis, name: str) -> float:
    (summary,) = [s for s in analysis.measure_summaries if s.name == name]
    return summary.median


@pytest.fixture(scope="module")
def both(layouts: Sandbox, kept_capture: KeptCapture, tmp_path_factory) -> dict[str, Analysis]:
    directory = tmp_path_factory.mktemp("layouts")
    return {table: traced(layouts, table, directory / f"{table}.trace", kept_capture) for table in ("columns", "udt")}


def test_the_columns_cost_the_node_more_cpu_than_the_frozen_udt(both):
    columns, udt = both["columns"], both["udt"]
    assert all(e.rows == 20 for e in columns.executions + udt.executions if e.kind == "measured")
    assert median(columns, "request_cpu_ns") > median(udt, "request_cpu_ns"), (
        columns.measure_summaries,
        udt.measure_summaries,
    )
    assert median(columns, "serving_cpu_ns") > median(udt, "serving_cpu_ns")
    # every execution has the node's time and its CPU: the serving threads' within the request pools',
    # within the JVM's
    for e in columns.executions + udt.executions:
        assert e.measures["node_ns"] > 0 and e.measures["node_requests"] >= 1
        assert 0 < e.measures["request_cpu_ns"] <= e.measures["jvm_cpu_ns"]
    # The serving threads' CPU of the traced executions (its bound: test_serving_cpu.py)
    serving = [e.measures["serving_cpu_ns"] for e in columns.executions + udt.executions if e.kind == "measured"]
    assert all(cpu > 0 for cpu in serving), serving


def test_the_cells_per_row_finding_names_the_columns_only(both):
    found = {name: [f.cause for f in a.findings + a.latency_notes] for name, a in both.items()}
    assert "many_cells_per_row" in found["columns"], found
    assert "many_cells_per_row" not in found["udt"], found
    (finding,) = [
        f for f in both["columns"].findings + both["columns"].latency_notes if f.cause == "many_cells_per_row"
    ]
    assert finding.saves_ns is not None and 0 < finding.saves_ns <= median(both["columns"], "request_cpu_ns")


def test_the_node_time_is_within_the_clients_round_trip(both):
    for analysis in both.values():
        for e in analysis.executions:
            assert e.latency_s is not None
            assert e.measures["node_ns"] <= e.latency_s * 1e9
            assert e.measures["client_decode_ns"] <= e.latency_s * 1e9


def test_the_breakdown_adds_up_to_the_nodes_time_which_holds_cassandras_own(both):
    """The first screen splits the node's time per execution into what its request threads did: I/O wait,
    running, waiting for a CPU, GC pauses, and the rest (all asleep). On this idle node the measured
    parts explain at least 90% of it, and each execution's never pass its node time; the time a request
    thread ran is bounded by the JVM's CPU (the kernel's per-thread sums of each slice, in the window it
    ended in: the execution's window's and the next one's, where a slice that ran across the window's end
    counts); and the
    node's time holds an independent truth, Cassandra's own trace of each execution (its sessions'
    durations, from the request's start on the coordinator to its response ready: inside the
    socket-to-socket time)."""
    for analysis in both.values():
        split = analysis.time_split
        assert split is not None and split.executions == sum(e.kind == "measured" for e in analysis.executions)
        assert sum(split.parts_ns.values()) == pytest.approx(split.node_ns)
        assert split.measured_share >= 0.9, split
        for e in analysis.executions:
            if e.kind == "measured":
                m = e.measures
                assert m["io_wait_ns"] + m["running_ns"] + m["cpu_wait_ns"] <= m["node_ns"], m
                assert 0 < m["traced_ns"] <= m["node_ns"] + 1_000, m  # Cassandra's clock is in whole µs
        with Trace(analysis.trace_path) as trace:
            windows, ids = by_window(trace), queries.window_ids(trace)
            for record in queries.executions(trace):
                if record.kind == "measured" and record.window_id is not None:
                    following = ids[ids.index(record.window_id) + 1]
                    jvm_cpu = windows[record.window_id]["jvm_cpu_ns"] + windows[following]["jvm_cpu_ns"]
                    assert windows[record.window_id]["running_ns"] <= jvm_cpu, (windows[record.window_id], jvm_cpu)
    row = common.first_screen_row(both["columns"])
    assert row[common.FIRST_SCREEN_COLUMNS.index("Running")] != common.NOT_MEASURED


def test_a_forced_gc_pause_shows_in_exactly_the_executions_it_overlapped(layouts, kept_capture, tmp_path):
    """A background thread asks the JVM for full GCs while the executions run; each call's span (the
    pause lies inside it) is the truth the executions are checked against."""
    pid = layouts.pid()
    spans: list[tuple[int, int]] = []
    stop = threading.Event()

    def collect() -> None:
        while not stop.wait(1.0):  # through the run's start-up and into its executions, until it ends
            spans.append(force_full_gc(pid))

    thread = threading.Thread(target=collect, daemon=True)
    thread.start()
    try:
        path = ran(layouts, "udt", tmp_path / "gc.trace", 300, kept_capture)
    finally:
        stop.set()
        thread.join()
    with Trace(path) as trace:
        pauses = trace.meta.get("gc_pauses") or []
        window_of = {record.execution: record.window_id for record in queries.executions(trace)}
        analysis = analyse(trace)
    forced = [p for p in pauses if "Diagnostic Command" in p["collector"]]
    assert forced, (pauses, spans)  # at least one forced pause fell in an execution
    for pause in forced:  # each lies inside one of the test's GC.run calls, on the same clock
        assert any(
            before <= pause["end_ns"] - pause["pause_ns"] and pause["end_ns"] <= after for before, after in spans
        )
        assert 0 < pause["overlap_ns"] <= pause["pause_ns"]
        after, before, heap = pause["heap_after_bytes"], pause["heap_before_bytes"], pause["heap_bytes"]
        assert after is not None and before is not None and heap is not None
        assert after <= before <= heap
    paused = {e.execution for e in analysis.executions if e.measures.get("gc_pause_ns")}
    charged = {execution for execution, window in window_of.items() if any(p["window_id"] == window for p in pauses)}
    assert paused == charged
    # A measured execution that a pause overlapped makes the finding. (On the loaded bare-clone
    # rehearsal all 17 forced pauses fell between executions: their windows were 4-10 ms of each ~65 ms.)
    measured_paused = any(e.measures.get("gc_pause_ns") for e in analysis.executions if e.kind == "measured")
    assert any(f.cause == "gc_pauses" for f in analysis.findings + analysis.latency_notes) == measured_paused


def process_cpu_ns(pid: int) -> int:
    """The kernel's own on-CPU time of the whole process, its threads that have exited included
    (utime + stime of /proc/PID/stat, in clock ticks; a thread's own schedstat goes with the thread, and
    the JVM ends threads of its pools during a run)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    ticks = int(fields[11]) + int(fields[12])  # utime, stime: fields 14 and 15 of stat(5)
    return ticks * 1_000_000_000 // os.sysconf("SC_CLK_TCK")


def test_the_jvms_cpu_time_is_within_the_kernels_own_count(layouts, kept_capture, tmp_path):
    pid = layouts.pid()
    before = process_cpu_ns(pid)
    path = ran(layouts, "columns", tmp_path / "cpu.trace", 20, kept_capture)
    after = process_cpu_ns(pid)
    with Trace(path) as trace:
        counted = sum(row.value for row in queries.window_measures(trace) if row.measure == "jvm_cpu_ns")
    # the windows cover the capture, which the kernel's count spans with the run's set-up around it
    tick = 1_000_000_000 // os.sysconf("SC_CLK_TCK")  # the kernel's count is in ticks: one each end
    assert 0.3 * (after - before) <= counted <= (after - before) * 1.02 + 2 * tick, (counted, after - before)


def test_compare_accepts_the_refactor_to_a_frozen_udt_and_shows_the_difference(layouts, node_args, tmp_path):
    """Columns and the frozen UDT return other cells (other payload digests) of the same data: compare checks
    the leaf values per row key, accepts, and sets the node's time and CPU side by side."""
    report = tmp_path / "compare.json"
    queries = [QUERY.format(ks=KEYSPACE, table=table) for table in ("columns", "udt")]
    done = casstrace(
        "compare",
        "--before",
        queries[0],
        "--after",
        queries[1],
        *node_args,
        "--repeat",
        10,
        "--traces-dir",
        tmp_path / "traces",
        "--format",
        "json",
        "--output",
        report,
    )
    assert done.returncode == 0, done.stderr
    compared = json.loads(report.read_text())
    assert compared["payload"]["status"] == "same"
    assert "leaf values" in compared["payload"]["basis"]
    metrics = {metric["key"]: metric for metric in compared["metrics"]}
    assert compared["first"]["latency_of"] == compared["second"]["latency_of"] == "node"
    # the node's CPU side by side (which is higher: test_the_columns_cost_the_node_more_cpu_than_the_frozen_udt,
    # over more executions than a comparison runs)
    assert metrics["request_cpu_ns"]["first"] > 0 and metrics["request_cpu_ns"]["second"] > 0
    assert metrics["latency_median_s"]["name"].startswith("Node time")
    assert metrics["rows"]["first"] == metrics["rows"]["second"] == 20
    # Their stored traces compare as the live queries did: by the digest of the leaf values each kept,
    # never the values themselves.
    traces = [next((tmp_path / "traces").glob(f"*-{role}.trace")) for role in ("before", "after")]
    stored = casstrace("compare", *traces, "--format", "json")
    assert stored.returncode == 0, stored.stderr
    assert json.loads(stored.stdout)["payload"]["status"] == "same"
    assert "leaf values" in json.loads(stored.stdout)["payload"]["basis"]
    with layouts.connect() as session:
        values = {cell for row in session.execute(queries[0]) for cell in row[2:]}
    assert len(values) > 1000
    for trace in traces:
        held = trace.read_bytes()
        assert not [value for value in values if value.encode() in held]


def test_compare_still_refuses_other_data_in_another_shape(layouts, node_args, tmp_path):
    done = casstrace(
        "compare",
        "--before",
        QUERY.format(ks=KEYSPACE, table="columns"),
        "--after",
        f"SELECT * FROM {KEYSPACE}.udt WHERE pk = 2 LIMIT 20",
        *node_args,
        "--traces-dir",
        tmp_path / "traces",
    )
    assert done.returncode == 2
    assert "do not return the same data" in done.stderr
