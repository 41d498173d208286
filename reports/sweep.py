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

`sweep --tables` (the many-tables study), version 1 too; per point, figures of the whole load:
{
  "version": 1, "kind": "tables sweep",
  "writes": int, "value_bytes": int,  writes per point, spread over its N tables; bytes of each value
  "findings": [str], "warnings": [str], "context": {...},
  "points": [{"tables": int (N), "writes": int (acknowledged), "failed_writes": int,
              "load_s": float, "throughput": float | null (writes acknowledged per second of the load),
              "flushes": int | null, "flush_sizes": [int] | null   the capture's: each flush's new SSTable,
                                                                   bytes of all its components, smallest first,
              "compaction_read_bytes": int | null,     the capture's: Data bytes the compactions read,
              "compaction_written_bytes": int | null,  bytes of every component they wrote,
              "received_bytes": int | null,            mutation bytes the flushed memtables held (the node's log),
              "write_amplification": float | null,     (flush + compaction bytes written) / received_bytes,
              "heap_used_bytes": int | null,           the JVM's heap in use at the load's end (jcmd GC.heap_info),
              "node_flushes": int | null,              the node's memtable switches (nodetool tablestats),
              "node_compactions": int | null, "node_compaction_in_bytes": int | null,
              "node_compaction_out_bytes": int | null, its system.compaction_history (Data bytes),
              "trace": str}]
}
"""

import dataclasses
from collections.abc import Callable

from casstrace.analyses.sweep import LayoutPoint, LayoutSweep, Sweep, SweepPoint, TablesPoint, TablesSweep
from casstrace.analyses.units import bytes_to_kib, bytes_to_mib, human_bytes, human_ns, ns_to_ms, ratio, s_to_ms
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
    swept: Sweep | LayoutSweep | TablesSweep,
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
                Series(side, [bytes_to_mib(getattr(p, side).data_read_bytes) for p in sweep.points], COLOURS[side])
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
    return None if value is None else bytes_to_mib(value)


def _ms(seconds: float | None) -> float | None:
    return None if seconds is None else s_to_ms(seconds)


def _data(kind: str, swept: Sweep | LayoutSweep | TablesSweep, sizes: dict) -> dict:
    """The head of a sweep report's data: its version and kind, what every point had (`sizes`), its
    findings, warnings and context."""
    return {
        "version": VERSION,
        "kind": kind,
        **sizes,
        "findings": swept.findings,
        "warnings": swept.warnings,
        "context": swept.context,
    }


def data(sweep: Sweep) -> dict:
    return {
        **_data("sweep", sweep, {"rows": sweep.rows, "cell_bytes": sweep.cell_bytes}),
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
        ("Node CPU per execution", "ms", lambda p: None if p.cpu_ns is None else ns_to_ms(p.cpu_ns)),
        ("Data bytes read per execution", "KiB", lambda p: bytes_to_kib(p.summary.data_read_bytes)),
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
        **_data("layout sweep", sweep, {"rows": sweep.rows, "row_bytes": sweep.row_bytes}),
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


TABLES_COLUMNS = (
    "N",
    "Writes",
    "Throughput",
    "Flushes",
    "Node flushes",
    "Mean flush",
    "Flush sizes",
    "Compaction read",
    "Compaction written",
    "Node compactions (in → out)",
    "Heap used",
    "Write amplification",
)
TABLES_COLOURS = {"capture": "#d62728", "node": "#1f77b4", "read": "#1f77b4", "written": "#d62728"}


def tables_document(sweep: TablesSweep) -> Document:
    """The many-tables study (`sweep --tables`): per N, throughput, flushes, compactions, heap and write
    amplification."""
    xs = [float(p.tables) for p in sweep.points]
    points = sweep.points
    per_point: list[Block] = [
        Table(TABLES_COLUMNS, [_tables_row(p) for p in points]),
        Chart("Throughput", "N (tables)", "writes/s", xs, [Series("throughput", [p.throughput for p in points])]),
        Chart(
            "Flushes",
            "N (tables)",
            "flushes",
            xs,
            [
                Series("capture", [_float(p.flushes) for p in points], TABLES_COLOURS["capture"]),
                Series(
                    "node (memtable switches)", [_float(p.node_flushes) for p in points], TABLES_COLOURS["node"], True
                ),
            ],
        ),
        Chart(
            "Mean flush size",
            "N (tables)",
            "MiB",
            xs,
            [Series("mean flush", [_mib(p.mean_flush_bytes) for p in points])],
        ),
        Chart(
            "Compaction bytes",
            "N (tables)",
            "MiB",
            xs,
            [
                Series("read", [_mib(p.compaction_read_bytes) for p in points], TABLES_COLOURS["read"]),
                Series("written", [_mib(p.compaction_written_bytes) for p in points], TABLES_COLOURS["written"]),
            ],
        ),
        Chart(
            "Heap used at the load's end",
            "N (tables)",
            "MiB",
            xs,
            [Series("heap", [_mib(p.heap_used_bytes) for p in points])],
        ),
        Chart(
            "Write amplification (disk writes ÷ mutation bytes)",
            "N (tables)",
            "x",
            xs,
            [Series("write amplification", [p.write_amplification for p in points])],
        ),
    ]
    sections = _sections(
        f"The same {sweep.writes:,} writes of {human_bytes(sweep.value_bytes)} values spread over N tables, as fast "
        "as the node takes them. Flushes and compactions are the capture's (the node's flush and compaction threads' "
        "syscalls on the tables' SSTables); node flushes are its memtable switch counts (nodetool tablestats), node "
        "compactions its system.compaction_history (Data bytes); heap used is jcmd GC.heap_info's at the load's end; "
        "write amplification is the flush and compaction bytes ÷ the mutation bytes the flushed memtables held "
        "(the node's log).",
        sweep,
        "Per table count",
        per_point,
        Table(("N", "Trace"), [(str(p.tables), p.trace_path) for p in points]),
    )
    return Document("casstrace sweep: the same writes over N tables", tables_data(sweep), sections)


def _float(value: int | None) -> float | None:
    return None if value is None else float(value)


def _tables_row(p: TablesPoint) -> tuple[str, ...]:
    missing = "not measured"
    sizes = p.flush_sizes
    return (
        str(p.tables),
        f"{p.writes:,}" + (f" ({p.failed_writes:,} failed)" if p.failed_writes else ""),
        "—" if p.throughput is None else f"{p.throughput:,.0f}/s",
        missing if p.flushes is None else f"{p.flushes:,}",
        missing if p.node_flushes is None else f"{p.node_flushes:,}",
        "—" if p.mean_flush_bytes is None else human_bytes(p.mean_flush_bytes),
        "—" if not sizes else f"{human_bytes(sizes[0])} – {human_bytes(sizes[-1])}",
        missing if p.compaction_read_bytes is None else human_bytes(p.compaction_read_bytes),
        missing if p.compaction_written_bytes is None else human_bytes(p.compaction_written_bytes),
        missing
        if p.node_compactions is None
        else f"{p.node_compactions:,} ({human_bytes(p.node_compaction_in_bytes or 0)} → "
        f"{human_bytes(p.node_compaction_out_bytes or 0)})",
        missing if p.heap_used_bytes is None else human_bytes(p.heap_used_bytes),
        ratio(p.write_amplification, "—"),
    )


def tables_data(sweep: TablesSweep) -> dict:
    return {
        **_data("tables sweep", sweep, {"writes": sweep.writes, "value_bytes": sweep.value_bytes}),
        "points": [
            {
                "tables": p.tables,
                "writes": p.writes,
                "failed_writes": p.failed_writes,
                "load_s": p.load_s,
                "throughput": p.throughput,
                "flush_sizes": p.flush_sizes,
                "flushes": p.flushes,
                "compaction_read_bytes": p.compaction_read_bytes,
                "compaction_written_bytes": p.compaction_written_bytes,
                "received_bytes": p.received_bytes,
                "write_amplification": p.write_amplification,
                "heap_used_bytes": p.heap_used_bytes,
                "node_flushes": p.node_flushes,
                "node_compactions": p.node_compactions,
                "node_compaction_in_bytes": p.node_compaction_in_bytes,
                "node_compaction_out_bytes": p.node_compaction_out_bytes,
                "trace": p.trace_path,
            }
            for p in sweep.points
        ],
    }
