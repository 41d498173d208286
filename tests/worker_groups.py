"""How the suite shares the machine's cores (`pytest -n 2`): which modules must run on one worker,
which must run alone, and in what order the rest are handed out.

Each worker has a test node of its own (conftest's `sandbox`), so a module that uses only that node
can run beside any other. A module is never split between workers (its module fixtures are set up
once). Modules that share something fixed (a node at a fixed path, a port) form one group, run one
after another on one worker. Modules that measure the machine (CPU, throughput, timing against an
untraced run) run at the end on one worker, after the other has finished and stopped its node.

Without `-n`, none of this applies: the suite runs in one process, in file order.
"""

from pathlib import PurePath

from xdist.scheduler import LoadScopeScheduling  # type: ignore[import-untyped]

# Modules sharing something fixed, run one after another on one worker.
GROUPS: dict[str, tuple[str, ...]] = {
    # conftest's pooled cluster: one worker starts it, and stops it after its last user
    "cluster": ("test_cluster_reads", "test_replicas_cluster", "test_sandbox_cluster"),
    # both make and remove the systemd slices their containers' cgroups sit under
    "container cgroups": ("test_container_jvms", "test_container_node"),
}

# Modules whose assertions read the machine's load (a client's rate, CPU against an untraced run or
# the kernel's count, which leaves out the interrupts the other worker's I/O brings, a detach with
# nothing else attached, a tracing stage keeping up, mapped pages a query touched):
# run last, alone, in this order: a pooled node's modules one after another, so that it starts once.
ALONE: tuple[str, ...] = (
    "test_busy_replicas",
    "test_busy_node",
    "test_mmap_nodes",
    "test_profile",
    "test_node_time_bound",
    "test_node_time_slots",
    "test_serving_cpu",
    "test_watch_writes",
    "test_where_time_goes",
    "test_signals_at_detach",  # last: the worker's held tracepoints are released once, for it
)

# The group the first worker runs last before those that run alone, so that the first of them finds
# its pooled node (the cluster) still up rather than starting it again (~70 s).
BEFORE_ALONE = "group cluster"

# Minutes each module took in the last measured two-worker run, beside the other worker (r15 in
# CONTRIBUTING's "Where the minutes go"): the longest units are handed out first, so that the workers
# finish together. Unlisted: 0.25 for a node test (that run's other 25 took 6.2 min), 0.02 for a unit test.
MINUTES: dict[str, float] = {
    "test_large_partitions": 3.7,
    "test_replicas_cluster": 2.8,
    "test_cluster_reads": 2.7,
    "test_watch": 2.6,
    "test_verdict_classes": 2.4,
    "test_watch_leftovers": 2.3,
    "test_node_gone": 2.1,
    "test_container_node": 1.7,
    "test_signals": 1.7,
    "test_probes": 1.5,
    "test_watch_metrics": 1.3,
    "test_versions": 1.3,
    "test_end_to_end": 1.2,
    "test_run": 1.2,
    "test_sweep": 1.1,
    "test_query_shapes": 1.1,
    "test_sandbox": 0.9,
    "test_watch_table_writes": 0.9,
    "test_sandbox_cluster": 0.8,
    "test_bad_input": 0.6,  # a unit test module: ~40 casstrace processes at once
}
UNLISTED_MINUTES = 0.25
UNIT_MINUTES = 0.02


def module_of(nodeid: str) -> str:
    """'tests/integration/test_watch.py::test_x[y]' -> 'test_watch'."""
    return PurePath(nodeid.split("::", 1)[0]).stem


def scope_of(nodeid: str) -> str:
    """The unit a worker takes whole: the module's group, else the module's file."""
    module = module_of(nodeid)
    groups = [group for group, modules in GROUPS.items() if module in modules]
    return f"group {groups[0]}" if groups else nodeid.split("::", 1)[0]


def minutes_of(nodeids: list[str]) -> float:
    files = {nodeid.split("::", 1)[0] for nodeid in nodeids}
    return sum(
        MINUTES.get(PurePath(file).stem, UNIT_MINUTES if "tests/unit/" in file else UNLISTED_MINUTES) for file in files
    )


def runs_alone(nodeids: list[str]) -> bool:
    return any(module_of(nodeid) in ALONE for nodeid in nodeids)


def alone_rank(nodeids: list[str]) -> int:
    """Where a unit that runs alone stands in ALONE's order."""
    return min(ALONE.index(module) for module in {module_of(nodeid) for nodeid in nodeids} if module in ALONE)


def next_unit(units: dict[str, list[str]], keeper: bool, only_worker: bool) -> str | None:
    """The scope a worker takes next, of `units` (scope -> its tests, all queued), if any now: the
    longest that may run beside another; BEFORE_ALONE only for the keeper, once what else is queued to
    run beside it is no longer than it is (the other worker runs that meanwhile); then, for the only
    worker left, those that run alone, in ALONE's order."""
    parallel = {scope: minutes_of(unit) for scope, unit in units.items() if not runs_alone(unit)}
    held = parallel.pop(BEFORE_ALONE, None)
    if held is not None and keeper and sum(parallel.values()) <= held:
        return BEFORE_ALONE
    if parallel:
        return max(parallel, key=lambda scope: parallel[scope])
    alone = [scope for scope, unit in units.items() if runs_alone(unit)]
    if held is not None or not only_worker or not alone:
        return None
    return min(alone, key=lambda scope: alone_rank(units[scope]))


class WorkerGroups(LoadScopeScheduling):
    """xdist's scope scheduling with scopes by `scope_of`, in `next_unit`'s order; those that run alone
    go to the first worker (the keeper), once it is the only one left."""

    def __init__(self, config, log=None) -> None:
        super().__init__(config, log)
        self._before_alone_taken = False

    def _split_scope(self, nodeid: str) -> str:
        return scope_of(nodeid)

    def _keeper(self):
        return min(self.nodes, key=lambda each: each.gateway.id)

    def _assign_next(self, node) -> bool:
        """Give `node` its next unit, if it has one now. Once the keeper has BEFORE_ALONE, it takes
        nothing more to run beside the other worker: the alone phase must come next on it."""
        units = {scope: list(unit) for scope, unit in self.workqueue.items()}
        keeper = node is self._keeper()
        only_worker = len(self.nodes) == 1
        if keeper and self._before_alone_taken and not only_worker:
            return False
        scope = next_unit(units, keeper=keeper, only_worker=only_worker)
        if scope is None:
            return False
        self._before_alone_taken |= keeper and scope == BEFORE_ALONE
        self.workqueue.move_to_end(scope, last=False)
        super()._assign_work_unit(node)
        return True

    def _assign_work_unit(self, node) -> None:
        self._assign_next(node)

    def _reschedule(self, node) -> None:
        """Give `node` a unit when it has two tests or fewer left, and more while it has fewer than two: a
        worker keeps its last test until told more comes, or that none does (a lone one-test unit would
        wait forever)."""
        assigned = False
        while not node.shutting_down:
            if not self.workqueue:
                node.shutdown()
                return
            pending = self._pending_of(self.assigned_work[node])
            if pending > 2 or (assigned and pending >= 2):
                return
            if not self._assign_next(node):
                if node is not self._keeper():
                    # Nothing left it may take: it runs what it holds, then its session ends and stops
                    # its node, before the modules that run alone. (The keeper waits for them.)
                    node.shutdown()
                return
            assigned = True

    def remove_node(self, node):
        crashed_item = super().remove_node(node)
        for each in self.nodes:
            self._reschedule(each)
        return crashed_item
