"""The part of a run's report that is a write's (analyses.write_cost): what it cost per row and per
execution. reports/run.py puts it under the query, for a trace of a write only; `compare` of two write
runs lays their per-row figures side by side (reports/comparison.py).

JSON: "write" (null for a read) = {"statement", "rows_per_execution", "cells_per_execution" (regular
columns set: statement_writes.write_shape's, as watch counts them), "bind_markers", "rows", "cells" (the
measured executions'), "per_row": {"request_bytes", "received_bytes", "latency_s", "commit_log_dirtied_bytes",
"sstables_dirtied_bytes", "sstables_written_bytes", "other_written_bytes"}, "flushed", "executions":
[{"execution", "kind", "latency_s", "request_bytes", "received_bytes", "rows", "cells", "error", "written": [{"kind",
"write_bytes", "dirtied_bytes", "mapped_dirtied_bytes", "written_back_bytes", "sync_calls"}]}]}. A figure
not measured is null, never 0.
"""

import dataclasses

from casstrace.analyses.units import human_bytes, human_ms
from casstrace.analyses.write_cost import FILE_KINDS, PER_ROW_FIGURES, WriteCost
from casstrace.reports.document import Items, Section, Table

NOT_MEASURED = "not measured"
EXECUTION_COLUMNS = (
    "Execution",
    "Kind",
    "Latency",
    "Sent",
    "Node read",
    "Rows",
    "Cells",
    *(f"{kind}: dirtied" for kind in FILE_KINDS),
    *(f"{kind}: written" for kind in FILE_KINDS),
)


def _bytes(value: float | None) -> str:
    return NOT_MEASURED if value is None else human_bytes(value)


def _count(value: int | None) -> str:
    return NOT_MEASURED if value is None else f"{value:,}"


def _ms(seconds: float | None) -> str:
    return NOT_MEASURED if seconds is None else human_ms(seconds)


def per_row_items(cost: WriteCost) -> list[tuple[str, str]]:
    figures = cost.per_row_figures()
    return [
        (words, _ms(figures[key]) if unit == "seconds" else _bytes(figures[key]))
        for key, words, unit in PER_ROW_FIGURES
    ]


def section(cost: WriteCost) -> Section:
    """The write's cost, for every view: its rows, then each figure per row, then per execution."""
    median = cost.median_latency_s
    items = [
        (
            "Statement",
            f"{cost.statement}: {cost.rows_per_execution} row(s) and {_count(cost.cells_per_execution)} cell(s) "
            f"an execution, {cost.bind_markers} value(s) generated an execution (never stored)",
        ),
        ("Rows written (measured executions)", f"{cost.rows:,}"),
        ("Cells written (measured executions)", _count(cost.cells)),
        ("Latency per execution", f"median {_ms(median)}"),
        *per_row_items(cost),
        ("A flush or compaction in a measured execution", "yes" if cost.flushed else "no"),
    ]
    rows = [
        (
            str(e.execution),
            e.kind,
            _ms(e.latency_s),
            _bytes(e.request_bytes),
            _bytes(e.received_bytes),
            str(e.rows),
            _count(e.cells),
            *(_bytes(e.of(kind).dirtied_bytes) for kind in FILE_KINDS),
            *(_bytes(e.of(kind).write_bytes) for kind in FILE_KINDS),
        )
        for e in cost.executions
    ]
    return Section("Write cost", [Items(items, ("Measure", "Value")), Table(EXECUTION_COLUMNS, rows)])


def data(cost: WriteCost | None) -> dict | None:
    if cost is None:
        return None
    return {
        "statement": cost.statement,
        "rows_per_execution": cost.rows_per_execution,
        "bind_markers": cost.bind_markers,
        "rows": cost.rows,
        "cells_per_execution": cost.cells_per_execution,
        "cells": cost.cells,
        "per_row": cost.per_row_figures(),
        "flushed": cost.flushed,
        "executions": [dataclasses.asdict(e) for e in cost.executions],
    }
