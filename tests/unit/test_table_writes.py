"""analyses/table_writes.py: per table, the flushes, compactions and write amplification of a watch, from
hand-built thread_io rows whose every byte is known; its findings; and what the reports and the
metrics page show of it (tests/integration/test_watch_table_writes.py runs it on a node)."""

import json
from collections.abc import Sequence
from pathlib import Path

import pytest

from casstrace.analyses.table_writes import (
    MANY_SMALL_FLUSHING_TABLES,
    SMALL_FLUSH_BYTES,
    TableWrites,
    TableWriteTally,
    table_findings,
    table_writes,
    tally_writes,
)
from casstrace.analyses.watch import RunningFigures, WatchInputs, summarise, tally
from casstrace.reports import render
from casstrace.reports.prometheus import Exposition
from casstrace.reports.watch import document
from casstrace.traces.meta import TableBackgroundMeta
from casstrace.traces.queries import StatementSession, ThreadIO

DATA = "/var/lib/cassandra/data/ks/t-0123456789abcdef0123456789abcdef"
FLUSH, POST_FLUSH, COMPACTION, REQUESTS, COMMIT_LOG = 1, 2, 3, 4, 5
THREADS = {
    FLUSH: "PerDiskMemtableFlushWriter_0:1",
    POST_FLUSH: "MemtableFlushWriter:1",
    COMPACTION: "CompactionExecutor:1",
    REQUESTS: "ReadStage-1",
    COMMIT_LOG: "COMMIT-LOG-ALLOCATOR",
}
FILES = {
    1: f"{DATA}/nb-5-big-Data.db",
    2: f"{DATA}/nb-5-big-Index.db",
    3: f"{DATA}/nb-5-big-TOC.txt",
    4: f"{DATA}/nb-6-big-Data.db",
    5: f"{DATA}/nb-7-big-Data.db",  # compaction's output of 5 and 6
    6: f"{DATA}/nb-7-big-Statistics.db",
    7: "/var/lib/cassandra/commitlog/CommitLog-7-1.log",
}


def io(tid: int, slot: int, file_id: int, read: int = 0, written: int | None = 0) -> ThreadIO:
    return ThreadIO(tid, slot, file_id, 1 if read else 0, read, 0, None, 1 if written else 0, written, None, None)


# Flush of generation 5: 600 + 400 bytes of Data over two slots, 100 of Index, 20 of TOC by the flush
# pool's other thread: 1,120 bytes. Flush of generation 6: 300. Compaction reads both Data files (1,300)
# and writes generation 7 (1,200 + 90), then opens it (40 bytes of its Statistics: not an input).
ROWS = [
    io(FLUSH, 0, 1, written=600),
    io(FLUSH, 1, 1, written=400),
    io(FLUSH, 1, 2, written=100),
    io(POST_FLUSH, 2, 3, written=20),
    io(FLUSH, 3, 4, written=300),
    io(COMPACTION, 4, 1, read=1000),
    io(COMPACTION, 4, 4, read=300),
    io(COMPACTION, 5, 5, written=1200),
    io(COMPACTION, 5, 6, read=40, written=90),
    io(REQUESTS, 5, 4, read=300),  # a read request: not background work
    io(COMMIT_LOG, 5, 7, written=5000),  # no SSTable: no table's
]
RECEIVED = 2000
FLUSH_BYTES, COMPACTED_BYTES = 1120 + 300, 1200 + 90


def inputs(rows: list[ThreadIO], sessions: Sequence[StatementSession] = ()) -> WatchInputs:
    return WatchInputs.from_rows(
        sessions, [], rows, FILES, THREADS, capture_start_ns=0, slot_ns=1, probability=1.0, duration_s=10.0
    )


def background(start: dict[str, int], end: dict[str, int]) -> dict:
    return {
        "table_background": {
            "pending_compactions_start": start,
            "pending_compactions_end": end,
            "pending_compactions_max": {t: max(start.get(t, 0), end.get(t, 0)) for t in start | end},
            "received_bytes": {"ks.t": RECEIVED},
        }
    }


def test_flushes_and_compactions_by_table_from_the_writing_threads_role():
    reads = [
        StatementSession(n, str(n), "SELECT * FROM ks.t WHERE id = ?", None, None, n, 10, 1, 0, merged)
        for n, merged in enumerate((1, 3, 2), start=1)
    ]
    watched = summarise(inputs(ROWS, reads), background({"ks.t": 1}, {"ks.t": 1}))
    [table] = watched.table_writes
    assert table.table == "ks.t"
    assert (table.flushes, table.flush_bytes, table.flush_sizes) == (2, FLUSH_BYTES, [300, 1120])
    assert (table.compaction_read_bytes, table.compaction_written_bytes) == (1300, COMPACTED_BYTES)
    assert table.received_bytes == RECEIVED
    assert table.write_amplification == pytest.approx((FLUSH_BYTES + COMPACTED_BYTES) / RECEIVED)
    assert (table.pending_compactions_start, table.pending_compactions_end, table.pending_compactions_max) == (1, 1, 1)
    assert table.sstables_per_read is not None
    assert (table.sstables_per_read.reads, table.sstables_per_read.mean, table.sstables_per_read.most) == (3, 2.0, 3)
    assert watched.table_findings == []  # one table, pending compactions steady


def test_a_trace_from_before_the_write_path_has_no_write_figures():
    unmeasured = [row._replace(write_calls=None, write_bytes=None) for row in ROWS]
    [table] = summarise(inputs(unmeasured), background({}, {})).table_writes
    assert (table.flushes, table.flush_bytes, table.compaction_written_bytes, table.write_amplification) == (
        None,
        None,
        None,
        None,
    )
    assert table.received_bytes == RECEIVED
    text = render(document(summarise(inputs(unmeasured), background({}, {}))), "text")
    assert "not measured" in text


def test_intervals_add_up_to_the_whole_watch():
    """A flush cut by an interval's end is one flush: its SSTable's bytes from both intervals."""
    whole = tally(inputs(ROWS), {})
    figures = RunningFigures()
    for part in (ROWS[:1], ROWS[1:]):
        watched = summarise(inputs(part), {})
        figures.add_interval(watched, Path(f"part-{len(figures.traces)}.trace"))
    assert figures.done is not None and whole.writes is not None
    assert figures.done.writes == whole.writes
    [table] = figures.summary().table_writes
    assert table.flush_sizes == [300, 1120]


def _flushes(table: str, sizes: list[int]) -> TableWriteTally:
    return TableWriteTally(flushed={table: {f"{table} gen {n}": size for n, size in enumerate(sizes)}})


def test_many_small_flushes_flagged_on_many_tables_not_on_one():
    many = TableWriteTally()
    for n in range(MANY_SMALL_FLUSHING_TABLES):
        many.add(_flushes(f"ks.t{n}", [10_000, 12_000]))
    [finding] = table_findings(table_writes(many, None, {}))
    assert finding.cause == "small_flushes"
    assert len(finding.tables) == MANY_SMALL_FLUSHING_TABLES
    assert finding.saves_bytes == MANY_SMALL_FLUSHING_TABLES * 22_000
    # nor the node's own tables (a schema change flushes the schema's, each a small SSTable)
    for n in range(MANY_SMALL_FLUSHING_TABLES):
        many.add(_flushes(f"system_schema.t{n}", [5_000]))
    [finding] = table_findings(table_writes(many, None, {}))
    assert len(finding.tables) == MANY_SMALL_FLUSHING_TABLES
    # one table flushing small SSTables as often: not the many-tables pattern
    assert table_findings(table_writes(_flushes("ks.t", [10_000] * 40), None, {})) == []
    # nor many tables flushing large ones
    large = TableWriteTally()
    for n in range(MANY_SMALL_FLUSHING_TABLES):
        large.add(_flushes(f"ks.t{n}", [SMALL_FLUSH_BYTES]))
    assert table_findings(table_writes(large, None, {})) == []


def test_compaction_falling_behind_when_pending_compactions_grow():
    grown: TableBackgroundMeta = {
        "pending_compactions_start": {"ks.t": 2},
        "pending_compactions_end": {"ks.t": 7, "ks.u": 1},
        "pending_compactions_max": {"ks.t": 7, "ks.u": 1},
    }
    tables = table_writes(tally_writes(ROWS, *_names()), grown, {})
    findings = table_findings(tables)
    assert [(f.cause, f.tables) for f in findings] == [("compaction_behind", ["ks.t"]), ("compaction_behind", ["ks.u"])]
    assert findings[0].saves_bytes == FLUSH_BYTES  # weighed by what it flushed: the bytes compaction has to merge
    steady: TableBackgroundMeta = {**grown, "pending_compactions_end": {"ks.t": 2}}
    assert [f.tables for f in table_findings(table_writes(None, steady, {}))] == []


def _names() -> tuple[dict, dict]:
    watch_inputs = inputs([])
    return watch_inputs.sstables, THREADS


def test_every_format_and_the_metrics_page_carry_the_figures():
    watched = summarise(inputs(ROWS), background({"ks.t": 0}, {"ks.t": 3}))
    data = json.loads(render(document(watched), "json"))["background"]
    [table] = data["tables"]
    assert (table["flush_bytes"], table["compaction_written_bytes"], table["written_bytes"]) == (
        FLUSH_BYTES,
        COMPACTED_BYTES,
        FLUSH_BYTES + COMPACTED_BYTES,
    )
    assert table["write_amplification"] == pytest.approx(1.355)
    assert [f["cause"] for f in data["findings"]] == ["compaction_behind"]
    for format_ in ("text", "md", "html"):
        rendered = render(document(watched), format_)
        assert "Write amplification" in rendered, format_
        assert f"{(FLUSH_BYTES + COMPACTED_BYTES) / RECEIVED:.2f}x" in rendered, format_
        assert "Compaction falling behind on ks.t" in rendered, format_
    page = Exposition(top=5).page(watched, [])
    assert f'casstrace_table_write_bytes_total{{table="ks.t",by="flush"}} {FLUSH_BYTES}' in page
    assert f'casstrace_table_write_bytes_total{{table="ks.t",by="compaction"}} {COMPACTED_BYTES}' in page
    assert 'casstrace_table_compaction_read_bytes_total{table="ks.t"} 1300' in page
    assert 'casstrace_table_flushes_total{table="ks.t"} 2' in page
    assert 'casstrace_table_write_amplification_ratio{table="ks.t"} 1.355' in page


def test_a_table_written_to_but_never_flushed_has_no_amplification():
    table = TableWrites("ks.t", 0, 0, [], 0, 0, None, None, None, None, None)
    assert table.written_bytes == 0 and table.write_amplification is None
