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
"""

import dataclasses

from casstrace.analyses.sweep import Sweep, SweepPoint
from casstrace.analyses.units import human_bytes, ratio
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


def document(sweep: Sweep) -> Document:
    blocks: list[Block] = [
        Paragraph(
            f"Reading one column of stream 1 ({sweep.rows:,} rows) in a table of N blob columns of "
            f"{human_bytes(sweep.cell_bytes)} each, against its narrow refactor (one row per column). "
            "Figures per execution; latency is the client's, all pages fetched."
        )
    ]
    blocks += [Paragraph(finding) for finding in sweep.findings]
    blocks += [Paragraph(warning, "warning") for warning in sweep.warnings]
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
    sections = [Section(None, blocks), Section("Per column count", per_column_count)]
    if sweep.context:
        sections.append(Section("How it was run", [Items([(key, str(value)) for key, value in sweep.context.items()])]))
    traces: list[tuple[str, ...]] = [(str(p.columns), p.wide.trace_path, p.narrow.trace_path) for p in sweep.points]
    sections.append(Section("Traces", [Table(("N", "Wide", "Narrow"), traces)]))
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
