"""Several nodes' traces of the same windows into one trace (format 3, "Several nodes" in schema.py).

Each captured node's JVM was traced on its own machine into a trace of its own (a *partial* trace),
with the same windows as every other node, opened and closed at the same commands. merge_node()
copies one partial into the trace being written: its files get new ids (after those already there)
and the node's id, its timestamps move onto the trace's clock, its latency and heat-map slots onto
the trace's slots, and every per-node row gets its node_id. The windows are the trace's own
(written before), so the partial's windows are not copied: a node has the run's windows, or fewer
when its capture ended early (stopped on its own machine).
"""

import contextlib
import json
import sqlite3
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from casstrace.errors import CasstraceError
from casstrace.traces.capabilities import capabilities_of, recorded
from casstrace.traces.measures import MEASURES
from casstrace.traces.schema import FORMAT_VERSION, SLOT_NS, THREAD_SLOT_NS
from casstrace.traces.tables import TABLE, TABLES, Merge
from casstrace.traces.writer import TraceWriter

# Per-node tables, in the declared order, which keeps references whole (files and stacks before their
# users); the others are the whole trace's, written once by the run itself (casstrace.traces.tables).
_COPIED = tuple(table.name for table in TABLES if table.merge is not Merge.WHOLE_TRACE)
NOT_COPIED = tuple(table.name for table in TABLES if table.merge is Merge.WHOLE_TRACE)
# Columns whose values change on the way: ids renumbered, times shifted, the node named.
_MOVED = {
    "file_id": "file_id + :files",
    "stack_id": "stack_id + :stacks",
    "ts_ns": "ts_ns + :shift",
    "node_id": ":node",
}
# Tables keyed by time slot: moved by whole slots (by the offset of their slots' width), rows meeting in
# one key added up.
_SLOT_OFFSETS = {Merge.SUMMED_BY_SLOT: "slots", Merge.SUMMED_BY_THREAD_SLOT: "thread_slots"}
# Whole-trace meta that adds up over nodes (the rest is the primary node's or in nodes.meta).
SUMMED_META = ("lost_events", "unstreamed_events", "aggregate_overflows", "unlogged_fill_pages")


def _partial_meta(path: Path) -> dict[str, Any]:
    """The meta of a partial trace, checked to be of this casstrace's format."""
    with contextlib.closing(sqlite3.connect(f"file:{path}?mode=ro", uri=True)) as db:
        meta = {key: json.loads(value) for key, value in db.execute("SELECT key, value FROM meta")}
    if meta.get("format_version") != FORMAT_VERSION:
        raise CasstraceError(
            f"a node's capture came in trace format {meta.get('format_version')!r} (casstrace "
            f"{meta.get('casstrace_version')}), not {FORMAT_VERSION}",
            "install the same casstrace version on every node",
        )
    return meta


def merge_node(
    writer: TraceWriter, partial: Path, node_id: int, clock_shift_ns: int, trace_start_ns: int
) -> dict[str, Any]:
    """Copy the partial trace at `partial` into `writer` as node `node_id` (see the module docstring);
    returns the partial trace's meta. The trace's windows must already be written."""
    meta = _partial_meta(partial)
    db = writer.db
    late_ns = int(meta.get("capture_start_ns", trace_start_ns)) + clock_shift_ns - trace_start_ns
    slots = round(late_ns / SLOT_NS)
    # a node's thread slots count from its own capture's start: onto the trace's, within half a slot
    thread_slots = round(late_ns / int(meta.get("thread_slot_ns") or THREAD_SLOT_NS))
    db.commit()  # SQLite attaches outside a transaction only
    db.execute("ATTACH DATABASE ? AS part", (str(partial),))
    try:
        (windows,) = db.execute("SELECT COUNT(*) FROM part.windows").fetchone()
        (own_windows,) = db.execute("SELECT COUNT(*) FROM main.windows").fetchone()
        if windows > own_windows:  # fewer: its capture ended early (its meta says why)
            raise CasstraceError(
                f"node {node_id}'s capture has {windows} windows where the run has {own_windows}",
                "install the same casstrace version on every node",
            )
        offsets = {
            "files": _next_id(db, "files", "file_id"),
            "stacks": _next_id(db, "stacks", "stack_id"),
            "shift": clock_shift_ns,
            "node": node_id,
            "slots": slots,
            "thread_slots": thread_slots,
        }
        for table in _COPIED:
            _copy(db, table, offsets)
        _fit_to_windows(db, node_id)
    finally:
        db.commit()
        db.execute("DETACH DATABASE part")
    return meta


def _fit_to_windows(db: sqlite3.Connection, node_id: int) -> None:
    """A node's measures bounded by its window's length, cut to the trace's window: the node opened and
    closed its windows at the run's commands, a little later than the run (a loaded machine, an ssh
    hop), so a pause that held its whole window could pass the trace's by milliseconds."""
    bounded = [name for name, entry in MEASURES.items() if entry.at_most == "window"]
    db.execute(
        f"""UPDATE main.window_measures
            SET value = min(value, (SELECT end_ns - start_ns FROM main.windows w
                                    WHERE w.window_id = window_measures.window_id))
            WHERE node_id = ? AND measure IN ({", ".join("?" * len(bounded))})""",
        [node_id, *bounded],
    )


def _next_id(db: sqlite3.Connection, table: str, column: str) -> int:
    (last,) = db.execute(f"SELECT ifnull(max({column}), 0) FROM main.{table}").fetchone()
    return int(last)


def _columns(db: sqlite3.Connection, schema: str, table: str) -> list[str]:
    return [row[1] for row in db.execute(f"PRAGMA {schema}.table_info({table})")]


def _copy(db: sqlite3.Connection, table: str, offsets: Mapping[str, int]) -> None:
    columns = _columns(db, "main", table)
    present = set(_columns(db, "part", table))
    values = [_MOVED.get(column, column) if column in present or column == "node_id" else "NULL" for column in columns]
    declared = TABLE[table]
    offset = _SLOT_OFFSETS.get(declared.merge)
    if offset is None:
        select = f"SELECT {', '.join(values)} FROM part.{table}"
    else:
        # what is neither the key nor the node adds up
        summed = {name for name in declared.column_names if name not in declared.key and name != "node_id"}
        values = [
            (f"max(0, slot + :{offset})" if column == "slot" else f"SUM({column})" if column in summed else value)
            for column, value in zip(columns, values)
        ]
        keys = [value for column, value in zip(columns, values) if column not in summed]
        select = f"SELECT {', '.join(values)} FROM part.{table} GROUP BY {', '.join(keys)}"
    db.execute(f"INSERT INTO main.{table}({', '.join(columns)}) {select}", offsets)


def combined_meta(metas: Sequence[Mapping[str, Any]], primary: int) -> dict[str, Any]:
    """The whole-trace meta of several captured nodes' metas: sums of what adds up, the measures
    every one took, the capabilities every one's backend had, and the rest (pid, process, backend...)
    of metas[primary]."""
    first = metas[primary]
    combined: dict[str, Any] = {
        key: first[key] for key in ("backend", "pid", "process", "slot_ns", "heatmap_offset_bytes") if key in first
    }
    for key in SUMMED_META:
        if any(key in meta for meta in metas):
            combined[key] = sum(int(meta.get(key) or 0) for meta in metas)
    # what every node's backend could do
    combined["capabilities"] = recorded(frozenset.intersection(*(capabilities_of(meta) for meta in metas)))
    measures = [meta.get("measures") or {} for meta in metas]
    combined["measures"] = {
        name: all(bool(taken.get(name)) for taken in measures)
        for name in dict.fromkeys(name for taken in measures for name in taken)
    }
    # Counted per thread on every node (at one width), or the executions are charged by window.
    widths = {meta.get("thread_slot_ns") for meta in metas}
    if len(widths) == 1 and None not in widths:
        combined["thread_slot_ns"] = widths.pop()
    unmeasured = next((meta["mapped_unmeasured"] for meta in metas if "mapped_unmeasured" in meta), None)
    if unmeasured is not None:
        combined["mapped_unmeasured"] = unmeasured
    ended = [meta["ended_early"] for meta in metas if meta.get("ended_early")]
    if ended:
        combined["ended_early"] = "; ".join(ended)
    return combined
