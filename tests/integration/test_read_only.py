"""casstrace never changes data: write statements given to `run` and `compare` are refused before
any connection, against a real node whose table must be unchanged afterwards."""

import pytest

from casstrace_cli import casstrace

pytestmark = pytest.mark.integration

KEYSPACE = "casstrace_read_only"


@pytest.fixture(scope="module")
def victim(cql_session):
    """A small table the refused statements aim at; its rows are the truth the test compares."""
    cql_session.execute(
        f"CREATE KEYSPACE IF NOT EXISTS {KEYSPACE} WITH replication = "
        "{'class': 'SimpleStrategy', 'replication_factor': 1}"
    )
    cql_session.execute(f"CREATE TABLE IF NOT EXISTS {KEYSPACE}.victim (k int PRIMARY KEY, v text)")
    cql_session.execute(f"TRUNCATE {KEYSPACE}.victim")
    for k in range(3):
        cql_session.execute(f"INSERT INTO {KEYSPACE}.victim (k, v) VALUES (%s, %s)", (k, f"value {k}"))
    return f"{KEYSPACE}.victim"


def rows(cql_session, table):
    return sorted(tuple(row) for row in cql_session.execute(f"SELECT k, v FROM {table}"))


WRITES = [
    "DROP TABLE {t}",
    "drop keyspace " + KEYSPACE,
    "INSERT INTO {t} (k, v) VALUES (99, 'inserted')",
    "INSERT INTO {t} (k, v) VALUES (98, 'lwt') IF NOT EXISTS",
    "UPDATE {t} SET v = 'changed' WHERE k = 1",
    "DELETE FROM {t} WHERE k = 0",
    "DELETE FROM {t} WHERE k = 2 IF EXISTS",
    "TRUNCATE {t}",
    "BEGIN BATCH DELETE FROM {t} WHERE k = 1 APPLY BATCH",
    "/* SELECT */ DELETE FROM {t} WHERE k = 1",
    "SELECT k FROM {t}; DROP TABLE {t}",
    "ALTER TABLE {t} DROP v",
]


@pytest.mark.parametrize("statement", WRITES)
def test_run_refuses_writes_and_leaves_the_table_alone(statement, victim, cql_session, sandbox, tmp_path):
    before = rows(cql_session, victim)
    out = tmp_path / "refused.trace"
    done = casstrace(
        "run",
        statement.format(t=victim),
        "--host",
        sandbox.host,
        "--port",
        sandbox.native_port,
        "--out",
        out,
        cwd=tmp_path,
    )
    assert done.returncode != 0
    lines = done.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("casstrace: error: ") and "(fix: " in lines[0], done.stderr
    assert list(tmp_path.iterdir()) == []  # no trace, no partial, no report
    assert rows(cql_session, victim) == before


def test_compare_refuses_a_write_on_either_side(victim, cql_session, sandbox, tmp_path):
    before = rows(cql_session, victim)
    for first, second in (
        (f"DELETE FROM {victim} WHERE k = 1", f"SELECT v FROM {victim}"),
        (f"SELECT v FROM {victim}", f"TRUNCATE {victim}"),
    ):
        done = casstrace(
            "compare",
            "--before",
            first,
            "--after",
            second,
            "--host",
            sandbox.host,
            "--port",
            sandbox.native_port,
            "--traces-dir",
            tmp_path,
            cwd=tmp_path,
        )
        assert done.returncode == 2
        assert done.stderr.startswith("casstrace: error: refusing to run") and done.stderr.count("\n") == 1
    assert list(tmp_path.iterdir()) == []
    assert rows(cql_session, victim) == before


# -- failures that must not look like success ------------------------------------------------------


def test_a_run_whose_executions_all_failed_exits_non_zero_with_the_nodes_error(sandbox, tmp_path):
    out = tmp_path / "three.trace"
    done = casstrace(
        "run",
        "SELECT * FROM system.local",
        "--host",
        sandbox.host,
        "--port",
        sandbox.native_port,
        "--consistency",
        "THREE",
        "--repeat",
        3,
        "--out",
        out,
        "--no-html",
    )
    assert done.returncode == 2
    last = done.stderr.splitlines()[-1]
    assert (
        last.startswith("casstrace: error: every execution failed") and "Cannot achieve consistency level THREE" in last
    )
    assert "NoHostAvailable" not in last and f"the trace is kept at {out}" in last
    assert out.is_file()  # what was captured is kept, and says it is incomplete
    assert "VERDICT: UNDETERMINED" in done.stdout and "NOT FLAGGED" not in done.stdout


def test_a_typo_in_sandbox_cql_is_one_line(sandbox):
    done = casstrace("sandbox", "cql", "--data-dir", sandbox.data_dir, "SELEC 1")
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1 and "no viable alternative at input 'SELEC'" in done.stderr
    assert "Error from server" not in done.stderr


def test_an_out_in_a_read_only_directory_is_refused_before_connecting(read_only_dir):
    for command in (
        ["run", "SELECT * FROM system.local", "--port", "1", "--out", read_only_dir / "t.trace"],
        ["capture", "--out", read_only_dir / "c.trace", "--", "true"],
    ):
        done = casstrace(*command)
        assert done.returncode == 2
        assert done.stderr.count("\n") == 1 and "Read-only file system" in done.stderr and "(fix: " in done.stderr
    assert list(read_only_dir.iterdir()) == []
