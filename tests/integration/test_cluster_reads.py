"""Issue 12 on a real 3-node sandbox (RF 3, the demo data): what a read at ONE and at QUORUM makes
the replicas read, each replica's JVM captured by `casstrace run` on the same windows.

The independent truth is the replicas' own Data.db files: at ONE one node reads, at QUORUM two or
more read about as much each (a digest read reads the rows as a data read does), and what a node
reads per execution is bounded by its Data.db.
"""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from casstrace.analyses import analyse
from casstrace.analyses.model import Analysis
from casstrace.analyses.nodes import readers_per_execution
from casstrace.sandbox.cluster import SandboxCluster
from casstrace.sandbox.demo import DemoData
from node_jit import full_jit

pytestmark = [pytest.mark.integration, pytest.mark.usefixtures("no_speculative_retry")]

REPEAT = 2


def run(
    cluster: SandboxCluster, demo: DemoData, out: Path, consistency: str, *extra: str
) -> subprocess.CompletedProcess[str]:
    first = cluster.nodes[0]
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "casstrace",
            "run",
            "--host",
            first.host,
            "--port",
            str(first.native_port),
            "--consistency",
            consistency,
            "--repeat",
            str(REPEAT),
            "--out",
            str(out),
            "--no-html",
            demo.spec.wide_query,
            *extra,
        ],
        capture_output=True,
        text=True,
        timeout=600,
    )


def traced(cluster: SandboxCluster, demo: DemoData, out: Path, consistency: str) -> Analysis:
    result = run(cluster, demo, out, consistency)
    assert result.returncode in (0, 1), result.stderr  # 1: flagged
    return analyse(out)


@pytest.fixture(scope="module")
def at_one(cluster: SandboxCluster, cluster_demo: DemoData, tmp_path_factory: pytest.TempPathFactory) -> Analysis:
    return traced(cluster, cluster_demo, tmp_path_factory.mktemp("one") / "one.trace", "ONE")


@pytest.fixture(scope="module")
def at_quorum(cluster: SandboxCluster, cluster_demo: DemoData, tmp_path_factory: pytest.TempPathFactory) -> Analysis:
    return traced(cluster, cluster_demo, tmp_path_factory.mktemp("quorum") / "quorum.trace", "QUORUM")


def _data_db_bytes(demo: DemoData) -> dict[str, int]:
    return {node.address: node.wide.data_bytes for node in demo.nodes}


def test_one_reads_on_one_node(at_one: Analysis, cluster_demo: DemoData) -> None:
    assert [node.address for node in at_one.nodes] == ["127.0.0.1", "127.0.0.2", "127.0.0.3"]
    assert all(node.captured for node in at_one.nodes), [node.not_captured for node in at_one.nodes]
    # The coordinator asks the replica its dynamic snitch likes best: not always itself.
    assert list(readers_per_execution(at_one.nodes).values()) == [1] * REPEAT, [
        (n.address, n.reads_in, n.data_read_bytes) for n in at_one.nodes
    ]
    sizes = _data_db_bytes(cluster_demo)
    for reader in (node for node in at_one.nodes if node.read_data):
        assert reader.data_read_bytes is not None
        assert reader.data_read_bytes <= len(reader.reads_in) * sizes[reader.address]
    assert "ONE: 1 replica read" in at_one.verdict.summary


def test_quorum_reads_on_two_nodes_each_as_much(at_one: Analysis, at_quorum: Analysis, cluster_demo: DemoData) -> None:
    per_execution = readers_per_execution(at_quorum.nodes)
    assert len(per_execution) == REPEAT and min(per_execution.values()) >= 2, [
        (n.address, n.roles, n.reads_in, n.data_read_bytes) for n in at_quorum.nodes
    ]
    sizes = _data_db_bytes(cluster_demo)
    for node in (node for node in at_quorum.nodes if node.read_data):
        assert node.data_read_bytes is not None
        assert node.data_read_bytes <= len(node.reads_in) * sizes[node.address]
    assert at_quorum.overall.data_read_bytes >= 1.8 * at_one.overall.data_read_bytes
    # Roles from Cassandra's own query trace: the coordinator, a data read and a digest read.
    roles = {role for node in at_quorum.nodes for role in node.roles}
    assert {"coordinator", "data replica", "digest replica"} <= roles
    assert "QUORUM: " in at_quorum.verdict.summary and "1 digest read" in at_quorum.verdict.summary


def test_roles_are_shown_in_the_report(at_quorum: Analysis, tmp_path: Path) -> None:
    shown = subprocess.run(
        [sys.executable, "-m", "casstrace", "report", at_quorum.trace_path], capture_output=True, text=True, timeout=120
    )
    assert "== Nodes at QUORUM" in shown.stdout and "digest replica" in shown.stdout, shown.stdout + shown.stderr
    as_json = subprocess.run(
        [sys.executable, "-m", "casstrace", "report", at_quorum.trace_path, "--format", "json"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    nodes = json.loads(as_json.stdout)["nodes"]
    assert {node["address"] for node in nodes if node["data_read_bytes"]} == {
        node.address for node in at_quorum.nodes if node.read_data
    }
    assert all(node["role"] for node in nodes)


def test_a_node_down_one_still_works_and_the_missing_replica_is_named(
    cluster: SandboxCluster, cluster_demo: DemoData, tmp_path: Path
) -> None:
    cluster.stop(only=3)
    try:
        out = tmp_path / "down.trace"
        result = run(cluster, cluster_demo, out, "ONE")
        assert result.returncode in (0, 1), result.stderr
        analysis = analyse(out)
        missing = [node for node in analysis.nodes if not node.captured]
        assert [node.address for node in missing] == ["127.0.0.3"]
        assert missing[0].not_captured and "down" in missing[0].not_captured
        assert missing[0].data_read_bytes is None
        assert "Not captured: 127.0.0.3" in analysis.verdict.summary and "at least" in analysis.verdict.summary
        assert "127.0.0.3" in result.stdout
    finally:
        with full_jit():
            cluster.start(only=3, progress=lambda _: None)


def test_compare_one_with_quorum(cluster: SandboxCluster, cluster_demo: DemoData, tmp_path: Path) -> None:
    first = cluster.nodes[0]
    query = cluster_demo.spec.wide_query
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "casstrace",
            "compare",
            "--before",
            query,
            "--after",
            query,
            "--consistency",
            "ONE",
            "--after-consistency",
            "QUORUM",
            "--host",
            first.host,
            "--port",
            str(first.native_port),
            "--repeat",
            str(REPEAT),
            "--traces-dir",
            str(tmp_path),
            "--format",
            "json",
        ],
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    metrics = {metric["key"]: metric for metric in data["metrics"]}
    assert metrics["replicas_read"]["first"] == 1 and metrics["replicas_read"]["second"] >= 2
    assert metrics["data_read_bytes"]["second"] >= 1.8 * metrics["data_read_bytes"]["first"]
    assert (data["first"]["consistency"], data["second"]["consistency"]) == ("ONE", "QUORUM")
    assert "What the consistency level costs: at QUORUM" in data["summary"]
