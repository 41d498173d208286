"""`casstrace run` at QUORUM on the 3-node sandbox while another client reads other keys of the same
table (issue 32): every replica serves the other client too, and each is charged only what its own
threads read while they served the execution.

The other client is real: a driver Cluster of its own, coordinated by node 1, reading other keys at
QUORUM (so every replica serves it) at RATE requests/s, bounded in flight and in time, on loopback;
its achieved rate is asserted. The independent truths: the same query measured on the idle cluster
(where each replica's windows hold only its own reads), and the busy windows' own totals per node
(file_io), which hold the other client's reads too.
"""

import statistics
import time
from collections import defaultdict
from pathlib import Path

import pytest

from casstrace.analyses import analyse
from casstrace.analyses.attribution import run_attribution
from casstrace.analyses.model import Analysis
from casstrace.node.connection import resolve_settings
from casstrace.orchestration.runner import RunOptions, run
from casstrace.sandbox.cluster import SandboxCluster
from casstrace.sandbox.workload import BackgroundReads, PointTable
from casstrace.traces import Trace, queries
from casstrace.traces.sstable_names import parse_sstable_path
from test_busy_node import IN_FLIGHT, KEY, LEAD_S, WITHIN, reached

pytestmark = pytest.mark.integration

RATE = 450  # requests/s asked of the other client, each a QUORUM read on two of the three nodes
MIN_RATE = 300  # what it must achieve (issue 32)
REPEAT = 5


@pytest.fixture(scope="module")
def cluster_points(cluster: SandboxCluster) -> PointTable:
    """The point table at RF 3 on the test cluster, flushed on every node (kept across sessions)."""
    table = PointTable("casstrace_busy_cluster", replication_factor=3)
    with cluster.node(1).connect() as session:
        table.ensure(
            session, lambda keyspace, name: [member.nodetool("flush", keyspace, name) for member in cluster.nodes]
        )
    return table


def quorum_run(cluster: SandboxCluster, query: str, out: Path) -> Analysis:
    coordinator = cluster.node(1)
    options = RunOptions(
        query=query,
        connection=resolve_settings(coordinator.host, coordinator.native_port),
        out=out,
        repeat=REPEAT,
        consistency="QUORUM",
    )
    return analyse(run(options))


def charged(analysis: Analysis) -> dict[int, dict[int, int]]:
    """window_id -> node_id -> the queried table's Data bytes charged to that node's threads in the
    measured execution of that window (the join's share of the node's own files; the Nodes table adds
    these up)."""
    found: dict[int, dict[int, int]] = defaultdict(dict)
    with Trace(analysis.trace_path) as trace:
        attributed = run_attribution(trace)
        assert attributed is not None, "the run was not charged by thread"
        nodes = queries.file_node_ids(trace)
        data = {
            file_id: name
            for file_id, path in queries.file_paths(trace, "file")
            if (name := parse_sstable_path(path)) and name.table == analysis.table and name.component == "Data"
        }
        for node_id in set(nodes.values()):
            own = {file_id: name for file_id, name in data.items() if nodes.get(file_id) == node_id}
            for window_id, share in attributed.shares(own).items():
                found[window_id][node_id] = share.data_read_bytes
    return found


def window_reads(analysis: Analysis) -> dict[int, dict[int, int]]:
    """window_id -> node_id -> what the kernel counted (file_io) of the node's Data files of the table
    in each measured window: every thread's reads, the other client's included."""
    found: dict[int, dict[int, int]] = defaultdict(dict)
    with Trace(analysis.trace_path) as trace:
        for window_id, node_id, size in trace.rows(
            "SELECT io.window_id, f.node_id, coalesce(sum(io.read_bytes), 0) FROM file_io io JOIN files f"
            " USING (file_id) WHERE f.path LIKE ? AND f.path LIKE '%-Data.db' AND io.window_id IN"
            " (SELECT window_id FROM executions WHERE kind = 'measured') GROUP BY 1, 2",
            (f"%/{analysis.table}-%",),
        ):
            found[window_id][node_id] = size
    return found


def replica_reads(found: dict[int, dict[int, int]]) -> list[int]:
    """Each (execution, replica that read) pair's bytes."""
    return [size for per_node in found.values() for size in per_node.values() if size]


def test_a_quorum_read_charges_each_replica_only_its_own_part_under_load(cluster, cluster_points, tmp_path):
    query = cluster_points.point_query(KEY)
    idle = quorum_run(cluster, query, tmp_path / "idle.trace")
    with cluster.node(1).connect() as session:
        load = BackgroundReads(
            session,
            cluster_points.by_key,
            cluster_points.keys_except(KEY),
            RATE,
            duration_s=600,
            in_flight=IN_FLIGHT,
            consistency="QUORUM",
        )
        with load:
            time.sleep(LEAD_S)
            busy = quorum_run(cluster, query, tmp_path / "busy.trace")

    idle_reads, busy_charged = window_reads(idle), charged(busy)
    assert len(busy_charged) == REPEAT
    # Idle, the kernel's counts are the truth: at QUORUM two replicas read the row in each execution
    # (a data read and a digest read), and the join charges them what they read.
    assert all(sum(1 for size in per_node.values() if size) >= 2 for per_node in idle_reads.values()), idle_reads
    assert idle.overall.busy is not None and (idle.overall.busy.attributed_share or 0) >= 0.9
    # Busy: the other client's reads were in every node's windows, far more than the query's part.
    busy_reads = window_reads(busy)
    totals = {node: sum(per_node.get(node, 0) for per_node in busy_reads.values()) for node in (1, 2, 3)}
    assert all(totals.values()), totals
    assert sum(totals.values()) > 2 * sum(replica_reads(busy_charged)), (totals, busy_charged)
    # Each replica that read is charged its own read, as much as it read on the idle cluster; and each
    # execution the replicas' sum.
    ratio = statistics.median(replica_reads(busy_charged)) / statistics.median(replica_reads(idle_reads))
    assert 1 / WITHIN <= ratio <= WITHIN, (idle_reads, busy_charged)
    busy_executions = [sum(per_node.values()) for per_node in busy_charged.values()]
    idle_executions = [sum(per_node.values()) for per_node in idle_reads.values()]
    assert 1 / WITHIN <= statistics.median(busy_executions) / statistics.median(idle_executions) <= WITHIN
    # The Nodes table gives each node what the join charged it.
    for node in busy.nodes:
        assert node.amplification is not None
        assert node.amplification.data_read_bytes == pytest.approx(
            sum(per_node.get(node.node_id, 0) for per_node in busy_charged.values()), abs=REPEAT
        )
    assert busy.overall.busy is not None and busy.overall.busy.busy_executions == REPEAT
    assert busy.verdict.status == idle.verdict.status == "not flagged"
    reached(load, MIN_RATE)
