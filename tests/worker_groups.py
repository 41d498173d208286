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

# Modules whose assertions read the machine's load (a client's rate, CPU against an untraced run,
# a detach with nothing else attached, a tracing stage keeping up, mapped pages a query touched):
# run last, alone. Those of a pooled node start it again.
ALONE: tuple[str, ...] = (
    "test_busy_node",
    "test_busy_replicas",
    "test_mmap_nodes",
    "test_profile",
    "test_node_time_bound",
    "test_serving_cpu",
    "test_signals",
    "test_watch_writes",
    "test_where_time_goes",
)

# Minutes each module took in the last measured serial run (CONTRIBUTING's "Where the minutes go"):
# the longest groups are handed out first, so that the workers finish together. Unlisted: 0.3.
MINUTES: dict[str, float] = {
    "test_replicas_cluster": 3.3,
    "test_large_partitions": 3.3,
    "test_watch": 2.6,
    "test_watch_leftovers": 2.3,
    "test_node_gone": 2.3,
    "test_busy_replicas": 2.2,
    "test_verdict_classes": 2.0,
    "test_cluster_reads": 2.0,
    "test_signals": 1.9,
    "test_probes": 1.9,
    "test_container_node": 1.9,
    "test_mmap_nodes": 1.6,
    "test_watch_metrics": 1.5,
    "test_sandbox_cluster": 1.4,
    "test_profile": 1.4,
}
UNLISTED_MINUTES = 0.3


def module_of(nodeid: str) -> str:
    """'tests/integration/test_watch.py::test_x[y]' -> 'test_watch'."""
    return PurePath(nodeid.split("::", 1)[0]).stem


def scope_of(nodeid: str) -> str:
    """The unit a worker takes whole: the module's group, else the module's file."""
    module = module_of(nodeid)
    groups = [group for group, modules in GROUPS.items() if module in modules]
    return f"group {groups[0]}" if groups else nodeid.split("::", 1)[0]


def minutes_of(nodeids: list[str]) -> float:
    return sum(MINUTES.get(module, UNLISTED_MINUTES) for module in {module_of(nodeid) for nodeid in nodeids})


def runs_alone(nodeids: list[str]) -> bool:
    return any(module_of(nodeid) in ALONE for nodeid in nodeids)


class WorkerGroups(LoadScopeScheduling):
    """xdist's scope scheduling with scopes by `scope_of`, the longest first and those that run alone
    last: they go to the first worker, once it is the only one left."""

    def _split_scope(self, nodeid: str) -> str:
        return scope_of(nodeid)

    def _parallel_units(self) -> dict[str, list[str]]:
        """The units still queued that may run beside another: scope -> its tests."""
        return {scope: list(unit) for scope, unit in self.workqueue.items() if not runs_alone(list(unit))}

    def _assign_work_unit(self, node) -> None:
        """The longest unit that may run beside another, else the first of those that run alone."""
        parallel = self._parallel_units()
        if parallel:
            self.workqueue.move_to_end(max(parallel, key=lambda scope: minutes_of(parallel[scope])), last=False)
        super()._assign_work_unit(node)

    def _reschedule(self, node) -> None:
        if node.shutting_down:
            return
        if not self.workqueue:
            node.shutdown()
            return
        pending = self._pending_of(self.assigned_work[node])
        if self._parallel_units():
            if pending <= 2:
                self._assign_work_unit(node)
            return
        keeper = min(self.nodes, key=lambda each: each.gateway.id)
        if node is not keeper:
            # it runs what it holds (a worker keeps its last test until told more comes, or that none
            # does), then its session ends and stops its node, before the modules that run alone
            node.shutdown()
            return
        if len(self.nodes) == 1 and pending <= 2:
            self._assign_work_unit(node)

    def remove_node(self, node):
        crashed_item = super().remove_node(node)
        for each in self.nodes:
            self._reschedule(each)
        return crashed_item
