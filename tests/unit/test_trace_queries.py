"""traces.queries, the analyses' typed way into a trace: older formats read as traces that measured
less, and a damaged trace is a CasstraceError (unit: synthetic traces, no node)."""

import json
import sqlite3

import pytest

import synthetic_traces as synthetic
from casstrace.analyses import analyse
from casstrace.errors import CasstraceError
from casstrace.reports import render
from casstrace.traces import Trace, queries

# What formats 2 and 3 added (casstrace.traces.schema's "Format history"): a format-1 trace has none of it.
LATER_TABLES = (
    "nodes",
    "stacks",
    "profile_samples",
    "profile_reads",
    "thread_io",
    "statement_sessions",
    "session_threads",
    "mappings",
    "page_cache_fills",
    "window_measures",
)
LATER_COLUMNS = {
    "files": ("node_id",),
    "file_io": ("mapped_touched_bytes", "mapped_huge_bytes"),
    "events": ("cache_miss_pages", "node_id"),
    "latency": ("node_id",),
    "threads": ("node_id",),
    "executions": ("coordinator",),
}


def as_format_1(path):
    """Rewrite a trace as a format-1 writer made it: without the later tables and columns."""
    with sqlite3.connect(path) as db:
        db.execute("DROP INDEX threads_node_tid")
        for table in LATER_TABLES:
            db.execute(f"DROP TABLE {table}")
        for table, dropped in LATER_COLUMNS.items():  # a column in a key or a reference cannot be dropped
            kept = [row[1] for row in db.execute(f"PRAGMA table_info({table})") if row[1] not in dropped]
            db.execute(f"CREATE TABLE old_{table} AS SELECT {', '.join(kept)} FROM {table}")
            db.execute(f"DROP TABLE {table}")
            db.execute(f"ALTER TABLE old_{table} RENAME TO {table}")
        db.execute("UPDATE meta SET value = '1' WHERE key = 'format_version'")
    return path


def test_a_format_1_trace_reads_as_the_same_analysis(tmp_path):
    path = synthetic.wide_select_c0(tmp_path / "c0.trace")
    expected = json.loads(render(analyse(path), "json"))
    with Trace(as_format_1(path)) as trace:
        assert not queries.nodes(trace) and not queries.file_node_ids(trace) and not queries.stacks(trace)
        assert not queries.has_watch_tables(trace)
        assert [execution.coordinator for execution in queries.executions(trace)] == [None, None]
        assert {io.mapped_touched_bytes for io in queries.file_window_io(trace, queries.window_ids(trace), [1])} == {
            None
        }
        assert queries.mapped_bytes(trace, [1]) == 0
        assert {thread.fill_pages for thread in queries.thread_reads(trace, queries.window_ids(trace), [2])} == {0}
        assert json.loads(render(analyse(trace), "json")) == expected


def test_a_trace_missing_a_table_every_format_has_is_a_casstrace_error(tmp_path):
    path = synthetic.wide_select_c0(tmp_path / "c0.trace")
    with sqlite3.connect(path) as db:
        db.execute("DROP TABLE coverage")
    with pytest.raises(CasstraceError, match=r"is not a whole casstrace trace .*no such table: coverage"):
        analyse(path)


def test_records_name_what_the_rows_hold(tmp_path):
    with Trace(synthetic.wide_select_c0(tmp_path / "c0.trace")) as trace:
        warmup, measured = (e.window_id for e in queries.executions(trace))
        assert warmup is not None and measured is not None
        data = next(f.file_id for f in queries.file_paths(trace) if f.path == synthetic.DATA_PATH)
        (totals,) = [f for f in queries.file_totals(trace, [measured]) if f.file_id == data]
        assert (totals.path, totals.read_calls, totals.read_bytes, totals.cache_miss_bytes) == (
            synthetic.DATA_PATH,
            synthetic.WIDE_DATA_CALLS,
            synthetic.WIDE_DATA_READ,
            0,
        )
        assert [
            (r.log2_bucket, r.reads) for r in queries.read_size_counts(trace, [warmup, measured]) if r.file_id == data
        ] == [(13, 6_000), (14, 2 * (synthetic.WIDE_DATA_CALLS - 3_000))]
        assert sum(cell.calls for cell in queries.latency_by_slot(trace, file_only=True)) == 3_803
        assert sum(cell.calls for cell in queries.latency_by_slot(trace, file_only=False)) == 3_814
        assert queries.window_ids(trace) == [warmup, 2, measured]
        assert queries.file_window_io(trace, [], [data]) == []  # an empty list matches nothing
