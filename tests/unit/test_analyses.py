"""Analyses on traces built from known events: exact numbers, and causes named only on evidence."""

import shutil

import pytest

import synthetic_traces as synthetic
from casstrace.analyses import VerdictRule, analyse, pages
from casstrace.analyses.compare import Payload, check_payload, percentile
from casstrace.analyses.query import parse_select
from casstrace.analyses.sweep import linear_fit
from casstrace.errors import CasstraceError
from casstrace.traces import Trace, TraceWriter


@pytest.fixture
def wide(tmp_path):
    return analyse(synthetic.wide_select_c0(tmp_path / "wide.trace"))


def causes(analysis):
    return [finding.cause for finding in analysis.findings]


def test_full_row_read_is_flagged_with_exact_amplification(wide):
    o = wide.overall
    assert wide.scope == "1 measured execution"
    assert (o.basis, o.basis_bytes, o.payload_bytes, o.wire_bytes) == ("payload", 20_000, 20_000, 26_000)
    assert (o.syscall_bytes, o.cache_miss_bytes, o.cache_outside_syscall_bytes) == (62_574_072, 0, 0)
    assert o.data_read_bytes == 62_574_072
    assert o.read == o.syscall == 62_574_072 / 20_000
    assert o.device == 0.0
    assert o.wire == 62_574_072 / 26_000
    assert (o.data_files, o.sstables_read) == (1, 1)
    assert wide.verdict.status == "flagged"
    assert "3,129x" in wide.verdict.summary
    assert causes(wide) == ["full_row_read", "whole_partition_scan"]
    full_row = wide.findings[0]
    assert full_row.certainty == "likely"
    # 1 of 20 regular columns; 200 rows; selection alone: 20,000 B in 16 KiB chunks -> 2 chunks
    assert "selects 1 of the table's 20 regular columns (c0)" in full_row.evidence[0]
    assert full_row.evidence[2] == "The selected values came to 19.5 KiB (100 B per row)."
    # read alone: 2 chunks of 16 KiB (no CompressionInfo recorded: a chunk at its full length) + one index page
    assert full_row.read_after_fix_bytes == 2 * 16384 + 4096 and full_row.excess_share == 1.0
    assert wide.necessary.bytes == 36_864 and o.necessary_bytes == 36_864
    assert o.over_necessary == 62_574_072 / 36_864 and "1,697x the necessary read" in wide.verdict.summary
    assert any("clustering rows" in s for s in full_row.suggestion)


def test_per_execution_amplification_uses_each_window(wide):
    warmup, measured = wide.executions
    assert (warmup.kind, measured.kind) == ("warmup", "measured")
    assert warmup.amplification.cache_miss_bytes == 15_277 * 4096  # the warmup ran cold
    assert measured.amplification.cache_miss_bytes == 0
    assert measured.amplification.read == 62_574_072 / 20_000


def test_per_file_io_groups_sstable_components(wide):
    paths = [f.path for f in wide.files]
    assert paths[0] == synthetic.DATA_PATH
    data = wide.files[0]
    assert (data.read_calls, data.read_bytes, data.read_requested_bytes) == (3_803, 62_574_072, 3_803 * 16_454)
    assert (data.seek_jumps, data.lseek_calls, data.longest_sequential_bytes) == (1, 0, 62_574_072)
    assert data.touched_bytes == 15_277 * 4096
    assert data.coverage == 15_277 * 4096 / synthetic.DATA_SIZE
    assert data.read_sizes == {13: 3_000, 14: 803}
    [sstable] = wide.sstables
    assert (sstable.keyspace, sstable.table, sstable.generation, sstable.label) == (
        "demo",
        "wide",
        13,
        "demo.wide nb-13-big",
    )
    assert [f.component for f in sstable.files] == ["Data", "Index"]
    others = {f.path: f for f in wide.other_files}
    assert others[synthetic.CLIENT_SOCKET].write_bytes == 26_000
    assert others["/sys/fs/cgroup/memory.stat"].read_bytes == 7_240
    # page cache not measured for sockets and pseudo-files is None, not 0
    assert others[synthetic.CLIENT_SOCKET].cache_miss_bytes is None


def test_access_pattern_says_where_the_offset_map_comes_from(wide):
    by_path = {p.file.path: p for p in wide.access}
    data, index = by_path[synthetic.DATA_PATH], by_path[synthetic.INDEX_PATH]
    assert data.source == "heatmap" and "0 of 7,606 calls streamed" in data.source_note
    assert [(p.time_s, p.offset, p.calls) for p in data.points][:2] == [(0.5, 0, 100), (0.6, 10 << 20, 100)]
    assert data.read_size_median == 8192
    assert index.source == "events"
    assert [(p.kind, p.offset) for p in index.points] == [
        ("lseek", 0),
        ("read", 0),
        ("read", 200_704),
        ("lseek", 0),
        ("read", 0),
        ("read", 200_704),
    ]
    assert index.points[0].time_s == pytest.approx(0.11)


def test_spectrograms_and_latency_percentiles(wide):
    file_io, all_calls = wide.spectrograms
    assert file_io.counts == {(6, 45): 3_000, (7, 50): 803}
    assert file_io.total == 3_803 and file_io.slots == 15 and file_io.slot_s == 0.1
    assert all_calls.total == 3_814
    pread = wide.latencies[0]
    assert (pread.syscall, pread.target, pread.count) == ("pread64", "file", 3_803)
    # p50 lies in bucket 45 [10^4.5, 10^4.6) ns; p90 and max in bucket 50 [10^5, 10^5.1)
    assert pread.p50_ns == pytest.approx(10**4.6)
    assert pread.p90_ns == pread.p99_ns == pread.max_ns == pytest.approx(10**5.1)


def test_select_star_and_narrow_reads_are_not_flagged(tmp_path):
    star = analyse(
        synthetic.wide_select_c0(
            tmp_path / "star.trace",
            query="SELECT * FROM demo.wide WHERE id = 1",
            payload=190_020_000,
            data_read=190_897_095,
        )
    )
    assert star.verdict.status == "not flagged"
    assert star.overall.read == 190_897_095 / 190_020_000
    assert star.findings == []
    narrow = analyse(
        synthetic.wide_select_c0(
            tmp_path / "narrow.trace",
            query="SELECT value FROM demo.wide WHERE id = 1 AND column_no = 0",
            data_read=32_084,
        )
    )
    assert narrow.verdict.status == "not flagged"
    assert narrow.overall.read == pytest.approx(1.6042)


def test_threshold_and_min_excess_are_options(tmp_path):
    # 300 KiB read where the result needs 36 KiB: 8.5x the necessary read, 264 KiB past it
    path = synthetic.wide_select_c0(tmp_path / "narrow.trace", data_read=300 << 10)
    assert analyse(path, VerdictRule(threshold=8)).verdict.status == "flagged"
    assert analyse(path, VerdictRule(threshold=10)).verdict.status == "not flagged"
    assert analyse(path, VerdictRule(threshold=8, min_excess=300 << 10)).verdict.status == "not flagged"


def test_a_read_of_what_the_result_needs_is_not_flagged_however_small_its_payload(tmp_path):
    # A point read: 85 B of payload, one 16 KiB chunk read (869x the payload, as the issue measured)
    query_trace = [
        {
            "session_id": "1",
            "duration_us": 5,
            "events": [
                {"activity": "Read 1 live rows and 0 tombstone cells", "source_elapsed_us": 2, "thread": "ReadStage-1"}
            ],
        }
    ]
    analysis = analyse(
        synthetic.wide_select_c0(
            tmp_path / "point.trace", payload=85, data_read=16_384, rows=1, query_trace=query_trace
        )
    )
    assert analysis.overall.read == 16_384 / 85
    assert analysis.verdict.status == "not flagged"
    assert analysis.findings == []


def test_mmap_reads_count_page_cache_fills_outside_syscall_pages(tmp_path):
    analysis = analyse(synthetic.wide_select_c0_mmap(tmp_path / "mmap.trace"))
    o = analysis.overall
    mapped = synthetic.MMAP_FILLED_PAGES * 4096
    assert o.syscall_bytes == 40_960  # only the pread SSTable
    assert o.cache_miss_bytes == mapped + 40 * 4096
    assert o.cache_outside_syscall_bytes == mapped + 30 * 4096  # readahead beyond the 10 pages read
    assert o.data_read_bytes == 40_960 + mapped + 30 * 4096
    assert o.read == o.data_read_bytes / 20_000
    assert o.sstables_read == 2
    assert analysis.verdict.status == "flagged"
    assert causes(analysis) == ["full_row_read", "readahead_inflation", "whole_partition_scan", "cold_cache"]
    mmap_finding = analysis.findings[1]
    assert "memory-mapped" in mmap_finding.title
    by_path = {p.file.path: p for p in analysis.access}
    assert by_path[synthetic.MMAP_DATA_PATH].source == "none"
    assert {p.kind for p in by_path[synthetic.MMAP_DATA_PATH].points} == {"page_cache"}
    assert analysis.spectrograms[0].counts == {}


def test_sysdig_import_compares_with_wire_bytes_and_never_shows_unmeasured_zeros(tmp_path):
    analysis = analyse(synthetic.sysdig_import(tmp_path / "sysdig.trace"))
    o = analysis.overall
    assert analysis.scope.startswith("the whole capture")
    assert (o.basis, o.basis_bytes, o.payload_bytes) == ("wire", synthetic.SYSDIG_CLIENT_WIRE, None)
    assert o.read == 62_574_072 / 25_000  # internode socket (port 7000) not counted
    assert (o.cache_miss_bytes, o.cache_outside_syscall_bytes, o.device) == (None, None, None)
    assert all(f.cache_miss_bytes is None for f in analysis.files)
    assert analysis.verdict.status == "flagged"
    assert "wire bytes" in analysis.verdict.summary
    assert any("Page-cache misses were not measured" in note for note in analysis.verdict.notes)
    assert any("page-cache misses" in w for w in analysis.warnings)


def test_mmap_without_page_cache_measure_cannot_clear_a_query(tmp_path):
    path = synthetic.sysdig_import(tmp_path / "sysdig.trace", cassandra={"disk_access_mode": "mmap"})
    with Trace(path) as trace:
        analysis = analyse(trace, VerdictRule(threshold=5000))
    assert analysis.verdict.status == "undetermined"
    assert any("lower bound" in note for note in analysis.verdict.notes)


def test_tombstones_and_many_sstables_from_cassandras_query_trace(tmp_path):
    query_trace = [
        {
            "session_id": "1",
            "duration_us": 5,
            "events": [
                {
                    "activity": "Merged data from memtables and 7 sstables",
                    "source_elapsed_us": 1,
                    "thread": "ReadStage-1",
                },
                {
                    "activity": "Read 12 live rows and 4500 tombstone cells",
                    "source_elapsed_us": 2,
                    "thread": "ReadStage-1",
                },
            ],
        }
    ]
    analysis = analyse(synthetic.wide_select_c0(tmp_path / "t.trace", query_trace=query_trace))
    found = {f.cause: f for f in analysis.findings}
    assert "4,500 tombstone cells" in found["tombstones"].evidence[0]
    assert "up to 7 SSTables" in found["many_sstables"].evidence[-1]


def test_chunk_overhead_named_only_when_one_chunk_per_row_explains_the_read(tmp_path):
    # 200 rows x 64 KiB chunks = 12.5 MiB against 20 MiB read: chunks explain it
    analysis = analyse(
        synthetic.wide_select_c0(
            tmp_path / "c.trace", table_schema=synthetic.wide_table_schema(chunk_kb="64"), data_read=20 << 20
        )
    )
    assert "compression_chunk_overhead" in causes(analysis)
    # the wide demo: 3.1 MiB of 16 KiB chunks against 59.7 MiB read: they do not
    assert "compression_chunk_overhead" not in causes(analyse(synthetic.wide_select_c0(tmp_path / "w.trace")))


def test_incomplete_trace_is_reported_first(tmp_path):
    writer = TraceWriter(tmp_path / "cut.trace")
    writer.set_meta(
        backend="bcc",
        measures={"syscalls": True},
        capture_start_ns=0,
        capture_end_ns=10,
        lost_events=12,
        unstreamed_events=0,
    )
    writer.add_window("capture", 0, 10)
    analysis = analyse(writer.finish(complete=False, reason="process 1234 exited"))
    assert not analysis.complete
    assert analysis.warnings[0].startswith("INCOMPLETE TRACE: process 1234 exited")
    assert "12 events were lost" in analysis.warnings[1]
    assert analysis.verdict.status == "undetermined"


def test_bad_and_truncated_traces_give_clear_errors(tmp_path):
    good = synthetic.wide_select_c0(tmp_path / "good.trace")
    truncated = tmp_path / "truncated.trace"
    shutil.copy(good, truncated)
    with open(truncated, "r+b") as f:
        f.truncate(good.stat().st_size // 2)
    with pytest.raises(CasstraceError, match="damaged or truncated"):
        analyse(truncated)
    (tmp_path / "text.trace").write_text("not a trace\n")
    with pytest.raises(CasstraceError, match="not a readable casstrace trace"):
        analyse(tmp_path / "text.trace")
    with pytest.raises(CasstraceError, match="no trace file"):
        analyse(tmp_path / "missing.trace")


def test_page_runs():
    runs = pages.merge([(10, 5), (0, 4), (3, 2), (20, 1)])
    assert runs == [(0, 5), (10, 15), (20, 21)]
    assert pages.subtract(runs, pages.merge([(2, 1), (12, 10)])) == [(0, 2), (3, 5), (10, 12)]
    assert pages.bytes_within([(0, 2)], 5000) == 5000
    assert pages.bytes_within([(0, 2)], None) == 8192


def test_query_parsing_reads_selection_table_and_restrictions():
    q = parse_select(
        'SELECT writetime(c0) AS w, CAST(c1 AS text), "Mixed" FROM ks."T" '
        "WHERE token(a) > 3 AND (b, c) >= (1, 2) AND d IN (1, 2) AND e CONTAINS KEY 'x' LIMIT 3"
    )
    assert (q.keyspace, q.table, q.select_all) == ("ks", "T", False)
    assert q.columns == ["c0", "c1", "Mixed"]
    assert q.restrictions == {"b": ">=", "c": ">=", "d": "IN", "e": "CONTAINS KEY"}
    assert q.token_restricted and q.has_limit
    assert parse_select("select * from streams where stream_id = 1").select_all
    assert parse_select("INSERT INTO t (a) VALUES (1)") is None
    assert parse_select("SELECT a FROM t WHERE s = 'it''s AND x = 1'").restrictions == {"s": "="}


def test_a_capture_with_no_query_and_no_data_reads_is_not_judged(tmp_path):
    """`casstrace capture` of an unrelated process: no Data file read, nothing returned."""
    from casstrace.traces import TraceWriter

    writer = TraceWriter(tmp_path / "other.trace")
    writer.set_meta(
        backend="bcc", measures={"syscalls": True, "offsets": True, "page_cache": True, "latency": True, "wire": True}
    )
    window = writer.add_window("capture", 0, 1_000_000_000)
    libc = writer.file_id("/lib/x86_64-linux-gnu/libc.so.6", "file", size_bytes=2_000_000)
    writer.add_file_io(
        [
            {
                "window_id": window,
                "file_id": libc,
                "read_calls": 3,
                "read_bytes": 2_368,
                "read_requested_bytes": 2_368,
                "cache_miss_pages": 0,
                "cache_miss_bytes": 0,
            }
        ]
    )
    analysis = analyse(writer.finish())
    assert analysis.verdict.status == "undetermined"
    assert "no query to judge" in analysis.verdict.summary
    assert [f.read_bytes for f in analysis.files] == [2_368]


@pytest.mark.parametrize("port", [9042, 19143])
def test_a_capture_judges_data_reads_only_against_what_it_saw_sent_to_clients(tmp_path, port):
    """`casstrace capture --pid` of a node: the trace does not record the node's native port, so
    only a socket on the default one (9042) shows what it sent its clients. A node on another port
    sent them what no figure shows: undetermined, never "read 20 MB to return nothing"."""
    from casstrace.traces import TraceWriter

    writer = TraceWriter(tmp_path / f"node-{port}.trace")
    writer.set_meta(
        backend="bcc", measures={"syscalls": True, "offsets": True, "page_cache": True, "latency": True, "wire": True}
    )
    window = writer.add_window("capture", 0, 1_000_000_000)
    data = writer.file_id(
        "/var/lib/cassandra/data/ks/t-1b255f4def2540a6000000000000000a/nb-1-big-Data.db", "file", size_bytes=100_000_000
    )
    client = writer.file_id(f"tcp 127.0.0.1:{port}->127.0.0.1:50412", "socket")
    writer.add_file_io(
        [
            {
                "window_id": window,
                "file_id": data,
                "read_calls": 1_250,
                "read_bytes": 20_480_000,
                "read_requested_bytes": 20_480_000,
                "cache_miss_pages": 0,
                "cache_miss_bytes": 0,
            },
            {"window_id": window, "file_id": client, "write_calls": 3, "write_bytes": 6_144},
        ]
    )
    analysis = analyse(writer.finish())
    if port == 9042:
        assert analysis.overall.wire_bytes == 6_144
        assert analysis.verdict.status == "flagged" and "3333" in analysis.verdict.summary.replace(",", "")
    else:
        assert analysis.overall.wire_bytes is None and analysis.overall.basis is None
        assert analysis.verdict.status == "undetermined"
        assert "neither the payload nor the bytes sent to the client" in analysis.verdict.summary


def test_percentiles_by_nearest_rank():
    values = [float(v) for v in range(10, 0, -1)]
    assert percentile(values, 0.5) == 5.0 and percentile(values, 0.99) == 10.0
    assert percentile(list(range(1, 201)), 0.99) == 198
    assert percentile([], 0.5) is None


def test_payload_check_by_digest_sees_values_not_sizes():
    same_size = check_payload(Payload(3, 30, "aa"), Payload(3, 30, "bb"))
    assert same_size.status == "different" and "different values" in same_size.summary
    assert check_payload(Payload(3, 30, "aa"), Payload(3, 30, "aa")).status == "same"
    stored = check_payload(Payload(3, 30), Payload(3, 30))
    assert stored.status == "same" and "payload bytes only" in stored.basis
    assert (
        check_payload(Payload(None, None, note="no measured execution recorded"), Payload(3, 30)).status == "unverified"
    )


def test_linear_fit_recovers_a_line():
    fit = linear_fit([10, 20, 30], [5.0, 7.0, 9.0])
    assert (fit.slope, fit.intercept, fit.r2) == pytest.approx((0.2, 3.0, 1.0))
    assert linear_fit([10, 10], [1.0, 2.0]) is None
    assert linear_fit([1, 2, 3], [4.0, 4.0, 4.0]).r2 is None


def test_a_run_whose_measured_executions_all_failed_is_undetermined(tmp_path):
    """`run --consistency THREE` on one node: every execution fails; a figure of what little the
    capture saw must not clear (or flag) a query that never ran."""
    import sqlite3

    path = synthetic.wide_select_c0(tmp_path / "failed.trace")
    with sqlite3.connect(path) as db:
        db.execute(
            "UPDATE executions SET rows = NULL, payload_bytes = NULL, wire_bytes = NULL, latency_s = NULL,"
            " error = 'Unavailable: Cannot achieve consistency level THREE'"
        )
    verdict = analyse(path).verdict
    assert verdict.status == "undetermined"
    assert "Cannot achieve consistency level THREE" in verdict.summary and "--consistency" in (verdict.fix or "")


def test_latency_notes_are_reported_below_the_threshold_with_cassandras_counts(tmp_path):
    query_trace = [
        {
            "session_id": "1",
            "duration_us": 5,
            "events": [
                {
                    "activity": "Merged data from memtables and 5 sstables",
                    "source_elapsed_us": 1,
                    "thread": "ReadStage-1",
                },
                {
                    "activity": "Read 1 live rows and 1500 tombstone cells",
                    "source_elapsed_us": 2,
                    "thread": "ReadStage-1",
                },
            ],
        }
    ]
    analysis = analyse(
        synthetic.wide_select_c0(
            tmp_path / "point.trace", payload=85, data_read=16_384, rows=1, query_trace=query_trace
        )
    )
    assert analysis.verdict.status == "not flagged"
    assert analysis.findings == []
    notes = {note.cause: note for note in analysis.latency_notes}
    # one 16 KiB chunk read whole for 85 B: a point-read table's note
    assert set(notes) == {"many_sstables", "tombstones", "compression_chunk_overhead"}
    assert "merged data from up to 5 SSTables" in notes["many_sstables"].evidence[-1]
    assert "1 live rows and 1,500 tombstone cells" in notes["tombstones"].evidence[0]
    assert all(note.read_after_fix_bytes is None for note in notes.values())  # not weighed: not flagged


def test_a_point_read_of_a_missing_key_that_reads_nothing_is_not_flagged(tmp_path):
    query_trace = [
        {
            "session_id": "1",
            "duration_us": 5,
            "events": [
                {"activity": "Read 0 live rows and 0 tombstone cells", "source_elapsed_us": 2, "thread": "ReadStage-1"}
            ],
        }
    ]
    analysis = analyse(
        synthetic.wide_select_c0(tmp_path / "missing.trace", payload=0, data_read=0, rows=0, query_trace=query_trace)
    )
    assert analysis.necessary.units == 0 and analysis.necessary.bytes == 4096  # the index lookup alone
    assert analysis.verdict.status == "not flagged", analysis.verdict.summary
