"""The registry of thread roles (traces/thread_roles.py) on real thread names (tests/data/thread_names):
each name's role per Cassandra series, whole and as the kernel cuts it; and every use of it (the time
split's request threads, the profile's serving threads, the shared pool's workers, the watch's pools)
against the lists each kept before the registry, copied here as the oracle."""

import re
from itertools import combinations
from pathlib import Path

import pytest

from casstrace.analyses.profile import SERVING_ROLES
from casstrace.analyses.watch import SHARED_POOL, UNSAMPLED_REQUESTS, pool_activity, pool_of
from casstrace.probes.bcc.node_time import REQUEST_ROLES, REQUEST_THREAD_PREFIXES
from casstrace.traces.thread_roles import (
    ALL_POOLS,
    KERNEL_NAME_CHARS,
    SERIES,
    SHARED_POOL_STAGES,
    Role,
    role_of,
    shared_pool_worker,
)

NAMES = Path(__file__).resolve().parents[1] / "data" / "thread_names"
# The 5.0.9 node's threads as the kernel names them (/proc/PID/task/*/comm).
PROC_NAMES = (NAMES / "cassandra-5.0.9-proc.txt").read_text().splitlines()


def _source_names() -> list[tuple[tuple[str, ...], Role, str]]:
    """(series, role, whole name) of cassandra-source.tsv."""
    rows = []
    for line in (NAMES / "cassandra-source.tsv").read_text().splitlines():
        if not line.startswith("#"):
            series, role, name = line.split("\t")
            rows.append((tuple(series.split()), Role[role], name))
    return rows


SOURCE = _source_names()
# Every name a use may meet: the node's, and the source's whole and as the kernel cuts them.
CORPUS = sorted(set(PROC_NAMES) | {name for *_, name in SOURCE} | {name[:KERNEL_NAME_CHARS] for *_, name in SOURCE})

# -- the lists before the registry (the oracle) ------------------------------------------------------
# probes/bcc/node_time.py: the request threads' names as the kernel has them, tested by prefix in BPF
OLD_REQUEST_THREAD_PREFIXES = ("Native-Transpor", "ReadStage", "epollEventLoopG", "nioEventLoopGro")
# analyses/profile.py: the serving threads, by the names the trace holds
OLD_SERVING_THREAD_PREFIXES = ("Native-Transport", "ReadStage")
# traces/activities.py: the shared pool's stages
OLD_SHARED_POOL_STAGES = (
    "ReadStage",
    "MutationStage",
    "CounterMutationStage",
    "ViewMutationStage",
    "Native-Transport-Requests",
    "Native-Transport-Auth-Requests",
    "RequestResponseStage",
)
OLD_SHARED_WORKER = re.compile(rf"^(?:{'|'.join(map(re.escape, OLD_SHARED_POOL_STAGES))})-(\d+)$")
# analyses/watch.py: what each pool's reads are, in words (any other pool: its own name)
OLD_POOLS = {
    "SharedPool": UNSAMPLED_REQUESTS,
    "CompactionExecutor": "compaction",
    "MemtableFlushWriter": "memtable flush",
    "MemtablePostFlush": "memtable flush",
    "PerDiskMemtableFlushWriter": "memtable flush",
    "ValidationExecutor": "repair (validation)",
    "AntiEntropyStage": "repair",
    "Repair": "repair",
    "SecondaryIndexManagement": "index build",
    "CacheCleanupExecutor": "cache saving",
}


def old_shared_pool_worker(thread: str) -> int | None:
    match = OLD_SHARED_WORKER.match(thread)
    return int(match.group(1)) if match else None


# -- the registry -----------------------------------------------------------------------------------


@pytest.mark.parametrize("series, role, name", [(s, role, name) for series, role, name in SOURCE for s in series])
def test_each_series_names_its_threads_roles_whole_and_as_the_kernel_cuts_them(series, role, name):
    assert role_of(name, series) is role
    assert role_of(name[:KERNEL_NAME_CHARS], series) is role
    assert role_of(name) is role  # the union of the series says the same


def test_a_pool_a_series_lacks_is_no_role_of_it():
    assert {s for series, *_ in SOURCE for s in series} == set(SERIES)
    assert role_of("PaxosRepairStage:1", "4.0") is Role.OTHER  # Paxos v2's repair: 4.1 on
    assert role_of("SecondaryIndexExecutor:1", "4.1") is Role.OTHER  # 5.0's
    assert role_of("SecondaryIndexExecutor:1", "5.0") is Role.INDEX_BUILD


def test_the_running_node_s_kernel_names_take_the_roles_of_its_pools():
    roles = {name: role_of(name, "5.0") for name in PROC_NAMES}
    assert {name for name, role in roles.items() if role is Role.LOCAL_READ} == {
        name for name in PROC_NAMES if name.startswith("ReadStage-")
    }
    assert roles["Native-Transpor"] is Role.CLIENT_REQUESTS
    assert roles["epollEventLoopG"] is Role.CLIENT_CONNECTIONS
    assert roles["COMMIT-LOG-ALLO"] is roles["PERIODIC-COMMIT"] is Role.COMMIT_LOG
    assert roles["MemtablePostFlu"] is roles["MemtableReclaim"] is Role.MEMTABLE_FLUSH
    assert roles["CompactionExecu"] is Role.COMPACTION
    assert {name for name, role in roles.items() if role is Role.GC} == {
        "GC Thread#0",
        "GC Thread#1",
        "G1 Conc#0",
        "G1 Refine#0",
        "G1 Refine#1",
        "G1 Main Marker",
        "G1 Service",
        "VM Thread",
    }
    assert {name for name, role in roles.items() if role is Role.JIT} == {
        "C1 CompilerThre",
        "C2 CompilerThre",
        "Sweeper thread",
    }
    assert roles["ScheduledTasks:"] is roles["java"] is Role.OTHER


def test_no_pool_s_kernel_name_begins_another_role_s():
    """So a test by prefix on the kernel's name (the BPF program's) gives each pool's role: a name cut to
    15 characters cannot be read as another role's pool."""
    for first, second in combinations(ALL_POOLS, 2):
        if first.role is not second.role:
            assert not first.kernel_prefix.startswith(second.kernel_prefix), (first, second)
            assert not second.kernel_prefix.startswith(first.kernel_prefix), (first, second)


# -- its uses, against the lists they kept before ----------------------------------------------------


def test_the_time_split_s_request_threads_are_the_same_in_the_kernel():
    assert REQUEST_THREAD_PREFIXES == OLD_REQUEST_THREAD_PREFIXES
    for name in CORPUS:
        comm = name[:KERNEL_NAME_CHARS]
        before = comm.startswith(OLD_REQUEST_THREAD_PREFIXES)
        assert (role_of(comm) in REQUEST_ROLES) == before, comm
        assert comm.startswith(REQUEST_THREAD_PREFIXES) == before, comm


def test_the_shared_pool_s_workers_are_the_same():
    assert sorted(SHARED_POOL_STAGES) == sorted(OLD_SHARED_POOL_STAGES)
    for name in CORPUS:
        assert shared_pool_worker(name) == old_shared_pool_worker(name), name
    assert shared_pool_worker("Native-Transport-Requests-12") == 12


def test_the_profile_s_serving_threads_are_the_same_but_the_request_pool_s_kernel_name():
    """The old prefix, 'Native-Transport', is a character longer than the kernel keeps: a request
    thread the trace knows by its kernel name only ('Native-Transpor') was left out."""
    changed = {
        name for name in CORPUS if (role_of(name) in SERVING_ROLES) != name.startswith(OLD_SERVING_THREAD_PREFIXES)
    }
    assert changed == {"Native-Transpor"}
    assert role_of("Native-Transpor") in SERVING_ROLES


def test_the_watch_keeps_its_pools_words_and_gives_a_role_s_to_those_it_had_none_for():
    roles = {name: role for *_, role, name in SOURCE}
    newly = {}
    for name in CORPUS:
        pool = pool_of(name)
        before = OLD_POOLS.get(pool, pool)
        if pool in OLD_POOLS or role_of(pool) is Role.OTHER:
            assert pool_activity(pool) == before, name
        else:
            newly[name] = pool_activity(pool)
    # the words are the role's of the source's names, whole and cut (the kernel's names of threads the
    # JVM no longer lists), a repair command's pool ('Repair#1') among them
    for name, words in newly.items():
        assert role_of(name).value == words, name
        if name in roles:
            assert roles[name].value == words, name
    assert newly["CompactionExecu"] == "compaction"
    assert newly["PerDiskMemtable"] == newly["MemtableReclaimMemory:1"] == "memtable flush"
    assert newly["Repair#1:1"] == "repair"
    assert newly["ViewBuildExecutor:1"] == "view build"
    assert pool_activity(SHARED_POOL) == UNSAMPLED_REQUESTS
