"""orchestration.experiment: a plan's variants staged, captured and taken down in order, on every exit
path, and the plan refused before anything is staged. Variants here record what happens to them; the
captures of a real node are the sweeps' and compare's integration tests."""

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest

from casstrace.errors import CasstraceError
from casstrace.orchestration.experiment import CapturePerRun, Captures, Plan, Progress, execute


@dataclass
class Noted:
    """A variant that notes each step it takes in `events`; `fails`: its capture raises."""

    label: str
    events: list[str]
    out: Path
    fails: bool = False
    runs_queries: bool = False

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
    return Plan(variants, staged=keyspace)


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
    assert list(execute(Plan(forced.variants, staged=forced.staged, force=True))) == ["record N=1", "record N=2"]
