"""The write statements of a watch, without a node (analyses.statement_writes): their shape from the
normalized text, the wire bytes split by client, the commit-log pages their threads dirtied, the node
time split with pauses counted once, the findings through the seam, and every report format."""

import dataclasses
import json
from collections import Counter
from typing import Any

import pytest

from casstrace.analyses.attribution import Span
from casstrace.analyses.statement_writes import (
    WriteShape,
    clients_read,
    commitlog_slots,
    cpu_part,
    write_shape,
)
from casstrace.analyses.units import human_ns
from casstrace.analyses.watch import (
    DRIVER_BATCH_UNNAMED,
    WRITE_ELSEWHERE,
    Session,
    WatchInputs,
    WatchTally,
    summarise_tally,
    tally,
)
from casstrace.analyses.write_io import is_commitlog_segment
from casstrace.node.tracing import SampledSession, TraceEvent, add_events
from casstrace.reports import render
from casstrace.reports.watch import document
from casstrace.traces.activities import DRIVER_BATCH_STATEMENT
from casstrace.traces.addresses import ClientSockets, parse_address
from casstrace.traces.queries import ThreadCpu, ThreadIO
from casstrace.traces.schema import PAGE_BYTES

SLOT = 1_000_000
START = 10_000_000_000
INSERT = "INSERT INTO ks.t (k, c, v, w) VALUES (?, ?, ?, ?)"
BIG_BATCH = (
    "BEGIN UNLOGGED BATCH "
    + " ".join("INSERT INTO ks.t (k, c, v) VALUES (?, ?, ?);" for _ in range(12))
    + (" APPLY BATCH")
)
SEGMENT = "/var/lib/cassandra/commitlog/CommitLog-7-1732874000001.log"
META: dict[str, Any] = {
    "cassandra": {
        "tables": [{"keyspace": "ks", "table": "t", "partition_key": ["k"], "clustering": ["c"], "columns": []}]
    },
    "node": {"host": "10.0.0.1", "port": 9042},
}


@pytest.mark.parametrize(
    "statement, shape",
    [
        (INSERT, WriteShape("INSERT", ("ks.t",), 1, 1, 2, None)),  # v and w: k and c are its key
        ("INSERT INTO other (a, b) VALUES (?, ?)", WriteShape("INSERT", ("other",), 1, 1, None, None)),  # key unknown
        (
            "UPDATE ks.t USING TTL ? SET v = ?, w = w + ? WHERE k = ? AND c = ?",
            WriteShape("UPDATE", ("ks.t",), 1, 1, 2, None),
        ),
        ("UPDATE ks.t SET v = ? WHERE k IN (?) AND c = ?", WriteShape("UPDATE", ("ks.t",), 1, None, 1, None)),
        ("DELETE v, m[?] FROM ks.t WHERE k = ?", WriteShape("DELETE", ("ks.t",), 1, 1, 2, None)),
        ("DELETE FROM ks.t WHERE k = ?", WriteShape("DELETE", ("ks.t",), 1, 1, 0, None)),  # a row tombstone
        (BIG_BATCH, WriteShape("BATCH", ("ks.t",), 12, 12, 12, False)),
        (
            "BEGIN BATCH USING TIMESTAMP ? INSERT INTO ks.t (k, c, v) VALUES (?, ?, ?); DELETE FROM ks.u WHERE k = ?; "
            "APPLY BATCH",
            WriteShape("BATCH", ("ks.t", "ks.u"), 2, 2, 1, True),
        ),
        (DRIVER_BATCH_STATEMENT, WriteShape("BATCH", (), None, None, None, None)),
        ("SELECT v FROM ks.t WHERE k = ?", None),
        ("CREATE TABLE ks.x (k int PRIMARY KEY)", None),
    ],
)
def test_a_write_s_shape_from_its_normalized_text(statement, shape):
    assert write_shape(statement, META["cassandra"]) == shape


def test_a_trace_s_mutations_and_time_in_the_commit_log_from_its_events():
    sampled = SampledSession("s", INSERT, "ONE", "10.0.0.9", START, 900_000, None, None, None)
    events = [
        TraceEvent(START, 100_000, "Native-Transport-Requests-1", "Determining replicas for mutation"),
        TraceEvent(START, 200_000, "Native-Transport-Requests-1", "Appending to commitlog"),
        TraceEvent(START, 450_000, "Native-Transport-Requests-1", "Adding to t memtable"),
        TraceEvent(START, 300_000, "MutationStage-2", "Appending to commitlog"),
        TraceEvent(START, 330_000, "MutationStage-2", "Adding to t memtable"),
        TraceEvent(START, 800_000, "MutationStage-2", "Appending to commitlog"),  # its thread's last: no time
    ]
    add_events(sampled, events)
    assert (sampled.mutations, sampled.commitlog_ns) == (3, 250_000 + 30_000)
    read = SampledSession("r", "SELECT v FROM ks.t", "ONE", None, START, 1, None, None, None)
    add_events(read, [TraceEvent(START, 1, "ReadStage-1", "Read 1 live rows and 0 tombstone cells")])
    assert (read.mutations, read.commitlog_ns) == (None, None)  # not a write: not counted, not 0


def test_commit_log_pages_are_counted_per_thread_slot_only_where_measured():
    files = {1: SEGMENT, 2: "/var/lib/cassandra/data/ks/t-0123/nb-1-big-Data.db"}
    assert is_commitlog_segment(SEGMENT) and not is_commitlog_segment(files[2])
    rows = [
        ThreadIO(7, 3, 1, 0, 0, 0, None, 0, 0, 2, 2),
        ThreadIO(7, 3, 2, 1, 4096, 1, None, 0, 0, 0, 0),
        ThreadIO(8, 4, 1, 0, 0, 0, None, 1, 8192, 2, 0),  # by a write syscall (a compressed segment)
    ]
    assert commitlog_slots(rows, files) == {(None, 7, 3): 2, (None, 8, 4): 2}
    before_format_5 = [ThreadIO(7, 3, 1, 0, 0, 0)]
    assert commitlog_slots(before_format_5, files) is None  # not measured, never 0


def _session(number: int, statement: str, client: str, started: int, duration: int, mutations: int | None) -> Session:
    return Session(
        number, statement, "ONE", started, duration, None, None, None, client, mutations, 20_000 * (mutations or 0)
    )


def _inputs(**overrides: object) -> WatchInputs:
    sessions = [
        # two INSERTs from one client, alone on it; a SELECT and an INSERT share another
        _session(1, INSERT, "10.0.0.2", START + 1 * SLOT, 400_000, 1),
        _session(2, INSERT, "10.0.0.2", START + 5 * SLOT, 600_000, 1),
        _session(3, INSERT, "10.0.0.3", START + 9 * SLOT, 500_000, 1),
        _session(4, "SELECT v FROM ks.t WHERE k = ?", "10.0.0.3", START + 9 * SLOT, 100_000, None),
        # a batch of 12 partitions, past Cassandra's warning size on the wire
        _session(5, BIG_BATCH, "10.0.0.4", START + 20 * SLOT, 3_000_000, 12),
    ]
    spans = [
        Span(1, "Native-Transport-Requests-1", 7, START + 1 * SLOT, START + 1 * SLOT + 300_000),
        Span(2, "Native-Transport-Requests-1", 7, START + 5 * SLOT, START + 5 * SLOT + 500_000),
        Span(3, "Native-Transport-Requests-2", 8, START + 9 * SLOT, START + 9 * SLOT + 400_000),
        Span(4, "Native-Transport-Requests-2", 8, START + 9 * SLOT, START + 9 * SLOT + 50_000),  # a read: claims none
        Span(5, "Native-Transport-Requests-3", 9, START + 20 * SLOT, START + 22 * SLOT + 10_000),
    ]
    fields: dict[str, Any] = {
        "sessions": sessions,
        "spans": spans,
        "thread_io": [],
        "sstables": {},
        "thread_names": {},
        "capture_start_ns": START,
        "slot_ns": SLOT,
        "probability": 0.5,
        "duration_s": 10.0,
        # a safepoint (1.0-1.3 ms into the watch) holding a GC (1.1-1.2 ms): session 1 is inside both
        "pauses": [(START + 1_000_000 + 100_000, START + 1_000_000 + 200_000), (START + 1_000_000, START + 1_300_000)],
        "gc_pauses": [(START + 1_000_000 + 100_000, START + 1_000_000 + 200_000)],
        "commitlog_slots": {(None, 7, 1): 1, (None, 7, 5): 1, (None, 8, 9): 3, (None, 9, 21): 9, (None, 9, 40): 5},
        "client_bytes": {"10.0.0.2": 2 * 1100, "10.0.0.3": 1300, "10.0.0.4": 3 * 9000},
    }
    return WatchInputs(**(fields | overrides))


def _watch(inputs: WatchInputs, meta: dict = META):
    watched = summarise_tally(tally(inputs, meta))
    return {s.statement: s for s in watched.statements}, watched


def test_a_write_s_figures_per_execution():
    statements, _ = _watch(_inputs())
    insert = statements[INSERT].write
    assert insert is not None and statements["SELECT v FROM ks.t WHERE k = ?"].write is None
    assert (insert.rows_per_execution, insert.cells_per_execution) == (1, 2)
    assert (insert.estimated_rows, insert.estimated_cells) == (6, 12)  # 3 sampled ÷ 0.5
    assert insert.partitions_per_execution == 1
    # 10.0.0.2's bytes are its two INSERTs' alone; 10.0.0.3's split with the SELECT by executions (1 of 2)
    assert insert.wire_bytes_per_execution == pytest.approx((2 * 1100 + 1300 / 2) / 3 * 0.5)
    assert insert.wire_estimated
    # its threads' commit-log pages in the slots its events span: 1 + 1 + 3 (the read claims none)
    assert insert.commitlog_bytes_per_execution == pytest.approx(5 * PAGE_BYTES / 3)
    assert insert.node_ns_per_execution == pytest.approx(500_000)
    assert insert.commitlog_ns_per_execution == 20_000
    # session 1 (1.0-1.4 ms) overlaps the safepoint 1.0-1.3 ms once, the GC inside it not again
    assert insert.pause_ns_per_execution == pytest.approx(300_000 / 3)
    assert insert.rest_ns_per_execution == pytest.approx(500_000 - 20_000 - 100_000)
    assert statements[INSERT].paused_executions == 1
    assert statements[INSERT].verdict == "not flagged"


def _cpu(tid: int, slot: int, ns: int) -> ThreadCpu:
    return ThreadCpu(None, tid, START + slot * SLOT, SLOT, ns)


# The request threads' CPU per slot: session 1's thread ran 250 µs in its slot and 100 µs in the slot
# before (within the events' margin), session 2's 300 µs, session 3's 200 µs (a read's on the same
# thread, but a read is no write); a slot far from every session's events is nobody's.
THREAD_CPU = [_cpu(7, 0, 100_000), _cpu(7, 1, 250_000), _cpu(7, 3, 900_000), _cpu(7, 5, 300_000), _cpu(8, 9, 200_000)]


def test_a_write_s_cpu_is_its_threads_while_they_served_it_outside_the_commit_log_and_pauses():
    statements, _ = _watch(_inputs(thread_cpu=THREAD_CPU))
    insert = statements[INSERT].write
    # session 1 ran 350 µs of CPU in its slots, but of its 400 µs the commit log took 20 and the
    # safepoint 300: 80 µs are left for the CPU; sessions 2 and 3 keep theirs (300, 200 µs)
    assert cpu_part(350_000, 400_000, 20_000, 300_000) == 80_000
    assert insert.cpu_ns_per_execution == pytest.approx((80_000 + 300_000 + 200_000) / 3)
    assert insert.rest_ns_per_execution == pytest.approx(500_000 - 20_000 - 100_000 - 580_000 / 3)
    parts = insert.commitlog_ns_per_execution + insert.pause_ns_per_execution + insert.cpu_ns_per_execution
    assert parts + insert.rest_ns_per_execution == pytest.approx(insert.node_ns_per_execution)
    assert statements[BIG_BATCH].write.cpu_ns_per_execution == 0  # measured: its thread had no CPU slot
    # not measured: no figure, and the rest is what it was
    statements, _ = _watch(_inputs())
    assert statements[INSERT].write.cpu_ns_per_execution is None
    assert statements[INSERT].write.rest_ns_per_execution == pytest.approx(500_000 - 20_000 - 100_000)


def test_a_write_with_a_thread_whose_cpu_is_not_kept_has_no_cpu_figure():
    """A span on a thread of a role the watch keeps no CPU of (a flush's), or on no thread found: that
    execution's CPU is not known, and the mean is of the others."""
    inputs = _inputs(thread_cpu=THREAD_CPU)
    inputs.spans[1] = dataclasses.replace(inputs.spans[1], tid=None)
    inputs.spans.append(Span(3, "MemtableFlushWriter:1", 11, START + 9 * SLOT, START + 9 * SLOT + 10_000))
    statements, _ = _watch(inputs)
    assert statements[INSERT].write.cpu_ns_per_execution == pytest.approx(80_000)
    # every span of the batch is on a request thread: measured
    assert statements[BIG_BATCH].write.cpu_ns_per_execution == 0


def test_writes_rank_beside_reads_by_what_they_moved():
    statements, watched = _watch(_inputs())
    batch = statements[BIG_BATCH]
    assert batch.write is not None and batch.write.commitlog_bytes_per_execution == 9 * PAGE_BYTES
    assert batch.estimated_storage_bytes == pytest.approx(9 * PAGE_BYTES / 0.5)
    assert [s.statement for s in watched.statements][:2] == [BIG_BATCH, INSERT]
    # without the commit log measured, a write ranks by its bytes on the wire
    statements, _ = _watch(_inputs(commitlog_slots=None))
    assert statements[BIG_BATCH].write.commitlog_bytes_per_execution is None
    # its client's 27,000 B are its alone: 13,500 B for each of its 2 estimated executions
    assert statements[BIG_BATCH].estimated_storage_bytes == pytest.approx(27_000)
    assert statements[INSERT].estimated_storage_bytes > 0


def test_a_large_batch_is_flagged_and_a_small_one_is_not():
    statements, _ = _watch(_inputs())
    batch = statements[BIG_BATCH]
    assert batch.verdict == "flagged"
    assert [f.cause for f in batch.findings] == ["large_batch"]
    evidence = " ".join(batch.findings[0].evidence)
    assert "13.2 KiB per batch on the wire" in evidence and "12.0 partitions per batch" in evidence
    # weighed by what splitting it by partition saves: 12 partitions' writes in the node's time of one
    node_ns = batch.write.node_ns_per_execution
    assert node_ns and batch.findings[0].saves_ns == pytest.approx(node_ns * 11 / 12)
    assert f"about {human_ns(node_ns * 11 / 12)} of each batch's {human_ns(node_ns)} saved" in evidence
    # the same batch on one partition, small on the wire: no finding
    small = _inputs(client_bytes={"10.0.0.2": 2200, "10.0.0.3": 1300, "10.0.0.4": 3 * 300})
    small.sessions[4] = _session(5, BIG_BATCH, "10.0.0.4", START + 20 * SLOT, 3_000_000, 1)
    statements, _ = _watch(small)
    assert statements[BIG_BATCH].verdict == "not flagged" and statements[BIG_BATCH].findings == []


def test_gc_pauses_of_writes_are_found_through_the_seam():
    statements, _ = _watch(_inputs())
    gc = [f for f in statements[INSERT].findings if f.cause == "gc_pauses"]
    assert gc and gc[0].evidence[0].startswith("1 of 3 executions overlapped a GC pause: 100 µs")
    statements, _ = _watch(_inputs(pauses=None, gc_pauses=None))
    assert statements[INSERT].write.pause_ns_per_execution is None and statements[INSERT].findings == []


def test_write_figures_add_up_over_intervals():
    whole = tally(_inputs(thread_cpu=THREAD_CPU), META)
    first, second = _inputs(thread_cpu=THREAD_CPU), _inputs(thread_cpu=THREAD_CPU)
    first.sessions, second.sessions = first.sessions[:2], second.sessions[2:]
    added = WatchTally(0.5)
    for part in (tally(first, META), tally(second, META)):
        added.add(part)
    assert added.writes.statements[INSERT].executions == whole.writes.statements[INSERT].executions == 3
    assert added.writes.statements[INSERT].timed == whole.writes.statements[INSERT].timed
    assert added.writes.statements[INSERT].commitlog_bytes == whole.writes.statements[INSERT].commitlog_bytes
    assert added.writes.statements[INSERT].cpu_ns == whole.writes.statements[INSERT].cpu_ns == 580_000
    assert added.writes.statements[INSERT].cpu_known == whole.writes.statements[INSERT].cpu_known == 3


def test_measure_it_alone_is_offered_for_a_write_only_on_casstrace_s_own_sandbox():
    statements, _ = _watch(_inputs())
    assert statements[INSERT].run_command == WRITE_ELSEWHERE
    assert statements["SELECT v FROM ks.t WHERE k = ?"].run_command.startswith("casstrace run")
    statements, _ = _watch(_inputs(), META | {"watch": {"own_sandbox": True}})
    assert statements[INSERT].run_command == f"casstrace run --host 10.0.0.1 --port 9042 '{INSERT}'"
    driver_batch = _inputs()
    driver_batch.sessions[4] = _session(5, DRIVER_BATCH_STATEMENT, "10.0.0.4", START + 20 * SLOT, 3_000_000, 12)
    statements, _ = _watch(driver_batch, META | {"watch": {"own_sandbox": True}})
    assert statements[DRIVER_BATCH_STATEMENT].run_command == DRIVER_BATCH_UNNAMED  # nothing to run


@pytest.mark.parametrize("format_", ["text", "md", "html", "json"])
def test_every_format_shows_the_write_figures(format_):
    _, watched = _watch(_inputs(thread_cpu=THREAD_CPU))
    shown = render(document(watched), format_)
    if format_ == "json":
        data = json.loads(shown)
        insert = next(s for s in data["statements"] if s["query"] == INSERT)
        assert insert["write"]["cells_per_execution"] == 2 and "findings" not in insert["write"]
        assert insert["run_command"] == WRITE_ELSEWHERE
        assert insert["write"]["cpu_ns_per_execution"] == pytest.approx(580_000 / 3)
        return
    assert "commit log per execution" in shown and "Large batches" in shown
    assert "GC and safepoints 100 µs" in shown and "casstrace sandbox start" in shown
    assert f"CPU {human_ns(580_000 / 3)} (its threads" in shown


def test_writes_waiting_on_slow_commit_log_syncs_are_found_and_fast_ones_are_not():
    """The commit-log cause: an INSERT spending 40 % of its node time in the commit log (20 of 50 µs),
    while the commit log's syncs take 20 ms at p99 on the data files' device; the same with 1 ms
    syncs, or syncs not measured, finds nothing."""
    from casstrace.analyses.statement_writes import CommitLogSyncs
    from casstrace.traces.schema import latency_bucket

    def found(syncs: CommitLogSyncs | None) -> list:
        inputs = _inputs(commitlog_syncs=syncs)
        for number in range(3):
            inputs.sessions[number] = dataclasses.replace(inputs.sessions[number], duration_ns=50_000)
        statements, _ = _watch(inputs)
        return [f for f in statements[INSERT].findings if f.cause == "commitlog_sync"]

    slow = CommitLogSyncs(Counter({latency_bucket(2_000_000): 90, latency_bucket(20_000_000): 10}), True)
    [finding] = found(slow)
    assert finding.saves_ns == 20_000
    evidence = " ".join(finding.evidence)
    assert "100 syncs" in evidence and "data files are on" in evidence
    assert found(CommitLogSyncs(Counter({latency_bucket(1_000_000): 100}), True)) == []
    assert found(None) == []


def test_the_clients_of_a_node_are_its_native_ports_peers_but_casstrace():
    """A live watch's connections: the native port's peers by address (two connections of one client
    add up, IPv6 too), not casstrace's own connection, nor a connection on another port (gossip)."""
    sockets = [
        ("127.0.0.1:9042", "127.0.0.2:40000", 1000),
        ("127.0.0.1:9042", "127.0.0.2:40001", 500),
        ("[::1]:9042", "[::1]:40002", 70),
        ("127.0.0.1:9042", "127.0.0.1:50000", 9999),  # casstrace's own
        ("127.0.0.1:7000", "127.0.0.3:40003", 8888),  # the storage port
    ]
    ends = [(parse_address(local), parse_address(remote), read) for local, remote, read in sockets]
    assert clients_read(ends, ClientSockets.of(9042), ["127.0.0.1:50000"]) == {"127.0.0.2": 1500, "::1": 70}
