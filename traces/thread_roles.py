"""What each thread of a Cassandra node does, from its name: the one registry of thread roles, per
Cassandra version series (4.0, 4.1, 5.0), for `run`, `watch` and the time split alike.

A thread's name comes in two forms. The JVM's (Cassandra's trace events, `jcmd Thread.print`, JFR)
is whole: 'Native-Transport-Requests-2', 'CompactionExecutor:1', 'PerDiskMemtableFlushWriter_0:1'.
The kernel's (/proc's comm, the scheduler's prev_comm) is the same name cut to 15 bytes:
'Native-Transpor', 'CompactionExecu', 'epollEventLoopG'. A registered pool names its threads with
its name first; `role_of` takes either form.

Cassandra's shared worker pool (SEPWorker) serves the request stages in turn: a worker renames
itself '<stage>-<worker id>' as it switches, the id staying its own, so 'ReadStage-2' and
'Native-Transport-Requests-2' are one thread, whose role is that of the stage it serves now (what
the kernel's name says at a context switch). Other pools name their threads '<pool>:<n>' and keep
them; single threads are named once ('COMMIT-LOG-ALLOCATOR').

Names are Cassandra's (org.apache.cassandra.concurrent.Stage, the commit log services, the flush and
compaction executors, ...) and HotSpot's (its collectors' and compilers' threads), checked against a
5.0.9 node's /proc and the 4.1.10 and 5.0.9 releases' classes. A name no pool claims is OTHER.
"""

import re
from collections.abc import Collection
from dataclasses import dataclass
from enum import Enum

KERNEL_NAME_CHARS = 15  # a task's comm: TASK_COMM_LEN (16) less its terminating NUL


class Role(Enum):
    """What a thread does; the value is what it does in words, as reports show it."""

    CLIENT_REQUESTS = "CQL requests"  # the native transport's request pool: takes and coordinates them
    CLIENT_CONNECTIONS = "client connections"  # the native transport's netty event loops: the sockets
    LOCAL_READ = "local read"
    LOCAL_WRITE = "local write"
    REPLICA_RESPONSES = "replica responses"  # the coordinator's handling of the replicas' answers
    COMMIT_LOG = "commit log"
    MEMTABLE_FLUSH = "memtable flush"
    COMPACTION = "compaction"
    VALIDATION = "repair (validation)"  # a repair's Merkle trees: compaction manager's validation executor
    VIEW_BUILD = "view build"
    INDEX_BUILD = "index build"
    CACHE_SAVING = "cache saving"
    REPAIR = "repair"
    HINTS = "hints"
    TRACING = "query tracing"  # writes the traced requests' sessions and events to system_traces
    INTERNODE = "internode messaging"  # messaging and gossip
    GC = "garbage collection"
    JIT = "JIT compilation"
    OTHER = "other"


@dataclass(frozen=True)
class Pool:
    """Threads named `name` first (the JVM's whole name): a Cassandra pool, or a JVM thread kind."""

    name: str
    role: Role
    shared: bool = False  # a stage of the shared worker pool: its workers are '<stage>-<worker id>'

    @property
    def kernel_prefix(self) -> str:
        return self.name[:KERNEL_NAME_CHARS]


# Every series 4.0-5.0 has these.
_CASSANDRA = (
    Pool("Native-Transport-Requests", Role.CLIENT_REQUESTS, shared=True),
    # authentication's own pool (CASSANDRA-17812, in 5.0; backported to 4.0 and 4.1 by CASSANDRA-20057)
    Pool("Native-Transport-Auth-Requests", Role.CLIENT_REQUESTS, shared=True),
    Pool("ReadStage", Role.LOCAL_READ, shared=True),
    Pool("MutationStage", Role.LOCAL_WRITE, shared=True),
    Pool("CounterMutationStage", Role.LOCAL_WRITE, shared=True),
    Pool("ViewMutationStage", Role.LOCAL_WRITE, shared=True),
    Pool("RequestResponseStage", Role.REPLICA_RESPONSES, shared=True),
    # netty's default names for the native transport's event loops (epoll, or nio where epoll is off)
    Pool("epollEventLoopGroup", Role.CLIENT_CONNECTIONS),
    Pool("nioEventLoopGroup", Role.CLIENT_CONNECTIONS),
    Pool("COMMIT-LOG-ALLOCATOR", Role.COMMIT_LOG),
    Pool("PERIODIC-COMMIT-LOG-SYNCER", Role.COMMIT_LOG),  # commitlog_sync: periodic
    Pool("GROUP-COMMIT-LOG-WRITER", Role.COMMIT_LOG),  # group
    Pool("COMMIT-LOG-WRITER", Role.COMMIT_LOG),  # batch
    Pool("MemtableFlushWriter", Role.MEMTABLE_FLUSH),
    Pool("PerDiskMemtableFlushWriter_", Role.MEMTABLE_FLUSH),  # one pool per data directory: _0:1
    Pool("MemtablePostFlush", Role.MEMTABLE_FLUSH),
    Pool("MemtableReclaimMemory", Role.MEMTABLE_FLUSH),
    # the memtable cleaner, which picks the memtable to flush: its allocator pool's class + 'Cleaner'
    Pool("SlabPoolCleaner", Role.MEMTABLE_FLUSH),
    Pool("NativePoolCleaner", Role.MEMTABLE_FLUSH),
    Pool("HeapPoolCleaner", Role.MEMTABLE_FLUSH),
    Pool("CompactionExecutor", Role.COMPACTION),
    Pool("ValidationExecutor", Role.VALIDATION),
    Pool("ViewBuildExecutor", Role.VIEW_BUILD),
    Pool("SecondaryIndexManagement", Role.INDEX_BUILD),
    Pool("CacheCleanupExecutor", Role.CACHE_SAVING),
    Pool("AntiEntropyStage", Role.REPAIR),
    Pool("Repair", Role.REPAIR),  # 'Repair#<command>:<n>', 'Repair-Task', 'RepairJobTask', ...
    Pool("HintsDispatcher", Role.HINTS),
    Pool("HintsWriteExecutor", Role.HINTS),
    Pool("TracingStage", Role.TRACING),
    Pool("Messaging-", Role.INTERNODE),  # Messaging-EventLoop, -AcceptLoop, -SynchronousWork, -OUT-...
    Pool("GossipStage", Role.INTERNODE),
    Pool("GossipTasks", Role.INTERNODE),
)
_SINCE_41 = (Pool("PaxosRepairStage", Role.REPAIR),)
_SINCE_50 = (Pool("SecondaryIndexExecutor", Role.INDEX_BUILD),)
# HotSpot's own threads, whichever series runs on it (JDK 8 to 17 and on).
_JVM = (
    Pool("GC Thread#", Role.GC),  # the parallel workers of G1, Parallel and (JDK 11) CMS
    Pool("G1 ", Role.GC),  # G1 Conc#, G1 Refine#, G1 Main Marker, G1 Service, G1 Young RemSet Sampling
    Pool("CMS Main Thread", Role.GC),
    Pool("Gang worker#", Role.GC),  # JDK 8's GC workers
    Pool("VM Thread", Role.GC),  # runs the safepoint operations, the collections among them
    Pool("ZDirector", Role.GC),
    Pool("ZDriver", Role.GC),
    Pool("ZStat", Role.GC),
    Pool("ZUnmapper", Role.GC),
    Pool("ZUncommitter", Role.GC),
    Pool("ZWorker", Role.GC),
    Pool("Shenandoah", Role.GC),
    Pool("C1 CompilerThread", Role.JIT),
    Pool("C2 CompilerThread", Role.JIT),
    Pool("Sweeper thread", Role.JIT),  # the compiled code cache's sweeper
)

SERIES = ("4.0", "4.1", "5.0")
REGISTRY: dict[str, tuple[Pool, ...]] = {
    "4.0": _CASSANDRA + _JVM,
    "4.1": _CASSANDRA + _SINCE_41 + _JVM,
    "5.0": _CASSANDRA + _SINCE_41 + _SINCE_50 + _JVM,
}
# Every series' pools: a name means the same in each, so a node of unknown version is read by all.
ALL_POOLS = tuple(dict.fromkeys(pool for series in SERIES for pool in REGISTRY[series]))


def _names(pool: Pool, thread: str) -> bool:
    """Whether `thread` (whole, or as the kernel cut it) is one of `pool`'s."""
    return thread.startswith(pool.name) or (len(thread) == KERNEL_NAME_CHARS and pool.name.startswith(thread))


def role_of(thread: str, series: str | None = None) -> Role:
    """The role of the thread named `thread` (the JVM's name or the kernel's), by the pools of
    `series` ('5.0'; None: of every series). No pool's name, cut or whole, begins another role's, so
    the first pool that names it says."""
    pools = ALL_POOLS if series is None else REGISTRY[series]
    return next((pool.role for pool in pools if _names(pool, thread)), Role.OTHER)


def kernel_prefixes(roles: Collection[Role], shared_only: bool = False) -> tuple[str, ...]:
    """The names, as the kernel cuts them, that a thread of one of `roles` starts with (with
    `shared_only`: of the shared worker pool's stages only): for a test in the kernel (a BPF program),
    in the registry's order."""
    return tuple(
        dict.fromkeys(
            pool.kernel_prefix for pool in ALL_POOLS if pool.role in roles and (pool.shared or not shared_only)
        )
    )


# The threads a traced request's events run on (the native transport's requests, the local read and
# write, the replicas' answers): those whose CPU a watch keeps per slot (probes.bcc.serving_cpu), and
# the only ones a session's CPU can be taken of.
SESSION_ROLES = frozenset({Role.CLIENT_REQUESTS, Role.LOCAL_READ, Role.LOCAL_WRITE, Role.REPLICA_RESPONSES})

SHARED_POOL_STAGES = tuple(pool.name for pool in ALL_POOLS if pool.shared)
_SHARED_WORKER = re.compile(rf"^(?:{'|'.join(map(re.escape, SHARED_POOL_STAGES))})-(\d+)$")


def shared_pool_worker(thread: str) -> int | None:
    """The worker id of a shared-pool thread name ('ReadStage-12' -> 12), None for other threads."""
    match = _SHARED_WORKER.match(thread)
    return int(match.group(1)) if match else None
