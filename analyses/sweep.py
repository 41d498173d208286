"""The column-count study of the reference write-up, summarised: how reading one column of a
wide table grows with the table's number of columns N, against the narrow refactor.

Pure: the analyses of each point's two traces in, a Sweep out. The expected shape (CASSANDRA-6586):
the wide table's Data bytes read and latency grow linearly with N while the payload stays the same;
the narrow table's stay flat. The summary says whether the measured points have that shape, from
the least-squares line through them: flat when the line rises by at most FLAT_RISE of the mean
over the whole range of N (or falls); else linear when r² >= LINEAR_R2, growing (noisily) when r² >= NOISY_R2.
Bytes read are exact. Latency is judged on the fastest execution at each N: on a busy machine other
processes add time to some executions, never take it away.
"""

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from casstrace.analyses.compare import QuerySummary, summarise
from casstrace.analyses.model import Analysis
from casstrace.analyses.units import human_bytes, human_ms

FLAT_RISE = 0.5
LINEAR_R2 = 0.9
NOISY_R2 = 0.5


@dataclass
class SweepPoint:
    columns: int
    wide: QuerySummary
    narrow: QuerySummary
    wide_data_file_bytes: int  # size of the wide table's Data.db files on disk
    narrow_data_file_bytes: int


@dataclass
class LinearFit:
    slope: float  # per column
    intercept: float
    r2: float | None  # None when every y is the same (a flat line: nothing to explain)


@dataclass
class Sweep:
    points: list[SweepPoint]
    rows: int
    cell_bytes: int
    fits: dict[str, LinearFit]  # 'wide_data_read' | 'wide_latency' | 'narrow_data_read' | 'narrow_latency'
    findings: list[str]  # the shape, in sentences with the numbers
    warnings: list[str] = field(default_factory=list)
    context: dict = field(default_factory=dict)  # how it was run (node, keyspace, duration), from the caller


def linear_fit(xs: Sequence[float], ys: Sequence[float]) -> LinearFit | None:
    """Least-squares line through the points; None with fewer than two distinct x."""
    if len(set(xs)) < 2:
        return None
    n = len(xs)
    mean_x, mean_y = sum(xs) / n, sum(ys) / n
    sxx = sum((x - mean_x) ** 2 for x in xs)
    sxy = sum((x - mean_x) * (y - mean_y) for x, y in zip(xs, ys))
    slope = sxy / sxx
    intercept = mean_y - slope * mean_x
    total = sum((y - mean_y) ** 2 for y in ys)
    residual = sum((y - intercept - slope * x) ** 2 for x, y in zip(xs, ys))
    return LinearFit(slope, intercept, 1 - residual / total if total else None)


def summarise_sweep(
    measured: list[tuple[int, Analysis, Analysis, int, int]], rows: int, cell_bytes: int, context: dict | None = None
) -> Sweep:
    """measured: (N, analysis of the wide query, of the narrow query, wide Data.db size, narrow Data.db size)."""
    points = [
        SweepPoint(n, summarise(wide, f"wide N={n}"), summarise(narrow, f"narrow N={n}"), wide_size, narrow_size)
        for n, wide, narrow, wide_size, narrow_size in sorted(measured, key=lambda point: point[0])
    ]
    xs = [p.columns for p in points]
    series: dict[str, list[float | None]] = {
        "wide_data_read": [p.wide.data_read_bytes for p in points],
        "narrow_data_read": [p.narrow.data_read_bytes for p in points],
        "wide_latency": [p.wide.latency_min_s for p in points],
        "narrow_latency": [p.narrow.latency_min_s for p in points],
    }
    fits = {
        name: fit
        for name, ys in series.items()
        if (known := _every_one_known(ys)) is not None and (fit := linear_fit(xs, known)) is not None
    }
    sweep = Sweep(points, rows, cell_bytes, fits, findings=[], context=context or {})
    sweep.warnings = [
        f"{summary.label}: {warning}" for p in points for summary in (p.wide, p.narrow) for warning in summary.warnings
    ]
    sweep.warnings += [
        f"{summary.label}: {human_bytes(summary.data_read_bytes)} read from the Data files for "
        f"{human_bytes(summary.payload_bytes)} of payload. Rows cannot come back without being read, so the data "
        "came from memory the probes do not see (pages mapped and cached) or the capture missed the reads."
        for p in points
        for summary in (p.wide, p.narrow)
        if summary.payload_bytes and summary.data_read_bytes < summary.payload_bytes
    ]
    if len(points) >= 2:
        sweep.findings = _findings(sweep, series)
    return sweep


def _every_one_known(values: list[float | None]) -> list[float] | None:
    known = [value for value in values if value is not None]
    return known if len(known) == len(values) else None


def _findings(sweep: Sweep, series: dict[str, list[float | None]]) -> list[str]:
    findings = []
    for side in ("wide", "narrow"):
        xs = [p.columns for p in sweep.points]
        data = _shape(sweep.fits.get(f"{side}_data_read"), xs, series[f"{side}_data_read"], human_bytes)
        latency = _shape(sweep.fits.get(f"{side}_latency"), xs, series[f"{side}_latency"], human_ms)
        findings.append(
            f"{side.capitalize()} table, Data bytes read per execution: {data}; latency (fastest execution): {latency}."
        )
    payloads = {p.wide.payload_bytes for p in sweep.points} | {p.narrow.payload_bytes for p in sweep.points}
    if len(payloads) == 1 and None not in payloads:
        findings.append(
            f"The payload stays the same at every N, on both tables: {human_bytes(payloads.pop())} per execution."
        )
    else:
        findings.append(
            "The payload is not the same at every N: "
            + ", ".join(
                f"N={p.columns}: {human_bytes(p.wide.payload_bytes)} wide, {human_bytes(p.narrow.payload_bytes)} narrow"
                for p in sweep.points
            )
            + "."
        )
    return findings


def _shape(fit: LinearFit | None, xs: list[int], measured: list[float | None], show: Callable[[float], str]) -> str:
    values = _every_one_known(measured)
    if fit is None or values is None:
        return "not measured at every point"
    text_range = f"{show(min(values))} to {show(max(values))}"
    rise = fit.slope * (max(xs) - min(xs))
    mean = sum(values) / len(values)
    r2 = "n/a" if fit.r2 is None else f"{fit.r2:.3f}"
    if rise <= FLAT_RISE * mean:  # a falling line is noise too: it does not grow with N
        return f"flat ({text_range}; the fitted line moves {show(rise)} from N={min(xs)} to N={max(xs)})"
    growth = f"{show(fit.slope)} more per column, r² {r2}; {text_range}"
    if rise > 0 and fit.r2 is not None and fit.r2 >= LINEAR_R2:
        return f"grows linearly with N ({growth})"
    if rise > 0 and fit.r2 is not None and fit.r2 >= NOISY_R2:
        return f"grows with N, noisily ({growth})"
    return f"neither flat nor growing steadily with N ({text_range}, r² {r2})"
