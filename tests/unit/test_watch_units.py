"""casstrace watch without a node: statement normalization, the session clock, the jcmd thread list,
the attribution join on synthetic inputs, and the report in every format."""

import dataclasses
import json
import os
import uuid
from collections import Counter

import pytest

import synthetic_traces as synthetic
from casstrace.analyses.watch import (
    UNSAMPLED_REQUESTS,
    Session,
    SlotIO,
    Span,
    WatchInputs,
    WatchTally,
    attribute,
    pool_of,
    summarise,
    summarise_tally,
    tally,
)
from casstrace.analyses.watch_tables import table_reads
from casstrace.errors import CasstraceError
from casstrace.ledger import TRACE_PROBABILITY, Ledger
from casstrace.node.jvm import ThreadIds, parse_thread_print
from casstrace.node.statements import UNREADABLE_STATEMENT, normalize
from casstrace.node.tracing import (
    MS_NS,
    UUID_EPOCH_100NS,
    SampledSession,
    TraceEvent,
    TraceProbability,
    add_events,
    session_start_ns,
)
from casstrace.orchestration.watcher import serving_slots, session_rows
from casstrace.reports import render
from casstrace.reports.watch import document
from casstrace.traces.queries import ReadCall
from casstrace.traces.rows import SessionThreadRow
from casstrace.traces.schema import PAGE_BYTES, THREAD_SLOT_NS
from casstrace.traces.sstable_names import parse_sstable_path

SLOT = 1_000_000
START = 10_000_000_000
DATA = "/var/lib/cassandra/data/ks/wide-0123456789abcdef0123456789abcdef/nb-5-big-Data.db"
INDEX = "/var/lib/cassandra/data/ks/wide-0123456789abcdef0123456789abcdef/nb-5-big-Partitions.db"
NARROW = "/var/lib/cassandra/data/ks/narrow-0123456789abcdef0123456789abcdee/nb-6-big-Data.db"


@pytest.mark.parametrize(
    "statement, normalized",
    [
        ("SELECT c0 FROM ks.t WHERE id = 42 AND name = 'it''s' ;", "SELECT c0 FROM ks.t WHERE id = ? AND name = ?"),
        ("SELECT * FROM t WHERE id IN (1, 2,3) LIMIT 10", "SELECT * FROM t WHERE id IN (?) LIMIT ?"),
        (
            'select "c0  1" from t where u = 123e4567-e89b-12d3-a456-426614174000 and b = 0xCAFE and f = -1.5e3 '
            "and ok = TRUE -- a comment",
            'select "c0  1" from t where u = ? and b = ? and f = ? and ok = ?',
        ),
        ("INSERT INTO t (a, b) VALUES (?, ?) USING TTL 100", "INSERT INTO t (a, b) VALUES (?, ?) USING TTL ?"),
        ("SELECT x1, t.c2, $$secret 7$$ FROM t2", "SELECT x1, t.c2, ? FROM t2"),
        (
            "SELECT c0 FROM\n  casstrace_demo.streams /* why */ WHERE stream_id = 1",
            "SELECT c0 FROM casstrace_demo.streams WHERE stream_id = ?",
        ),
        ("SELECT * FROM t WHERE k = 'cut sho", UNREADABLE_STATEMENT),
    ],
)
def test_normalize_replaces_every_literal(statement, normalized):
    assert normalize(statement) == normalized


def test_normalize_groups_executions_with_different_values():
    assert normalize("SELECT a FROM t WHERE k = 1") == normalize(
        "select a from t where k = 2".replace("select", "SELECT").replace("from", "FROM").replace("where", "WHERE")
    )


def test_thread_print_gives_full_names_and_tids():
    text = (
        '"ReadStage-3" #112 daemon prio=5 os_prio=0 cpu=1.2ms elapsed=41.3s tid=0x7f nid=0x2f0b waiting\n'
        "   java.lang.Thread.State: WAITING (parking)\n"
        '"Native-Transport-Requests-12" #130 daemon prio=5 tid=0x7e nid=12046 runnable\n'
        '"a \\"quoted\\" name" #7 prio=5 tid=0x1 nid=0x10 runnable\n'
    )
    assert parse_thread_print(text) == {
        "ReadStage-3": 0x2F0B,
        "Native-Transport-Requests-12": 12046,
        'a "quoted" name': 16,
    }


class FakeNodetool:
    """A node's trace probability behind nodetool; `failures` makes the next sets fail so."""

    def __init__(self, probability: float):
        self.probability = probability
        self.failures: list[BaseException] = []

    def trace_probability(self) -> float:
        return self.probability

    def set_trace_probability(self, probability: float) -> None:
        if self.failures:
            raise self.failures.pop(0)
        self.probability = probability

    def shown(self, *args: str) -> str:
        return " ".join(("nodetool", *args))


@pytest.fixture
def ledger(tmp_path) -> Ledger:
    """The ledger of a node this test process stands for."""
    return Ledger(os.getpid(), tmp_path)


def test_trace_probability_is_restored_on_the_way_out_whatever_the_way(ledger):
    node, warnings = FakeNodetool(0.002), list[str]()
    with pytest.raises(RuntimeError):
        with TraceProbability(node, 0.3, warnings.append, ledger) as switch:  # type: ignore[arg-type]  # a FakeNodetool for the Nodetool
            assert node.probability == 0.3
            change = ledger.read(TRACE_PROBABILITY)  # written down while it holds
            assert change is not None and (change.original, change.changed_to) == (0.002, 0.3)
            raise RuntimeError("the watch failed")
    assert node.probability == 0.002 and switch.restored and not warnings
    assert ledger.read(TRACE_PROBABILITY) is None


def test_a_second_ctrl_c_during_the_restore_is_retried(ledger):
    node, warnings = FakeNodetool(0.002), list[str]()
    with TraceProbability(node, 0.3, warnings.append, ledger) as switch:  # type: ignore[arg-type]  # a FakeNodetool for the Nodetool
        node.failures = [KeyboardInterrupt()]
    assert node.probability == 0.002 and switch.restored and not warnings


def test_a_restore_that_cannot_be_done_is_said_with_the_command(ledger):
    node, warnings = FakeNodetool(0.002), list[str]()
    with TraceProbability(node, 0.3, warnings.append, ledger) as switch:  # type: ignore[arg-type]  # a FakeNodetool for the Nodetool
        node.failures = [CasstraceError("JMX refused", "fix"), CasstraceError("JMX refused", "fix")]
    assert switch.restored is False and node.probability == 0.3
    assert ledger.read(TRACE_PROBABILITY) is not None  # kept for the next casstrace to put back
    assert "nodetool settraceprobability 0.002" in warnings[0] and "JMX refused" in warnings[0]


def test_nothing_changes_when_the_previous_value_cannot_be_read(ledger):
    class Unreachable(FakeNodetool):
        def trace_probability(self) -> float:
            raise CasstraceError("no JMX", "fix")

    node = Unreachable(0.0)
    with pytest.raises(CasstraceError):
        with TraceProbability(node, 0.3, print, ledger):  # type: ignore[arg-type]  # a FakeNodetool for the Nodetool
            pass
    assert node.probability == 0.0 and ledger.read(TRACE_PROBABILITY) is None


def _event(
    true_ns: int, start_ns: int, thread: str = "ReadStage-1", activity: str = "", source: str | None = None
) -> TraceEvent:
    """(event id time, elapsed, thread, activity, source) as Cassandra writes them: the id's time is the
    millisecond of the event plus a counter, the elapsed time is exact to the µs (from when the node
    that recorded it started: a replica, when it got the request)."""
    return TraceEvent(true_ns // MS_NS * MS_NS + 100, (true_ns - start_ns) // 1000 * 1000, thread, activity, source)


def test_session_start_is_found_well_under_a_millisecond():
    start = 1_795_436_348_416_840_123
    events = [_event(start + offset, start) for offset in (6_715_000, 7_177_000, 8_577_000, 44_604_000, 45_705_000)]
    assert abs(session_start_ns(events, start // MS_NS * MS_NS) - start) < 400_000


def test_events_within_one_millisecond_are_placed_by_the_clients_span():
    """Five events within 200 µs of one millisecond leave the start 800 µs wide: the client's send and
    answer (the events end 100 µs before it) pin it to where they overlap."""
    start = 1_795_436_348_416_740_123
    events = [_event(start + offset, start) for offset in (20_000, 60_000, 100_000, 150_000, 220_000)]
    alone = session_start_ns(events, start // MS_NS * MS_NS)
    client = (start - 30_000, start + 220_000 + 100_000)
    bounds = (client[0], client[1] - max(event.elapsed_ns for event in events))
    assert abs(alone - start) > 150_000  # the middle of the millisecond the events allow
    assert abs(session_start_ns(events, start // MS_NS * MS_NS, bounds) - start) <= 70_000
    # a span that contradicts the events (another machine's clock, say) is left out
    assert session_start_ns(events, start // MS_NS * MS_NS, (start + 5 * MS_NS, start + 6 * MS_NS)) == alone


def test_a_runs_session_is_placed_inside_its_clients_span():
    start = 1_795_436_348_416_740_123
    sampled = SampledSession(
        "id",
        "SELECT a FROM t WHERE k = ?",
        "ONE",
        None,
        start // MS_NS * MS_NS,
        300_000,
        None,
        None,
        None,
        client_span_ns=(start - 30_000, start + 320_000),
    )
    add_events(sampled, [_event(start + offset, start) for offset in (20_000, 220_000)])
    (span,) = sampled.spans
    assert start - 30_000 <= sampled.started_ns and span.last_ns <= start + 320_000
    assert abs(span.first_ns - (start + 20_000)) <= 70_000


def test_sessions_keep_numbers_and_spans_never_activity_texts():
    start = 1_795_436_348_000_000_000
    sampled = SampledSession("id", "SELECT a FROM t WHERE k = ?", "ONE", None, start, 5_000_000, None, None, None)
    add_events(
        sampled,
        [
            _event(start + 100_000, start, "Native-Transport-Requests-1", "Parsing SELECT a FROM t WHERE k = 42"),
            _event(start + 1_000_000, start, "ReadStage-2", "Executing single-partition query on t"),
            _event(start + 2_000_000, start, "ReadStage-2", "Merged data from memtables and 3 sstables"),
            _event(start + 3_000_000, start, "ReadStage-2", "Read 200 live rows and 7 tombstone cells"),
        ],
    )
    assert (sampled.live_rows, sampled.tombstone_cells, sampled.sstables_merged) == (200, 7, 3)
    assert [(s.thread, s.events) for s in sampled.spans] == [("Native-Transport-Requests-1", 1), ("ReadStage-2", 3)]
    read_stage = sampled.spans[1]
    assert abs(read_stage.last_ns - read_stage.first_ns - 2_000_000) < 2000
    assert "42" not in repr(sampled)


def test_shared_pool_threads_resolve_by_worker_id_whatever_they_are_called_now():
    ids = ThreadIds().add(
        {"ReadStage-2": 12046, "MutationStage-3": 12059, "CompactionExecutor:1": 100, "epollEventLoopGroup-5-2": 200}
    )
    ids.add({"Native-Transport-Requests-2": 12046})  # later: worker 2 serves the native transport
    assert ids.tid("Native-Transport-Requests-3") == ids.tid("ReadStage-3") == 12059
    assert ids.tid("ReadStage-2") == 12046
    assert ids.tid("CompactionExecutor:1") == 100 and ids.tid("ReadStage-9") is None
    assert ids.tid("Native-Transport-Requests-5") is None  # not epollEventLoopGroup-5-2
    # /proc's names are cut at 15 characters: 'MutationStage-29' reads 'MutationStage-2', which is no
    # worker 2 (that one stays the thread the JVM's list named); one shorter keeps its whole id
    ids.add({"MutationStage-2": 16620, "ReadStage-7": 12070}, cut=True)
    assert ids.tid("ReadStage-2") == 12046 and ids.tid("MutationStage-7") == 12070


def test_uuid_time_conversion():
    event_id = uuid.UUID("15258000-e738-11f1-b109-27cec110265b")
    assert 1_795_400_000 < (event_id.time - UUID_EPOCH_100NS) / 1e7 < 1_795_500_000


def _inputs(sessions, spans, io, probability=0.5, names=None):
    files = {1: DATA, 2: INDEX, 3: NARROW, 4: "/var/log/cassandra/system.log"}
    return WatchInputs(
        sessions=sessions,
        spans=spans,
        thread_io=io,
        sstables={file_id: name for file_id, path in files.items() if (name := parse_sstable_path(path))},
        thread_names=names
        or {101: "ReadStage-1", 102: "ReadStage-2", 201: "CompactionExecutor:1", 301: "Native-Transport-Requests-1"},
        capture_start_ns=START,
        slot_ns=SLOT,
        probability=probability,
        duration_s=10.0,
    )


def _session(number, statement, start_slot, rows=200, duration_ms=20):
    return Session(number, statement, "LOCAL_ONE", START + start_slot * SLOT, duration_ms * MS_NS, rows, 0, 1)


def _span(number, tid, first_slot, last_slot, thread="ReadStage-1"):
    return Span(number, thread, tid, START + first_slot * SLOT + 300_000, START + last_slot * SLOT + 600_000)


def test_a_session_gets_its_threads_bytes_in_its_slots_and_the_rest_goes_to_pools():
    wide, narrow = "SELECT c0 FROM ks.wide WHERE k = ?", "SELECT v FROM ks.narrow WHERE k = ? AND c = ?"
    io = [SlotIO(101, slot, 1, 1_000_000, 0) for slot in range(10, 20)]  # wide, on ReadStage-1
    io += [SlotIO(101, 15, 2, 4096, 0)]  # its index read
    io += [SlotIO(102, 40, 3, 16_384, 8)]  # narrow: a read, its fills
    io += [SlotIO(101, 60, 1, 5_000_000, 0)]  # an unsampled wide read
    io += [SlotIO(201, slot, 1, 2_000_000, 0) for slot in range(5)]  # compaction
    io += [SlotIO(101, 12, 4, 999, 0)]  # not an SSTable
    inputs = _inputs(
        [_session(1, wide, 10), _session(2, narrow, 40)],
        [
            _span(1, 101, 10, 18),
            _span(2, 102, 40, 40, "ReadStage-2"),
            _span(2, None, 39, 39, "Native-Transport-Requests-9"),
        ],
        io,
    )
    claimed, unclaimed = attribute(inputs)
    assert sum(f[0] for f in claimed[1].values()) == 10_000_000 + 4096
    assert claimed[2][3] == [8 * PAGE_BYTES, 16_384, 8 * PAGE_BYTES]
    assert unclaimed == {(None, 101): 5_000_000, (None, 201): 10_000_000}

    watch = summarise(inputs, {"node": {"host": "127.0.0.1", "port": 9042}})
    first, second = watch.statements
    assert first.statement == wide and first.sampled_executions == 1 and first.estimated_executions == 2
    assert first.data_read_bytes_per_execution == 10_000_000
    assert first.sstable_read_bytes_per_execution == 10_004_096
    assert first.bytes_per_row == 50_000
    assert {(c.table, c.component) for c in first.components} == {("ks.wide", "Data"), ("ks.wide", "Partitions")}
    assert second.data_read_bytes_per_execution == 8 * PAGE_BYTES  # a fill beyond the read counts once
    assert second.unmatched_threads == ["Native-Transport-Requests-9"]
    assert first.run_command == "casstrace run --host 127.0.0.1 --port 9042 'SELECT c0 FROM ks.wide WHERE k = ?'"
    assert watch.sstable_bytes == 10_004_096 + 8 * PAGE_BYTES + 5_000_000 + 10_000_000
    assert watch.explained_bytes == 10_004_096 + 8 * PAGE_BYTES
    assert [(p.pool, p.what, p.sstable_bytes) for p in watch.unexplained] == [
        ("CompactionExecutor", "compaction", 10_000_000),
        ("SharedPool", UNSAMPLED_REQUESTS, 5_000_000),
    ]


def test_a_slot_two_sessions_claim_is_shared_not_counted_twice():
    statement = "SELECT a FROM ks.wide WHERE k = ?"
    io = [SlotIO(101, 20, 1, 3_000_000, 0)]
    inputs = _inputs(
        [_session(1, statement, 10), _session(2, statement, 21)], [_span(1, 101, 10, 19), _span(2, 101, 21, 25)], io
    )
    claimed, unclaimed = attribute(inputs)
    assert claimed[1][1][0] == claimed[2][1][0] == 1_500_000
    assert not unclaimed
    assert summarise(inputs, {}).explained_bytes == 3_000_000


def test_a_margin_slot_never_takes_bytes_from_the_next_session_s_core():
    heavy, light = "SELECT a FROM ks.wide WHERE k = ?", "SELECT b FROM ks.narrow WHERE k = ?"
    io = [SlotIO(101, slot, 1, 1_000_000, 0) for slot in range(10, 20)] + [SlotIO(101, 21, 3, 4096, 0)]
    inputs = _inputs(
        [_session(1, heavy, 10), _session(2, light, 20)], [_span(1, 101, 10, 19), _span(2, 101, 20, 21)], io
    )
    claimed, _ = attribute(inputs)
    assert claimed[1][1][0] == 10_000_000 and claimed[2][3][0] == 4096 and 1 not in claimed[2]


def test_a_session_takes_only_the_files_of_the_table_it_reads():
    """The thread goes straight on to an unsampled read of another table, in the same slot."""
    narrow = "SELECT v FROM ks.narrow WHERE k = ? AND c = ?"
    io = [SlotIO(102, 40, 3, 16_384, 0), SlotIO(102, 40, 1, 3_000_000, 0), SlotIO(102, 41, 1, 3_000_000, 0)]
    claimed, unclaimed = attribute(_inputs([_session(1, narrow, 40)], [_span(1, 102, 40, 40, "ReadStage-2")], io))
    assert dict(claimed[1]) == {3: [16_384, 16_384, 0]}
    assert unclaimed == {(None, 102): 6_000_000}


def test_logged_calls_keep_a_neighbour_s_reads_in_a_shared_millisecond_the_neighbour_s():
    """A sampled narrow read, then at once an unsampled one of the same table, in one slot."""
    narrow = "SELECT v FROM ks.narrow WHERE k = ? AND c = ?"
    at = START + 40 * SLOT
    io = [SlotIO(102, 40, 3, 2 * 16_384, 4)]  # both reads, and 4 pages filled
    inputs = _inputs([_session(1, narrow, 40)], [Span(1, "ReadStage-2", 102, at + 100_000, at + 300_000)], io)
    inputs.calls = [ReadCall(102, at + 200_000, 3, 16_384), ReadCall(102, at + 700_000, 3, 16_384)]
    claimed, unclaimed = attribute(inputs)
    assert claimed[1][3] == [16_384, 16_384, 4 * PAGE_BYTES]  # no fill beyond the reads: none added
    assert unclaimed == {(None, 102): 16_384}
    without_calls, _ = attribute(_inputs(inputs.sessions, inputs.spans, io))
    assert without_calls[1][3][0] == 2 * 16_384  # by slot, it would take both


def test_statements_rank_by_estimated_bytes_and_latency_percentiles_come_from_durations():
    heavy, light = "SELECT a FROM ks.wide WHERE k = ?", "SELECT b FROM ks.narrow WHERE k = ?"
    sessions = [_session(1, heavy, 10, duration_ms=30)]
    sessions += [_session(n, light, 10 * n, duration_ms=n) for n in range(2, 12)]
    spans = [_span(1, 101, 10, 12)] + [_span(n, 102, 10 * n, 10 * n, "ReadStage-2") for n in range(2, 12)]
    io = [SlotIO(101, 11, 1, 900_000, 0)] + [SlotIO(102, 10 * n, 3, 10_000, 0) for n in range(2, 12)]
    watch = summarise(_inputs(sessions, spans, io, probability=0.1), {})
    assert [s.statement for s in watch.statements] == [heavy, light]
    assert watch.statements[1].estimated_executions == pytest.approx(100)
    assert watch.statements[1].latency_p50_s == pytest.approx(0.006)
    assert watch.statements[1].latency_p99_s == pytest.approx(0.011)


def test_a_watch_cut_into_stretches_adds_up_to_the_whole_watch():
    """--interval: the stretches' tallies added are the tally of the whole watch: the same figures,
    verdicts and causes, as the summary at its end shows."""
    heavy, light = "SELECT a FROM ks.wide WHERE k = ?", "SELECT b FROM ks.narrow WHERE k = ?"
    sessions = [_session(n, heavy, 10 * n, duration_ms=30 + n) for n in range(1, 6)]
    sessions += [_session(n, light, 10 * (n - 5) + 3, rows=n, duration_ms=n) for n in range(6, 12)]
    spans = [
        _span(s.session, 101 if s.statement == heavy else 102, *(2 * [(s.started_ns - START) // SLOT]))
        for s in sessions
    ]
    io = [SlotIO(101, 10 * n, 1, 100_000 * n, n) for n in range(1, 6)] + [
        SlotIO(101, 10 * n, 2, 4096, 0) for n in range(1, 6)
    ]
    io += [SlotIO(102, 10 * (n - 5) + 3, 3, 1000 * n, 0) for n in range(6, 12)] + [
        SlotIO(201, s, 1, 7, 1) for s in range(60)
    ]
    inputs = _inputs(sessions, spans, io, probability=0.1)
    inputs.mapped_touched = {2: 8192}
    meta = {"node": {"host": "127.0.0.1", "port": 9042}}
    whole = summarise(inputs, meta)

    cut = 35  # a slot between two sessions' reads: stretch one before it, stretch two from it
    stretches = [
        _inputs(
            [s for s in sessions if keep((s.started_ns - START) // SLOT)],
            spans,
            [row for row in io if keep(row.slot)],
            probability=0.1,
        )
        for keep in (lambda slot: slot < cut, lambda slot: slot >= cut)
    ]
    stretches[0].mapped_touched, stretches[1].mapped_touched = {2: 4096}, {2: 4096}
    added = WatchTally(0.1)
    for stretch in stretches:
        added.add(tally(stretch, meta))
    summed = summarise_tally(added)
    assert summed.duration_s == 2 * whole.duration_s == 20.0  # each stretch's own duration
    assert (summed.sstable_bytes, summed.explained_bytes) == (whole.sstable_bytes, whole.explained_bytes)
    assert summed.unexplained == whole.unexplained and summed.mapped_touched == whole.mapped_touched
    for mine, theirs in zip(summed.statements, whole.statements, strict=True):
        assert dataclasses.replace(mine, components=[]) == dataclasses.replace(theirs, components=[])
        assert [(c.table, c.component) for c in mine.components] == [(c.table, c.component) for c in theirs.components]
        for a, b in zip(mine.components, theirs.components):
            assert a.bytes_per_execution == pytest.approx(b.bytes_per_execution)
    assert table_reads(added) == table_reads(tally(inputs, meta))
    assert whole.statements[0].latency_p99_s == pytest.approx(0.035)  # exact, from the durations


def test_the_summary_of_intervals_spans_them_all_and_knows_every_interval_s_tables():
    def meta(start_s: int, table: str) -> dict:
        return {
            "clock_offset_ns": 1_795_000_000 * 10**9,
            "watch": {"start_ns": start_s * 10**9, "end_ns": (start_s + 600) * 10**9},
            "cassandra": {"tables": [{"keyspace": "ks", "table": table}]},
        }

    added = WatchTally(0.01)
    for start_s, table in ((0, "a"), (600, "b")):
        added.add(tally(_inputs([], [], []), meta(start_s, table)))
    summary = summarise_tally(added)
    assert summary.context["watched"] == "2026-11-18 11:06:40 – 11:26:40 UTC"  # from the first to the last
    assert [t["table"] for t in added.meta["cassandra"]["tables"]] == ["a", "b"]


def test_pool_names():
    assert pool_of("ReadStage-12") == pool_of("Native-Transport-Requests-3") == "SharedPool"
    assert pool_of("CompactionExecutor:3") == "CompactionExecutor"
    assert pool_of("main") == "main"


def test_mapped_pages_touched_are_shown_per_table_never_charged_to_a_statement():
    inputs = _inputs([], [], [SlotIO(101, 3, 1, 1000, 0)])
    inputs.mapped_touched = {2: 8192, 4: 4096}  # the wide table's Partitions, a log file
    watch = summarise(inputs, {})
    assert [(m.table, m.component, m.touched_bytes) for m in watch.mapped_touched] == [("ks.wide", "Partitions", 8192)]
    assert watch.sstable_bytes == 1000
    assert summarise(_inputs([], [], []), {}).mapped_touched is None


@pytest.mark.parametrize("format_", ["text", "md", "json", "html"])
def test_the_report_renders_in_every_format(format_):
    wide = "SELECT c0 FROM ks.wide WHERE k = ?"
    inputs = _inputs(
        [_session(1, wide, 10)],
        [_span(1, 101, 10, 18)],
        [SlotIO(101, slot, 1, 1_000_000, 0) for slot in range(10, 20)] + [SlotIO(201, 3, 1, 7, 0)],
    )
    watch = summarise(inputs, {"node": {"host": "127.0.0.1", "port": 9042}})
    text = render(document(watch), format_)
    assert "SELECT c0 FROM ks.wide WHERE k = ?" in text or "SELECT c0 FROM ks.wide WHERE k = ?" in json.dumps(text)
    if format_ == "json":
        statement = json.loads(text)["statements"][0]
        for key in (
            "query",
            "sampled_executions",
            "estimated_executions",
            "data_read_bytes_per_execution",
            "rows_per_execution",
            "latency_p50_s",
            "latency_p99_s",
            "findings",
        ):
            assert key in statement
        assert statement["data_read_bytes_per_execution"] == 10_000_000


def _wide_table_meta(storage):
    return {
        "cassandra": {
            "tables": [
                {
                    "keyspace": "ks",
                    "table": "wide",
                    "columns": [
                        {"name": "k", "type": "int", "kind": "partition_key"},
                        {"name": "ts", "type": "int", "kind": "clustering"},
                    ]
                    + [{"name": f"c{i}", "type": "blob", "kind": "regular"} for i in range(20)],
                    "partition_key": ["k"],
                    "clustering": ["ts"],
                    "compression": {
                        "class": "org.apache.cassandra.io.compress.LZ4Compressor",
                        "chunk_length_in_kb": "16",
                    },
                    "sstables": [],
                    "storage": storage,
                }
            ]
        }
    }


WIDE_STORAGE = [synthetic.WATCH_STORAGE]  # one SSTable of 200 rows x 20 cells


@pytest.mark.parametrize(
    "rows, data_read, verdict",
    [
        (1, 16_456, "not flagged"),  # a point read: one chunk, what its row needs
        (200, 300_000_000, "flagged"),  # 200 rows read whole: far past 200 rows of the table's mean cell
        (200, 10_000_000, "undetermined"),  # past the least 200 rows of one blob take, not past the mean cell
    ],
)
def test_a_statement_gets_the_verdict_run_would_give(rows, data_read, verdict):
    statement = "SELECT c0 FROM ks.wide WHERE k = ?"
    io = [SlotIO(101, 11, 1, data_read, 0)]
    watch = summarise(
        _inputs([_session(1, statement, 10, rows=rows)], [_span(1, 101, 10, 12)], io), _wide_table_meta(WIDE_STORAGE)
    )
    [judged] = watch.statements
    assert judged.verdict == verdict
    assert judged.necessary_bytes_per_execution is not None
    if verdict == "not flagged":
        assert judged.findings == []
    else:
        # no payload in a watch: nothing to estimate the read after the fix with, so "possible"
        assert (judged.findings[0].cause, judged.findings[0].certainty) == ("full_row_read", "possible")


def test_running_figures_add_the_intervals_done_and_the_stretch_in_progress(tmp_path):
    """What the live table, the metrics endpoint and the summary read (analyses.watch.RunningFigures)."""
    from casstrace.analyses.watch import RunningFigures, analyse_watch, load
    from casstrace.traces import Trace

    paths = [synthetic.watch(tmp_path / f"i{n}.trace", data_read=100_000 * n) for n in (1, 2, 3)]
    figures = RunningFigures()
    assert [figures.add_interval(analyse_watch(path), path) for path in paths[:2]] == [1, 2]
    with Trace(paths[2]) as current:
        so_far = figures.so_far(load(current))
    (statement,) = so_far.statements.values()
    assert statement.executions == 3 and so_far.sstable_bytes == 600_000
    summary = figures.summary()
    assert summary.sstable_bytes == 300_000 and summary.statements[0].sampled_executions == 2
    assert summary.trace_path == f"{paths[0]} … i2.trace (2 intervals)" and summary.complete


def test_the_p99_without_the_executions_a_jvm_pause_overlapped():
    """100 executions of 2 ms a second apart, but the 3 a long GC pause overlapped (50-52 s): the p99 is
    theirs with them, 2 ms without; a pause that ends as an execution starts overlaps none."""
    point = "SELECT v FROM ks.narrow WHERE k = ? AND c = ?"
    second = 1000 * SLOT
    sessions = [
        _session(n, point, n * 1000, rows=1, duration_ms=202 if n in (50, 51, 52) else 2) for n in range(1, 101)
    ]
    pause = (START + 50 * second - MS_NS, START + 52 * second + MS_NS)
    before = (START + 20 * second - 5 * MS_NS, START + 20 * second)  # ends as execution 20 starts
    inputs = dataclasses.replace(_inputs(sessions, [], []), pauses=[pause, before])
    (statement,) = summarise(inputs, {}).statements
    assert statement.paused_executions == 3
    assert statement.latency_p99_s == pytest.approx(0.202)
    assert statement.latency_p99_without_pauses_s == pytest.approx(0.002)
    for fmt in ("text", "md", "html"):
        assert "p99 without pauses" in render(document(summarise(inputs, {})), fmt)
    data = json.loads(render(document(summarise(inputs, {})), "json"))["statements"][0]
    assert (data["paused_executions"], data["latency_p99_without_pauses_s"]) == (3, pytest.approx(0.002))
    # not measured: no figure, never 0
    (unmeasured,) = summarise(_inputs(sessions, [], []), {}).statements
    assert unmeasured.paused_executions is None and unmeasured.latency_p99_without_pauses_s is None


def test_a_replica_s_events_are_timed_from_its_own_start_and_kept_apart():
    """A QUORUM read: the coordinator (127.0.0.1) and a replica (127.0.0.2) both trace on a 'ReadStage-1';
    the replica counts its elapsed time from when it got the request, 2 ms after the session began."""
    start = 1_795_436_348_000_000_000
    sampled = SampledSession("id", "SELECT a FROM t WHERE k = ?", "QUORUM", None, start, 5_000_000, None, None, None)
    replica_start = start + 2_000_000
    add_events(
        sampled,
        [
            _event(start + 100_000, start, "Native-Transport-Requests-2", source="127.0.0.1"),
            _event(start + 500_000, start, "ReadStage-1", source="127.0.0.1"),
            _event(start + 900_000, start, "ReadStage-1", source="127.0.0.1"),
            _event(replica_start + 300_000, replica_start, "ReadStage-1", source="127.0.0.2"),
            _event(replica_start + 1_300_000, replica_start, "ReadStage-1", source="127.0.0.2"),
        ],
    )
    spans = {(s.source, s.thread): s for s in sampled.spans}
    assert set(spans) == {
        ("127.0.0.1", "Native-Transport-Requests-2"),
        ("127.0.0.1", "ReadStage-1"),
        ("127.0.0.2", "ReadStage-1"),
    }
    replica = spans["127.0.0.2", "ReadStage-1"]
    assert abs(replica.first_ns - (replica_start + 300_000)) < 1_000_000 and replica.events == 2
    assert abs(sampled.started_ns - start) < 1_000_000

    coordinator = ThreadIds({"127.0.0.1"}, node_id=1).add({"ReadStage-1": 11, "Native-Transport-Requests-2": 12})
    other = ThreadIds({"127.0.0.2"}, node_id=2).add({"ReadStage-1": 21})
    _, rows = session_rows([sampled], [coordinator, other], 0)
    assert {(row["source"], row["thread"], row["node_id"], row["tid"]) for row in rows} == {
        ("127.0.0.1", "Native-Transport-Requests-2", 1, 12),
        ("127.0.0.1", "ReadStage-1", 1, 11),
        ("127.0.0.2", "ReadStage-1", 2, 21),
    }
    # A run of the coordinator alone: the replica's events are no thread of its own.
    _, alone = session_rows([sampled], [ThreadIds({"127.0.0.1"}).add({"ReadStage-1": 11})], 0)
    assert {(row["source"], row["node_id"], row["tid"]) for row in alone if row["thread"] == "ReadStage-1"} == {
        ("127.0.0.1", None, 11)
    }


def test_each_node_s_threads_claim_only_that_node_s_slots():
    """The same tid on two nodes (two machines): the session's span on node 1 claims node 1's reads only."""
    narrow = "SELECT v FROM ks.narrow WHERE k = ? AND c = ?"
    io = [SlotIO(102, 40, 3, 16_384, 0, node_id=1), SlotIO(102, 40, 3, 65_536, 0, node_id=2)]
    span = Span(1, "ReadStage-2", 102, START + 40 * SLOT + 100_000, START + 40 * SLOT + 300_000, node_id=1)
    claimed, unclaimed = attribute(_inputs([_session(1, narrow, 40)], [span], io))
    assert dict(claimed[1]) == {3: [16_384, 16_384, 0]}
    assert unclaimed == {(2, 102): 65_536}


def test_watch_judges_by_the_rule_it_is_given_and_a_filtering_scan_as_run_does():
    """--threshold reaches watch's verdicts; a filtering scan is flagged past --min-excess whatever the
    ratio, in watch as in run (VerdictRule.for_read)."""
    from casstrace.analyses.verdict_rule import VerdictRule

    def verdict(statement: str, rows: int, data_read: int, rule: VerdictRule) -> str:
        io = [SlotIO(101, 11, 1, data_read, 0)]
        inputs = _inputs([_session(1, statement, 10, rows=rows)], [_span(1, 101, 10, 12)], io)
        [judged] = summarise(inputs, _wide_table_meta(WIDE_STORAGE), rule=rule).statements
        return judged.verdict

    point = "SELECT c0 FROM ks.wide WHERE k = ?"
    assert verdict(point, 200, 300_000_000, VerdictRule()) == "flagged"
    assert verdict(point, 200, 300_000_000, VerdictRule(threshold=1e9)) == "not flagged"
    scan = "SELECT c0 FROM ks.wide WHERE c1 = ? ALLOW FILTERING"
    assert verdict(scan, 1, 200_000, VerdictRule()) == "flagged"  # 4x its necessary read
    assert verdict(scan, 1, 200_000, VerdictRule(min_excess=1 << 20)) == "not flagged"


def test_a_watch_trace_keeps_the_cpu_slots_its_sessions_threads_meet_only():
    """The request threads' CPU slots the sampled sessions' spans meet, widened by the events' margin
    (250 µs: the slot before a span starting 0.1 ms into its slot is met, the one after a span ending
    0.9 ms into its slot too); another thread's, or a slot farther off, is left out of the trace."""
    slot = THREAD_SLOT_NS
    spans: list[SessionThreadRow] = [
        {"session": 1, "thread": "Native-Transport-Requests-1", "tid": 7, "first_ns": 10 * slot + 100_000,
         "last_ns": 11 * slot + 900_000, "events": 3, "source": "127.0.0.1", "node_id": None},
        {"session": 2, "thread": "MutationStage-2", "tid": None, "first_ns": 30 * slot,
         "last_ns": 30 * slot + 10, "events": 1, "source": "127.0.0.1", "node_id": None},
    ]  # fmt: skip
    cpu = Counter({(7, 8): 1, (7, 9): 2, (7, 10): 3, (7, 11): 4, (7, 12): 5, (7, 13): 6, (8, 10): 7, (9, 30): 8})
    kept = serving_slots(cpu, spans)
    assert [(row["tid"], row["ts_ns"] // slot, row["oncpu_ns"]) for row in kept] == [
        (7, 9, 2),
        (7, 10, 3),
        (7, 11, 4),
        (7, 12, 5),
    ]
    assert all(row["slot_ns"] == slot for row in kept)
