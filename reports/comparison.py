"""The report of `casstrace compare`: a Comparison as a Document every format renders.

JSON schema (the document's data), version 1; new fields may be added within a version. Figures
are per measured execution; a measure that was not taken is null, never 0.

{
  "version": 1, "kind": "comparison",
  "summary": str,                  the I/O and latency change in one sentence
  "payload": {"status": "same" | "different" | "unverified", "basis": str, "summary": str, "notes": [str],
              "first": {"rows": int | null, "payload_bytes": int | null}, "second": {...}},
              (the digest of the values is never written)
  "first": SIDE, "second": SIDE,
  "metrics": [{"key": "latency_median_s" | "latency_p99_s" | "latency_min_s" | "rows" | "payload_bytes" | "data_read_bytes" |
                      "syscall_bytes" | "cache_miss_bytes" | "file_read_bytes" | "necessary_bytes" |
                      "over_necessary" | "amplification" |
                      "replicas_read" (traces of several nodes only) |
                      MEASURE (a per-window measure either trace took: its median per execution, null on a side that
                      did not take it; a duration in seconds),
               "name": str, "unit": "seconds" | "bytes" | "count" | "ratio",
               "first": float | null, "second": float | null,
               "ratio": float | null,    second ÷ first
               "change": str}],          the ratio in words from the second's side: '62.5x less'
  "gates": [{"option": str, "passed": bool, "reason": str}],   only the gates asked for
  "passed": bool                   every gate passed (true when none was asked for)
}
SIDE = {"label", "trace", "query", "table", "complete", "warnings", "executions", "scope",
        "verdict": "flagged" | "not flagged" | "undetermined", "verdict_summary",
        "latency_median_s", "latency_p99_s", "latency_min_s" (the node's time answering, "latency_of": "node",
        when both traces measured it for every execution; else the client's round trip, "latency_of": "client"), "rows", "payload_bytes", "data_read_bytes", "syscall_bytes",
        "cache_miss_bytes", "file_read_bytes", "amplification",
        "necessary_bytes": float | null (per execution), "over_necessary": float | null (the verdict's figure),
        "min_excess": int,
        "consistency": str | null, "replicas_read": float | null (nodes that read the Data files per execution;
        null: a trace without nodes), "not_captured": [str] (nodes of the query not captured: figures are at least),
        "files": [{"name", "read_bytes", "cache_miss_bytes"}]}   the files read most, per execution
"""

from casstrace.analyses.compare import Comparison, Metric, QuerySummary
from casstrace.analyses.units import human_bytes, human_ms, ratio
from casstrace.reports.document import Block, Code, Document, Items, Paragraph, Section, Table, Tone

VERSION = 1
PAYLOAD_TONES: dict[str, Tone] = {"same": "good", "different": "bad", "unverified": "warning"}
VERDICT_TONES: dict[str, Tone] = {"flagged": "bad", "not flagged": "good"}


def document(comparison: Comparison) -> Document:
    a, b = comparison.first, comparison.second
    payload = comparison.payload
    head: list[Block] = [Paragraph(f"{payload.summary} Compared: {payload.basis}.", PAYLOAD_TONES[payload.status])]
    head += [Paragraph(note, "muted") for note in payload.notes]
    head.append(Paragraph(comparison.summary))
    head += [
        Paragraph(f"{'PASS' if gate.passed else 'FAIL'} {gate.option}: {gate.reason}", "good" if gate.passed else "bad")
        for gate in comparison.gates
    ]
    sections = [Section(None, head)]
    for side in (a, b):
        blocks: list[Block] = [Code(side.query or "(query not recorded)")]
        blocks += [Paragraph(warning, "warning") for warning in side.warnings]
        blocks.append(
            Paragraph(
                f"Verdict: {side.verdict.status.upper()} {side.verdict.summary}",
                VERDICT_TONES.get(side.verdict.status, "warning"),
            )
        )
        blocks.append(Items([("Trace", side.trace_path), ("Figures per execution over", side.scope)]))
        sections.append(Section(f"{side.label}: {side.table or 'query'}", blocks))
    sections.append(
        Section(
            "Side by side, per execution",
            [
                Table(
                    ("Measure", a.label, b.label, f"{b.label} ÷ {a.label}", f"{b.label} vs {a.label}"),
                    [_metric_row(m) for m in comparison.metrics],
                )
            ],
        )
    )
    sections += [
        Section(
            f"Files read by {side.label}, per execution",
            [
                Table(
                    ("File", "Read syscalls", "Page-cache misses"),
                    [(f.name, human_bytes(f.read_bytes), human_bytes(f.cache_miss_bytes)) for f in side.files],
                )
            ],
        )
        for side in (a, b)
    ]
    return Document(f"casstrace compare: {a.label} vs {b.label}", data(comparison), sections)


def format_value(unit: str, value: float | None) -> str:
    if value is None:
        return "not measured"
    if unit == "seconds":
        return human_ms(value)
    if unit == "bytes":
        return human_bytes(value)
    if unit == "ratio":
        return ratio(value)
    return f"{value:,.0f}"


def _metric_row(metric: Metric) -> tuple[str, ...]:
    return (
        metric.name,
        format_value(metric.unit, metric.first),
        format_value(metric.unit, metric.second),
        "—" if metric.ratio is None else f"{metric.ratio:.3g}",
        metric.change,
    )


def data(comparison: Comparison) -> dict:
    payload = comparison.payload
    return {
        "version": VERSION,
        "kind": "comparison",
        "summary": comparison.summary,
        "payload": {
            "status": payload.status,
            "basis": payload.basis,
            "summary": payload.summary,
            "notes": payload.notes,
            "first": {"rows": payload.first.rows, "payload_bytes": payload.first.payload_bytes},
            "second": {"rows": payload.second.rows, "payload_bytes": payload.second.payload_bytes},
        },
        "first": side_data(comparison.first),
        "second": side_data(comparison.second),
        "metrics": [
            {
                "key": m.key,
                "name": m.name.strip(),
                "unit": m.unit,
                "first": m.first,
                "second": m.second,
                "ratio": m.ratio,
                "change": m.change,
            }
            for m in comparison.metrics
        ],
        "gates": [{"option": g.option, "passed": g.passed, "reason": g.reason} for g in comparison.gates],
        "passed": not comparison.failed_gates,
    }


def side_data(side: QuerySummary) -> dict:
    return {
        "label": side.label,
        "trace": side.trace_path,
        "query": side.query,
        "table": side.table,
        "complete": side.complete,
        "warnings": side.warnings,
        "executions": side.executions,
        "scope": side.scope,
        "verdict": side.verdict.status,
        "verdict_summary": side.verdict.summary,
        "latency_median_s": side.latency_median_s,
        "latency_p99_s": side.latency_p99_s,
        "latency_min_s": side.latency_min_s,
        "latency_of": side.latency_of,
        "rows": side.rows,
        "payload_bytes": side.payload_bytes,
        "data_read_bytes": side.data_read_bytes,
        "syscall_bytes": side.syscall_bytes,
        "cache_miss_bytes": side.cache_miss_bytes,
        "file_read_bytes": side.file_read_bytes,
        "amplification": side.amplification,
        "necessary_bytes": side.necessary_bytes,
        "over_necessary": side.over_necessary,
        "min_excess": side.min_excess,
        "consistency": side.consistency,
        "replicas_read": side.replicas_read,
        "not_captured": side.not_captured,
        "files": [
            {"name": f.name, "read_bytes": f.read_bytes, "cache_miss_bytes": f.cache_miss_bytes} for f in side.files
        ],
    }
