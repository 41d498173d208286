"""The report of `casstrace sweep`: a Sweep as a Document every format renders (the charts in html).

JSON schema (the document's data), version 1; new fields may be added within a version. Figures are
per measured execution; a measure that was not taken is null, never 0.

{
  "version": 1, "kind": "sweep",
  "rows": int, "cell_bytes": int,  the rows of stream 1 and the size of every cell, at every N
  "findings": [str],               the shape of the curves, in sentences with the numbers
  "warnings": [str],
  "context": {...},                how the sweep was run (node, keyspace, queries, duration)
  "fits": {"wide_data_read" | "narrow_data_read" | "wide_latency" | "narrow_latency":
           {"slope": float (per column), "intercept": float, "r2": float | null}},
  "points": [{"columns": int, "wide_data_file_bytes": int, "narrow_data_file_bytes": int,
              "wide": SIDE, "narrow": SIDE}]       SIDE as in casstrace.reports.comparison
}

`sweep --layout` (the many-columns study), version 1 too:
{
  "version": 1, "kind": "layout sweep",
  "rows": int, "row_bytes": int,   time points per partition; characters of one point's fields, at every N
  "findings": [str], "warnings": [str], "context": {...},
  "points": [{"layout": "columns" | "udt" | "rows", "columns": int (N),
              "node_p99_s": float | null (the node's time, p99; null: not measured),
              "cpu_ns": float | null (the node's CPU per execution, median: the serving threads', else the
                                      request pools'; null: not measured),
              "query": SIDE}]
}
"""

import dataclasses
from collections.abc import Callable

from casstrace.analyses.sweep import LayoutPoint, LayoutSweep, Sweep, SweepPoint
from casstrace.analyses.units import human_bytes, human_ns, ratio
from casstrace.reports.comparison import format_value, side_data
from casstrace.reports.document import Block, Chart, Document, Items, Paragraph, Section, Series, Table

VERSION = 1
SIDES = ("wide", "narrow")
COLOURS = {"wide": "#d62728", "narrow": "#1f77b4", "payload": "#2ca02c"}
COLUMNS = (
    "N",
    "Wide Data.db",
    "Wide read",
    "Wide median",
    "Wide fastest",
    "Wide amplification",
    "Narrow Data.db",
    "Narrow read",
    "Narrow median",
    "Narrow fastest",
    "Narrow amplification",
    "Payload",
)


def _sections(
    intro: str,
    swept: Sweep | LayoutSweep,
    heading: str,
    per_point: list[Block],
    traces: Table,
) -> list[Section]:
    """A sweep report's sections: what was swept, what it found and its warnings; its table and charts per
    point; how it was run; its traces."""
    head: list[Block] = [Paragraph(intro)]
    head += [Paragraph(finding) for finding in swept.findings]
    head += [Paragraph(warning, "warning") for warning in swept.warnings]
    sections = [Section(None, head), Section(heading, per_point)]
    if swept.context:
        sections.append(Section("How it was run", [Items([(key, str(value)) for key, value in swept.context.items()])]))
    return [*sections, Section("Traces", [traces])]


def document(sweep: Sweep) -> Document:
    xs = [float(p.columns) for p in sweep.points]
    per_column_count: list[Block] = [
        Table(COLUMNS, [_row(point) for point in sweep.points]),
        Chart(
            "Data bytes read per execution",
            "N (columns)",
            "MiB",
            xs,
            [
                Series(side, [getattr(p, side).data_read_bytes / 2**20 for p in sweep.points], COLOURS[side])
                for side in SIDES
            ]
            + [Series("payload", [_mib(p.wide.payload_bytes) for p in sweep.points], COLOURS["payload"], True)],
        ),
        Chart(
            "Latency per execution",
            "N (columns)",
            "ms",
            xs,
            [
                Series(
                    f"{side}, {name}",
                    [_ms(getattr(getattr(p, side), attribute)) for p in sweep.points],
                    COLOURS[side],
                    dashed=name == "median",
                )
                for side in SIDES
                for name, attribute in (("fastest", "latency_min_s"), ("median", "latency_median_s"))
            ],
        ),
        Chart(
            "Amplification (data read ÷ payload)",
            "N (columns)",
            "x",
            xs,
            [Series(side, [getattr(p, side).amplification for p in sweep.points], COLOURS[side]) for side in SIDES],
        ),
    ]
    traces: list[tuple[str, ...]] = [(str(p.columns), p.wide.trace_path, p.narrow.trace_path) for p in sweep.points]
    sections = _sections(
        f"Reading one column of stream 1 ({sweep.rows:,} rows) in a table of N blob columns of "
        f"{human_bytes(sweep.cell_bytes)} each, against its narrow refactor (one row per column). "
        "Figures per execution; latency is the client's, all pages fetched.",
        sweep,
        "Per column count",
        per_column_count,
        Table(("N", "Wide", "Narrow"), traces),
    )
    return Document("casstrace sweep: one column of N", data(sweep), sections)


def _row(point: SweepPoint) -> tuple[str, ...]:
    cells = [str(point.columns)]
    for side, data_file_bytes in (
        (point.wide, point.wide_data_file_bytes),
        (point.narrow, point.narrow_data_file_bytes),
    ):
        cells += [
            human_bytes(data_file_bytes),
            human_bytes(side.data_read_bytes),
            format_value("seconds", side.latency_median_s),
            format_value("seconds", side.latency_min_s),
            ratio(side.amplification, "—"),
        ]
    return (*cells, human_bytes(point.wide.payload_bytes))


def _mib(value: float | None) -> float | None:
    return None if value is None else value / 2**20


def _ms(seconds: float | None) -> float | None:
    return None if seconds is None else seconds * 1000


def data(sweep: Sweep) -> dict:
    return {
        "version": VERSION,
        "kind": "sweep",
        "rows": sweep.rows,
        "cell_bytes": sweep.cell_bytes,
        "findings": sweep.findings,
        "warnings": sweep.warnings,
        "context": sweep.context,
        "fits": {name: dataclasses.asdict(fit) for name, fit in sweep.fits.items()},
        "points": [
            {
                "columns": p.columns,
                "wide_data_file_bytes": p.wide_data_file_bytes,
                "narrow_data_file_bytes": p.narrow_data_file_bytes,
                "wide": side_data(p.wide),
                "narrow": side_data(p.narrow),
            }
            for p in sweep.points
        ],
    }


LAYOUT_COLOURS = {"columns": "#d62728", "udt": "#1f77b4", "rows": "#ff7f0e"}
LAYOUT_COLUMNS = ("Layout", "N", "Rows", "Payload", "Data read", "Node p99", "Node CPU", "CPU per value")


def layout_document(sweep: LayoutSweep) -> Document:
    """The many-columns study (`sweep --layout`): per layout and N, the node's p99, CPU and bytes."""
    xs = sorted({float(p.columns) for p in sweep.points})
    per_point: list[Block] = [Table(LAYOUT_COLUMNS, [_layout_row(point) for point in sweep.points])]
    for title, unit, figure in (
        ("Node time p99", "ms", lambda p: _ms(p.node_p99_s)),
        ("Node CPU per execution", "ms", lambda p: None if p.cpu_ns is None else p.cpu_ns / 1e6),
        ("Data bytes read per execution", "KiB", lambda p: p.summary.data_read_bytes / 1024),
    ):
        per_point.append(
            Chart(
                title,
                "N (columns, fields or rows per point)",
                unit,
                xs,
                [
                    Series(layout, [_at(sweep, layout, x, figure) for x in xs], LAYOUT_COLOURS.get(layout))
                    for layout in sweep.layouts
                ],
            )
        )
    traces: list[tuple[str, ...]] = [(p.layout, str(p.columns), p.summary.trace_path) for p in sweep.points]
    sections = _sections(
        f"The same time series ({sweep.rows:,} points per partition, {sweep.row_bytes:,} characters of fields per "
        f"point at every N) stored as {', '.join(LAYOUT_MEANINGS[layout] for layout in sweep.layouts)}, read "
        "LIMIT 20 points at a time. Figures per execution; the latency is the node's.",
        sweep,
        "Per layout and N",
        per_point,
        Table(("Layout", "N", "Trace"), traces),
    )
    return Document("casstrace sweep: one time series in N columns, fields or rows", layout_data(sweep), sections)


LAYOUT_MEANINGS = {
    "columns": "N text columns",
    "udt": "one frozen UDT of N text fields",
    "rows": "N clustering rows per point",
}


def _at(sweep: LayoutSweep, layout: str, x: float, figure: Callable[[LayoutPoint], float | None]) -> float | None:
    return next((figure(p) for p in sweep.series(layout) if p.columns == x), None)


def _layout_row(p: LayoutPoint) -> tuple[str, ...]:
    values = (p.summary.rows or 0) * (1 if p.layout == "rows" else p.columns)  # the fields returned
    return (
        p.layout,
        str(p.columns),
        "—" if p.summary.rows is None else f"{p.summary.rows:,}",
        human_bytes(p.summary.payload_bytes),
        human_bytes(p.summary.data_read_bytes),
        format_value("seconds", p.node_p99_s),
        "not measured" if p.cpu_ns is None else human_ns(p.cpu_ns),
        "—" if p.cpu_ns is None or not values else human_ns(p.cpu_ns / values),
    )


def layout_data(sweep: LayoutSweep) -> dict:
    return {
        "version": VERSION,
        "kind": "layout sweep",
        "rows": sweep.rows,
        "row_bytes": sweep.row_bytes,
        "findings": sweep.findings,
        "warnings": sweep.warnings,
        "context": sweep.context,
        "points": [
            {
                "layout": p.layout,
                "columns": p.columns,
                "node_p99_s": p.node_p99_s,
                "cpu_ns": p.cpu_ns,
                "query": side_data(p.summary),
            }
            for p in sweep.points
        ],
    }
