"""A write run's cost (analyses.write_cost), on a trace built from known events: per execution and per
row, by file kind; its verdict says the read verdict does not apply; its report and compare show it."""

import pytest

from casstrace.analyses import analyse
from casstrace.analyses.compare import compare
from casstrace.analyses.write_cost import COMMIT_LOG, OTHER_FILES, SSTABLES, file_kind
from casstrace.errors import CasstraceError
from casstrace.reports import ReportOptions, document, render
from casstrace.traces import TraceWriter
from casstrace.traces.rows import FileIORow
from synthetic_traces import START_NS, _base_meta, timed_run

CLIENT = "127.0.0.1:50000"
SEGMENT = "/var/lib/cassandra/commitlog/CommitLog-7-1732871234567.log"
DATA = "/var/lib/cassandra/data/ks/events-0123456789abcdef0123456789abcdef/nb-3-big-Data.db"
MEASURED = ((2, 0), (3, 5))  # (execution, its window's SSTable pages dirtied: a flush in execution 3)


WRITE_MEASURES = {
    "syscalls": True,
    "page_cache": True,
    "wire": True,
    "dirtied": True,
    "written_back": True,
    "syncs": True,
}


def write_run(path, rows_per_execution=4, request_bytes=150, commit_log_pages=2, measures=WRITE_MEASURES):
    """Warmup 1 and measured executions 2 and 3 of an UNLOGGED BATCH of `rows_per_execution` rows: each
    sends `request_bytes`, dirties `commit_log_pages` of the mapped segment; execution 3 flushed."""
    writer = TraceWriter(path)
    kind = "INSERT" if rows_per_execution == 1 else "BEGIN UNLOGGED BATCH"
    _base_meta(
        writer,
        query="INSERT INTO ks.events (id, v) VALUES (?, ?)",
        keyspace="ks",
        client_addresses=[CLIENT],
        write={"kind": kind, "statements": rows_per_execution, "bind_markers": 2 * rows_per_execution},
        measures=measures,
    )
    segment, data = writer.file_id(SEGMENT, "file"), writer.file_id(DATA, "file")
    socket = writer.file_id("tcp 127.0.0.1:9042->" + CLIENT, "socket", local_addr="127.0.0.1:9042", remote_addr=CLIENT)
    for execution, sstable_pages in ((1, 0), *MEASURED):
        start = START_NS + execution * 100_000_000
        window = writer.add_window(
            "warmup" if execution == 1 else "execution", start, start + 50_000_000, execution=execution
        )
        writer.add_execution(
            execution=execution,
            kind="warmup" if execution == 1 else "measured",
            window_id=window,
            latency_s=0.002 * execution,
            rows=0,
            payload_bytes=0,
            pages=1,
        )
        writer.add_window_measures([{"window_id": window, "measure": "client_request_bytes", "value": request_bytes}])
        io: list[FileIORow] = [
            {"window_id": window, "file_id": socket, "read_calls": 1, "read_bytes": request_bytes + 10},
            {
                "window_id": window,
                "file_id": segment,
                "dirtied_pages": commit_log_pages,
                "mapped_dirtied_pages": commit_log_pages,
            },
        ]
        if sstable_pages:
            io.append(
                {"window_id": window, "file_id": data, "write_calls": 2, "write_bytes": sstable_pages * 4096,
                 "dirtied_pages": sstable_pages, "mapped_dirtied_pages": 0}
            )  # fmt: skip
        writer.add_file_io(io)
    return writer.finish()


def test_file_kinds_of_a_write():
    assert file_kind(SEGMENT) == COMMIT_LOG and file_kind(DATA) == SSTABLES
    assert file_kind("/var/lib/cassandra/hints/x.hints") == OTHER_FILES
    assert file_kind("tcp 127.0.0.1:9042->" + CLIENT) is None


def test_a_write_s_cost_per_execution_and_per_row(tmp_path):
    analysis = analyse(write_run(tmp_path / "batch.trace"))
    assert analysis.verdict.status == "undetermined" and analysis.verdict.reason == "write"
    assert "does not apply to a write" in analysis.verdict.summary and not analysis.findings
    cost = analysis.write_cost
    assert cost is not None and (cost.statement, cost.rows_per_execution, cost.rows) == ("BEGIN UNLOGGED BATCH", 4, 8)
    assert [e.execution for e in cost.measured] == [2, 3]
    figures = cost.per_row_figures()
    assert figures["request_bytes"] == 150 / 4 and figures["received_bytes"] == 160 / 4
    assert figures["commit_log_dirtied_bytes"] == 2 * 2 * 4096 / 8
    assert figures["sstables_dirtied_bytes"] == 5 * 4096 / 8 and figures["sstables_written_bytes"] == 5 * 4096 / 8
    assert figures["other_written_bytes"] == 0
    assert figures["latency_s"] == pytest.approx((0.004 + 0.006) / 2 / 4)  # the median execution's, per row
    assert cost.flushed
    execution = cost.executions[0]
    assert execution.kind == "warmup" and execution.of(COMMIT_LOG).mapped_dirtied_bytes == 2 * 4096


def test_a_figure_the_capture_did_not_take_is_not_measured_never_0(tmp_path):
    path = tmp_path / "old.trace"
    writer = TraceWriter(path)
    _base_meta(
        writer, query="INSERT INTO ks.t (k) VALUES (?)", write={"kind": "INSERT", "statements": 1, "bind_markers": 1}
    )
    window = writer.add_window("execution", START_NS, START_NS + 10, execution=1)
    writer.add_execution(
        execution=1, kind="measured", window_id=window, latency_s=0.001, rows=0, payload_bytes=0, pages=1
    )
    writer.add_file_io([{"window_id": window, "file_id": writer.file_id(SEGMENT, "file"), "write_calls": 0}])
    cost = analyse(writer.finish()).write_cost
    assert cost is not None
    figures = cost.per_row_figures()
    assert figures["commit_log_dirtied_bytes"] is None and figures["request_bytes"] is None


def test_the_report_shows_the_write_cost_in_every_view(tmp_path):
    report = document(analyse(write_run(tmp_path / "batch.trace")))
    brief = render(report, "text", ReportOptions(brief=True))
    assert "Write cost" in brief and "Commit log: pages dirtied per row" in brief and "2.0 KiB" in brief
    data = report.data["write"]
    assert data["rows"] == 8 and data["per_row"]["request_bytes"] == 37.5 and data["flushed"] is True
    for format_name in ("md", "html"):
        assert "Write cost" in render(report, format_name, ReportOptions())


def test_two_write_designs_compare_per_row(tmp_path):
    single = analyse(write_run(tmp_path / "single.trace", rows_per_execution=1, request_bytes=90, commit_log_pages=1))
    batch = analyse(write_run(tmp_path / "batch.trace"))
    comparison = compare(single, batch)
    rows = comparison.metric("write_rows_per_execution")
    sent = comparison.metric("write_request_bytes_per_row")
    assert (rows.first, rows.second) == (1, 4) and (sent.first, sent.second) == (90, 150 / 4)
    assert comparison.payload.status == "unverified" and "Two writes" in comparison.payload.summary
    assert comparison.summary.startswith("Per row written, B takes")


def test_a_write_against_a_read_is_refused(tmp_path):
    with pytest.raises(CasstraceError, match="one trace is of a write"):
        compare(analyse(write_run(tmp_path / "w.trace")), analyse(timed_run(tmp_path / "r.trace")))
