"""The suite's scheduler under `pytest -n 2` (worker_groups.py), driven with stand-in workers: a
module is never split, a group goes whole to one worker, the longest units go first, the group that
shares a node with the first module that runs alone goes last to the first worker, and the modules that
run alone start only once the other worker has finished, in their order."""

from types import SimpleNamespace

import pytest

import worker_groups
from worker_groups import WorkerGroups


class Worker:
    """What the scheduler calls on an xdist worker: the tests it was sent, and whether it was told to stop."""

    def __init__(self, name: str) -> None:
        self.gateway = SimpleNamespace(id=name)
        self.sent: list[int] = []
        self.done = 0
        self.shutting_down = False

    def send_runtest_some(self, indices: list[int]) -> None:
        self.sent.extend(indices)

    def shutdown(self) -> None:
        self.shutting_down = True


COLLECTION = [
    "tests/integration/test_quiet.py::test_a",
    "tests/integration/test_short.py::test_a",
    "tests/integration/test_long.py::test_a",
    "tests/integration/test_long.py::test_b",
    "tests/integration/test_cluster_one.py::test_a",
    "tests/integration/test_cluster_two.py::test_a",
    "tests/integration/test_busy.py::test_a",
    "tests/integration/test_medium.py::test_a",
]


@pytest.fixture
def tables(monkeypatch) -> None:
    """The scheduler's tables, for the modules of COLLECTION."""
    monkeypatch.setattr(worker_groups, "GROUPS", {"cluster": ("test_cluster_one", "test_cluster_two")})
    monkeypatch.setattr(worker_groups, "ALONE", ("test_busy", "test_quiet"))
    monkeypatch.setattr(worker_groups, "BEFORE_ALONE", "group cluster")
    monkeypatch.setattr(
        worker_groups,
        "MINUTES",
        {"test_long": 3.0, "test_cluster_one": 1.0, "test_cluster_two": 1.5, "test_medium": 0.5, "test_short": 0.3},
    )


@pytest.fixture
def scheduler(tables):
    return scheduled(COLLECTION)


def scheduled(collection: list[str]) -> tuple[WorkerGroups, list[Worker]]:
    config = SimpleNamespace(getvalue=lambda name: ["2*popen"], option=SimpleNamespace(loadscopereorder=False))
    sched = WorkerGroups(config)
    workers = [Worker("gw0"), Worker("gw1")]
    for worker in workers:
        sched.add_node(worker)
        sched.add_node_collection(worker, collection)
    sched.schedule()
    return sched, workers


def names(worker: Worker, collection: list[str] = COLLECTION) -> list[str]:
    return [collection[index].removeprefix("tests/integration/") for index in worker.sent]


def modules(worker: Worker, collection: list[str]) -> set[str]:
    return {name.split("::")[0] for name in names(worker, collection)}


def finish(sched: WorkerGroups, worker: Worker) -> None:
    """The worker runs the tests it was sent, in order, as xdist reports them; like an xdist worker,
    it holds back its last one (pytest's teardown needs the next) until more come or it is told to stop."""
    while worker.done < len(worker.sent) - (0 if worker.shutting_down else 1):
        sched.mark_test_complete(worker, worker.sent[worker.done])
        worker.done += 1


def test_the_longest_units_go_first_and_a_group_goes_whole_to_one_worker(scheduler):
    _, (gw0, gw1) = scheduler
    assert names(gw0)[:2] == ["test_long.py::test_a", "test_long.py::test_b"]
    assert names(gw1)[:1] == ["test_medium.py::test_a"]
    assert not any("busy" in name or "quiet" in name for name in names(gw0) + names(gw1))


def test_the_group_before_those_alone_goes_to_the_first_worker_once_the_rest_is_no_longer(scheduler):
    sched, (gw0, gw1) = scheduler
    # queued after the first two: the cluster (2.5 min) and short (0.3): the first worker takes the
    # cluster, the other the short module
    assert names(gw0)[2:] == ["test_cluster_one.py::test_a", "test_cluster_two.py::test_a"]
    assert names(gw1) == ["test_medium.py::test_a", "test_short.py::test_a"]
    finish(sched, gw1)
    assert gw1.shutting_down


def test_the_modules_that_run_alone_wait_for_the_other_worker_to_finish(scheduler):
    sched, (gw0, gw1) = scheduler
    finish(sched, gw0)
    finish(sched, gw1)
    assert not any("busy" in name or "quiet" in name for name in names(gw0) + names(gw1))
    assert gw1.shutting_down and not gw0.shutting_down  # the first worker keeps the alone units
    parallel = names(gw0) + names(gw1)
    assert sorted(parallel) == sorted(
        name.removeprefix("tests/integration/") for name in COLLECTION if "busy" not in name and "quiet" not in name
    )
    assert names(gw0)[-1] == "test_cluster_two.py::test_a"  # held back: its teardown sees what comes next
    sched.remove_node(gw1)  # its session has ended: its node is stopped
    finish(sched, gw0)
    assert names(gw0)[-2:] == ["test_busy.py::test_a", "test_quiet.py::test_a"]  # ALONE's order
    assert gw0.shutting_down and sched.tests_finished


def test_a_worker_done_first_waits_without_taking_an_alone_unit(scheduler):
    sched, (gw0, gw1) = scheduler
    finish(sched, gw1)
    assert not any("busy" in name for name in names(gw1))
    finish(sched, gw0)
    assert not any("busy" in name for name in names(gw0))
    sched.remove_node(gw1)
    assert names(gw0)[-1] == "test_busy.py::test_a"


def test_only_one_test_modules_that_run_alone_are_all_sent_and_end(tables):
    """As `-k` leaves them: the first worker is sent each one-test unit, and told no more comes, so
    it runs its last test instead of holding it back forever."""
    collection = ["tests/integration/test_busy.py::test_a", "tests/integration/test_quiet.py::test_a"]
    sched, (gw0, gw1) = scheduled(collection)
    assert gw1.shutting_down and not gw0.sent
    sched.remove_node(gw1)
    assert names(gw0, collection) == ["test_busy.py::test_a", "test_quiet.py::test_a"]
    assert gw0.shutting_down
    finish(sched, gw0)
    assert sched.tests_finished


def test_the_keeper_alone_takes_the_held_group_and_then_those_that_run_alone(scheduler):
    sched, (gw0, gw1) = scheduler
    sched.remove_node(gw1)  # the other worker gone early (crashed): its units come back
    finish(sched, gw0)
    sent = names(gw0)
    assert sent.index("test_cluster_two.py::test_a") < sent.index("test_busy.py::test_a")
    assert sorted(sent) == sorted(name.removeprefix("tests/integration/") for name in COLLECTION)


def test_a_unit_test_module_counts_for_little_beside_a_node_test_module():
    unit = ["tests/unit/test_x.py::test_a", "tests/unit/test_x.py::test_b"]
    node = ["tests/integration/test_unlisted_here.py::test_a"]
    assert worker_groups.minutes_of(unit) == worker_groups.UNIT_MINUTES
    assert worker_groups.minutes_of(node) == worker_groups.UNLISTED_MINUTES > 10 * worker_groups.UNIT_MINUTES


def test_the_first_worker_takes_nothing_beside_after_the_held_group(tables):
    extra = [*COLLECTION, "tests/integration/test_extra.py::test_a"]
    sched, (gw0, gw1) = scheduled(extra)
    assert names(gw0, extra)[-1] == "test_cluster_two.py::test_a"
    finish(sched, gw0)  # the keeper is through the cluster's group (holding its last test back)
    assert any(not worker_groups.runs_alone(list(unit)) for unit in sched.workqueue.values())  # one to run beside ...
    assert modules(gw0, extra) == {"test_long.py", "test_cluster_one.py", "test_cluster_two.py"}  # ... not the keeper's
    finish(sched, gw1)
    assert {"test_medium.py", "test_short.py", "test_extra.py"} <= modules(gw1, extra)
    sched.remove_node(gw1)
    finish(sched, gw0)
    assert names(gw0, extra)[-2:] == ["test_busy.py::test_a", "test_quiet.py::test_a"]
