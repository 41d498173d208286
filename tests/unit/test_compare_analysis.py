"""analyses/compare.py without a node: the payload check, a measure compared only with itself, the gate
on a figure one side lacks, stored leaf digests (tests/integration/test_compare.py runs both sides)."""

import json
import shutil
import sqlite3

import pytest

import synthetic_traces as synthetic
from casstrace.analyses import analyse
from casstrace.analyses.compare import Payload, check_payload, compare, stored_payload
from casstrace.errors import CasstraceError
from casstrace.node.leaves import LeafDigest, RowShape
from casstrace.reports import render
from casstrace.reports.comparison import document
from casstrace_cli import casstrace, one_error_line


def test_payload_check_by_digest_sees_values_not_sizes():
    same_size = check_payload(Payload(3, 30, "aa"), Payload(3, 30, "bb"))
    assert same_size.status == "different" and "different values" in same_size.summary
    assert check_payload(Payload(3, 30, "aa"), Payload(3, 30, "aa")).status == "same"
    stored = check_payload(Payload(3, 30), Payload(3, 30))
    assert stored.status == "same" and "payload bytes only" in stored.basis
    assert (
        check_payload(Payload(None, None, note="no measured execution recorded"), Payload(3, 30)).status == "unverified"
    )


# -- a measure compared only with itself -------------------------------------------------------


@pytest.fixture(scope="module")
def timed_and_older(tmp_path_factory):
    """A run trace with the node's time (20 ms of a 50 ms round trip), and its copy without it (an older
    format's trace: no node_ns rows)."""
    directory = tmp_path_factory.mktemp("compare")
    timed = synthetic.timed_run(directory / "timed.trace", node_ns=20_000_000, latency_s=0.05)
    older = directory / "older.trace"
    shutil.copy(timed, older)
    with sqlite3.connect(older) as db:
        assert db.execute("DELETE FROM window_measures WHERE measure = 'node_ns'").rowcount == 1
    db.close()
    return timed, older


def test_a_measure_one_side_lacks_is_shown_missing_never_another_in_its_place(timed_and_older):
    timed, older = timed_and_older
    comparison = compare(analyse(older), analyse(timed), fail_if_worse=True)
    latency = comparison.metric("latency_median_s")
    # the round trip on both sides (B's node time is not put against A's round trip)
    assert (latency.name, latency.first, latency.second, latency.change) == (
        "Latency (client round trip), median",
        0.05,
        0.05,
        "same",
    )
    assert comparison.first.latency_of == comparison.second.latency_of == "client"
    node = comparison.metric("node_ns")
    assert (node.first, node.change) == (None, "not comparable") and node.second == pytest.approx(0.02)
    (gate,) = comparison.gates
    assert gate.passed and "latency (client round trip), median" in gate.reason
    text = render(document(comparison), "text")
    (row,) = [line for line in text.splitlines() if line.lstrip().startswith("Node time per execution")]
    assert "not measured" in row and "20.0 ms" in row and "not comparable" in row


def test_a_trace_and_its_copy_without_node_time_compare_same_and_pass(timed_and_older):
    timed, older = timed_and_older
    done = casstrace("compare", older, timed, "--fail-if-worse", "--format", "json")
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    metrics = {metric["key"]: metric for metric in report["metrics"]}
    assert metrics["latency_median_s"]["ratio"] == 1.0 and metrics["latency_median_s"]["change"] == "same"
    assert metrics["node_ns"]["first"] is None and metrics["node_ns"]["ratio"] is None
    assert report["passed"] and [gate["passed"] for gate in report["gates"]] == [True]
    both = compare(analyse(timed), analyse(timed), fail_if_worse=True)  # both timed: the node's time
    assert both.metric("latency_median_s").name == "Node time, median" and both.metric("latency_median_s").ratio == 1


def test_the_worse_gate_on_a_figure_one_side_lacks_is_refused(timed_and_older, tmp_path):
    timed, _ = timed_and_older
    untimed = tmp_path / "no-round-trip.trace"
    shutil.copy(timed, untimed)
    with sqlite3.connect(untimed) as db:
        db.execute("UPDATE executions SET latency_s = NULL")
        db.execute("DELETE FROM window_measures WHERE measure = 'node_ns'")
    db.close()
    with pytest.raises(CasstraceError, match=r"--fail-if-worse cannot weigh latency \(client round trip\), median"):
        compare(analyse(timed), analyse(untimed), fail_if_worse=True)
    line = one_error_line(casstrace("compare", timed, untimed, "--fail-if-worse"))
    assert "(B's not measured)" in line and "never compared" in line
    assert compare(analyse(timed), analyse(untimed)).metric("latency_median_s").change == "not comparable"


# -- stored traces of a refactor: the digest of their leaf values -----------------------------


def test_stored_leaf_digests_decide_the_same_data_in_another_shape(tmp_path):
    leaves = LeafDigest(RowShape(("pk",)))
    leaves.add(["pk", "a", "b"], [(1, "secret-value-one", "secret-value-two")])
    digest = leaves.digest()
    columns = synthetic.timed_run(tmp_path / "columns.trace", rows=1, payload_bytes=32, leaf_digest=digest)
    udt = synthetic.timed_run(tmp_path / "udt.trace", rows=1, payload_bytes=40, leaf_digest=digest)
    other = synthetic.timed_run(tmp_path / "other.trace", rows=1, payload_bytes=40, leaf_digest="0" * 64)
    same = check_payload(stored_payload(analyse(columns)), stored_payload(analyse(udt)))
    assert same.status == "same" and "leaf values" in same.basis
    assert casstrace("compare", columns, udt).returncode == 0
    line = one_error_line(casstrace("compare", columns, other))
    assert "the two traces do not return the same data. Different data: the first returned 1 row (32 B)" in line
    assert "compare --before CQL --after CQL" in line  # the fix: the live check
    for trace in (columns, udt):
        stored = trace.read_bytes()
        assert digest.encode() in stored and b"secret-value" not in stored
