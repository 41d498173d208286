"""`casstrace run` end to end: the real CLI, real bcc probes, the real test sandbox."""

import json
import os
import signal
import socket
import subprocess
import time
from collections import Counter
from pathlib import Path

import pytest

from casstrace.analyses import analyse
from casstrace.reports import ReportOptions, render
from casstrace.traces import Trace
from casstrace.traces.addresses import parse_address
from casstrace_cli import CASSTRACE, casstrace

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def demo_trace(tmp_path_factory, node_args, demo_query, cql_session):
    """One run of the demo query: 1 warmup, 2 measured executions, 1 tracing execution."""
    sessions_before = {row.session_id for row in cql_session.execute("SELECT session_id FROM system_traces.sessions")}
    out = tmp_path_factory.mktemp("run") / "demo.trace"
    done = casstrace(
        "run", demo_query, *node_args, "--repeat", 2, "--warmup", 1, "--page-size", 64, "--out", out, "--no-html"
    )
    assert done.returncode == 0, done.stderr
    sessions_after = {row.session_id for row in cql_session.execute("SELECT session_id FROM system_traces.sessions")}
    with Trace(out) as trace:
        yield trace, sessions_after - sessions_before, done


def data_file_reads(trace, window_id, table):
    """Bytes the JVM read from, and page-cache misses on, the table's Data.db files in one window."""
    row = trace.rows(
        "SELECT coalesce(sum(read_bytes), 0) AS read_bytes, coalesce(sum(cache_miss_bytes), 0) AS miss_bytes"
        " FROM file_io JOIN files USING (file_id)"
        " WHERE window_id = ? AND path LIKE ? AND path LIKE '%-Data.db'",
        (window_id, f"%/{table}-%"),
    )[0]
    return row["read_bytes"] + row["miss_bytes"]


def without_literals(demo_query: str) -> str:
    """The demo query as a run stores it: its one literal, the stream's id, as ?."""
    literal = " WHERE stream_id = 1"
    assert demo_query.endswith(literal)
    return demo_query.removesuffix(literal) + " WHERE stream_id = ?"


def test_trace_is_written_and_reads_back(demo_trace, demo_query, demo_tables, sandbox):
    trace, _, done = demo_trace
    assert trace.complete
    assert str(trace.path) in done.stdout
    meta = trace.meta
    assert meta["query"] == without_literals(demo_query) and meta["keyspace"] == demo_tables.keyspace
    assert (meta["consistency"], meta["page_size"]) == ("ONE", 64)
    assert meta["node"]["port"] == sandbox.port and meta["node"]["pid"] == meta["pid"]
    cassandra = meta["cassandra"]
    assert cassandra["release_version"].startswith("5.")
    assert cassandra["disk_access_mode"] != "unknown"
    (table,) = cassandra["tables"]
    assert (table["keyspace"], table["table"]) == (demo_tables.keyspace, demo_tables.spec.table)
    assert table["partition_key"] == ["stream_id"] and table["clustering"] == ["ts"]
    assert table["compression"]["chunk_length_in_kb"] == str(demo_tables.spec.chunk_length_kb)
    data_files = {Path(f["path"]): f["size"] for f in table["sstables"] if f["path"].endswith("-Data.db")}
    assert data_files == {path: path.stat().st_size for path in demo_tables.wide.data_files}


def test_executions_have_payload_of_100_bytes_a_row_and_their_own_windows(demo_trace, demo_tables):
    trace, _, _ = demo_trace
    executions = trace.rows(
        "SELECT executions.*, windows.label, windows.execution AS window_execution, start_ns, end_ns"
        " FROM executions JOIN windows USING (window_id) ORDER BY executions.execution"
    )
    assert [(e["kind"], e["label"]) for e in executions] == [
        ("warmup", "warmup"),
        ("measured", "execution"),
        ("measured", "execution"),
        ("tracing", "tracing"),
    ]
    spec = demo_tables.spec
    for execution in executions:
        assert execution["execution"] == execution["window_execution"] and execution["error"] is None
        assert execution["rows"] == spec.rows
        assert execution["payload_bytes"] == spec.first_column_bytes * execution["rows"]
        assert execution["pages"] == -(-spec.rows // 64)
        assert execution["end_ns"] - execution["start_ns"] >= execution["latency_s"] * 1e9 * 0.99
        # Each execution's window holds that execution's reads of the table.
        assert data_file_reads(trace, execution["window_id"], spec.table) > 0
    between = trace.rows("SELECT window_id FROM windows WHERE label = 'between'")
    assert sum(data_file_reads(trace, w["window_id"], spec.table) for w in between) == 0


def test_wire_bytes_are_what_the_node_sent_this_client(demo_trace):
    trace, _, _ = demo_trace
    port = trace.meta["node"]["port"]
    # the trace records this client's ends of its connections, not wire bytes (derived by the analyses)
    clients = {parse_address(address) for address in trace.meta["client_addresses"]}
    socket_rows = trace.rows("SELECT * FROM files WHERE kind = 'socket'")
    sockets = [row for row in socket_rows if parse_address(row["remote_addr"]) in clients]
    assert sockets and all(socket["local_addr"].endswith(f":{port}") for socket in sockets)
    assert {row["wire_bytes"] for row in trace.rows("SELECT wire_bytes FROM executions")} == {None}
    for execution in analyse(trace).executions:
        # The values plus per-row length prefixes, result metadata and frame headers: more than
        # the payload, but not much more for 100-byte values.
        assert execution.payload_bytes is not None and execution.wire_bytes is not None
        assert execution.payload_bytes < execution.wire_bytes < 2 * execution.payload_bytes + 64 * 1024


def test_tracing_runs_apart_from_measured_executions(demo_trace):
    trace, new_sessions, _ = demo_trace
    (tracing,) = trace.rows("SELECT * FROM executions JOIN windows USING (window_id) WHERE kind = 'tracing'")
    measured_end = trace.rows("SELECT max(end_ns) FROM windows WHERE label IN ('warmup', 'execution')")[0][0]
    assert measured_end <= tracing["start_ns"]
    query_trace = trace.meta["query_trace"]
    # The node recorded trace sessions for the tracing execution's pages, and each measured
    # execution's (their threads: analyses.attribution), and for nothing else.
    measured = trace.rows("SELECT session_id, execution FROM statement_sessions WHERE execution IS NOT NULL")
    assert {s["session_id"] for s in query_trace} | {s["session_id"] for s in measured} == {
        str(s) for s in new_sessions
    }
    assert len(query_trace) == tracing["pages"]
    pages = {e["execution"]: e["pages"] for e in trace.rows("SELECT * FROM executions WHERE kind = 'measured'")}
    assert Counter(s["execution"] for s in measured) == pages
    activities = [event["activity"] for session in query_trace for event in session["events"]]
    assert any("sstable" in activity.lower() for activity in activities)


def test_no_loaded_value_appears_in_the_trace(demo_trace, demo_tables, cql_session):
    trace, _, _ = demo_trace
    raw = trace.path.read_bytes()
    spec = demo_tables.spec
    rows = list(
        cql_session.execute(
            f"SELECT c0, c1 FROM {demo_tables.keyspace}.{spec.table} WHERE stream_id = {spec.stream_id} LIMIT 20"
        )
    )
    assert len(rows) == 20
    for row in rows:
        for value in (row.c0, row.c1[:64], row.c1[-64:]):
            assert len(value) >= 64
            for form in (value, value.hex().encode(), value.hex().upper().encode()):
                assert form not in raw


def test_listing_shows_the_trace(demo_trace, demo_query):
    trace, _, _ = demo_trace
    listing = casstrace("traces", "--dir", trace.path.parent)
    assert listing.returncode == 0
    assert without_literals(demo_query) in listing.stdout and str(trace.path) in listing.stdout


def test_the_trace_and_every_report_hold_the_statement_without_its_literals(demo_trace, demo_query, demo_tables):
    """A value typed to find a row (often a customer's) reaches no trace or report of a run; the node
    ran the statement as given all the same (each execution returned the stream's rows)."""
    trace, _, done = demo_trace
    assert trace.meta["query"] == without_literals(demo_query)
    assert {e["rows"] for e in trace.rows("SELECT rows FROM executions")} == {demo_tables.spec.rows}
    assert f"Query: {without_literals(demo_query)}" in done.stdout  # run's own report
    analysis = analyse(trace.path)
    for format_ in ("text", "md", "json", "html"):
        shown = render(analysis, format_, ReportOptions())
        assert "WHERE stream_id = ?" in shown and "stream_id = 1" not in shown, format_


def test_keep_literals_stores_and_reports_the_statement_as_given(tmp_path, node_args, demo_query):
    out = tmp_path / "kept.trace"
    done = casstrace("run", demo_query, *node_args, "--keep-literals", "--repeat", 1, "--warmup", 0, "--out", out)
    assert done.returncode == 0, done.stderr
    with Trace(out) as trace:
        assert trace.meta["query"] == demo_query
    assert f"Query: {demo_query}" in done.stdout
    assert "WHERE stream_id = 1" in out.with_suffix(".html").read_text()


def test_cold_run_from_a_file_drops_the_page_cache(tmp_path, node_args, demo_query, demo_tables):
    query_file = tmp_path / "query.cql"
    query_file.write_text(f"-- the demo query\n{demo_query};\n")
    out = tmp_path / "cold.trace"
    done = casstrace("run", "--file", query_file, *node_args, "--cold", "--repeat", 1, "--warmup", 0, "--out", out)
    assert done.returncode == 0, done.stderr
    assert "warning" not in done.stderr  # mapped pages are pushed out too: nothing to warn about
    # The verdict on the terminal, the full report beside the trace.
    assert "VERDICT: FLAGGED" in done.stdout
    assert f"report: {out.with_suffix('.html')}" in done.stdout and out.with_suffix(".html").stat().st_size > 0
    page = out.with_suffix(".html").read_text()
    assert "WHERE stream_id = ?" in page and "stream_id = 1" not in page  # the page, its title too
    with Trace(out) as trace:
        assert trace.meta["query"] == without_literals(demo_query)  # no comment, no ';', no literal
        (execution,) = trace.rows("SELECT window_id FROM executions WHERE kind = 'measured'")
        (misses,) = trace.rows(
            "SELECT sum(cache_miss_bytes) FROM file_io JOIN files USING (file_id) WHERE window_id = ? AND path LIKE ?",
            (execution["window_id"], f"%/{demo_tables.spec.table}-%-Data.db"),
        )[0]
        # Dropped before the execution, so its reads came from the device.
        assert misses > 0


def test_ctrl_c_keeps_an_incomplete_trace(tmp_path, node_args, demo_query, demo_tables, cql_session):
    def table_reads():
        return (
            cql_session.execute(
                "SELECT count FROM system_views.local_read_latency WHERE keyspace_name = %s AND table_name = %s",
                (demo_tables.keyspace, demo_tables.spec.table),
            )
            .one()
            .count
        )

    out = tmp_path / "interrupted.trace"
    reads_before = table_reads()
    run = subprocess.Popen(
        [
            *CASSTRACE,
            "run",
            demo_query,
            *map(str, node_args),
            "--repeat",
            "10000",
            "--page-size",
            "0",
            "--out",
            str(out),
            "--no-html",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    # Interrupt once the node has served the warmup and a few measured executions (one read each).
    # The node counts a read before the client has the whole result: wait for one more than asserted.
    deadline = time.monotonic() + 60
    while table_reads() < reads_before + 5 and time.monotonic() < deadline:
        time.sleep(0.1)
    run.send_signal(signal.SIGINT)
    _, stderr = run.communicate(timeout=60)
    assert run.returncode == 130
    assert f"marked incomplete, is at {out}" in stderr
    with Trace(out) as trace:
        assert not trace.complete and trace.meta["incomplete_reason"] == "interrupted (Ctrl-C)"
        assert trace.rows("SELECT count(*) FROM executions WHERE kind = 'measured' AND rows > 0")[0][0] >= 3
    assert sorted(p.name for p in tmp_path.iterdir()) == ["interrupted.trace"]


# -- failures: a clear error, a non-zero exit, no trace left -----------------------------------


def assert_failed_cleanly(done, out_dir: Path, *expected):
    assert done.returncode != 0
    last_line = done.stderr.strip().splitlines()[-1]
    assert last_line.startswith("casstrace: error:"), done.stderr
    for text in expected:
        assert text in last_line
    assert list(out_dir.iterdir()) == []


def test_bad_cql_gives_the_servers_message(tmp_path, node_args):
    done = casstrace("run", "SELECT c0 FROMM streams", *node_args, "--out", tmp_path / "t.trace")
    assert_failed_cleanly(done, tmp_path, "no viable alternative at input 'FROMM'")


@pytest.mark.parametrize(
    "query, extra, message",
    [
        ("SELECT c0 FROM streams", ["--keyspace", "no_such_keyspace"], "Keyspace 'no_such_keyspace' does not exist"),
        ("SELECT c0 FROM no_such_keyspace.streams", [], "keyspace no_such_keyspace does not exist"),
        ("SELECT c0 FROM casstrace_demo.no_such_table", [], "table no_such_table does not exist"),
    ],
)
def test_unknown_keyspace_or_table(tmp_path, node_args, query, extra, message):
    done = casstrace("run", query, *node_args, *extra, "--out", tmp_path / "t.trace")
    assert_failed_cleanly(done, tmp_path, message)


def test_wrong_port_fails_fast(tmp_path, sandbox):
    started = time.monotonic()
    done = casstrace(
        "run", "SELECT now() FROM system.local", "--host", sandbox.host, "--port", 1, "--out", tmp_path / "t.trace"
    )
    assert_failed_cleanly(done, tmp_path, f"cannot connect to Cassandra at {sandbox.host}:1")
    assert time.monotonic() - started < 10


# The connect-timeout tests time the connect alone. bcc's compile of the probes, which run starts beside
# the connect, takes seconds of CPU: on a loaded 2-core machine (the suite's own nodes) it delayed the
# connect's error to 11.7 s in the bare-clone rehearsal, against 3.0 s when quiet. The sysdig backend
# compiles nothing, and the connect comes first whatever the backend.
NO_COMPILE = ("--backend", "sysdig")


def test_unresponsive_node_fails_within_the_connect_timeout(tmp_path):
    # A listener that accepts TCP connections (the kernel completes the handshake) and never
    # answers the protocol: a hung node, or some other service on the port.
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen(16)
        started = time.monotonic()
        done = casstrace(
            "run",
            "SELECT now() FROM system.local",
            "--port",
            silent.getsockname()[1],
            "--connect-timeout",
            2,
            *NO_COMPILE,
            "--out",
            tmp_path / "t.trace",
        )
        elapsed = time.monotonic() - started
    assert_failed_cleanly(done, tmp_path, "connection timed out")
    assert 2 <= elapsed < 2 + 6  # the timeout, plus the interpreter and driver start-up


def test_unreachable_host_is_a_clear_error(tmp_path):
    # 192.0.2.0/24 is TEST-NET-1, never routed: refused at once or unanswered until the timeout.
    started = time.monotonic()
    done = casstrace(
        "run",
        "SELECT now() FROM system.local",
        "--host",
        "192.0.2.1",
        "--connect-timeout",
        2,
        *NO_COMPILE,
        "--out",
        tmp_path / "t.trace",
    )
    assert_failed_cleanly(done, tmp_path, "cannot connect to Cassandra at 192.0.2.1:9042")
    assert time.monotonic() - started < 2 + 6


def test_no_cassandra_jvm_on_this_node(tmp_path, node_args):
    # In a PID namespace of its own (own /proc, same network) the node answers but no Cassandra JVM
    # is visible: exactly the situation of running casstrace on a machine that is not the node.
    done = subprocess.run(
        [
            "unshare",
            "--pid",
            "--fork",
            "--mount-proc",
            *CASSTRACE,
            "run",
            "SELECT now() FROM system.local",
            *map(str, node_args),
            "--out",
            str(tmp_path / "t.trace"),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert_failed_cleanly(done, tmp_path, "no Cassandra JVM runs on this node")


def test_pid_of_a_process_that_is_not_cassandra(tmp_path, node_args):
    done = casstrace(
        "run", "SELECT now() FROM system.local", *node_args, "--pid", os.getpid(), "--out", tmp_path / "t.trace"
    )
    assert_failed_cleanly(done, tmp_path, f"process {os.getpid()}", "is not a Cassandra JVM")


def test_credentials_from_cqlshrc_never_reach_the_trace(tmp_path, node_args):
    home = tmp_path / "home"
    (home / ".cassandra").mkdir(parents=True)
    (home / ".cassandra" / "cqlshrc").write_text(
        "[authentication]\nusername = casstrace_rc_user\npassword = Pw-7f3a9c-from-cqlshrc\n"
    )
    out = tmp_path / "traces" / "creds.trace"
    done = casstrace(
        "run",
        "SELECT release_version FROM system.local",
        *node_args,
        "--repeat",
        1,
        "--warmup",
        0,
        "--out",
        out,
        "--no-html",
        env={**os.environ, "HOME": str(home)},
    )
    assert done.returncode == 0, done.stderr
    raw = out.read_bytes()
    assert b"casstrace_rc_user" not in raw and b"Pw-7f3a9c-from-cqlshrc" not in raw
    with Trace(out) as trace:
        assert trace.complete and trace.meta["query"] == "SELECT release_version FROM system.local"


def test_a_capture_that_cannot_start_leaves_no_trace(tmp_path, node_args):
    done = casstrace(
        "run",
        "SELECT release_version FROM system.local",
        *node_args,
        "--backend",
        "sysdig",
        "--out",
        tmp_path / "t.trace",
    )
    if done.returncode == 0:
        pytest.skip("sysdig can capture on this machine: nothing fails to start")
    assert_failed_cleanly(done, tmp_path, "sysdig")


def test_the_verdicts_rule_is_run_s_to_set_as_report_s(tmp_path, node_args, demo_query, demo_tables):
    """--min-excess and --threshold reach run's verdict: the demo's full-row read (hundreds of MiB past
    its necessary read, thousands of times it) is not flagged under a floor or a threshold above that."""
    rules: list[tuple[str, object]] = [("--min-excess", 1 << 40), ("--threshold", 1e9)]
    for option, value in rules:
        out = tmp_path / f"rule{option}.trace"
        done = casstrace(
            "run", demo_query, *node_args, "--repeat", 1, "--warmup", 0, "--no-html", "--out", out, option, value
        )
        assert done.returncode == 0, done.stderr
        assert "VERDICT: NOT FLAGGED" in done.stdout, done.stdout
        done = casstrace("report", out, "--format", "json")
        assert json.loads(done.stdout)["verdict"] == "flagged"  # the same trace, judged by the default rule
