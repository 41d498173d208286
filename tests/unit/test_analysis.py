"""analyses/analysis.py: analyse() of traces built from known events: the verdict with exact numbers, and
causes named only on evidence. Each part has its own file (test_amplification.py, test_file_io.py, ...)."""

import shutil

import pytest

import synthetic_traces as synthetic
from casstrace.analyses import VerdictRule, analyse
from casstrace.errors import CasstraceError
from casstrace.traces import Trace, TraceWriter


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
    assert [finding.cause for finding in wide.findings] == ["full_row_read", "whole_partition_scan"]
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


def test_mmap_without_page_cache_measure_cannot_clear_a_query(tmp_path):
    path = synthetic.sysdig_import(tmp_path / "sysdig.trace", cassandra={"disk_access_mode": "mmap"})
    with Trace(path) as trace:
        analysis = analyse(trace, VerdictRule(threshold=5000))
    assert analysis.verdict.status == "undetermined"
    assert any("lower bound" in note for note in analysis.verdict.notes)


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
    assert (analysis.verdict.status, analysis.verdict.reason) == ("undetermined", "no_query")
    assert [f.read_bytes for f in analysis.files] == [2_368]


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
    assert (verdict.status, verdict.reason) == ("undetermined", "failed_run")
    assert "Cannot achieve consistency level THREE" in verdict.summary  # the node's own error
    assert "--consistency" in (verdict.fix or "")


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
