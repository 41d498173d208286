"""`casstrace compare` end to end: the real CLI, real probes, the demo tables on the test sandbox."""

import json

import pytest

from casstrace.node.connection import ConnectionSettings, NodeSession
from casstrace.node.query import MeasuringProtocolHandler, execute, prepare
from casstrace.traces import Trace
from casstrace_cli import casstrace

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def queries(demo_tables):
    """The demo's wide-table query and its narrow refactor: the same 200 values of c0."""
    return demo_tables.spec.wide_query, demo_tables.spec.narrow_query


@pytest.fixture(scope="module")
def wide_then_narrow(tmp_path_factory, node_args, queries):
    """One live compare, wide before narrow, with both gates asked for: (report, (before, after) traces, process)."""
    directory = tmp_path_factory.mktemp("compare")
    report = directory / "compare.json"
    done = casstrace(
        "compare",
        "--before",
        queries[0],
        "--after",
        queries[1],
        *node_args,
        "--repeat",
        3,
        "--traces-dir",
        directory / "traces",
        "--format",
        "json",
        "--output",
        report,
        "--fail-if-worse",
        "--max-amplification",
        10,
    )
    traces = tuple(next((directory / "traces").glob(f"*-{role}.trace"), None) for role in ("before", "after"))
    return json.loads(report.read_text()) if report.exists() else None, traces, done


def test_wide_and_narrow_return_the_same_payload_for_far_less_io(wide_then_narrow, demo_tables):
    report, traces, done = wide_then_narrow
    assert done.returncode == 0, done.stderr
    spec = demo_tables.spec
    payload = report["payload"]
    assert payload["status"] == "same" and "digest" in payload["basis"]
    for side in ("first", "second"):  # the spec says what c0 holds: 200 values of 100 bytes
        assert payload[side] == {"rows": spec.rows, "payload_bytes": spec.rows * spec.first_column_bytes}
        assert report[side]["executions"] == 3
    metrics = {m["key"]: m for m in report["metrics"]}
    io = metrics["data_read_bytes"]
    assert io["first"] >= 10 * io["second"]
    assert io["ratio"] == pytest.approx(io["second"] / io["first"])
    assert io["change"].endswith("x less")
    # Nothing comes back that was not read: the narrow read covers at least the (incompressible) payload.
    assert io["second"] >= spec.rows * spec.first_column_bytes
    assert report["first"]["verdict"] == "flagged" and report["second"]["verdict"] == "not flagged"
    assert report["first"]["table"] == f"{spec.keyspace}.{spec.table}"
    assert report["second"]["table"] == f"{spec.keyspace}.{spec.narrow_table}"
    assert metrics["latency_median_s"]["first"] > 0 and metrics["latency_p99_s"]["second"] > 0
    assert [gate["passed"] for gate in report["gates"]] == [True, True] and report["passed"]
    assert [report[side]["trace"] for side in ("first", "second")] == [str(t) for t in traces]


def test_the_digest_never_reaches_the_report_or_the_traces(wide_then_narrow, sandbox, queries):
    report, traces, _ = wide_then_narrow
    settings = ConnectionSettings(host=sandbox.host, port=sandbox.port)
    with NodeSession(settings, protocol_handler=MeasuringProtocolHandler) as node:
        digest = execute(node.session, prepare(node.session, queries[0])).digest
    assert digest not in json.dumps(report)
    for trace in traces:
        assert digest.encode() not in trace.read_bytes()


def test_queries_returning_the_same_sizes_but_different_values_are_refused(tmp_path, node_args, demo_tables):
    spec = demo_tables.spec
    table = f"{spec.keyspace}.{spec.table}"
    half = spec.rows // 2  # two halves of the partition: as many rows, as many bytes, other ts values
    done = casstrace(
        "compare",
        *node_args,
        "--traces-dir",
        tmp_path / "traces",
        "--before",
        f"SELECT ts FROM {table} WHERE stream_id = {spec.stream_id} AND ts < {half}",
        "--after",
        f"SELECT ts FROM {table} WHERE stream_id = {spec.stream_id} AND ts >= {half}",
    )
    assert done.returncode == 2
    (line,) = done.stderr.strip().splitlines()
    assert line.startswith("casstrace: error: refusing to compare: the two queries do not return the same data")
    assert "same row count and size, different values" in line and "(fix: " in line
    assert not (tmp_path / "traces").exists()  # refused before any probe ran or trace was written
    assert done.stdout == ""


def test_different_row_counts_are_refused(tmp_path, node_args, queries, demo_tables):
    spec = demo_tables.spec
    other_column = queries[1].replace("column_no = 0", "column_no = 1")
    done = casstrace(
        "compare", *node_args, "--before", queries[1], "--after", other_column, "--traces-dir", tmp_path / "traces"
    )
    assert done.returncode == 2
    assert "do not return the same data" in done.stderr
    assert f"the second {spec.rows} rows ({spec.rows * spec.other_column_bytes / 2**20:.1f} MiB)" in done.stderr


def test_stored_traces_of_different_data_are_refused(wide_then_narrow, tmp_path, node_args, queries, demo_tables):
    _, (before, _), _ = wide_then_narrow
    other = tmp_path / "other-column.trace"
    ran = casstrace(
        "run",
        queries[1].replace("column_no = 0", "column_no = 1"),
        *node_args,
        "--repeat",
        1,
        "--out",
        other,
        "--no-html",
    )
    assert ran.returncode == 0, ran.stderr
    done = casstrace("compare", before, other)
    assert done.returncode == 2 and done.stdout == ""
    (line,) = done.stderr.strip().splitlines()
    spec = demo_tables.spec
    assert line.startswith(
        "casstrace: error: refusing to compare: the two traces do not return the same data. "
        f"Different data: the first returned {spec.rows} rows (19.5 KiB), the second {spec.rows} rows"
    )


def test_stored_traces_compare_by_the_digest_of_their_leaf_values(
    wide_then_narrow, tmp_path, sandbox, queries, demo_tables
):
    """The wide row's column became a clustering row: the stored traces compare by the leaf digest each kept,
    and hold none of the values."""
    _, (before, after), _ = wide_then_narrow
    done = casstrace("compare", before, after, "--format", "md", "--output", tmp_path / "compare.md")
    assert done.returncode == 0, done.stderr
    text = (tmp_path / "compare.md").read_text()
    assert "Same data, in this shape or another" in text and "never the values" in text
    with Trace(before) as first, Trace(after) as second:
        assert first.meta["leaf_digest"] == second.meta["leaf_digest"]
    with NodeSession(ConnectionSettings(host=sandbox.host, port=sandbox.port)) as node:
        values = [row.c0 for row in node.session.execute(queries[0])]
    spec = demo_tables.spec
    assert len(values) == spec.rows and all(len(value) == spec.first_column_bytes for value in values)
    for trace in (before, after):
        held = trace.read_bytes()
        assert not [value for value in values if value in held]


def test_fail_if_worse_fails_when_the_second_reads_more(wide_then_narrow, tmp_path):
    _, (before, after), _ = wide_then_narrow
    done = casstrace("compare", after, before, "--fail-if-worse", "--format", "json")
    assert done.returncode == 1, done.stderr
    report = json.loads(done.stdout)
    (gate,) = report["gates"]
    assert gate["option"] == "--fail-if-worse" and not gate["passed"] and not report["passed"]
    assert "B reads" in gate["reason"] and "x more from its Data files" in gate["reason"]
    assert casstrace("compare", after, before).returncode == 0  # no gate asked for, no failure


def test_max_amplification_gates_the_second_query(wide_then_narrow):
    _, (before, after), _ = wide_then_narrow
    assert casstrace("compare", before, after, "--max-amplification", 10).returncode == 0
    done = casstrace("compare", after, before, "--max-amplification", 10, "--format", "json")
    assert done.returncode == 1
    (gate,) = json.loads(done.stdout)["gates"]
    assert "above the limit of 10x" in gate["reason"]


def test_html_report_opens_offline(wide_then_narrow, tmp_path):
    _, traces, _ = wide_then_narrow
    done = casstrace("compare", *traces, "--format", "html", "--output", tmp_path / "c.html")
    assert done.returncode == 0, done.stderr
    page = (tmp_path / "c.html").read_text()
    assert page.startswith("<!DOCTYPE html>") and "Side by side, per execution" in page
    assert "cdn" not in page.lower().split("<script", 1)[0]


@pytest.mark.parametrize("args", [["one.trace"], ["--before", "SELECT 1"], ["a.trace", "b.trace", "--after", "x"]])
def test_bad_arguments_fail_in_one_line(args):
    done = casstrace("compare", *args)
    assert done.returncode == 2
    assert done.stderr.startswith("casstrace: error: give either two traces or both --before and --after")


def test_missing_trace_fails_in_one_line(tmp_path):
    done = casstrace("compare", tmp_path / "a.trace", tmp_path / "b.trace")
    assert done.returncode == 2 and len(done.stderr.strip().splitlines()) == 1
