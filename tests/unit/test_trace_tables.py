"""traces.tables, each trace table declared once: the SQL it generates is the SQL traces already hold
(tests/data/trace_schema/format-N.sql: format 5 as the sqlite_master of a trace written before the
declarations existed; formats 3 and 4 as schema.py had them last), and the typed rows written and read
back have the declared columns (unit, no node)."""

import contextlib
import re
import sqlite3
import typing
from pathlib import Path

import pytest

from casstrace.traces import queries, rows
from casstrace.traces.schema import FORMAT_VERSION
from casstrace.traces.tables import (
    TABLE,
    TABLES,
    Column,
    Merge,
    Table,
    create_sql,
    index_sql,
    insert_sql,
    schema_sql,
)
from casstrace.traces.writer import EVENT_COLUMNS, TraceWriter

SCHEMAS = Path(__file__).parent.parent / "data" / "trace_schema"
STORED_FORMATS = (3, 4, 5)  # format 3 changed two keys (threads, latency): before it, the declarations do not hold


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


Structure = dict[str, tuple[list[tuple], list[tuple], list[tuple]]]


def _structure(db: sqlite3.Connection) -> Structure:
    """What SQLite itself makes of each table, in order: its columns (name, type, not null, default, key),
    foreign keys and indexes."""
    found: Structure = {}
    for (name,) in db.execute("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY rowid"):
        found[name] = (
            db.execute(f"PRAGMA table_info({name})").fetchall(),
            db.execute(f"PRAGMA foreign_key_list({name})").fetchall(),
            [
                (index[1:], tuple(db.execute(f"PRAGMA index_xinfo({index[1]})").fetchall()))
                for index in db.execute(f"PRAGMA index_list({name})")
            ],
        )
    return found


def _stored_structure(version: int) -> Structure:
    with contextlib.closing(sqlite3.connect(":memory:")) as db:
        db.executescript((SCHEMAS / f"format-{version}.sql").read_text())
        return _structure(db)


@pytest.mark.parametrize("version", STORED_FORMATS)
def test_a_trace_written_now_holds_each_stored_format_whole_and_adds_only_after_it(tmp_path, version):
    """What SQLite makes of the SQL, so that a trace of that format reads as one of now: every table it
    had, each with its columns first and unchanged (name, type, NOT NULL, default, key), its foreign keys
    and indexes."""
    with contextlib.closing(sqlite3.connect(TraceWriter(tmp_path / "new.trace").finish())) as db:
        fresh = _structure(db)
    stored = _stored_structure(version)
    assert [name for name in fresh if name in stored] == list(stored)
    for name, (columns, keys, indexes) in stored.items():
        fresh_columns, fresh_keys, fresh_indexes = fresh[name]
        assert fresh_columns[: len(columns)] == columns, name
        assert set(keys) <= set(fresh_keys) and set(indexes) <= set(fresh_indexes), name


@pytest.mark.parametrize("version", STORED_FORMATS)
def test_the_declarations_generate_each_stored_formats_sql(version):
    """Comments and layout aside, the very SQL of each stored table (from its declaration, with the
    columns that format had) and index; and `since` tells which: exactly those in a format since
    closed, those first in the current one (a later column of it may follow)."""
    script = (SCHEMAS / f"format-{version}.sql").read_text()
    stored = _statements(script)
    had = {name: [column[1] for column in columns] for name, (columns, _, _) in _stored_structure(version).items()}
    generated = {}
    for table in (table for table in TABLES if table.name in had):
        kept = Table(
            table.name,
            tuple(column for column in table.columns if column.name in had[table.name]),
            table.merge,
            key=table.key,
            indexes=table.indexes,
        )
        generated[table.name] = create_sql(kept, FORMAT_VERSION)
        by_version = [column.name for column in table.columns if column.since <= version]
        assert had[table.name] == by_version[: len(had[table.name])], table.name
        assert version == FORMAT_VERSION or had[table.name] == by_version, table.name
    indexes = _statements(schema_sql(FORMAT_VERSION) + index_sql())
    generated.update({name: sql for name, sql in indexes.items() if sql.startswith(("CREATE INDEX", "CREATE UNIQUE"))})
    assert _statements(";".join(sql for name, sql in generated.items() if name in stored)) == stored
    declared = {table.name for table in TABLES if table.since <= version}
    assert set(had) == declared if version < FORMAT_VERSION else set(had) <= declared


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
    for name, hint in typing.get_type_hints(row).items():
        _holds_its_columns_values(hint, declared, declared.by_name[name])


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


def _holds_its_columns_values(hint: object, table: Table, column: Column) -> None:
    """A Python type `hint` takes None where the column may be NULL (or an older format lacks it), and
    otherwise values of the column's SQL type."""
    types = set(typing.get_args(hint)) or {hint}
    may_be_null = column.nullable and not column.primary_key  # an INTEGER PRIMARY KEY is the rowid
    assert (type(None) in types) == may_be_null or column.since > table.since, (table.name, column.name)
    expected = "REAL" if column.type == "NUMERIC" else column.type
    assert {SQL_TYPES[t] for t in types - {type(None)}} == {expected}, (table.name, column.name)


@pytest.mark.parametrize("table", sorted(RECORDS))
def test_a_record_read_back_is_the_declared_columns_in_order(table):
    hints = typing.get_type_hints(RECORDS[table])
    declared = TABLE[table]
    assert tuple(hints) == declared.column_names
    for column in declared.columns:
        if (table, column.name) != ("nodes", "meta"):  # JSON, read back parsed
            _holds_its_columns_values(hints[column.name], declared, column)


def test_every_table_merges_by_one_rule_and_sums_only_by_a_key():
    for table in TABLES:
        assert set(table.key) <= set(table.column_names), table.name
        if table.merge in (Merge.SUMMED_BY_SLOT, Merge.SUMMED_BY_THREAD_SLOT):
            assert "slot" in table.key, table.name


def test_an_insert_names_only_declared_columns():
    assert insert_sql(TABLE["thread_cpu"], ("tid", "oncpu_ns")) == "INSERT INTO thread_cpu(tid, oncpu_ns) VALUES (?, ?)"
    with pytest.raises(ValueError, match="thread_cpu has no column cpu_ns"):
        insert_sql(TABLE["thread_cpu"], ("tid", "cpu_ns"))


def test_every_table_has_a_typed_way_in():
    # the writer fills these through methods of its own: ids it hands out (files, stacks), meta's JSON,
    # windows, threads' names, and the per-call events as tuples (EventRow, in EVENT_COLUMNS' order)
    assert set(TABLE) - set(ROW_TYPES) == {"meta", "files", "windows", "events", "threads", "stacks"}
    events = TABLE["events"]
    for hint, name in zip(typing.get_args(rows.EventRow), EVENT_COLUMNS, strict=True):
        _holds_its_columns_values(hint, events, events.by_name[name])
