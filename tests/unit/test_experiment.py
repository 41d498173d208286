"""orchestration.experiment: a plan's variants staged, captured and taken down in order, on every exit
path, and the plan refused before anything is staged (a capture aimed at another node than the plan's
target, options a watch or a run refuses, a trace it may not write). Variants here record what happens
to them; the captures of a real node are the sweeps' and compare's integration tests. Each command's
plan carries the one target its options name."""

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path

import pytest

from casstrace.cli.compare import RUN_OPTIONS, compare_plan
from casstrace.errors import CasstraceError
from casstrace.node.connection import ConnectionSettings
from casstrace.orchestration.experiment import (
    CapturePerRun,
    Captures,
    Plan,
    Progress,
    execute,
    query_plan,
    watch_plan,
)
from casstrace.orchestration.runner import RunOptions
from casstrace.orchestration.targets import RemoteSettings, Target
from casstrace.orchestration.watcher import WatchCallbacks, WatchOptions
from casstrace.sandbox.control import Sandbox
from casstrace.sandbox.layouts import LayoutPlan, layouts_experiment
from casstrace.sandbox.settings import Layout, Settings
from casstrace.sandbox.sweep import SweepPlan, columns_experiment

NODE = Target(ConnectionSettings("127.0.0.1", 39042), pid=4242)


@dataclass
class Noted:
    """A variant that notes each step it takes in `events`; `fails`: its capture raises."""

    label: str
    events: list[str]
    out: Path
    fails: bool = False
    runs_queries: bool = False
    aims: Target = NODE
    sample: float = 0.01  # the share of requests its watch traces

    def capture_options(self) -> list[WatchOptions]:
        return [WatchOptions(self.aims.connection, self.aims.pid, probability=self.sample, out=self.out)]

    def traces(self) -> list[Path]:
        return [self.out]

    @contextmanager
    def staged(self, progress: Progress) -> Iterator[None]:
        self.events.append(f"set up {self.label}")
        progress(self.label, 1)
        try:
            yield
        finally:
            self.events.append(f"take down {self.label}")

    def capture(self, captures: Captures, progress: Progress) -> str:
        self.events.append(f"capture {self.label} ({type(captures).__name__})")
        if self.fails:
            raise KeyboardInterrupt
        return f"record {self.label}"


def plan_of(events: list[str], tmp_path: Path, *labels: str, fails: str | None = None) -> Plan[str]:
    @contextmanager
    def keyspace() -> Iterator[None]:
        events.append("keyspace made")
        try:
            yield
        finally:
            events.append("keyspace dropped")

    variants = tuple(Noted(label, events, tmp_path / f"{label}.trace", fails=label == fails) for label in labels)
    return Plan(variants, NODE, staged=keyspace)


def pair(events: list[str], tmp_path: Path, **second: object) -> Plan[str]:
    """N=1 as plan_of makes it, then N=2 with `second`'s fields changed."""
    plan = plan_of(events, tmp_path, "N=1")
    changed = Noted("N=2", events, tmp_path / "N=2.trace", **second)  # type: ignore[arg-type]
    return Plan((*plan.variants, changed), NODE, staged=plan.staged)


def test_each_variant_is_set_up_captured_and_taken_down_in_order_inside_the_plans_own_set_up(tmp_path):
    events: list[str] = []
    steps: list[tuple[str, int]] = []
    records = list(execute(plan_of(events, tmp_path, "N=1", "N=2"), lambda label, units: steps.append((label, units))))
    assert records == ["record N=1", "record N=2"]
    assert events == [
        "keyspace made",
        "set up N=1",
        "capture N=1 (CapturePerRun)",  # watches only: no kept capture compiled
        "take down N=1",
        "set up N=2",
        "capture N=2 (CapturePerRun)",
        "take down N=2",
        "keyspace dropped",
    ]
    assert steps == [("N=1", 1), ("N=2", 1)]


def test_an_interrupted_capture_takes_down_its_variant_and_the_plan_and_stages_no_other(tmp_path):
    events: list[str] = []
    records = execute(plan_of(events, tmp_path, "N=1", "N=2", "N=3", fails="N=2"))
    assert next(records) == "record N=1"
    with pytest.raises(KeyboardInterrupt):
        next(records)
    assert events[-3:] == ["capture N=2 (CapturePerRun)", "take down N=2", "keyspace dropped"]
    assert "set up N=3" not in events


def test_a_plan_closed_after_its_first_record_takes_down_what_it_set_up(tmp_path):
    events: list[str] = []
    records = execute(plan_of(events, tmp_path, "N=1", "N=2"))
    assert next(records) == "record N=1"
    records.close()  # as the sweep's progress loop does on Ctrl-C
    assert events == ["keyspace made", "set up N=1", "capture N=1 (CapturePerRun)", "take down N=1", "keyspace dropped"]


def test_the_callers_capture_is_used_and_left_to_it(tmp_path):
    events: list[str] = []
    captures = CapturePerRun()
    assert list(execute(plan_of(events, tmp_path, "before"), captures=captures)) == ["record before"]
    assert "capture before (CapturePerRun)" in events


def test_a_trace_written_twice_is_refused_before_anything_is_set_up(tmp_path):
    events: list[str] = []
    plan = plan_of(events, tmp_path, "N=1", "N=1")
    with pytest.raises(CasstraceError, match=r"two of this command's traces would be written at .*N=1\.trace"):
        next(execute(plan))
    assert events == []


def test_an_earlier_trace_is_refused_without_force_and_replaced_with_it(tmp_path):
    events: list[str] = []
    (tmp_path / "N=2.trace").write_text("an earlier sweep's")
    with pytest.raises(CasstraceError, match=r"refusing to write over .*N=2\.trace: the file exists"):
        next(execute(plan_of(events, tmp_path, "N=1", "N=2")))
    assert events == []
    forced = plan_of(events, tmp_path, "N=1", "N=2")
    assert list(execute(Plan(forced.variants, NODE, staged=forced.staged, force=True))) == [
        "record N=1",
        "record N=2",
    ]


@pytest.mark.parametrize(
    "elsewhere, named",
    [
        (Target(ConnectionSettings("10.0.0.2", 39042), pid=4242), r"10\.0\.0\.2:39042 \(JVM 4242\)"),
        (Target(ConnectionSettings("127.0.0.1", 9042), pid=4242), r"127\.0\.0\.1:9042 \(JVM 4242\)"),
        (Target(ConnectionSettings("127.0.0.1", 39042)), r"127\.0\.0\.1:39042, not"),  # no JVM named: any
    ],
)
def test_two_variants_aimed_at_two_nodes_are_refused_before_anything_is_set_up(tmp_path, elsewhere, named):
    events: list[str] = []
    with pytest.raises(CasstraceError) as refused:
        next(execute(pair(events, tmp_path, aims=elsewhere)))
    assert events == []
    assert refused.match(rf"the capture 'N=2' would capture {named}")
    assert refused.value.message.endswith("not this command's node 127.0.0.1:39042 (JVM 4242)")
    assert refused.value.fix == "measure one node per command: give each node's captures a command of their own"


def test_a_variant_reaching_the_other_nodes_otherwise_is_refused(tmp_path):
    over_ssh = RunOptions.aimed_at(replace(NODE, remote=RemoteSettings(ssh=True)), "SELECT * FROM ks.t")
    with pytest.raises(CasstraceError, match=r"reach the query's other nodes of 127\.0\.0\.1:39042 \(JVM 4242\)"):
        Plan(query_plan(replace(over_ssh, out=tmp_path / "a.trace")).variants, NODE).check()


def test_the_same_node_logged_in_otherwise_is_the_plans_node(tmp_path):
    other_login = Target(ConnectionSettings("127.0.0.1", 39042, username="reader", request_timeout=5.0), pid=4242)
    pair([], tmp_path, aims=other_login).check()


def test_a_watch_variants_own_checks_refuse_the_plan_before_anything_is_set_up(tmp_path):
    events: list[str] = []
    with pytest.raises(CasstraceError, match=r"--sample must be in \(0, 1\], got 1\.5") as refused:
        next(execute(pair(events, tmp_path, sample=1.5)))
    assert refused.value.fix == "give a share of requests to trace, e.g. --sample 0.01"
    assert events == []
    interval_and_profile = WatchOptions(NODE.connection, interval_s=60, profile=True)
    with pytest.raises(CasstraceError, match="--profile cannot be given with --interval"):
        watch_plan(interval_and_profile, WatchCallbacks()).check()


def test_a_runs_own_checks_refuse_its_plan(tmp_path):
    with pytest.raises(CasstraceError, match="--repeat must be at least 1"):
        query_plan(RunOptions.aimed_at(NODE, "SELECT * FROM ks.t", repeat=0, out=tmp_path / "a.trace")).check()


def test_run_and_watch_plans_carry_the_node_their_options_name():
    run = RunOptions("SELECT * FROM ks.t", NODE.connection, pid=4242, targets=RemoteSettings(hosts={"10.0.0.2": "db2"}))
    assert query_plan(run).target == Target(NODE.connection, 4242, RemoteSettings(hosts={"10.0.0.2": "db2"}))
    assert watch_plan(WatchOptions(NODE.connection, pid=4242), WatchCallbacks()).target == NODE


def test_compares_plan_carries_the_node_of_its_host_port_and_pid_and_both_sides_aim_at_it(tmp_path):
    options = dict.fromkeys(RUN_OPTIONS) | {
        "host": "10.0.0.5",
        "port": 19042,
        "ssl_enabled": False,
        "cqlshrc": tmp_path / "no-cqlshrc",
        "connect_timeout": 5.0,
        "request_timeout": 60.0,
        "pid": 4242,
        "repeat": 3,
        "warmup": 1,
        "cold": False,
        "page_bytes": 1 << 20,
        "allow_large_rows": False,
        "backend": "bcc",
        "keep_literals": False,
    }
    queries = ["SELECT a FROM ks.t WHERE k = 1", "SELECT a FROM ks.u WHERE k = 1"]
    plan = compare_plan(queries, ["ONE", "QUORUM"], tmp_path, options)
    assert plan.target == Target(ConnectionSettings("10.0.0.5", 19042), pid=4242)
    sides = [options for variant in plan.variants for options in variant.capture_options()]
    assert [side.target for side in sides] == [plan.target, plan.target]
    assert [(side.query, side.consistency) for side in sides if isinstance(side, RunOptions)] == [
        (queries[0], "ONE"),
        (queries[1], "QUORUM"),
    ]
    plan.check()


def test_the_sweeps_plans_carry_the_sandbox_node_and_every_point_aims_at_it(tmp_path):
    (tmp_path / "node").mkdir()
    Layout(tmp_path / "node").save_settings(Settings(version="5.0.9", native_port=39142))
    sandbox = Sandbox(tmp_path / "node")  # not running: no JVM named
    node = Target(ConnectionSettings(sandbox.host, 39142))
    columns = columns_experiment(sandbox, SweepPlan(columns=(1, 5), rows=10, cell_bytes=100), tmp_path / "columns")
    layouts = layouts_experiment(sandbox, LayoutPlan(("udt", "rows"), (2, 4), 20, 40), tmp_path / "layouts")
    for plan, captures in ((columns, 4), (layouts, 4)):
        assert plan.target == node
        aimed = [options.target for variant in plan.variants for options in variant.capture_options()]
        assert aimed == [node] * captures
        plan.check()


def test_run_and_watch_with_force_may_replace_their_earlier_trace_and_without_it_may_not(tmp_path):
    earlier = tmp_path / "earlier.trace"
    earlier.write_bytes(b"an earlier trace")
    plans = {
        "run": lambda force: query_plan(RunOptions.aimed_at(NODE, "SELECT * FROM ks.t", out=earlier, force=force)),
        "watch": lambda force: watch_plan(WatchOptions(NODE.connection, out=earlier, force=force), WatchCallbacks()),
    }
    for command, plan in plans.items():
        plan(True).check()  # --force: replaced when the capture writes it
        with pytest.raises(CasstraceError, match="the file exists"):
            plan(False).check()
        assert earlier.read_bytes() == b"an earlier trace", command
