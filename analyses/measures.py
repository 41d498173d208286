"""Per-window measures (casstrace.traces.measures) per execution, and their summary over the measured ones.

Each execution's figure of a measure is its window's rows combined by the measure's merge rule (the
nodes of a multi-node trace: CPU adds up, a span takes the slowest); the summary gives the median,
p99 and total over the measured executions that have one. A measure a trace did not take has no
summary and no figure, never 0.
"""

from collections import defaultdict

from casstrace.analyses.model import MeasureSummary
from casstrace.analyses.percentiles import percentile
from casstrace.traces import Trace, queries
from casstrace.traces.measures import MEASURES, measure


def by_window(trace: Trace) -> dict[int, dict[str, float]]:
    """window_id -> {measure name: the window's figure}, by the merge rules."""
    values: dict[int, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    for row in queries.window_measures(trace):
        values[row.window_id][row.measure].append(row.value)
    return {
        window_id: {name: measure(name).combine(listed) for name, listed in named.items()}
        for window_id, named in values.items()
    }


def summaries(per_execution: list[dict[str, float]]) -> list[MeasureSummary]:
    """The summary of each registered measure the executions have, in the registry's order."""
    found = []
    for entry in MEASURES.values():
        values = [figures[entry.name] for figures in per_execution if entry.name in figures]
        if values:
            found.append(
                MeasureSummary(
                    name=entry.name,
                    label=entry.label,
                    unit=entry.unit,
                    whose=entry.whose,
                    executions=len(values),
                    median=percentile(values, 0.5) or 0.0,
                    p99=percentile(values, 0.99) or 0.0,
                    total=sum(values),
                )
            )
    return found
