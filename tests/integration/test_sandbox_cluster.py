"""`casstrace sandbox --nodes 3` against three real Cassandra JVMs, through the real CLI.

Uses the session's test cluster (conftest `cluster`, `cluster_demo`); the last test stops it
through the CLI and starts it again, as a user would, so the tests after it find it running.
"""

import socket

import pytest

from casstrace.node.jvm import read_argv
from casstrace.sandbox.cluster import SandboxCluster, ring_states
from casstrace.sandbox.demo import DemoData
from casstrace.sandbox.settings import HOST
from casstrace_cli import casstrace
from node_jit import full_jit

pytestmark = pytest.mark.integration


def bound(address: str, port: int) -> bool:
    with socket.socket() as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((address, port))
            return False
        except OSError:
            return True


def test_status_shows_every_node(cluster: SandboxCluster) -> None:
    result = casstrace("sandbox", "status", "--data-dir", cluster.data_dir)
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.startswith("running: Cassandra ")
    for number, node in enumerate(cluster.nodes, 1):
        row = next(
            line.split()
            for line in result.stdout.splitlines()
            if line.split()[:2] == [str(number), f"127.0.0.{number}"]
        )
        assert row[2:5] == ["running", str(node.pid()), str(cluster.nodes[0].jmx_port + number - 1)]
    assert f"native port {cluster.nodes[0].native_port} and storage port" in result.stdout


def test_each_node_is_its_own_jvm_on_its_own_address(cluster: SandboxCluster) -> None:
    pids = [node.pid() for node in cluster.nodes]
    assert None not in pids and len(set(pids)) == 3
    native_port = cluster.nodes[0].native_port
    for number, (node, pid) in enumerate(zip(cluster.nodes, pids), 1):
        assert pid is not None
        argv = read_argv(pid) or ()
        assert "-Xmx512M" in argv and f"-Dcassandra.config=file://{node.layout.yaml}" in argv
        assert node.data_dir == (cluster.data_dir if number == 1 else cluster.data_dir / f"node{number}")
        assert node.native_port == native_port and bound(f"127.0.0.{number}", native_port)
        assert bound(HOST, node.jmx_port)


def test_nodetool_status_shows_three_UN_nodes_owning_the_demo_keyspace_at_rf_3(
    cluster: SandboxCluster, cluster_demo: DemoData
) -> None:
    result = casstrace(
        "sandbox", "nodetool", "--data-dir", cluster.data_dir, "--node", "2", "status", cluster_demo.keyspace
    )
    assert result.returncode == 0, result.stderr
    assert ring_states(result.stdout) == {f"127.0.0.{k}": "UN" for k in (1, 2, 3)}
    ownership = [line for line in result.stdout.splitlines() if line.startswith("UN ")]
    assert all("100.0%" in line for line in ownership), result.stdout


def test_every_node_holds_the_whole_demo_rows(cluster_demo: DemoData) -> None:
    assert [node.address for node in cluster_demo.nodes] == ["127.0.0.1", "127.0.0.2", "127.0.0.3"]
    for node in cluster_demo.nodes:
        assert len(node.wide.data_files) == 1, node
        # Random values do not compress: each replica's one Data.db holds all of them.
        assert node.wide.data_bytes >= cluster_demo.spec.total_bytes


def test_cql_on_node_2(cluster: SandboxCluster, cluster_demo: DemoData) -> None:
    result = casstrace(
        "sandbox",
        "cql",
        "--data-dir",
        cluster.data_dir,
        "--node",
        "2",
        "SELECT broadcast_address FROM system.local; "
        f"SELECT count(*) FROM {cluster_demo.keyspace}.{cluster_demo.spec.table}",
    )
    assert result.returncode == 0, result.stderr
    assert "127.0.0.2" in result.stdout
    assert f"\n{cluster_demo.spec.rows}\n" in result.stdout


def test_stop_leaves_no_jvm_and_start_brings_the_ring_back(cluster: SandboxCluster, cluster_demo: DemoData) -> None:
    pids = [node.pid() for node in cluster.nodes]
    stopped = casstrace("sandbox", "stop", "--data-dir", cluster.data_dir)
    assert stopped.returncode == 0, stopped.stderr
    assert stopped.stdout.splitlines() == [f"node {k}: stopped pid {pid}" for k, pid in enumerate(pids, 1)]
    for number, (node, pid) in enumerate(zip(cluster.nodes, pids), 1):
        assert pid is not None
        assert f"-Dcassandra.config=file://{node.layout.yaml}" not in (read_argv(pid) or ())
        assert not bound(f"127.0.0.{number}", node.native_port)
        assert not bound(HOST, node.jmx_port)
        assert not node.layout.pid_file.exists()
    status = casstrace("sandbox", "status", "--data-dir", cluster.data_dir)
    assert status.returncode == 3 and status.stdout.startswith("stopped")

    # Every setting is remembered: the data directory alone starts all three again.
    with full_jit() as environment:
        started = casstrace("sandbox", "start", "--data-dir", cluster.data_dir, env=environment)
    assert started.returncode == 0, started.stderr
    assert "(3 nodes) started" in started.stdout
    assert cluster.ring() == {f"127.0.0.{k}": "UN" for k in (1, 2, 3)}
    for node, tables in zip(cluster.nodes, cluster_demo.nodes):
        assert (
            sorted(node.layout.data.glob(f"{cluster_demo.keyspace}/{cluster_demo.spec.table}-*/*-Data.db"))
            == tables.wide.data_files
        )
