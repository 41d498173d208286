"""`casstrace run` of a write on casstrace's own sandbox (the test node): every execution writes fresh rows,
counted afterwards in the table; what it sent is checked against the kernel's count of what the node read
from the client; no generated value or literal reaches the trace; two write designs compare per row. On a
node casstrace cannot claim as its own, the same write is refused and nothing changes."""

import json
import re
import subprocess
import sys

import pytest

from casstrace.analyses import analyse
from casstrace.analyses.compare import compare
from casstrace.node.jvm import DAEMON_CLASS
from casstrace_cli import casstrace, one_error_line

pytestmark = pytest.mark.integration

KEYSPACE = "casstrace_run_write"
TABLE = f"{KEYSPACE}.events"
INSERT = f"INSERT INTO {TABLE} (id, seq, body) VALUES (?, ?, 'a literal body')"
BATCH_ROWS = 3
BATCH = (
    "BEGIN UNLOGGED BATCH "
    + " ".join(f"INSERT INTO {TABLE} (id, seq, body) VALUES (?, ?, 'a literal body');" for _ in range(BATCH_ROWS))
    + " APPLY BATCH"
)
V5_SEGMENT_BYTES = 10  # protocol v5 wraps a frame in a segment: a 6-byte header and a 4-byte CRC32


@pytest.fixture(scope="module")
def events(cql_session):
    cql_session.execute(
        f"CREATE KEYSPACE IF NOT EXISTS {KEYSPACE} WITH replication = "
        "{'class': 'SimpleStrategy', 'replication_factor': 1}"
    )
    cql_session.execute(f"CREATE TABLE IF NOT EXISTS {TABLE} (id bigint, seq int, body text, PRIMARY KEY (id, seq))")
    cql_session.execute(f"TRUNCATE {TABLE}")
    yield TABLE
    cql_session.execute(f"DROP KEYSPACE {KEYSPACE}")


def count(cql_session) -> int:
    return cql_session.execute(f"SELECT count(*) FROM {TABLE}").one()[0]


def run_write(statement, sandbox, out, repeat, warmup):
    return casstrace(
        "run", statement, "--host", sandbox.host, "--port", sandbox.native_port,
        "--repeat", repeat, "--warmup", warmup, "--out", out, "--no-html",
    )  # fmt: skip


def test_an_insert_repeated_writes_fresh_rows_and_reports_what_it_sent(events, cql_session, sandbox, tmp_path):
    before = count(cql_session)
    out = tmp_path / "insert.trace"
    done = run_write(INSERT, sandbox, out, repeat=4, warmup=1)
    assert done.returncode == 0, done.stderr
    assert "VERDICT: UNDETERMINED" in done.stdout and "does not apply to a write" in done.stdout
    assert "FLAGGED" not in done.stdout.replace("UNDETERMINED", "")
    # one new row per execution: the warmup, the 4 measured ones, the tracing one
    assert count(cql_session) - before == 1 + 4 + 1

    analysis = analyse(out)
    write = analysis.write_cost
    assert write is not None and analysis.verdict.reason == "write" and not analysis.findings
    assert (write.statement, write.rows_per_execution, write.bind_markers, write.rows) == ("INSERT", 1, 2, 4)
    assert [e.rows for e in write.executions] == [1] * 6
    # cells: the columns it sets but the key (id, seq): body, once an execution, in every format
    assert (write.cells_per_execution, write.cells, [e.cells for e in write.executions]) == (1, 4, [1] * 6)
    assert re.search(r"Cells written \(measured executions\) +4\n", done.stdout)
    reported = casstrace("report", out, "--format", "json")
    assert reported.returncode == 0, reported.stderr
    as_json = json.loads(reported.stdout)["write"]
    assert (as_json["cells_per_execution"], as_json["cells"], [e["cells"] for e in as_json["executions"]]) == (
        1,
        4,
        [1] * 6,
    )
    for execution in write.executions:
        # the client's count of its request against the kernel's count of what the node read from it
        assert execution.request_bytes and execution.received_bytes == execution.request_bytes + V5_SEGMENT_BYTES
    assert write.request_bytes_per_row == write.measured[0].request_bytes

    # neither the literal nor a generated key is in the trace: the statement is stored with ? for both
    stored = out.read_bytes()
    assert b"a literal body" not in stored
    assert analysis.query == f"INSERT INTO {TABLE} (id, seq, body) VALUES (?, ?, ?)"
    keys = [row.id for row in cql_session.execute(f"SELECT id FROM {TABLE}")]
    assert keys and not any(str(key).encode() in stored for key in keys)


def test_two_write_designs_compare_per_row(events, cql_session, sandbox, tmp_path):
    single, batch = tmp_path / "single.trace", tmp_path / "batch.trace"
    assert run_write(INSERT, sandbox, single, repeat=3, warmup=0).returncode == 0
    before = count(cql_session)
    done = run_write(BATCH, sandbox, batch, repeat=2, warmup=0)
    assert done.returncode == 0, done.stderr
    assert count(cql_session) - before == BATCH_ROWS * (2 + 1)

    comparison = compare(analyse(single), analyse(batch))
    rows = comparison.metric("write_rows_per_execution")
    assert (rows.first, rows.second) == (1, BATCH_ROWS)
    batched_cost = analyse(batch).write_cost
    assert batched_cost is not None and (batched_cost.cells_per_execution, batched_cost.cells) == (
        BATCH_ROWS,
        2 * BATCH_ROWS,
    )
    sent = comparison.metric("write_request_bytes_per_row")
    first, second = analyse(single).write_cost, analyse(batch).write_cost
    assert first is not None and second is not None
    one, batched = first.measured[0].request_bytes, second.measured[0].request_bytes
    assert one is not None and batched is not None
    assert (sent.first, sent.second) == (one, batched / BATCH_ROWS)
    assert batched / BATCH_ROWS < one  # one request's header and statement id shared by its rows

    shown = casstrace("compare", single, batch)
    assert shown.returncode == 0, shown.stderr
    assert "Two writes" in shown.stdout and "Rows written per execution" in shown.stdout
    assert "Sent to the node per row" in shown.stdout


def test_a_write_on_a_node_casstrace_did_not_start_is_refused_and_changes_nothing(
    events, cql_session, sandbox, tmp_path
):
    """The node's JVM is one whose command line is a Cassandra's but no sandbox's (a stand-in process:
    `run --pid` names it): casstrace cannot claim it, so the write is refused before any execution."""
    before = count(cql_session)
    foreign = subprocess.Popen(
        [
            sys.executable, "-c", "import time; time.sleep(120)",
            "-Dcassandra.config=file:///etc/cassandra/cassandra.yaml", DAEMON_CLASS,
        ]
    )  # fmt: skip
    try:
        done = casstrace(
            "run", INSERT, "--host", sandbox.host, "--port", sandbox.native_port, "--pid", foreign.pid,
            "--out", tmp_path / "refused.trace", "--no-html", cwd=tmp_path,
        )  # fmt: skip
    finally:
        foreign.kill()
        foreign.wait()
    assert "casstrace did not start it" in one_error_line(done)
    assert list(tmp_path.iterdir()) == []
    assert count(cql_session) == before
