"""The column-count study of the reference write-up, summarised: how reading one column of a
wide table grows with the table's number of columns N, against the narrow refactor.

Pure: the analyses of each point's two traces in, a Sweep out. The expected shape (CASSANDRA-6586):
the wide table's Data bytes read and latency grow linearly with N while the payload stays the same;
the narrow table's stay flat. The summary says whether the measured points have that shape, with
the least-squares line (slope, r²) for growth and the max ÷ min spread for flatness.
"""

from dataclasses import dataclass, field

from casstrace.analyses.compare import QuerySummary, summarise
from casstrace.analyses.model import Analysis
from casstrace.analyses.units import human_bytes

LINEAR_R2 = 0.95        # a least-squares line this good (or better) counts as linear growth
FLAT_SPREAD = 1.5       # max ÷ min at most this counts as flat


@dataclass
class SweepPoint:
    columns: int
    wide: QuerySummary
    narrow: QuerySummary
    wide_data_file_bytes: int      # size of the wide table's Data.db files on disk
    narrow_data_file_bytes: int


@dataclass
class LinearFit:
    slope: float            # per column
    intercept: float
    r2: float | None        # None when every y is the same (a flat line: nothing to explain)


@dataclass
class Sweep:
    points: list[SweepPoint]
    rows: int
    cell_bytes: int
    fits: dict[str, LinearFit]   # 'wide_data_read' | 'wide_latency' | 'narrow_data_read' | 'narrow_latency'
    findings: list[str]          # the shape, in sentences with the numbers
    warnings: list[str] = field(default_factory=list)
    context: dict = field(default_factory=dict)   # how it was run (node, keyspace, duration), from the caller


def linear_fit(xs: list[float], ys: list[float]) -> LinearFit | None:
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


def spread(values: list[float]) -> float | None:
    """max ÷ min; None when a value is unknown or the smallest is 0."""
    if not values or any(v is None for v in values) or min(values) <= 0:
        return None
    return max(values) / min(values)


def summarise_sweep(measured: list[tuple[int, Analysis, Analysis, int, int]], rows: int, cell_bytes: int,
                    context: dict | None = None) -> Sweep:
    """measured: (N, analysis of the wide query, of the narrow query, wide Data.db size, narrow Data.db size)."""
    points = [SweepPoint(n, summarise(wide, f"wide N={n}"), summarise(narrow, f"narrow N={n}"), wide_size, narrow_size)
              for n, wide, narrow, wide_size, narrow_size in sorted(measured, key=lambda point: point[0])]
    xs = [p.columns for p in points]
    series = {
        "wide_data_read": [p.wide.data_read_bytes for p in points],
        "narrow_data_read": [p.narrow.data_read_bytes for p in points],
        "wide_latency": [p.wide.latency_median_s for p in points],
        "narrow_latency": [p.narrow.latency_median_s for p in points],
    }
    fits = {name: fit for name, ys in series.items()
            if None not in ys and (fit := linear_fit(xs, ys)) is not None}
    sweep = Sweep(points, rows, cell_bytes, fits, findings=[], context=context or {})
    sweep.warnings = [f"{summary.label}: {warning}" for p in points for summary in (p.wide, p.narrow)
                      for warning in summary.warnings]
    if len(points) >= 2:
        sweep.findings = _findings(sweep, series)
    return sweep


def _findings(sweep: Sweep, series: dict[str, list]) -> list[str]:
    findings = []
    for side in ("wide", "narrow"):
        data = _shape(sweep.fits.get(f"{side}_data_read"), series[f"{side}_data_read"],
                      lambda v: f"{human_bytes(v)}")
        latency = _shape(sweep.fits.get(f"{side}_latency"), series[f"{side}_latency"],
                         lambda v: f"{v * 1000:,.1f} ms")
        findings.append(f"{side.capitalize()} table, Data bytes read per execution: {data}; median latency: {latency}.")
    payloads = {p.wide.payload_bytes for p in sweep.points} | {p.narrow.payload_bytes for p in sweep.points}
    if len(payloads) == 1 and None not in payloads:
        findings.append(f"The payload stays the same at every N, on both tables: {human_bytes(payloads.pop())} "
                        "per execution.")
    else:
        findings.append("The payload is not the same at every N: "
                        + ", ".join(f"N={p.columns}: {human_bytes(p.wide.payload_bytes)} wide, "
                                    f"{human_bytes(p.narrow.payload_bytes)} narrow" for p in sweep.points) + ".")
    return findings


def _shape(fit: LinearFit | None, values: list, show) -> str:
    if fit is None:
        return "not measured at every point"
    flat = spread(values)
    text_range = f"{show(min(values))} to {show(max(values))}"
    if flat is not None and flat <= FLAT_SPREAD:
        return f"flat ({text_range}, max ÷ min {flat:.2f})"
    if fit.r2 is not None and fit.r2 >= LINEAR_R2 and fit.slope > 0:
        return f"grows linearly with N ({show(fit.slope)} more per column, r² {fit.r2:.3f}; {text_range})"
    r2 = "n/a" if fit.r2 is None else f"{fit.r2:.3f}"
    return f"neither flat nor linear in N ({text_range}, r² {r2})"
