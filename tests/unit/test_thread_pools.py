"""node.thread_pools on a 5.0.9 node's system_views.thread_pools rows (their names as the node gave
them): which pools are the node's flushes and compactions."""

from types import SimpleNamespace

from casstrace.node.thread_pools import BACKGROUND_ROLES, busy

# system_views.thread_pools' names on the 5.0.9 development node, in its order
POOLS_50 = (
    "CacheCleanupExecutor",
    "CompactionExecutor",
    "GossipStage",
    "HintsDispatcher",
    "MemtableFlushWriter",
    "MemtablePostFlush",
    "MemtableReclaimMemory",
    "MigrationStage",
    "MutationStage",
    "Native-Transport-Auth-Requests",
    "Native-Transport-Requests",
    "PendingRangeCalculator",
    "PerDiskMemtableFlushWriter_0",
    "ReadStage",
    "Sampler",
    "SecondaryIndexExecutor",
    "SecondaryIndexManagement",
    "StatusPropagationExecutor",
    "TracingStage",
    "ValidationExecutor",
    "ViewBuildExecutor",
)
FLUSH_AND_COMPACTION = [
    "CompactionExecutor",
    "MemtableFlushWriter",
    "MemtablePostFlush",
    "MemtableReclaimMemory",
    "PerDiskMemtableFlushWriter_0",
]


def rows(active: int, pending: int) -> list[SimpleNamespace]:
    return [SimpleNamespace(name=name, active_tasks=active, pending_tasks=pending) for name in POOLS_50]


def test_the_flush_and_compaction_pools_are_busy_with_a_task_running_or_waiting():
    assert busy(rows(1, 0), BACKGROUND_ROLES) == FLUSH_AND_COMPACTION
    assert busy(rows(0, 3), BACKGROUND_ROLES) == FLUSH_AND_COMPACTION
    assert busy(rows(0, 0), BACKGROUND_ROLES) == []
