"""Per-window measures (casstrace.traces.measures) per execution, and their summary over the measured ones.

Each execution's figure of a measure is its window's rows combined by the measure's merge rule (the
nodes of a multi-node trace: CPU adds up, a span takes the slowest); the summary gives the median,
p99 and total over the measured executions that have one. A measure a trace did not take has no
summary and no figure, never 0. A run's executions and a watch's sampled ones are summarised by one
MeasureTally, whose tallies add up (a watch's intervals).
"""

import dataclasses
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from casstrace.analyses.model import REST, CpuPerResult, Execution, MeasureSummary, TimeSplit, UndeterminedMeasure
from casstrace.analyses.percentiles import histogram_percentile, percentile
from casstrace.analyses.session_measures import SessionInputs, TracedSession, own_record, per_execution
from casstrace.analyses.units import ns_to_ms, s_to_ms, s_to_ns
from casstrace.traces import Trace, queries
from casstrace.traces.measures import MEASURES, measure
from casstrace.traces.queries import ExecutionRecord

# An execution's own CPU time on the node, best first: the threads that served it while they served it
# (analyses.attribution.serving_cpu_ns), else every request pool's thread in its window (which, on a busy
# node, counts the other clients' requests too).
CPU_MEASURES = ("serving_cpu_ns", "request_cpu_ns")


def by_window(trace: Trace) -> dict[int, dict[str, float]]:
    """window_id -> {measure name: the window's figure}, by the merge rules."""
    values: dict[int, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    for row in queries.window_measures(trace):
        values[row.window_id][row.measure].append(row.value)
    return {
        window_id: {name: measure(name).combine(listed) for name, listed in named.items()}
        for window_id, named in values.items()
    }


def with_derived(
    trace: Trace, rows: list[ExecutionRecord], serving_cpu: Callable[[Trace], dict[int, float]]
) -> dict[int, dict[str, float]]:
    """by_window, with each measured execution's derived measures (traces.measures: Measure.derived) added
    to its window's: the serving threads' CPU (`serving_cpu`: analyses.attribution.serving_cpu_ns) and
    those of its traced sessions' records (Cassandra's traced time, a write's time in the commit log)."""
    figures = by_window(trace)
    traced = traced_figures(trace)
    derived = serving_cpu(trace)
    for row in rows:
        if row.kind == "measured" and row.window_id is not None:
            extra = dict(traced.get(row.execution, {}))
            if row.execution in derived:
                extra["serving_cpu_ns"] = derived[row.execution]
            figures[row.window_id] = {**figures.get(row.window_id, {}), **extra}
    return figures


@dataclass
class MeasureTally:
    """Executions' figures of the registered measures as they add up: per measure, how many executions
    had each value. The tallies of two sets of executions, added, are the tally of both."""

    values: dict[str, Counter[float]] = field(default_factory=dict)

    @classmethod
    def of(cls, per_execution: Iterable[dict[str, float]]) -> "MeasureTally":
        tallied = cls()
        for figures in per_execution:
            tallied.count(figures)
        return tallied

    def count(self, figures: dict[str, float]) -> None:
        """One execution's figures."""
        for name, value in figures.items():
            self.values.setdefault(name, Counter())[value] += 1

    def add(self, other: "MeasureTally") -> None:
        for name, counted in other.values.items():
            self.values.setdefault(name, Counter()).update(counted)

    def summaries(self) -> list[MeasureSummary]:
        """The summary of each registered measure the executions have, in the registry's order."""
        found = []
        for entry in MEASURES.values():
            counted = self.values.get(entry.name)
            if counted:
                found.append(
                    MeasureSummary(
                        name=entry.name,
                        label=entry.label,
                        unit=entry.unit,
                        whose=entry.whose,
                        executions=counted.total(),
                        median=histogram_percentile(counted, 0.5) or 0.0,
                        p99=histogram_percentile(counted, 0.99) or 0.0,
                        total=sum(value * times for value, times in counted.items()),
                    )
                )
        return found


def summaries(per_execution: list[dict[str, float]]) -> list[MeasureSummary]:
    """The summary of each registered measure the executions have, in the registry's order."""
    return MeasureTally.of(per_execution).summaries()


def cpu_measure(per_execution: list[dict[str, float]]) -> str | None:
    """The best CPU measure (CPU_MEASURES) every one of the executions has; None when none has one."""
    for name in CPU_MEASURES:
        if per_execution and all(name in figures for figures in per_execution):
            return name
    return None


def cpu_per_result(measured: list[Execution], cells_per_row: int | None) -> CpuPerResult | None:
    """The node's CPU per execution, per row and per cell returned (cells_per_row: the columns each row
    returns), over the measured executions that returned rows; None without a CPU measure or rows."""
    returning = [e for e in measured if e.rows]
    name = cpu_measure([e.measures for e in returning])
    if name is None:
        return None
    cpu = [e.measures[name] for e in returning]
    per_row = [e.measures[name] / (e.rows or 1) for e in returning]
    return CpuPerResult(
        measure=name,
        label=MEASURES[name].label,
        executions=len(returning),
        per_execution_ns=percentile(cpu, 0.5) or 0.0,
        rows=percentile([float(e.rows or 0) for e in returning], 0.5) or 0.0,
        cells_per_row=cells_per_row,
        per_row_ns=percentile(per_row, 0.5) or 0.0,
        per_cell_ns=(percentile(per_row, 0.5) or 0.0) / cells_per_row if cells_per_row else None,
    )


# The node's time's parts a window source measures (casstrace.probes.bcc.request_states), in the order
# they are taken; the GC pauses are taken out of what is left, and the rest is what remains.
SPLIT_MEASURES = ("io_wait_ns", "running_ns", "cpu_wait_ns")
GC_LABEL = MEASURES["gc_pause_ns"].label
SPLIT_LABELS = (*(MEASURES[name].label for name in SPLIT_MEASURES), GC_LABEL, REST)  # TimeSplit.parts_ns's


def time_split(measured: list[Execution]) -> TimeSplit | None:
    """The node's time per execution split into its request threads' I/O wait, running and waiting for a
    CPU, the GC pauses within the rest (each execution's overlapping pauses, up to that rest) and the
    rest: the mean over the measured executions that have all of it (means add up, medians do not); None
    when none has."""
    split = [e.measures for e in measured if all(name in e.measures for name in ("node_ns", *SPLIT_MEASURES))]
    if not split:
        return None
    parts: dict[str, float] = dict.fromkeys(SPLIT_LABELS, 0.0)
    for figures in split:
        for name in SPLIT_MEASURES:
            parts[MEASURES[name].label] += figures[name] / len(split)
        left = max(0.0, figures["node_ns"] - sum(figures[name] for name in SPLIT_MEASURES))
        paused = min(left, figures.get("gc_pause_ns", 0.0))
        parts[GC_LABEL] += paused / len(split)
        parts[REST] += (left - paused) / len(split)
    return TimeSplit(
        executions=len(split), parts_ns=parts, node_ns=sum(figures["node_ns"] for figures in split) / len(split)
    )


# An execution's node's time and its parts (folded against the same requests' segments): undetermined together.
NODE_TIME_MEASURES = ("node_ns", *SPLIT_MEASURES)


def bounded_by_round_trip(execution: Execution) -> Execution:
    """The execution, its node's time (and that time's split) left undetermined when it exceeds the
    client's round trip. The node takes and answers the execution's requests within the round trip, so
    more than it is time the window counted of other requests (another client's on the connections
    counted, an event the node pushed on one): not this execution's, and no part of it can be told apart."""
    node_ns, latency_s = execution.measures.get("node_ns"), execution.latency_s
    if node_ns is None or latency_s is None or node_ns <= s_to_ns(latency_s):
        return execution
    why = (
        f"the node's time counted ({ns_to_ms(node_ns):,.1f} ms) exceeds the execution's round trip "
        f"({s_to_ms(latency_s):,.1f} ms): its window counted other requests than the execution's, which cannot "
        "be told apart"
    )
    undetermined = {name: why for name in NODE_TIME_MEASURES if name in execution.measures}
    return dataclasses.replace(
        execution,
        measures={name: value for name, value in execution.measures.items() if name not in undetermined},
        undetermined={**execution.undetermined, **undetermined},
    )


def undetermined(measured: list[Execution]) -> list[UndeterminedMeasure]:
    """Each registered measure some of the measured executions have undetermined, in the registry's order."""
    found = []
    for entry in MEASURES.values():
        whys = [e.undetermined[entry.name] for e in measured if entry.name in e.undetermined]
        if whys:
            found.append(UndeterminedMeasure(entry.name, entry.label, entry.unit, len(whys), len(measured), whys[0]))
    return found


def undetermined_warnings(found: list[UndeterminedMeasure]) -> list[str]:
    """One line for the measures undetermined for one reason in as many executions."""
    grouped: dict[str, list[str]] = defaultdict(list)
    for entry in found:
        grouped[entry.text].append(entry.label)
    return [f"{', '.join(labels)} per execution: {text}." for text, labels in grouped.items()]


def traced_figures(trace: Trace) -> dict[int, dict[str, float]]:
    """execution -> the figures its traced sessions' records give (analyses.session_measures.own_record):
    the time Cassandra's own tracing gives it, its sessions' durations (one a page) as the coordinator
    counted them (its request's start to its response ready), and a write's time in the commit log. An
    execution one of whose sessions lacks a figure has none of it."""
    sessions = queries.execution_sessions(trace)
    if not sessions:
        return {}
    records = [TracedSession.of(row) for row in queries.statement_sessions(trace) if row.session in sessions]
    return per_execution(
        own_record(SessionInputs(records, [])),
        {record.session: sessions[record.session] for record in records},
        ("traced_ns", "commitlog_ns"),
    )
