"""Per-execution measures of traced sessions (casstrace.analyses.session_measures): one definition for a
watch's sampled executions and a run's executions, summarised by one MeasureTally."""

import pytest

from casstrace.analyses.attribution import Span
from casstrace.analyses.measures import MeasureTally, summaries
from casstrace.analyses.session_measures import SessionInputs, TracedSession, per_execution, session_figures
from casstrace.traces.queries import ThreadCpu

MS = 1_000_000


def test_a_sessions_figures_come_from_its_record_its_pauses_and_its_threads_cpu():
    write = TracedSession(1, 10 * MS, 5 * MS, mutations=1, commitlog_ns=2 * MS)
    read = TracedSession(2, 20 * MS, 3 * MS, mutations=None, commitlog_ns=None)
    untimed = TracedSession(3, 30 * MS, None, mutations=None, commitlog_ns=None)
    inputs = SessionInputs(
        sessions=[write, read, untimed],
        spans=[
            Span(1, "MutationStage-1", 101, 10 * MS, 14 * MS),
            Span(2, "ReadStage-2", 102, 20 * MS, 22 * MS),
            Span(3, "ReadStage-3", None, 30 * MS, 30 * MS),  # its thread not found: no CPU
        ],
        # a GC inside its safepoint, and a safepoint of its own: merged, the write overlaps 1.5 ms of them
        pauses=[(11 * MS, 12 * MS), (11 * MS, 11_500_000), (14_500_000, 16 * MS)],
        gc_pauses=[(11 * MS, 11_500_000)],
        thread_cpu=[ThreadCpu(None, 101, 12 * MS, MS, 400_000), ThreadCpu(None, 102, 40 * MS, MS, 999)],
    )
    figures = session_figures(inputs)
    assert figures[1] == {
        "traced_ns": 5 * MS,
        "commitlog_ns": 2 * MS,
        "gc_pause_ns": 500_000,
        "safepoint_ns": 1_500_000,
        "serving_cpu_ns": 400_000,
    }
    assert figures[2] == {"traced_ns": 3 * MS, "gc_pause_ns": 0, "safepoint_ns": 0, "serving_cpu_ns": 0}
    assert figures[3] == {}  # no duration, no thread: nothing taken, never a 0 for it


def test_no_pauses_or_cpu_measured_no_figure_of_them():
    inputs = SessionInputs(sessions=[TracedSession(1, 0, MS, None, None)], spans=[Span(1, "ReadStage-1", 7, 0, MS)])
    assert session_figures(inputs) == {1: {"traced_ns": MS}}


def test_an_executions_figure_is_its_sessions_merged_unless_one_lacks_it():
    figures = {1: {"traced_ns": 2.0, "commitlog_ns": 1.0}, 2: {"traced_ns": 3.0}, 3: {"traced_ns": 4.0}}
    found = per_execution(figures, {1: 10, 2: 10, 3: 11}, ("traced_ns", "commitlog_ns"))
    assert found == {10: {"traced_ns": 5.0}, 11: {"traced_ns": 4.0}}


def test_tallies_add_up_to_the_tally_of_every_execution():
    executions = [{"traced_ns": float(n), **({"commitlog_ns": n / 2} if n % 3 else {})} for n in range(1, 101)]
    halves = MeasureTally.of(executions[:37])
    halves.add(MeasureTally.of(executions[37:]))
    assert halves.summaries() == summaries(executions)
    traced, commitlog = [s for s in summaries(executions) if s.name in ("traced_ns", "commitlog_ns")]  # registry order
    assert (traced.executions, traced.median, traced.p99, traced.total) == (100, 50.0, 99.0, 5050.0)
    assert commitlog.executions == 67 and commitlog.total == pytest.approx(sum(n / 2 for n in range(1, 101) if n % 3))
