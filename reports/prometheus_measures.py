"""A watch's per-execution measures (casstrace.traces.measures) on its Prometheus page
(reports.prometheus): one summary family per registered measure, named from its registry entry, so a
new measure shows here with no change to this module.

  casstrace_statement_<measure>_seconds{statement, quantile}   a measure in ns (its `_ns` dropped,
      shown in seconds); `_bytes` and counts keep their name: casstrace_statement_<measure>
      quantile="0.5" and "0.99" over the statement's sampled executions (a statement with a label of
      its own), with `_sum` (over them) and `_count` (the sampled executions that have the figure)

Statements summed into statement="other" give `_sum` and `_count` only: quantiles do not add up.
"""

from casstrace.analyses.measures import MEASURES
from casstrace.analyses.model import MeasureSummary
from casstrace.analyses.units import ns_to_s
from casstrace.analyses.watch import StatementIO
from casstrace.reports.prometheus_writes import Samples

QUANTILES = (("0.5", "median"), ("0.99", "p99"))


def metric_name(name: str, unit: str) -> str:
    """A measure's family name: its own, in base units (seconds for ns)."""
    if unit == "ns":
        return f"casstrace_statement_{name.removesuffix('_ns')}_seconds"
    return f"casstrace_statement_{name}"


HELP = {
    metric_name(entry.name, entry.unit): (
        "summary",
        f"{entry.label} per sampled execution of a statement"
        + ("" if entry.whose == "node" else f" (taken by the {entry.whose})"),
    )
    for entry in MEASURES.values()
}


def _in_base_units(summary: MeasureSummary, value: float) -> float:
    return ns_to_s(value) if summary.unit == "ns" else value


def measure_samples(samples: Samples, label: str, statements: list[StatementIO], quantiles: bool) -> None:
    """The statements' per-execution measures under one label, into `samples` (a family's `_sum` and
    `_count` series under its name with those suffixes); `quantiles`: the label is one statement's own."""
    totals: dict[str, list[float]] = {}
    for statement in statements:
        for summary in statement.measures:
            name = metric_name(summary.name, summary.unit)
            total = totals.setdefault(name, [0.0, 0.0])
            total[0] += _in_base_units(summary, summary.total)
            total[1] += summary.executions
            if quantiles:
                for quantile, figure in QUANTILES:
                    value = _in_base_units(summary, getattr(summary, figure))
                    samples[name].append(((("statement", label), ("quantile", quantile)), value))
    for name, (summed, count) in totals.items():
        samples[f"{name}_sum"].append(((("statement", label),), summed))
        samples[f"{name}_count"].append(((("statement", label),), count))
