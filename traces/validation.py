"""What a trace's figures may be, checked once when it is opened (traces/reader.py).

A trace edited by hand or damaged must be refused in one line that names the table and the field,
never analysed into an internal error or into figures nobody could have measured. Checked:

- meta's JSON values (and the nodes' meta) nest at most MAX_JSON_DEPTH levels, told before they are
  parsed (Python's json recurses: a 100,000-deep value would exhaust the stack);
- the windows end where or after they start;
- executions.latency_s, the client's round trip, is a finite non-negative number;
- file_io's write figures (format 5) are non-negative numbers, and the pages dirtied through a mapping
  are some of those dirtied;
- window_measures: every measure registered (casstrace.traces.measures) and recorded, never derived;
  every value a finite non-negative number within its entry's `at_most`: a span at most its window's
  length; threads' time at most the node's threads (the threads table; PID_MAX_LIMIT when it lists
  none) times the capture's span, from its first window's start to its last window's end — not the
  window's own length: the scheduler's source counts a slice in the window current when it ends, and a
  window stays current until the next one starts, with slices begun before it (73 ms of CPU in a 70 µs
  window, measured). Row by row: a window source writes one row per node, window and measure.

The node's time answering (node_ns) has no bound but its sign: above the execution's round trip it is a
state of the measurement, not an edit (several nodes' agents, or a NAT between casstrace and the node,
time every client's connections: casstrace.probes.bcc.node_time), which the analyses show as
undetermined (casstrace.analyses.measures.bounded_by_round_trip).

Bounds allow SLACK for the edges of a window being read on other clocks than the figure. Each check is
one SQL scan that stops at the first offender, so a trace of many rows opens at SQLite's speed.
"""

import re
import sqlite3
from itertools import accumulate
from typing import NamedTuple

from casstrace.traces.measures import MEASURES
from casstrace.traces.tables import TABLE

MAX_JSON_DEPTH = 64
PID_MAX_LIMIT = 1 << 22  # the most threads a Linux machine can have at once (kernel PID_MAX_LIMIT)
SLACK_FRACTION, SLACK_NS = 0.01, 1_000_000
LARGEST_FINITE = 1.7976931348623157e308  # SQLite stores infinity as a REAL beyond it

_STRING = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"')
_NOT_BRACKET = re.compile(r"[^\[\]{}]+")
_STEP = {"[": 1, "{": 1, "]": -1, "}": -1}


class Invalid(NamedTuple):
    """Where a trace holds what casstrace never writes, and what."""

    table: str
    field: str
    what: str


def too_deep(text: str, limit: int = MAX_JSON_DEPTH) -> bool:
    """Whether the JSON `text` nests deeper than `limit` arrays or objects, told without recursion: its
    strings blanked, the depth is the running count of the brackets left (linear in their number)."""
    brackets = _NOT_BRACKET.sub("", _STRING.sub("", text))
    return max(accumulate(_STEP[bracket] for bracket in brackets), default=0) > limit


def _number_error(value: object, unit: str) -> str:
    """Why `value` is no figure: not a number, infinite or negative."""
    if isinstance(value, bytes):
        return "a blob, not a number"
    if not isinstance(value, int | float):
        return f"{value!r:.40}, not a number"
    if abs(value) > LARGEST_FINITE:
        return "infinite"
    return f"{value:,} {unit}, negative" if isinstance(value, int) else f"{value:,g} {unit}, negative"


def _first_not_a_figure(db: sqlite3.Connection, table: str, keys: str, column: str) -> tuple | None:
    """The first row (its `keys`, then the value) whose `column` holds no finite non-negative number
    (NULL is left alone: not measured)."""
    return db.execute(
        f"SELECT {keys}, {column} FROM {table} WHERE {column} IS NOT NULL AND"
        f" (typeof({column}) NOT IN ('integer', 'real') OR {column} < 0 OR abs({column}) > ?) LIMIT 1",
        (LARGEST_FINITE,),
    ).fetchone()


def invalid(db: sqlite3.Connection, tables: frozenset[str]) -> Invalid | None:
    """The first thing in the trace's tables that casstrace could not have written, or None (meta is
    checked as it is read: Trace)."""
    if "nodes" in tables:
        for node_id, meta in db.execute("SELECT node_id, meta FROM nodes WHERE meta IS NOT NULL"):
            if too_deep(str(meta)):
                return Invalid("nodes", "meta", f"node {node_id}'s JSON nests deeper than {MAX_JSON_DEPTH} levels")
    bad = db.execute("SELECT window_id, start_ns, end_ns FROM windows WHERE end_ns < start_ns LIMIT 1").fetchone()
    if bad is not None:
        return Invalid("windows", "end_ns", f"window {bad[0]} ends at {bad[2]}, before it starts ({bad[1]})")
    bad = _first_not_a_figure(db, "executions", "execution", "latency_s")
    if bad is not None:
        return Invalid("executions", "latency_s", f"execution {bad[0]}'s round trip is {_number_error(bad[1], 's')}")
    found = _writes_invalid(db) if "file_io" in tables else None
    if found is None and "window_measures" in tables:
        found = _measures_invalid(db)
    return found


# file_io's write-path figures (format 5): counts of pages, bytes, calls and ns, never negative
WRITE_FIGURES = {column.name: column.unit or "" for column in TABLE["file_io"].columns if column.checked}


def _writes_invalid(db: sqlite3.Connection) -> Invalid | None:
    columns = {row[1] for row in db.execute("PRAGMA table_info(file_io)")}
    for column in WRITE_FIGURES:
        if column not in columns:
            return None  # a trace from before format 5
        bad = _first_not_a_figure(db, "file_io", "file_id, window_id", column)
        if bad is not None:
            return Invalid(
                "file_io", column, f"file {bad[0]} in window {bad[1]}: {_number_error(bad[2], WRITE_FIGURES[column])}"
            )
    bad = db.execute(
        "SELECT file_id, window_id, mapped_dirtied_pages, dirtied_pages FROM file_io"
        " WHERE mapped_dirtied_pages > dirtied_pages LIMIT 1"
    ).fetchone()
    if bad is not None:
        return Invalid(
            "file_io",
            "mapped_dirtied_pages",
            f"file {bad[0]} in window {bad[1]}: {bad[2]:,} of its {bad[3]:,} dirtied pages dirtied through a mapping",
        )
    return None


def _measures_invalid(db: sqlite3.Connection) -> Invalid | None:
    for (name,) in db.execute("SELECT DISTINCT measure FROM window_measures"):
        entry = MEASURES.get(name)
        if entry is None or entry.derived:
            what = "is not a registered measure" if entry is None else "is derived by the analyses, never recorded"
            return Invalid("window_measures", "measure", f"{name!r:.60} {what}")
    bad = _first_not_a_figure(db, "window_measures", "measure, window_id", "value")
    if bad is not None:
        name, window_id, value = bad
        return Invalid(
            "window_measures", "value", f"{name} of window {window_id} is {_number_error(value, MEASURES[name].unit)}"
        )
    # Row by row (a window source writes one row per node, window and measure): a scan, no sort.
    threads = dict(db.execute("SELECT ifnull(node_id, 0), COUNT(*) FROM threads GROUP BY ifnull(node_id, 0)"))
    node_threads = " ".join(f"WHEN {int(node)} THEN {int(count)}" for node, count in threads.items())
    threads_of = f"CASE ifnull(m.node_id, 0) {node_threads} ELSE {PID_MAX_LIMIT} END" if threads else str(PID_MAX_LIMIT)
    spans, cpu = ([name for name, entry in MEASURES.items() if entry.at_most == kind] for kind in ("window", "threads"))
    (capture_ns,) = db.execute("SELECT ifnull(max(end_ns) - min(start_ns), 0) FROM windows").fetchone()
    bad = db.execute(
        f"""SELECT m.measure, m.window_id, m.value, w.end_ns - w.start_ns,
                   {threads_of} AS threads
            FROM window_measures m JOIN windows w ON w.window_id = m.window_id
            WHERE m.value > (CASE WHEN m.measure IN ({", ".join("?" * len(spans))}) THEN w.end_ns - w.start_ns
                                  WHEN m.measure IN ({", ".join("?" * len(cpu))}) THEN threads * ? END)
                            * ? + ? LIMIT 1""",
        [*spans, *cpu, capture_ns, 1 + SLACK_FRACTION, SLACK_NS],
    ).fetchone()
    if bad is not None:
        name, window_id, value, length, threads_of_node = bad
        bound = (
            f"the window's length ({length:,} ns)"
            if MEASURES[name].at_most == "window"
            else f"its node's {threads_of_node:,} threads can run in the capture's {capture_ns:,} ns"
        )
        return Invalid(
            "window_measures", "value", f"{name} of window {window_id} is {value:,.0f} ns, more than {bound}"
        )
    return None
