"""`casstrace run` on a node that serves another client meanwhile (issue 32): each execution is
charged only what its own threads read, so its bytes and verdict are those of the idle node, and
what the other client's requests read is shown beside them, never added.

The other client is real: a driver Cluster of its own reading other keys of the same table at
RATE requests/s (sandbox.workload.BackgroundRequests: async, bounded in flight and in time, loopback),
and its achieved rate is asserted. The independent truths: the same query measured on the idle node
(where the windows hold only its reads: nothing to attribute), and the windows' own totals (file_io),
which hold the other client's reads too.
"""

import statistics
import time
from collections.abc import Iterator
from contextlib import contextmanager

import pytest

from casstrace.analyses import analyse
from casstrace.analyses.model import Analysis
from casstrace.node.connection import resolve_settings
from casstrace.orchestration.runner import RunOptions
from casstrace.sandbox.control import Sandbox
from casstrace.sandbox.workload import BackgroundRequests, PointTable
from casstrace.traces import Trace
from verdict_tables import traced

pytestmark = pytest.mark.integration

RATE = 500  # requests/s asked of the other client (at 1,000, 256 in flight, the run's own connect timed out)
# What it must achieve for the test to mean anything (issue 32 asks 300): the 2-core test machine,
# otherwise idle, answered 492-493/s of them (2026-11-28); loaded by other suites (load 25-35), 230-350.
MIN_RATE = 300
IN_FLIGHT = 128  # a loaded 2-core machine answered ~350/s at 128 in flight, ~260/s at 32
PROFILED_RATE, PROFILED_IN_FLIGHT = 100, 8  # the other client's, beside a profiled run
LEAD_S = 1.0  # the other client runs this long before the measured run starts
# Each of the other client's reads of a wide row reads the whole 1 MB row (CASSANDRA-6586): at
# 1,000/s the node (on a loaded 2-core machine) stopped answering new connections; at 300/s, 16 in
# flight, it answered 77/s, and 16/s beside the point reads. So beside a few of these (each 1 MB of
# the queried table), another client's point reads of another table make the node serve >= MIN_RATE
# requests/s.
WIDE_RATE, WIDE_IN_FLIGHT, WIDE_MIN_RATE = 100, 8, 10
# The wide query's executions under that load: each window is ~15 ms, and the other client's reads of the
# wide table came about one per three of them (r26: 1.1 MB of it in 3 windows; none in 2 of 8 runs), so
# 15 make the other client's reads in them near certain (~5 expected).
WIDE_BUSY_REPEAT = 15
KEY = 4242
REPEAT = 9  # executions of a point read per run (the median of 9 keeps a neighbour's chunk charged to one or two out)
WITHIN = 1.2  # bytes per execution, busy against idle
# Of the other client's requests over the measured windows (its rate times their length), the least the
# node's count around them may hold (the count spans more than the windows; the rate is the load's mean).
COUNTED_SHARE = 0.5


@pytest.fixture(scope="module")
def point_table(sandbox: Sandbox, cql_session) -> PointTable:
    table = PointTable("casstrace_busy_test")
    table.ensure(cql_session, lambda keyspace, name: sandbox.nodetool("flush", keyspace, name))
    return table


@contextmanager
def other_client(
    node: Sandbox, cql: str, keys: list[tuple], rate: float = RATE, in_flight: int = IN_FLIGHT
) -> Iterator[BackgroundRequests]:
    """Another client reading `keys` with `cql` at `rate` while the block runs."""
    with node.connect() as session:
        load = BackgroundRequests(session, cql, keys, rate, duration_s=600, in_flight=in_flight)
        with load:
            time.sleep(LEAD_S)
            yield load


def reached(load: BackgroundRequests, least: float = MIN_RATE) -> None:
    """The other client made the node busy: no failure, at least `least` requests/s answered."""
    assert load.errors == 0
    print(f"the other client: {load.achieved_rate:.0f} requests/s answered")
    assert load.achieved_rate >= least, f"the other client reached {load.achieved_rate:.0f} requests/s"


def per_execution(analysis: Analysis) -> float:
    """The median measured execution's Data bytes. (Not the mean: another request served on the same
    thread within ~0.2 ms of the execution's events is charged to it too, as in watch: the events'
    times are that uncertain. Seen on about one execution in five at 250 requests/s.)"""
    return statistics.median(
        e.amplification.data_read_bytes for e in analysis.executions if e.kind == "measured" and e.amplification
    )


def window_totals(analysis: Analysis) -> int:
    """What the measured windows' per-file totals hold of the queried table's Data files: every
    thread's reads, the other client's included."""
    with Trace(analysis.trace_path) as trace:
        return trace.rows(
            "SELECT coalesce(sum(read_bytes), 0) FROM file_io JOIN files USING (file_id)"
            " WHERE path LIKE ? AND path LIKE '%-Data.db' AND window_id IN"
            " (SELECT window_id FROM executions WHERE kind = 'measured')",
            (f"%/{analysis.table}-%",),
        )[0][0]


def measured_seconds(analysis: Analysis) -> float:
    """The measured executions' windows, in seconds, added up."""
    with Trace(analysis.trace_path) as trace:
        return (
            trace.rows(
                "SELECT coalesce(sum(end_ns - start_ns), 0) FROM windows WHERE window_id IN"
                " (SELECT window_id FROM executions WHERE kind = 'measured')"
            )[0][0]
            / 1e9
        )


def test_a_point_read_is_charged_its_own_reads_under_load(sandbox, point_table, tmp_path, kept_capture):
    idle = traced(sandbox, point_table.point_query(KEY), tmp_path / "idle.trace", kept_capture, repeat=REPEAT)
    with other_client(sandbox, point_table.by_key, point_table.keys_except(KEY)) as load:
        busy = traced(sandbox, point_table.point_query(KEY), tmp_path / "busy.trace", kept_capture, repeat=REPEAT)

    # Idle: the join explains the windows' reads of the table (nobody else read it).
    assert idle.overall.busy is not None
    assert idle.overall.busy.attributed_share is not None and idle.overall.busy.attributed_share >= 0.9
    # Busy: the other client's reads were in the windows, and none of them is the query's.
    assert busy.overall.busy is not None and busy.overall.busy.busy_executions == busy.overall.busy.executions
    # The node's count of them, read either side of each measured execution, holds at least what the
    # other client's own rate gives over the executions' windows, and no more than the client was answered
    # (how many depends on the machine's speed; the rate itself is reached()'s to check).
    counted = busy.overall.busy.other_requests
    assert counted and COUNTED_SHARE * load.achieved_rate * measured_seconds(busy) <= counted <= load.completed
    # The other client read the table in the query's own windows, and none of it was charged to the query.
    # (How much it read there scales with the windows' length: about a 16 KiB chunk per 2 ms at 500/s,
    # against the query's two chunks, so from 0.6x the query's own bytes on a quiet machine to over 2x on
    # a loaded one. The per-execution bytes below are what shows it was not charged.)
    assert busy.overall.busy.table_bytes_by_others > 0
    assert window_totals(busy) > busy.overall.syscall_bytes
    assert 1 / WITHIN <= per_execution(busy) / per_execution(idle) <= WITHIN
    assert busy.verdict.status == idle.verdict.status == "not flagged"
    assert any(warning.startswith("BUSY NODE") for warning in busy.warnings)
    # (Idle, the node may still count a request or two of the test's own other session: its driver's
    # housekeeping. No other thread read the table.)
    assert idle.overall.busy.table_bytes_by_others == 0
    reached(load)


def test_the_wide_query_stays_flagged_for_its_own_full_row_reads_under_load(
    sandbox, demo_tables, point_table, tmp_path, kept_capture
):
    spec = demo_tables.spec
    idle = traced(sandbox, spec.wide_query, tmp_path / "idle.trace", kept_capture, repeat=3)
    others = f"SELECT c5 FROM {spec.keyspace}.{spec.table} WHERE stream_id = ? AND ts = ?"
    rows = [(spec.stream_id, ts) for ts in range(spec.rows)]
    # Other rows of the wide table (each read a whole 1 MB row), and point reads of another table.
    with (
        other_client(sandbox, others, rows, rate=WIDE_RATE, in_flight=WIDE_IN_FLIGHT) as wide,
        other_client(sandbox, point_table.by_key, point_table.keys_except(KEY)) as points,
    ):
        busy = traced(sandbox, spec.wide_query, tmp_path / "busy.trace", kept_capture, repeat=WIDE_BUSY_REPEAT)

    assert busy.overall.busy is not None and busy.overall.busy.busy_executions > 0
    assert busy.overall.busy.table_bytes_by_others > 0 and busy.overall.busy.other_tables_bytes > 0
    assert 1 / WITHIN <= per_execution(busy) / per_execution(idle) <= WITHIN
    for analysis in (idle, busy):
        assert analysis.verdict.status == "flagged"
        assert "full_row_read" in {finding.cause for finding in analysis.findings}
    reached(points)
    reached(wide, WIDE_MIN_RATE)


def test_a_warm_mmap_node_under_load_is_never_flagged_for_others_reads(node_41, tmp_path, kept_capture):
    """Warm mapped reads make no syscall and no fill: only the JVM's accessed bits see them, per
    process. Under load they cannot be charged to anyone: the verdict is right or undetermined."""
    table = PointTable("casstrace_busy_test")
    with node_41.connect() as session:
        table.ensure(session, lambda keyspace, name: node_41.nodetool("flush", keyspace, name))
    idle = traced(node_41, table.point_query(KEY), tmp_path / "idle.trace", kept_capture, repeat=REPEAT)
    with other_client(node_41, table.by_key, table.keys_except(KEY)) as load:
        busy = traced(node_41, table.point_query(KEY), tmp_path / "busy.trace", kept_capture, repeat=REPEAT)

    assert idle.context["disk_access_mode"] in ("auto", "mmap")
    assert idle.verdict.status == "not flagged"
    assert busy.overall.busy is not None and busy.overall.busy.busy_executions > 0
    assert busy.verdict.status in ("not flagged", "undetermined")
    if busy.overall.busy.mapped_unattributed_bytes:  # others' mapped reads: nobody's, and said so
        assert busy.verdict.status == "undetermined"
    reached(load)


def test_a_profile_under_load_keeps_only_the_threads_that_served_the_executions(
    sandbox, demo_tables, point_table, tmp_path, kept_capture
):
    """run --profile of the wide query while the other client's point reads run: the profile keeps the
    samples and reads of the threads that served the executions while they did, and counts the others'."""
    spec = demo_tables.spec
    options = RunOptions(
        query=spec.wide_query,
        connection=resolve_settings(sandbox.host, sandbox.native_port),
        out=tmp_path / "profiled.trace",
        repeat=2,
        profile=True,
    )
    # (at RATE, the profiled 2-core node let one wide read in 4 runs pass its read timeout, at 128 or 32
    # requests in flight: the profile's subject is which threads it keeps, not the rate)
    with other_client(
        sandbox, point_table.by_key, point_table.keys_except(KEY), rate=PROFILED_RATE, in_flight=PROFILED_IN_FLIGHT
    ) as load:
        analysis = analyse(kept_capture.run(options))

    assert analysis.complete, analysis.warnings
    profile = analysis.profile
    assert profile is not None and profile.other_threads is not None
    # The other client's requests ran on the node's request threads meanwhile: their samples are left out.
    assert profile.other_threads.samples > 0
    with Trace(analysis.trace_path) as trace:
        serving = {row["tid"] for row in trace.rows("SELECT tid FROM session_threads WHERE tid IS NOT NULL")}
        sampled = {row["tid"] for row in trace.rows("SELECT DISTINCT tid FROM profile_samples")}
    assert sampled and sampled <= serving
    # What the profile puts on stacks is what the executions were charged (their own threads' reads) ...
    assert profile.data_read_bytes == pytest.approx(analysis.overall.syscall_bytes, rel=0.05)
    # ... and those are the wide rows' cells, read by Cassandra's code.
    assert profile.cassandra_bytes >= 0.9 * profile.data_read_bytes
    # The other client ran meanwhile (the samples left out say so above); its rate is not this test's
    # subject: beside the profiled wide reads on a loaded machine it answered below the 100/s asked.
    print(f"the other client: {load.achieved_rate:.0f} requests/s answered, {load.errors} errors")
    assert load.completed > 0 and load.errors <= 0.05 * load.completed
