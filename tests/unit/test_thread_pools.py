"""node.thread_pools on a 5.0.9 node's system_views.thread_pools rows (their names as the node gave
them): which pools are the node's flushes and compactions."""

from types import SimpleNamespace

from cassandra import InvalidRequest

from casstrace.node import thread_pools
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


class _Pools:
    """A session whose system_views.thread_pools shows TracingStage busy for `busy` reads (None: the table
    does not exist, as before 4.0)."""

    def __init__(self, busy: int | None):
        self.busy, self.reads = busy, 0

    def execute(self, query):
        if self.busy is None:
            raise InvalidRequest("unconfigured table thread_pools")
        self.reads += 1
        pending = 1 if self.reads <= self.busy else 0
        return [SimpleNamespace(name="TracingStage", active_tasks=0, pending_tasks=pending)]


def test_the_tracing_stage_is_waited_for_until_idle_within_the_timeout():
    catching_up = _Pools(busy=2)
    assert thread_pools.trace_writes_done(catching_up, timeout_s=5) is True and catching_up.reads == 3
    assert thread_pools.trace_writes_done(_Pools(busy=10**6), timeout_s=0.3) is False
    assert thread_pools.trace_writes_done(_Pools(busy=None), timeout_s=5) is None
