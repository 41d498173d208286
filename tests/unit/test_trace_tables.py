"""traces.tables, each trace table declared once: the SQL it generates is the SQL traces already hold
(tests/data/trace_schema/format-5.sql: the sqlite_master of a trace written before the declarations
existed), and the typed rows written and read back have the declared columns (unit, no node)."""

import contextlib
import re
import sqlite3
import typing
from pathlib import Path

import pytest

from casstrace.traces import queries, rows
from casstrace.traces.schema import FORMAT_VERSION
from casstrace.traces.tables import TABLE, TABLES, Merge, index_sql, insert_sql, schema_sql
from casstrace.traces.writer import TraceWriter

SCHEMAS = Path(__file__).parent.parent / "data" / "trace_schema"
STORED = SCHEMAS / "format-5.sql"


def _statements(script: str) -> dict[str, str]:
    """name -> its CREATE statement, comments dropped and blanks made one (SQLite keeps a statement's
    text as written: comments and layout are not the format)."""
    bare = re.sub(r"--[^\n]*", "", script)
    found = {}
    for statement in bare.split(";"):
        words = " ".join(statement.split())
        words = re.sub(r"\s*([(),])\s*", r"\1", words)
        if words:
            found[re.match(r"CREATE (?:UNIQUE )?(?:TABLE|INDEX) (\w+)", words)[1]] = words  # type: ignore[index]
    return found


def _structure(db: sqlite3.Connection) -> dict[str, object]:
    """What SQLite itself makes of each table: its columns (name, type, not null, default, key), foreign
    keys and indexes, in order."""
    found: dict[str, object] = {}
    for (name,) in db.execute("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY rowid"):
        found[name] = (
            db.execute(f"PRAGMA table_info({name})").fetchall(),
            db.execute(f"PRAGMA foreign_key_list({name})").fetchall(),
            [
                (index[1:], db.execute(f"PRAGMA index_xinfo({index[1]})").fetchall())
                for index in db.execute(f"PRAGMA index_list({name})")
            ],
        )
    return found


def test_the_generated_schema_is_the_one_traces_were_written_in(tmp_path):
    written = TraceWriter(tmp_path / "new.trace").finish()
    with contextlib.closing(sqlite3.connect(written)) as db:
        fresh = "".join(
            f"{sql};" for (sql,) in db.execute("SELECT sql FROM sqlite_master WHERE sql IS NOT NULL ORDER BY rowid")
        )
        fresh_structure = _structure(db)
    stored = STORED.read_text()
    assert list(_statements(fresh)) == list(_statements(stored))  # the same tables and indexes, in order
    assert _statements(fresh) == _statements(stored)
    with contextlib.closing(sqlite3.connect(":memory:")) as db:
        db.executescript(stored)
        assert fresh_structure == _structure(db)


@pytest.mark.parametrize("version", [3, 4])
def test_an_older_format_is_its_tables_and_columns_of_that_version_or_before(version):
    """Against the schema.py of the last commit of that format (format 3 changed two keys: before it,
    threads was keyed by tid alone and latency without node_id, which the declarations do not model)."""
    stored = (SCHEMAS / f"format-{version}.sql").read_text()
    generated = schema_sql(version) + index_sql()
    assert list(_statements(generated)) == list(_statements(stored))
    assert _statements(generated) == _statements(stored)


def test_a_column_is_only_ever_appended():
    # format 1 had no node_id anywhere, no watch tables and no profile: what queries reads as absent
    format_1 = {table.name: [c.name for c in table.columns if c.since <= 1] for table in TABLES if table.since <= 1}
    assert "nodes" not in format_1 and "thread_io" not in format_1 and "window_measures" not in format_1
    assert format_1["events"][-1] == "latency_ns" and format_1["files"][-1] == "remote_addr"
    for table in TABLES:  # a column is only ever appended: the versions never go down along a table
        versions = [table.since] + [column.since for column in table.columns]
        assert max(versions) <= FORMAT_VERSION and versions[0] == min(versions), table.name
        later = [column.since for column in table.columns if column.since > table.since]
        assert later == sorted(later), table.name


# The write side: each table's TypedDict (traces/rows.py) names its columns; NOT NULL without a default
# is a required key. Tables a writer fills through its own methods (ids handed out, meta's JSON) have none.
ROW_TYPES: dict[str, typing.Any] = {  # TypedDict classes (mypy types them as plain type)
    "file_io": rows.FileIORow,
    "mappings": rows.MappingRow,
    "read_sizes": rows.ReadSizeRow,
    "coverage": rows.CoverageRow,
    "heatmap": rows.HeatmapRow,
    "latency": rows.LatencyRow,
    "sync_latency": rows.SyncLatencyRow,
    "executions": rows.ExecutionRow,
    "window_measures": rows.WindowMeasureRow,
    "nodes": rows.NodeRow,
    "page_cache_fills": rows.PageCacheFillRow,
    "profile_samples": rows.ProfileSampleRow,
    "profile_reads": rows.ProfileReadRow,
    "thread_cpu": rows.ThreadCpuRow,
    "thread_io": rows.ThreadIORow,
    "statement_sessions": rows.StatementSessionRow,
    "session_threads": rows.SessionThreadRow,
}


@pytest.mark.parametrize("table", sorted(ROW_TYPES))
def test_a_row_written_has_the_declared_columns(table):
    row = ROW_TYPES[table]
    declared = TABLE[table]
    # node_id is named by the merge (a node's own trace leaves it NULL): a writer may leave it out
    assert set(row.__annotations__) <= set(declared.column_names), table
    assert set(declared.column_names) - set(row.__annotations__) <= {"node_id"}, table
    for name in row.__required_keys__:
        column = declared.by_name[name]
        assert column.since == declared.since or not column.nullable, (table, name)


# The read side: the records a table is read back whole as (queries), its columns in order.
RECORDS = {
    "executions": queries.ExecutionRecord,
    "nodes": queries.NodeRecord,
    "thread_io": queries.ThreadIO,
    "thread_cpu": queries.ThreadCpu,
    "window_measures": queries.WindowMeasure,
    "statement_sessions": queries.StatementSession,
    "session_threads": queries.SessionThread,
}
SQL_TYPES = {int: "INTEGER", str: "TEXT", float: "REAL", bool: "INTEGER"}


@pytest.mark.parametrize("table", sorted(RECORDS))
def test_a_record_read_back_is_the_declared_columns_in_order(table):
    hints = typing.get_type_hints(RECORDS[table])
    declared = TABLE[table]
    assert tuple(hints) == declared.column_names
    for column in declared.columns:
        types = set(typing.get_args(hints[column.name])) or {hints[column.name]}
        if column.name == "meta":  # nodes.meta: JSON, read back parsed
            continue
        may_be_null = column.nullable and not column.primary_key  # an INTEGER PRIMARY KEY is the rowid
        assert (type(None) in types) == may_be_null or column.since > declared.since, (table, column.name)
        assert {SQL_TYPES.get(t, column.type) for t in types - {type(None)}} == {
            "REAL" if column.type == "NUMERIC" else column.type
        }, (table, column.name)


def test_every_table_merges_by_one_rule_and_sums_only_by_a_key():
    for table in TABLES:
        assert set(table.key) <= set(table.column_names), table.name
        if table.merge in (Merge.SUMMED_BY_SLOT, Merge.SUMMED_BY_THREAD_SLOT):
            assert "slot" in table.key, table.name


def test_an_insert_names_only_declared_columns():
    assert insert_sql(TABLE["thread_cpu"], ("tid", "oncpu_ns")) == "INSERT INTO thread_cpu(tid, oncpu_ns) VALUES (?, ?)"
    with pytest.raises(ValueError, match="thread_cpu has no column cpu_ns"):
        insert_sql(TABLE["thread_cpu"], ("tid", "cpu_ns"))
