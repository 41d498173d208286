"""casstrace runs only reads: the statement check, on a table of accepted and refused CQL texts."""

import pytest

from casstrace.errors import CasstraceError
from casstrace.node.statements import (
    read_only_statement,
    runnable_statement,
    select_shape,
    split_statements,
    statement_kind,
    whole_cell_statement,
    written_rows,
)

ACCEPTED = [
    # (text as given, the statement casstrace runs)
    ("SELECT * FROM ks.t", "SELECT * FROM ks.t"),
    ("select c0 from ks.t where k = 1;", "select c0 from ks.t where k = 1"),
    ("  \n\tSeLeCt c0 FROM t  ;  ", "SeLeCt c0 FROM t"),
    ("SELECT JSON * FROM ks.t", "SELECT JSON * FROM ks.t"),
    ("SELECT DISTINCT k FROM ks.t", "SELECT DISTINCT k FROM ks.t"),
    ("-- a comment first\nSELECT k FROM t", "SELECT k FROM t"),
    ("// DROP TABLE t\nSELECT k FROM t", "SELECT k FROM t"),
    ("/* DELETE FROM t; */ SELECT k FROM t", "SELECT k FROM t"),
    ("SELECT k FROM t -- ; DROP TABLE t", "SELECT k FROM t"),
    ("SELECT k FROM t WHERE v = 'x; DROP TABLE t'", "SELECT k FROM t WHERE v = 'x; DROP TABLE t'"),
    ("SELECT k FROM t WHERE v = 'it''s; INSERT'", "SELECT k FROM t WHERE v = 'it''s; INSERT'"),
    ("SELECT k FROM t WHERE v = $$a; DELETE FROM t$$", "SELECT k FROM t WHERE v = $$a; DELETE FROM t$$"),
    ('SELECT "Drop;Table" FROM "Ks"."T"', 'SELECT "Drop;Table" FROM "Ks"."T"'),
    ("SELECT/*x*/k FROM t", "SELECT k FROM t"),
    (
        "SELECT count(*) FROM t WHERE k IN (1, 2) LIMIT 10 ALLOW FILTERING;;",
        "SELECT count(*) FROM t WHERE k IN (1, 2) LIMIT 10 ALLOW FILTERING",
    ),
]

REFUSED = [
    # (text, what the one error line must say)
    ("DROP TABLE ks.t", "DROP TABLE"),
    ("drop keyspace ks", "DROP KEYSPACE"),
    ("INSERT INTO t (k) VALUES (1)", "INSERT"),
    ("INSERT INTO t (k) VALUES (1) IF NOT EXISTS", "INSERT"),
    ("UPDATE t SET v = 1 WHERE k = 1", "UPDATE"),
    ("UPDATE t SET v = 1 WHERE k = 1 IF v = 0", "UPDATE"),
    ("DELETE FROM t WHERE k = 1", "DELETE"),
    ("DELETE v FROM t WHERE k = 1 IF EXISTS", "DELETE"),
    ("BEGIN BATCH INSERT INTO t (k) VALUES (1); APPLY BATCH", "BEGIN BATCH"),
    ("BEGIN BATCH INSERT INTO t (k) VALUES (1); APPLY BATCH; DROP TABLE t", "found 2"),
    ("BEGIN UNLOGGED BATCH SELECT k FROM t APPLY BATCH", "BEGIN UNLOGGED BATCH"),
    ("TRUNCATE t", "TRUNCATE"),
    ("TRUNCATE TABLE t", "TRUNCATE"),
    ("USE ks", "USE"),
    ("CREATE TABLE t (k int PRIMARY KEY)", "CREATE TABLE"),
    ("CREATE CUSTOM INDEX ON t (v) USING 'x'", "CREATE CUSTOM INDEX"),
    ("CREATE MATERIALIZED VIEW v AS SELECT k FROM t", "CREATE MATERIALIZED VIEW"),
    ("ALTER TABLE t ADD v int", "ALTER TABLE"),
    (
        "CREATE OR REPLACE FUNCTION f() RETURNS NULL ON NULL INPUT RETURNS int LANGUAGE java AS 'return 1;'",
        "CREATE OR REPLACE",
    ),
    ("GRANT SELECT ON ALL KEYSPACES TO r", "GRANT"),
    ("REVOKE SELECT ON ALL KEYSPACES FROM r", "REVOKE"),
    ("CREATE ROLE r WITH PASSWORD = 'x'", "CREATE ROLE"),
    ("LIST ROLES", "LIST ROLES"),
    ("SELECT k FROM t; DROP TABLE t", "found 2"),
    ("SELECT k FROM t;\nDELETE FROM t WHERE k = 1;", "found 2"),
    ("-- SELECT\nDROP TABLE t", "DROP TABLE"),
    ("/* SELECT */ DELETE FROM t WHERE k = 1", "DELETE"),
    ("'SELECT' FROM t", "starting with 'SELECT'"),
    ('"SELECT" FROM t', 'starting with "SELECT"'),
    ("(SELECT k FROM t)", "starting with ("),
    ("SELECTk FROM t", "SELECTK"),
    ("", "found 0"),
    ("  ;  ; -- nothing", "found 0"),
    ("SELECT k FROM t WHERE v = 'unterminated", "never closed"),
    ('SELECT "k FROM t', "never closed"),
    ("SELECT k FROM t WHERE v = $$x", "never closed"),
    ("SELECT k FROM t /* DROP", "never closed"),
]


@pytest.mark.parametrize("text, statement", ACCEPTED)
def test_reads_are_accepted(text, statement):
    assert read_only_statement(text) == statement


@pytest.mark.parametrize("text, said", REFUSED)
def test_everything_else_is_refused_with_a_fix(text, said):
    with pytest.raises(CasstraceError) as refused:
        read_only_statement(text)
    assert said in refused.value.message
    assert refused.value.fix and "\n" not in str(refused.value)


def test_split_statements_keeps_quoted_semicolons_and_drops_comments():
    text = "INSERT INTO t (v) VALUES ('a;b'); -- one\nSELECT \"x;y\" FROM t /* ; */; ;"
    assert split_statements(text) == ["INSERT INTO t (v) VALUES ('a;b')", 'SELECT "x;y" FROM t']


def test_statement_kind_names_what_the_user_wrote():
    assert statement_kind("  begin  batch ...") == "BEGIN BATCH"
    assert statement_kind("Select 1") == "SELECT"


@pytest.mark.parametrize(
    "statement, aggregate, limit",
    [
        ("SELECT count(*) FROM ks.t WHERE k = 1", True, None),
        ("SELECT COUNT(1) AS n FROM t", True, None),
        ('SELECT "max"(v) FROM t', True, None),
        ("SELECT sum(v), avg(v) FROM t WHERE k = 1 LIMIT 3", True, 3),
        ("SELECT k, v FROM t WHERE k = 1 GROUP BY k, c", True, None),
        ("SELECT v FROM t PER PARTITION LIMIT 2 LIMIT 120", False, 120),
        ("SELECT v FROM t WHERE s = 'count(*)' LIMIT 10", False, 10),
        ('SELECT "count" FROM t /* max(v) */ -- sum(v)', False, None),
        ("SELECT writetime(v), token(k) FROM t LIMIT ?", False, None),
        ("SELECT v FROM t WHERE k IN (1, 2) AND c = max_of_something", False, None),
    ],
)
def test_the_shape_of_a_select_is_read_from_its_tokens(statement: str, aggregate: bool, limit: int | None) -> None:
    shape = select_shape(statement)
    assert (shape.aggregate(), shape.limit) == (aggregate, limit)


def test_a_user_defined_aggregate_makes_an_aggregate() -> None:
    shape = select_shape("SELECT ks.my_avg(v) FROM ks.t WHERE k = 1")
    assert shape.calls == {"my_avg"}
    assert not shape.aggregate() and shape.aggregate(frozenset({"my_avg"}))


@pytest.mark.parametrize(
    "statement, whole",
    [
        ("SELECT attrs['k1'] FROM ks.p WHERE id = 7", "SELECT attrs FROM ks.p WHERE id = 7"),
        ("SELECT id, addr . city AS c, tags[1..3] FROM ks.p", "SELECT id, addr AS c, tags FROM ks.p"),
        ("SELECT m['a]']['b'], \"Addr\".\"City\", a.b.c FROM t", 'SELECT m, "Addr", a FROM t'),
        ("SELECT writetime(m['k']) FROM t /* m['k'] */", "SELECT writetime(m) FROM t /* m['k'] */"),
        ("SELECT ks.fn(x) FROM ks.t", None),  # a keyspace-qualified function, no field
        ("SELECT a FROM ks.t WHERE m['x'] = 1 ALLOW FILTERING", None),  # an element in WHERE only
    ],
)
def test_an_element_or_field_selected_is_replaced_by_its_whole_column(statement, whole):
    assert whole_cell_statement(statement) == whole


# -- writes: let through to be run on casstrace's own sandbox only (node.own_sandbox) ---------------

WRITES = [
    # (text as given, the statement, rows it writes per execution)
    ("INSERT INTO t (k, v) VALUES (?, ?);", "INSERT INTO t (k, v) VALUES (?, ?)", 1),
    ("update t SET v = ? WHERE k = ?", "update t SET v = ? WHERE k = ?", 1),
    ("UPDATE t SET v = :v WHERE k = :key", None, 1),
    ("DELETE FROM t WHERE k = ? -- gone", "DELETE FROM t WHERE k = ?", 1),
    ("INSERT INTO t (k, v) VALUES (?, 'insert; update') IF NOT EXISTS", None, 1),
    (
        "BEGIN UNLOGGED BATCH INSERT INTO t (k) VALUES (?); INSERT INTO t (k) VALUES (?); "
        "UPDATE t SET v = 'DELETE' WHERE k = ?; APPLY BATCH;",
        "BEGIN UNLOGGED BATCH INSERT INTO t (k) VALUES (?); INSERT INTO t (k) VALUES (?); "
        "UPDATE t SET v = 'DELETE' WHERE k = ?; APPLY BATCH",
        3,
    ),
    ("BEGIN BATCH USING TIMESTAMP 1 DELETE FROM t WHERE k = ? INSERT INTO t (k) VALUES (?) APPLY BATCH", None, 2),
]


@pytest.mark.parametrize("text, statement, rows", WRITES)
def test_writes_are_runnable_and_counted_but_never_read_only(text, statement, rows):
    runnable, writes = runnable_statement(text)
    assert writes and runnable == (statement or text)
    assert written_rows(runnable) == rows
    with pytest.raises(CasstraceError, match="casstrace only runs reads"):
        read_only_statement(text)


@pytest.mark.parametrize(
    "text, said",
    [
        ("TRUNCATE t", "TRUNCATE"),
        ("DROP TABLE t", "DROP TABLE"),
        ("BEGIN BATCH INSERT INTO t (k) VALUES (?); TRUNCATE t; APPLY BATCH", "INSERT, UPDATE and DELETE"),
        ("BEGIN BATCH INSERT INTO t (k) VALUES (?); DROP TABLE t", "ended by APPLY BATCH"),
        ("INSERT INTO t (k) VALUES (?); DROP TABLE t", "found 2"),
        ("INSERT INTO t (k, v) VALUES (1, '?')", "without bind markers"),
        ("DELETE FROM t WHERE k = 1 -- ?", "without bind markers"),
        ('UPDATE t SET "?" = 1 WHERE k = 2', "without bind markers"),
    ],
)
def test_what_is_neither_a_read_nor_a_write_is_refused_even_on_a_sandbox(text, said):
    with pytest.raises(CasstraceError) as refused:
        runnable_statement(text)
    assert said in refused.value.message and refused.value.fix


def test_a_select_is_runnable_and_no_write():
    assert runnable_statement("SELECT k FROM t;") == ("SELECT k FROM t", False)
