"""Two analysed queries side by side: does the second return the same data for less I/O?

Pure: Analysis objects (and what the client saw of the payload) in, a Comparison out.

Every figure is per measured execution (the trace's totals divided by its measured executions),
so traces taken with different --repeat compare fairly. `casstrace compare` refuses a trace without
measured executions (a watch, capture or import: it has no per-execution figure).

Latency is the client's wall time per execution, all pages fetched: the median, p99 by the
nearest-rank method (with fewer than 100 executions, p99 is the slowest one), and the fastest (the
least disturbed by other work on the machine, which only ever adds time).

The payload check comes first. Live runs compare the row count and the digest of the returned
values (casstrace.node.query: order-insensitive, computed on the client, never stored), and, when
those differ, the digest of the leaf values per row key (casstrace.node.leaves: the same data in
another shape). Stored traces keep that leaf digest (meta leaf_digest, never the values): two that
both have it are compared by it, as live; older ones by the row count and the payload bytes only
(equal sizes make equal data likely, not certain).

Gates, for pipelines:
  worse (--fail-if-worse): the second query is worse when, per execution, it reads more from its
    table's Data files than the first by more than the tolerance (default 10%), or its median
    latency is higher than the first's by more than the tolerance and by at least LATENCY_FLOOR_S
    (below a millisecond the difference is timer and scheduling noise). The latency is the node's time
    when both traces measured it, else the client's round trip on both sides: a measure is compared
    only with itself. A figure unknown on either side refuses the gate (CasstraceError): it never passes
    on what it did not compare.
  max amplification (--max-amplification X): the verdict's rule with X for its threshold: the second
    query fails when it reads at least X x its necessary read and at least --min-excess per execution
    past it (VerdictRule.exceeds; the payload stands in for the necessary read where there is none); an
    undetermined figure fails the gate (it cannot be shown to pass).
"""

from dataclasses import dataclass, field

from casstrace.analyses.model import Analysis, FileIO, MeasureSummary, Verdict
from casstrace.analyses.nodes import readers_per_execution
from casstrace.analyses.percentiles import percentile
from casstrace.analyses.units import human_bytes, human_ms, ns_to_s, ratio, s_to_ms
from casstrace.analyses.verdict_rule import VerdictRule
from casstrace.analyses.write_cost import PER_ROW_FIGURES, WriteCost
from casstrace.errors import CasstraceError

LATENCY_FLOOR_S = 0.001
DEFAULT_TOLERANCE = 0.10
TOP_FILES = 8


@dataclass
class Payload:
    """What one execution of a query returned."""

    rows: int | None
    payload_bytes: int | None
    digest: str | None = field(default=None, repr=False)  # live runs only; memory only
    note: str | None = None  # why rows/bytes are unknown
    leaf_digest: str | None = field(default=None, repr=False)  # node.leaves; a trace's: meta leaf_digest


@dataclass
class PayloadCheck:
    status: str  # 'same' | 'different' | 'unverified'
    basis: str  # what was compared, in words
    first: Payload
    second: Payload
    summary: str
    notes: list[str] = field(default_factory=list)


@dataclass
class FileRead:
    name: str  # 'keyspace.table nb-5-big Data.db', or the path
    read_bytes: float  # per execution
    cache_miss_bytes: float | None  # per execution; None: not measured


@dataclass
class QuerySummary:
    """One side of a comparison (or one point of a sweep): per-execution figures of one trace."""

    label: str
    trace_path: str
    query: str | None
    table: str | None  # keyspace.table the amplification is about
    complete: bool
    warnings: list[str]
    executions: int  # what the per-execution figures divide by
    scope: str
    latency_median_s: float | None
    latency_p99_s: float | None
    latency_min_s: float | None
    rows: int | None
    payload_bytes: int | None
    data_read_bytes: float  # from the table's Data files: syscalls + page-cache fills outside them
    syscall_bytes: float
    cache_miss_bytes: float | None
    file_read_bytes: float  # read syscalls on every file
    amplification: float | None  # data read ÷ payload (or wire bytes)
    verdict: Verdict
    files: list[FileRead]
    consistency: str | None = None
    replicas_read: float | None = None  # nodes that read the Data files, per execution (None: no nodes in the trace)
    not_captured: list[str] = field(default_factory=list)  # nodes of the query not captured: figures are "at least"
    necessary_bytes: float | None = None  # the necessary read per execution (None: no model)
    over_necessary: float | None = None  # data read ÷ necessary read: the verdict's figure
    min_excess: int = 0  # the verdict's floor, per execution
    latency_of: str = "client"  # whose the latency_* figures are: 'node' (its time answering) or 'client' (round trip)
    measures: dict[str, MeasureSummary] = field(default_factory=dict)  # the per-window measures, by name


@dataclass
class Metric:
    key: str  # stable name, used in JSON
    name: str
    unit: str  # 'seconds' | 'bytes' | 'count' | 'ratio'
    first: float | None
    second: float | None

    @property
    def ratio(self) -> float | None:
        """second ÷ first; None when either is unknown or the first is 0."""
        if self.first is None or self.second is None or not self.first:
            return None
        return self.second / self.first

    @property
    def change(self) -> str:
        """The ratio in words, from the second query's point of view: '62.5x less', '1.30x more'."""
        if self.first is None or self.second is None:
            return "not comparable"
        if self.first == self.second:
            return "same"
        if not self.first:
            return "more (first is 0)"
        if not self.second:
            return "none (second is 0)"
        value = self.second / self.first
        return f"{ratio(value)} more" if value > 1 else f"{ratio(1 / value)} less"


@dataclass
class Gate:
    option: str  # the command-line option that asked for it
    passed: bool
    reason: str


@dataclass
class Comparison:
    first: QuerySummary
    second: QuerySummary
    payload: PayloadCheck
    metrics: list[Metric]
    summary: str
    gates: list[Gate]

    @property
    def failed_gates(self) -> list[Gate]:
        return [gate for gate in self.gates if not gate.passed]

    def metric(self, key: str) -> Metric:
        return next(m for m in self.metrics if m.key == key)


# -- payload ---------------------------------------------------------------------------------


def stored_payload(analysis: Analysis) -> Payload:
    """Rows and payload bytes of the trace's measured executions (they must agree with each other)."""
    measured = [e for e in analysis.executions if e.kind == "measured" and not e.error]
    if not measured:
        return Payload(None, None, note="no measured execution recorded")
    seen = {(e.rows, e.payload_bytes) for e in measured}
    if len(seen) > 1:
        return Payload(
            None, None, note="its executions returned different row counts or sizes (the data changed during the run)"
        )
    rows, payload_bytes = seen.pop()
    return Payload(
        rows,
        payload_bytes,
        note=None if payload_bytes is not None else "no payload recorded",
        leaf_digest=analysis.leaf_digest,
    )


def check_payload(first: Payload, second: Payload) -> PayloadCheck:
    """Same data? By digest when both sides have one, else by rows and payload bytes."""
    if first.digest is not None and second.digest is not None:
        basis = "row count and digest of the returned values, computed on the client and never stored"
        same = first.rows == second.rows and first.digest == second.digest
        if not same and first.leaf_digest is not None and first.leaf_digest == second.leaf_digest:
            return PayloadCheck(
                "same",
                "the leaf values per row key (columns, a frozen UDT's fields, clustering rows of (name, value)), "
                "computed on the client and never stored",
                first,
                second,
                _same_leaves(first, second),
            )
        if same:
            summary = f"Same payload: {first.rows:,} rows, {human_bytes(first.payload_bytes)}, identical values."
        else:
            summary = _different(first, second, "different values")
        return PayloadCheck("same" if same else "different", basis, first, second, summary)

    if first.leaf_digest is not None and second.leaf_digest is not None:
        same = first.leaf_digest == second.leaf_digest
        return PayloadCheck(
            "same" if same else "different",
            "the digest of the leaf values per row key each trace stored (never the values)",
            first,
            second,
            _same_leaves(first, second) if same else _different(first, second, "other leaf values per row key"),
        )
    basis = "row count and payload bytes only: a trace without the digest of its leaf values"
    notes = [
        "A stored trace without the digest of its leaf values (taken by an older casstrace, or its tracing "
        "execution failed): only the row count and the payload bytes can be compared. Equal sizes make equal "
        "data likely, not certain: compare the queries live (--before/--after) to check the values."
    ]
    unknown = [
        f"{label}: {payload.note}"
        for label, payload in (("first", first), ("second", second))
        if payload.rows is None or payload.payload_bytes is None
    ]
    if unknown:
        return PayloadCheck(
            "unverified", basis, first, second, "Payload not verified: " + "; ".join(unknown) + ".", notes
        )
    if (first.rows, first.payload_bytes) == (second.rows, second.payload_bytes):
        return PayloadCheck(
            "same",
            basis,
            first,
            second,
            f"Same payload size: {first.rows:,} rows, {human_bytes(first.payload_bytes)} each.",
            notes,
        )
    return PayloadCheck("different", basis, first, second, f"Different data: {_difference(first, second)}.", notes)


def _same_leaves(first: Payload, second: Payload) -> str:
    return (
        f"Same data, in this shape or another: the same leaf values per row key ({_rows(first.rows)} "
        f"{human_bytes(first.payload_bytes)} and {_rows(second.rows)} {human_bytes(second.payload_bytes)})."
    )


def _different(first: Payload, second: Payload, values: str) -> str:
    """'Different data: ...', saying the `values` differ when the sizes do not."""
    same_sizes = (first.rows, first.payload_bytes) == (second.rows, second.payload_bytes)
    return f"Different data: {_difference(first, second)}{f' (same row count and size, {values})' * same_sizes}."


def _difference(first: Payload, second: Payload) -> str:
    return (
        f"the first returned {_rows(first.rows)} ({human_bytes(first.payload_bytes)}), the second "
        f"{_rows(second.rows)} ({human_bytes(second.payload_bytes)})"
    )


def measure_metrics(a: QuerySummary, b: QuerySummary) -> list[Metric]:
    """The per-window measures either side took, their medians per execution side by side (a duration in
    seconds, as the latencies); a measure one side did not take is None there (not measured), never
    another measure in its place."""
    metrics = []
    for name in [*a.measures, *(name for name in b.measures if name not in a.measures)]:
        first, second = a.measures.get(name), b.measures.get(name)
        entry = first or second
        assert entry is not None  # a name of either side
        scale, unit = (1e-9, "seconds") if entry.unit == "ns" else (1.0, entry.unit)
        metrics.append(
            Metric(
                name,
                f"{entry.heading} per execution, median",
                unit,
                None if first is None else first.median * scale,
                None if second is None else second.median * scale,
            )
        )
    return metrics


def _rows(rows: int | None) -> str:
    return "unknown rows" if rows is None else f"{rows:,} row{'s' * (rows != 1)}"


# -- one side ----------------------------------------------------------------------------------


def node_timed(analysis: Analysis) -> bool:
    """Whether the trace measured the node's time answering every measured execution."""
    measured = [e for e in analysis.executions if e.kind == "measured"]
    return bool(measured) and all("node_ns" in e.measures for e in measured)


def summarise(analysis: Analysis, label: str, latency_of: str | None = None) -> QuerySummary:
    """One trace's per-execution figures; its latency the node's time when it measured it for every
    execution, else the client's round trip (`latency_of` 'client': the round trip whatever it measured,
    so that it compares with a trace that lacks the node's time)."""
    measured = [e for e in analysis.executions if e.kind == "measured"]
    executions = len(measured) or 1
    if latency_of is None:
        latency_of = "node" if node_timed(analysis) else "client"
    latencies = (
        [ns_to_s(e.measures["node_ns"]) for e in measured]
        if latency_of == "node"
        else [e.latency_s for e in measured if e.latency_s is not None]
    )
    overall = analysis.overall
    payload = stored_payload(analysis)

    def per(value: float | None) -> float | None:
        return None if value is None else value / executions

    files = [f for f in analysis.files if f.kind == "file" and (f.read_bytes or f.cache_miss_bytes)]
    readers = readers_per_execution(analysis.nodes)
    return QuerySummary(
        label=label,
        trace_path=analysis.trace_path,
        query=analysis.query,
        table=f"{analysis.keyspace}.{analysis.table}" if analysis.keyspace and analysis.table else analysis.table,
        complete=analysis.complete,
        warnings=analysis.warnings,
        executions=executions,
        scope=analysis.scope,
        latency_median_s=percentile(latencies, 0.5),
        latency_p99_s=percentile(latencies, 0.99),
        latency_min_s=min(latencies, default=None),
        latency_of=latency_of,
        measures={summary.name: summary for summary in analysis.measure_summaries},
        rows=payload.rows,
        payload_bytes=payload.payload_bytes,
        data_read_bytes=overall.data_read_bytes / executions,
        syscall_bytes=overall.syscall_bytes / executions,
        cache_miss_bytes=per(overall.cache_miss_bytes),
        file_read_bytes=sum(f.read_bytes for f in files) / executions,
        amplification=overall.read,
        verdict=analysis.verdict,
        necessary_bytes=per(overall.necessary_bytes),
        over_necessary=overall.over_necessary,
        min_excess=analysis.min_excess,
        files=[
            FileRead(_file_name(f, on_node=len(analysis.nodes) > 1), f.read_bytes / executions, per(f.cache_miss_bytes))
            for f in files[:TOP_FILES]
        ],
        consistency=analysis.consistency,
        replicas_read=(sum(readers.values()) / executions if readers else 0.0) if analysis.nodes else None,
        not_captured=[node.address for node in analysis.nodes if not node.captured],
    )


def _file_name(f: FileIO, on_node: bool = False) -> str:
    """The file's name; `on_node`: with its node's address (a trace of several nodes)."""
    name = f.sstable
    label = (
        f.path if name is None else f"{name.owner} {name.version}-{name.generation}-{name.format} {name.component_file}"
    )
    return f.on_node(label, on_node)


# -- the comparison ----------------------------------------------------------------------------


def compare(
    first: Analysis,
    second: Analysis,
    payload: PayloadCheck | None = None,
    labels: tuple[str, str] = ("A", "B"),
    *,
    fail_if_worse: bool = False,
    tolerance: float = DEFAULT_TOLERANCE,
    max_amplification: float | None = None,
) -> Comparison:
    """The comparison of two analyses. `payload` defaults to the stored-trace check (their leaf digests, or
    rows and bytes). Raises CasstraceError when fail_if_worse cannot weigh a figure (worse_gate)."""
    # The node's time when both traces measured it; else the client's round trip on both sides, said so.
    latency_of = "node" if node_timed(first) and node_timed(second) else "client"
    a, b = summarise(first, labels[0], latency_of), summarise(second, labels[1], latency_of)
    writes = _writes(first, second)
    checked = _payload_check(first, second, a, b, payload, two_writes=writes is not None)
    comparison = Comparison(a, b, checked, _metrics(a, b, latency_of, writes), summary="", gates=[])
    comparison.summary = _summary(comparison) if writes is None else _write_summary(comparison)
    if fail_if_worse:
        comparison.gates.append(worse_gate(comparison, tolerance))
    if max_amplification is not None:
        comparison.gates.append(amplification_gate(b, max_amplification))
    return comparison


def _payload_check(
    first: Analysis,
    second: Analysis,
    a: QuerySummary,
    b: QuerySummary,
    payload: PayloadCheck | None,
    *,
    two_writes: bool,
) -> PayloadCheck:
    """Whether both sides returned the same result: the check given, with a note where the traced
    executions returned something else, else the stored traces' own (nothing to check for two writes)."""
    if two_writes:  # two writes return nothing: their designs are compared per row written
        return PayloadCheck(
            "unverified",
            "nothing: two writes return no result",
            stored_payload(first),
            stored_payload(second),
            "Two writes: no result to check; compared per row written.",
        )
    if payload is None:
        return check_payload(stored_payload(first), stored_payload(second))
    # The summaries hold what the traced executions returned (stored_payload).
    payload.notes += [
        f"The traced executions of {summary.label} returned {_rows(summary.rows)} "
        f"({human_bytes(summary.payload_bytes)}), not the {_rows(checked.rows)} "
        f"({human_bytes(checked.payload_bytes)}) of the payload check: "
        "the data changed between the check and the run."
        for summary, checked in ((a, payload.first), (b, payload.second))
        if (summary.rows, summary.payload_bytes) != (checked.rows, checked.payload_bytes)
    ]
    return payload


def _metrics(
    a: QuerySummary, b: QuerySummary, latency_of: str, writes: tuple[WriteCost, WriteCost] | None
) -> list[Metric]:
    """The figures compared, side by side, in the order every report shows them."""
    latency = "Node time" if latency_of == "node" else "Latency (client round trip)"
    metrics = [
        *(write_metrics(*writes) if writes is not None else []),
        Metric("latency_median_s", f"{latency}, median", "seconds", a.latency_median_s, b.latency_median_s),
        Metric("latency_p99_s", f"{latency}, p99", "seconds", a.latency_p99_s, b.latency_p99_s),
        Metric("latency_min_s", f"{latency}, fastest", "seconds", a.latency_min_s, b.latency_min_s),
        *measure_metrics(a, b),
        Metric("rows", "Rows returned", "count", a.rows, b.rows),
        Metric("payload_bytes", "Payload", "bytes", a.payload_bytes, b.payload_bytes),
        Metric(
            "data_read_bytes", "Data read from the table's Data files", "bytes", a.data_read_bytes, b.data_read_bytes
        ),
        Metric("syscall_bytes", "  by read syscalls", "bytes", a.syscall_bytes, b.syscall_bytes),
        Metric(
            "cache_miss_bytes", "Page-cache misses on the Data files", "bytes", a.cache_miss_bytes, b.cache_miss_bytes
        ),
        Metric("file_read_bytes", "Read syscalls, all files", "bytes", a.file_read_bytes, b.file_read_bytes),
        Metric(
            "necessary_bytes",
            "Necessary read (the least for the result)",
            "bytes",
            a.necessary_bytes,
            b.necessary_bytes,
        ),
        Metric(
            "over_necessary",
            "Data read ÷ necessary read (the verdict's figure)",
            "ratio",
            a.over_necessary,
            b.over_necessary,
        ),
        Metric("amplification", "Amplification (data read ÷ payload)", "ratio", a.amplification, b.amplification),
    ]
    if a.replicas_read is not None or b.replicas_read is not None:
        metrics.append(
            Metric(
                "replicas_read",
                "Replicas that read the Data files, per execution",
                "count",
                a.replicas_read,
                b.replicas_read,
            )
        )
    return metrics


def _summary(comparison: Comparison) -> str:
    a, b = comparison.first, comparison.second
    io = comparison.metric("data_read_bytes")
    latency = comparison.metric("latency_median_s")
    text = (
        f"Per execution, {b.label} reads {human_bytes(b.data_read_bytes)} from its table's Data files and "
        f"{a.label} {human_bytes(a.data_read_bytes)}: {io.change}"
    )
    if latency.ratio is not None:
        text += f". Median latency {human_ms(b.latency_median_s)} and {human_ms(a.latency_median_s)}: {latency.change}"
    text += "."
    if a.consistency != b.consistency and a.replicas_read is not None and b.replicas_read is not None:
        text += (
            f" What the consistency level costs: at {b.consistency} {_replicas(b.replicas_read)} read per "
            f"execution, at {a.consistency} {_replicas(a.replicas_read)}."
        )
    for side in (a, b):
        if side.not_captured:
            text += (
                f" {side.label}: {', '.join(side.not_captured)} not captured, so its figures are at least "
                "what was read."
            )
    return text


def _writes(first: Analysis, second: Analysis) -> tuple[WriteCost, WriteCost] | None:
    """Both sides' write costs, None for two reads; a read against a write is refused (nothing of one is
    the other's figure)."""
    if first.write_cost is not None and second.write_cost is not None:
        return first.write_cost, second.write_cost
    if first.write_cost is None and second.write_cost is None:
        return None
    raise CasstraceError(
        "one trace is of a write, the other of a read: compare weighs two reads' data read, or two writes' cost "
        "per row",
        "compare two runs of reads, or two runs of writes (two designs of one write: a batch against single rows)",
    )


def write_metrics(a: WriteCost, b: WriteCost) -> list[Metric]:
    """Two writes' rows per execution and their figures per row written, side by side."""
    first, second = a.per_row_figures(), b.per_row_figures()
    return [
        Metric(
            "write_rows_per_execution",
            "Rows written per execution",
            "count",
            a.rows_per_execution,
            b.rows_per_execution,
        ),
        *(Metric(f"write_{key}_per_row", words, unit, first[key], second[key]) for key, words, unit in PER_ROW_FIGURES),
    ]


def _write_summary(comparison: Comparison) -> str:
    a, b = comparison.first, comparison.second
    per_row = comparison.metric("write_latency_s_per_row")
    sent = comparison.metric("write_request_bytes_per_row")
    return (
        f"Per row written, {b.label} takes {human_ms(per_row.second)} of latency and {a.label} "
        f"{human_ms(per_row.first)}: {per_row.change}; {b.label} sends {human_bytes(sent.second)} and {a.label} "
        f"{human_bytes(sent.first)}: {sent.change}."
    )


def _replicas(count: float) -> str:
    shown = f"{count:g}" if count == int(count) else f"{count:.1f}"
    return f"{shown} replica{'s' * (count != 1)}"


def worse_gate(comparison: Comparison, tolerance: float) -> Gate:
    """Refuses (CasstraceError) when a figure it weighs is unknown on either side: a gate that cannot
    compare must not pass."""
    a, b = comparison.first, comparison.second
    io, latency = comparison.metric("data_read_bytes"), comparison.metric("latency_median_s")
    unknown = [
        f"{metric.name.lower()} ({side.label}'s not measured)"
        for metric in (io, latency)
        for side, value in ((a, metric.first), (b, metric.second))
        if value is None
    ]
    if unknown:
        raise CasstraceError(
            f"--fail-if-worse cannot weigh {', '.join(unknown)}: it would pass on a figure it never compared",
            "compare two traces that both measured it, or leave --fail-if-worse out to see the comparison",
        )
    assert io.first is not None and io.second is not None and latency.first is not None and latency.second is not None
    reasons = []
    if io.second > io.first * (1 + tolerance):
        reasons.append(
            f"{b.label} reads {io.change} from its Data files per execution "
            f"({human_bytes(io.second)} vs {human_bytes(io.first)})"
        )
    if latency.second > latency.first * (1 + tolerance) and latency.second - latency.first >= LATENCY_FLOOR_S:
        reasons.append(
            f"{b.label} is slower: {latency.name.lower()} {human_ms(latency.second)} vs {human_ms(latency.first)}"
        )
    limits = f"tolerance {tolerance:.0%}, latency differences under {s_to_ms(LATENCY_FLOOR_S):g} ms ignored"
    if reasons:
        return Gate("--fail-if-worse", False, "; ".join(reasons) + f" ({limits}).")
    return Gate(
        "--fail-if-worse",
        True,
        f"{b.label} reads no more and is no slower ({latency.name.lower()}) than {a.label} ({limits}).",
    )


def amplification_gate(summary: QuerySummary, limit: float) -> Gate:
    option = f"--max-amplification {limit:g}"
    if summary.necessary_bytes is not None and summary.over_necessary is not None:
        base, figure, what = summary.necessary_bytes, summary.over_necessary, "its necessary read"
    elif summary.amplification is not None and summary.payload_bytes is not None:
        base, figure, what = summary.payload_bytes / summary.executions, summary.amplification, "its payload"
    else:
        return Gate(
            option,
            False,
            f"{summary.label}'s amplification is undetermined (no necessary read or payload to "
            "divide by), so it cannot be shown to be within the limit.",
        )
    failed = VerdictRule(limit, summary.min_excess).exceeds(summary.data_read_bytes, base, executions=1)
    return Gate(
        option,
        not failed,
        f"{summary.label} reads {ratio(figure)} {what} ({human_bytes(summary.data_read_bytes - base)} per "
        f"execution past it): {'above' if failed else 'within'} the limit of {limit:g}x and "
        f"{human_bytes(summary.min_excess)} per execution.",
    )
