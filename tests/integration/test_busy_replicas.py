"""`casstrace run` at QUORUM on the 3-node sandbox while other clients read other keys of the same
table (issue 32): every replica serves them too, and each is charged only what its own threads read
while they served the execution.

The other clients are real: a driver Cluster of their own per node, each coordinated by its node at
ONE (so every replica serves them), reading other keys at RATE requests/s together, bounded in
flight and in time, on loopback; their achieved rate is asserted. The independent truths: the same
query measured on the idle cluster (where each replica's windows hold only its own reads), and the
busy windows' own totals per node (file_io), which hold the other clients' reads too.
"""

import statistics
import time
from collections import defaultdict
from contextlib import ExitStack
from pathlib import Path

import pytest

from casstrace.analyses import analyse
from casstrace.analyses.attribution import run_attribution
from casstrace.analyses.model import Analysis
from casstrace.node.connection import resolve_settings
from casstrace.orchestration.runner import RunOptions, run
from casstrace.sandbox.cluster import SandboxCluster
from casstrace.sandbox.workload import BackgroundRequests, PointTable
from casstrace.traces import Trace, queries
from casstrace.traces.sstable_names import parse_sstable_path
from test_busy_node import IN_FLIGHT, KEY, LEAD_S, WITHIN

pytestmark = pytest.mark.integration

# Requests/s asked of the other clients, one a node, each coordinated by its node at ONE (a local read):
# every replica serves them. (One client at QUORUM through node 1 reached 96/s of 450 asked on the shared
# 2-core machine, and timed out; nor does it make the third replica read.)
RATE = 450
# What they must achieve together (issue 32 asks 300): the three nodes on the 2-core test machine,
# otherwise idle, answered 399/s of them (2026-11-28); loaded by four suites (load 40-57), 238/s.
MIN_RATE = 300
MAX_ERRORS = 0.05  # of the other clients' requests: timeouts of an overloaded machine, not the test's subject
REPEAT = 9  # the median of 9 keeps a neighbour's chunk charged to some executions out (3 of 5 once)
# The other clients' reads must reach every node's windows (~2 ms each): once in 10 suite runs node 3 read
# nothing in all nine at 150 requests/s of its client. The busy run is taken again, at most this many
# times in all, until each node read the table in its windows.
BUSY_RUNS = 3


@pytest.fixture(scope="module")
def cluster_points(cluster: SandboxCluster) -> PointTable:
    """The point table at RF 3 on the test cluster, flushed on every node (kept across sessions), without
    speculative retries: with the default (99p), a read slower than the table's 99th percentile, which
    on a busy machine is any read, also goes to the third replica, and QUORUM reads on two or three."""
    table = PointTable("casstrace_busy_cluster", replication_factor=3)
    with cluster.node(1).connect() as session:
        table.ensure(
            session, lambda keyspace, name: [member.nodetool("flush", keyspace, name) for member in cluster.nodes]
        )
        session.execute(f"ALTER TABLE {table.name} WITH speculative_retry = 'NEVER'")
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


def read_by_each_node(reads: dict[int, dict[int, int]]) -> dict[int, int]:
    """node_id -> what it read of the table over the measured windows (window_reads')."""
    return {node: sum(per_node.get(node, 0) for per_node in reads.values()) for node in (1, 2, 3)}


def test_a_quorum_read_charges_each_replica_only_its_own_part_under_load(cluster, cluster_points, tmp_path):
    query = cluster_points.point_query(KEY)
    idle = quorum_run(cluster, query, tmp_path / "idle.trace")
    with ExitStack() as stack:
        loads = [
            stack.enter_context(
                BackgroundRequests(
                    stack.enter_context(member.connect()),
                    cluster_points.by_key,
                    cluster_points.keys_except(KEY),
                    RATE / len(cluster.nodes),
                    duration_s=600,
                    in_flight=IN_FLIGHT,
                )
            )
            for member in cluster.nodes
        ]
        time.sleep(LEAD_S)
        for attempt in range(BUSY_RUNS):
            busy = quorum_run(cluster, query, tmp_path / f"busy-{attempt}.trace")
            if all(read_by_each_node(window_reads(busy)).values()):
                break
        achieved = sum(load.achieved_rate for load in loads)

    print(f"the other clients: {achieved:.0f} requests/s, {sum(load.errors for load in loads)} errors")
    idle_reads, busy_charged = window_reads(idle), charged(busy)
    assert len(busy_charged) == REPEAT
    # Idle, the kernel's counts are the truth: at QUORUM two replicas read the row in each execution
    # (a data read and a digest read), and the join charges them what they read.
    assert all(sum(1 for size in per_node.values() if size) >= 2 for per_node in idle_reads.values()), idle_reads
    assert idle.overall.busy is not None and (idle.overall.busy.attributed_share or 0) >= 0.9
    # Busy: the other client's reads were in every node's windows, far more than the query's part.
    totals = read_by_each_node(window_reads(busy))
    assert all(totals.values()), totals  # each node coordinated its client's reads, and read them itself
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
    assert sum(load.errors for load in loads) <= MAX_ERRORS * sum(load.completed for load in loads)
    print(f"the other clients: {achieved:.0f} requests/s answered")
    assert achieved >= MIN_RATE, f"the other clients reached {achieved:.0f} requests/s"
