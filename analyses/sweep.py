"""The column-count study of the reference write-up, summarised: how reading one column of a
wide table grows with the table's number of columns N, against the narrow refactor.

Pure: the analyses of each point's two traces in, a Sweep out. The expected shape (CASSANDRA-6586):
the wide table's Data bytes read and latency grow linearly with N while the payload stays the same;
the narrow table's stay flat. The summary says whether the measured points have that shape, from
the least-squares line through them: flat when the line rises by at most FLAT_RISE of the mean
over the whole range of N (or falls); else linear when r² >= LINEAR_R2, growing (noisily) when r² >= NOISY_R2.
Bytes read are exact. Latency is judged on the fastest execution at each N: on a busy machine other
processes add time to some executions, never take it away.

The many-columns study (`sweep --layout`, summarise_layouts): the same time series in N columns, a
frozen UDT of N fields or N clustering rows per time point, at a constant row size; per layout and N,
the node's p99, its CPU per execution and the Data bytes read, and the shape of each as N grows.
"""

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from casstrace.analyses.compare import QuerySummary, summarise
from casstrace.analyses.measures import CPU_MEASURES
from casstrace.analyses.model import Analysis
from casstrace.analyses.table_writes import TableWrites
from casstrace.analyses.units import human_bytes, human_ms, human_ns

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
        moves = show(rise) if rise >= 0 else f"-{show(-rise)}"
        return f"flat ({text_range}; the fitted line moves {moves} from N={min(xs)} to N={max(xs)})"
    growth = f"{show(fit.slope)} more per column, r² {r2}; {text_range}"
    if rise > 0 and fit.r2 is not None and fit.r2 >= LINEAR_R2:
        return f"grows linearly with N ({growth})"
    if rise > 0 and fit.r2 is not None and fit.r2 >= NOISY_R2:
        return f"grows with N, noisily ({growth})"
    return f"neither flat nor growing steadily with N ({text_range}, r² {r2})"


@dataclass
class LayoutPoint:
    """One layout at one N: its query's per-execution figures."""

    layout: str  # 'columns' | 'udt' | 'rows'
    columns: int  # N: columns, UDT fields or clustering rows per time point
    summary: QuerySummary

    @property
    def cpu_ns(self) -> float | None:
        """The node's CPU per execution (median): the serving threads', else the request pools'."""
        found = next((self.summary.measures[name] for name in CPU_MEASURES if name in self.summary.measures), None)
        return None if found is None else found.median

    @property
    def node_p99_s(self) -> float | None:
        """The p99 of the node's time per execution (None: not measured; never the client's)."""
        return self.summary.latency_p99_s if self.summary.latency_of == "node" else None


@dataclass
class LayoutSweep:
    """The many-columns study: the same time series in each layout, per N, at a constant row size."""

    points: list[LayoutPoint]  # by layout, then N
    rows: int  # time points per partition
    row_bytes: int  # characters of one time point's fields, at every N
    findings: list[str]
    warnings: list[str] = field(default_factory=list)
    context: dict = field(default_factory=dict)

    @property
    def layouts(self) -> list[str]:
        return list(dict.fromkeys(p.layout for p in self.points))

    def series(self, layout: str) -> list[LayoutPoint]:
        return [p for p in self.points if p.layout == layout]


LAYOUT_FIGURES: dict[str, tuple[str, Callable[[LayoutPoint], float | None], Callable[[float], str]]] = {
    "node_p99": ("node time p99", lambda p: p.node_p99_s, human_ms),
    "cpu": ("node CPU per execution", lambda p: p.cpu_ns, human_ns),
    "data_read": ("Data bytes read per execution", lambda p: p.summary.data_read_bytes, human_bytes),
}


def summarise_layouts(
    measured: list[tuple[str, int, Analysis]], rows: int, row_bytes: int, context: dict | None = None
) -> LayoutSweep:
    """measured: (layout, N, the analysis of its query)."""
    points = sorted(
        (LayoutPoint(layout, n, summarise(analysis, f"{layout} N={n}")) for layout, n, analysis in measured),
        key=lambda p: (p.layout, p.columns),
    )
    sweep = LayoutSweep(points, rows, row_bytes, findings=[], context=context or {})
    sweep.warnings = [f"{p.summary.label}: {warning}" for p in points for warning in p.summary.warnings]
    for layout in sweep.layouts:
        series = sweep.series(layout)
        if len(series) < 2:
            continue
        xs = [p.columns for p in series]
        shapes = []
        for label, figure, show in LAYOUT_FIGURES.values():
            values = [figure(p) for p in series]
            known = _every_one_known(values)
            shapes.append(f"{label}: {_shape(linear_fit(xs, known) if known else None, xs, values, show)}")
        sweep.findings.append(f"The {layout} layout, as N grows: " + "; ".join(shapes) + ".")
    sweep.findings += _against_each_other(sweep)
    return sweep


def _against_each_other(sweep: LayoutSweep) -> list[str]:
    """At the largest N every layout reached: each one's node CPU and p99 against the cheapest's."""
    largest = min((max(p.columns for p in sweep.series(layout)) for layout in sweep.layouts), default=None)
    at = {p.layout: p for p in sweep.points if p.columns == largest}
    cpu = {layout: p.cpu_ns for layout, p in at.items() if p.cpu_ns}
    if len(cpu) < 2:
        return []
    cheapest = min(cpu, key=lambda layout: cpu[layout])
    return [
        f"At N={largest}, the node's CPU per execution: "
        + ", ".join(
            f"{layout} {human_ns(value)} ({value / cpu[cheapest]:.1f}x {cheapest})" for layout, value in cpu.items()
        )
        + "."
    ]


@dataclass
class TablesPoint:
    """The many-tables study at one N: the same writes spread over N tables. Flushes and compactions are
    the capture's (the flush and compaction threads' write and read syscalls on the point's SSTables,
    analyses.table_writes); the node's own counts beside them (None: not read or not measured)."""

    tables: int  # N
    writes: int  # writes the node acknowledged
    failed_writes: int
    load_s: float  # the client's, first write sent to last acknowledged
    heap_used_bytes: int | None  # the JVM's heap in use at the load's end (live and not yet collected)
    flush_sizes: list[int] | None  # each flush's new SSTable, all components, smallest first
    compaction_read_bytes: int | None  # Data bytes the compactions read
    compaction_written_bytes: int | None  # bytes of every component they wrote
    received_bytes: int | None  # mutation bytes of the memtables flushed (the node's log)
    node_flushes: int | None  # memtable switches (nodetool tablestats)
    node_compactions: int | None  # compactions in system.compaction_history
    node_compaction_in_bytes: int | None  # their Data bytes in and out, as Cassandra counts them
    node_compaction_out_bytes: int | None
    trace_path: str = ""

    @property
    def throughput(self) -> float | None:
        """Writes acknowledged per second of the load."""
        return self.writes / self.load_s if self.load_s > 0 else None

    @property
    def flushes(self) -> int | None:
        return None if self.flush_sizes is None else len(self.flush_sizes)

    @property
    def flush_bytes(self) -> int | None:
        return None if self.flush_sizes is None else sum(self.flush_sizes)

    @property
    def mean_flush_bytes(self) -> float | None:
        return sum(self.flush_sizes) / len(self.flush_sizes) if self.flush_sizes else None

    @property
    def write_amplification(self) -> float | None:
        """Bytes written to disk for the tables (flushes and compactions) ÷ the mutation bytes they received."""
        if self.flush_bytes is None or self.compaction_written_bytes is None or not self.received_bytes:
            return None
        return (self.flush_bytes + self.compaction_written_bytes) / self.received_bytes


def tables_point(
    tables: int,
    load: tuple[int, int, float, int | None],
    written: Sequence[TableWrites],
    flushes_counted: Sequence[tuple[str, int]] | None,
    compaction_history: Sequence[tuple[str, int, int]] | None,
    trace_path: str = "",
) -> TablesPoint:
    """One point from its load (writes acknowledged, failed, seconds, heap used), its tables' background
    work in the capture (`written`: the watch's TableWrites of the point's tables only), the node's
    memtable switches per table (`flushes_counted`, None: not read) and its compaction history
    ((table, bytes_in, bytes_out), None: not read)."""
    writes, failed, seconds, heap = load
    measured = all(t.flush_sizes is not None for t in written)
    received = [t.received_bytes for t in written]
    return TablesPoint(
        tables=tables,
        writes=writes,
        failed_writes=failed,
        load_s=seconds,
        heap_used_bytes=heap,
        flush_sizes=sorted(size for t in written for size in t.flush_sizes or ()) if measured else None,
        compaction_read_bytes=sum(t.compaction_read_bytes or 0 for t in written) if measured else None,
        compaction_written_bytes=sum(t.compaction_written_bytes or 0 for t in written) if measured else None,
        received_bytes=None if not written or None in received else sum(r or 0 for r in received),
        node_flushes=None if flushes_counted is None else sum(count for _, count in flushes_counted),
        node_compactions=None if compaction_history is None else len(compaction_history),
        node_compaction_in_bytes=None if compaction_history is None else sum(c[1] for c in compaction_history),
        node_compaction_out_bytes=None if compaction_history is None else sum(c[2] for c in compaction_history),
        trace_path=trace_path,
    )


@dataclass
class TablesSweep:
    """The many-tables study: per N, the same writes spread over N tables."""

    points: list[TablesPoint]  # by N
    writes: int  # writes per point
    value_bytes: int
    findings: list[str]
    warnings: list[str] = field(default_factory=list)
    context: dict = field(default_factory=dict)


# The study's figures, each told from the smallest N to the largest: the many-tables effects fall
# (throughput, flush size) as often as they grow, which a fitted line's shape (above) calls noise.
TABLES_FIGURES: dict[str, tuple[str, Callable[[TablesPoint], float | None], Callable[[float], str]]] = {
    "throughput": ("throughput", lambda p: p.throughput, lambda v: f"{v:,.0f} writes/s"),
    "flushes": ("flushes", lambda p: p.flushes, lambda v: f"{v:,.0f}"),
    "mean_flush": ("mean flush", lambda p: p.mean_flush_bytes, human_bytes),
    "compaction_written": ("compaction writes", lambda p: p.compaction_written_bytes, human_bytes),
    "heap_used": ("heap used", lambda p: p.heap_used_bytes, human_bytes),
    "write_amplification": ("write amplification", lambda p: p.write_amplification, lambda v: f"{v:.2f}x"),
}


def summarise_tables(
    points: list[TablesPoint], writes: int, value_bytes: int, context: dict | None = None
) -> TablesSweep:
    """Each figure at the largest N against the smallest, and the capture's counts checked against the node's."""
    points = sorted(points, key=lambda p: p.tables)
    sweep = TablesSweep(points, writes, value_bytes, findings=[], context=context or {})
    for p in points:
        sweep.warnings += _tables_checks(p)
    if len(points) < 2:
        return sweep
    first, last = points[0], points[-1]
    moves = []
    for label, figure, show in TABLES_FIGURES.values():
        before, after = figure(first), figure(last)
        if before is None or after is None:
            moves.append(f"{label} not measured at both")
            continue
        times = f" ({after / before:.2f}x)" if before else ""
        moves.append(f"{label} {show(before)} → {show(after)}{times}")
    sweep.findings.append(f"From N={first.tables} to N={last.tables} tables: " + "; ".join(moves) + ".")
    if first.flushes is not None and last.flushes is not None:
        sweep.findings.append(
            "Each point's last memtables, one per table, are flushed at its end: "
            f"{first.tables:,} of the {first.flushes:,} flushes at N={first.tables}, "
            f"{last.tables:,} of the {last.flushes:,} at N={last.tables}; the others the memtable space forced."
        )
    return sweep


def _tables_checks(p: TablesPoint) -> list[str]:
    """Where the capture and the node disagree, or the load lost writes."""
    found = []
    if p.failed_writes:
        found.append(f"N={p.tables}: {p.failed_writes:,} of {p.writes + p.failed_writes:,} writes failed.")
    if p.flushes is None:
        found.append(f"N={p.tables}: the capture did not measure write syscalls: no flush or compaction figures.")
    elif p.node_flushes is not None and p.flushes != p.node_flushes:
        found.append(
            f"N={p.tables}: the capture saw {p.flushes:,} flushes, the node counted {p.node_flushes:,} memtable "
            "switches (nodetool tablestats): a flush ran outside the capture, or one switched an empty memtable."
        )
    return found
