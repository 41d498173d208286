"""The typed read API of a trace: every question the analyses ask of a trace file, answered as typed
records. The analyses' only way into a trace (tests/unit/test_layout.py holds them to it); older formats
are handled here (a table or column a format added reads as absent: no rows, None or 0, by
Trace.columns), so that no caller knows the schema. A table read whole takes its select list from its
declaration (casstrace.traces.tables): its record's fields are its columns, in order.

Records of which a trace may hold many (one per call, per page run, per file and window) are
NamedTuples, built by sqlite3's own row loop (no per-row Python beyond the tuple); the few are frozen
dataclasses. Every function takes the open Trace first; `window_ids` / `file_ids` restrict to those
(an empty list matches nothing). A damaged trace raises CasstraceError, never sqlite3's errors.

  function                        returns
  ------------------------------  -----------------------------------------------------------------
  -- files, windows, executions, nodes
  file_paths(kind)                list[FilePath]        (file_id, path) of the files of that kind
  file_sizes()                    dict[file_id, size_bytes | None]
  window_ids()                    list[int]             every window, in order
  window_bounds()                 dict[window_id, (start_ns, end_ns)]
  executions()                    list[ExecutionRecord] the executions table, in order (coordinator
                                                        None before format 3)
  nodes()                         list[NodeRecord]      format-3 nodes rows ([] before, or none)
  file_node_ids()                 dict[file_id, node_id]  files a node's JVM had ({} before format 3)
  file_node_addresses()           dict[file_id, address]  the same, by the node's address
  -- per-file I/O over windows
  file_totals(window_ids)         list[FileTotals]      file_io summed per file, with the file's path,
                                                        kind and size (mapped_touched_bytes None
                                                        when the trace has no such column)
  file_window_io(window_ids, file_ids)  list[FileWindowIO]  file_io rows: read, fill and mapped bytes
  read_size_counts(window_ids)    list[ReadSizeCount]   read_sizes summed per file and log2 bucket,
                                                        buckets ascending
  coverage_runs(window_ids, source=None, file_ids=None)  list[CoverageRun]  coverage rows as stored
  distinct_coverage(window_ids)   list[FilePageRun]     coverage runs, each distinct one once
  syscall_page_bytes(window_ids, file_ids)  list[WindowFileBytes]  bytes of the pages read syscalls
                                                        returned, per window and file, within the
                                                        file's size
  socket_writes(window_ids)       list[SocketWrite]     bytes written per socket, with its ends
  socket_remotes()                dict[file_id, remote_addr | None]  every socket's remote address
  window_writes(window_ids, file_ids)  list[WindowFileWrite]  bytes written per window and file
  mapped_bytes(file_ids)          int                   address space the process maps of them
                                                        (mappings; 0 without the table)
  node_executions_reading(window_ids, file_ids, count_mapped)  list[NodeExecution]  (node_id,
                                                        execution) pairs where any measure saw a
                                                        node's files read, by execution
  mapped_touched_by_file(label)   dict[file_id, bytes]  mapped pages touched in windows so labelled
  -- per-call log and heat map
  file_call_count(file_id)        int                   read and lseek calls on it (file_io totals)
  streamed_call_count(file_id)    int                   per-call records of it (events)
  offset_events(file_id)          list[OffsetEvent]     its logged calls with an offset, by time
  heatmap_cells(file_id, source)  list[HeatmapCell]     its heat map, by slot and offset bucket
  read_calls()                    list[ReadCall]        every logged read that returned bytes on a file
  -- latency
  latency_by_slot(file_only)      list[LatencyCell]     (slot, bucket, calls), file targets or all
  latency_by_syscall()            list[SyscallLatencyCell]  (syscall, target, bucket, calls)
  sync_latency(window_ids)        list[SyncLatencyCell] (file_id, syscall, bucket, calls) of sync calls
                                                        (format 5; [] before)
  -- Java profile (format 2; empty before)
  stacks()                        dict[stack_id, tuple[frame, ...]]
  stack_read_bytes(window_ids, file_ids)  list[StackReadBytes]  per stack: bytes read, fill bytes in
                                                        calls and by faults (0 when not recorded)
  thread_reads(window_ids, file_ids)  list[ThreadRead]  per thread: bytes its logged reads returned
                                                        and pages filled inside them
  faulting_threads(window_ids, file_ids)  set[tid]      threads with a fill no read holds
  fault_fill_pages(window_ids, file_ids)  int           those fills' pages
  fill_bytes(window_ids, file_ids)  int                 the kernel's page-cache fill bytes (file_io)
  stack_samples(window_ids, tids, state)  list[StackSamples]  wall-clock samples per stack
  sampled_threads(window_ids, tids, state)  set[tid]    the threads with such samples
  thread_names()                  dict[tid, name]
  -- per-window measures (format 4; empty before)
  window_measures()               list[WindowMeasure]   (node_id, window_id, measure, value) rows
  thread_cpu()                    list[ThreadCpu]       a thread's on-CPU ns per time slot (measured windows)
  -- watch (format 2)
  has_watch_tables()              bool                  the trace has the tables a watch writes
  statement_sessions()            list[StatementSession]  by session
  session_threads()               list[SessionThread]
  thread_io()                     list[ThreadIO]
  execution_sessions()            dict[session, execution]  a run's traced executions ({} otherwise)
"""

import json
import sqlite3
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from itertools import starmap
from typing import Any, NamedTuple, TypeVar

from casstrace.errors import CasstraceError
from casstrace.traces.reader import Trace
from casstrace.traces.schema import PAGE_BYTES
from casstrace.traces.tables import TABLE, select_list

Record = TypeVar("Record")


# -- the records ---------------------------------------------------------------------------------


class FilePath(NamedTuple):
    file_id: int
    path: str


@dataclass(frozen=True)
class ExecutionRecord:
    """One execution of the query, as the client saw it (the executions table)."""

    execution: int
    kind: str  # 'warmup' | 'measured' | 'tracing'
    window_id: int | None
    latency_s: float | None
    rows: int | None
    payload_bytes: int | None
    wire_bytes: int | None
    client_file_id: int | None
    pages: int | None
    error: str | None
    coordinator: str | None  # None before format 3
    other_requests: int | None  # None: not measured (or before the column)


@dataclass(frozen=True)
class NodeRecord:
    """A node a run trace is about, captured or not (format 3's nodes table)."""

    node_id: int
    address: str
    host: str | None
    datacenter: str | None
    rack: str | None
    replica: bool
    captured: bool
    not_captured: str | None
    pid: int | None
    clock_shift_ns: int | None
    meta: dict[str, Any] | None  # that node's own capture meta


class FileTotals(NamedTuple):
    """A file's file_io summed over some windows (longest_sequential_bytes: the most of one window)."""

    file_id: int
    path: str
    kind: str
    size_bytes: int | None
    read_calls: int
    read_bytes: int
    read_requested_bytes: int
    read_ns: int | None
    write_calls: int
    write_bytes: int
    lseek_calls: int
    seek_jumps: int
    longest_sequential_bytes: int
    cache_miss_bytes: int | None
    mapped_touched_bytes: int | None
    # format 5, the write path (None: not measured, or a trace from before)
    dirtied_pages: int | None = None
    mapped_dirtied_pages: int | None = None
    written_back_bytes: int | None = None
    sync_calls: int | None = None
    sync_ns: int | None = None


class FileWindowIO(NamedTuple):
    window_id: int
    file_id: int
    read_bytes: int
    cache_miss_bytes: int | None
    mapped_touched_bytes: int | None
    mapped_huge_bytes: int | None


class ReadSizeCount(NamedTuple):
    file_id: int
    log2_bucket: int
    reads: int


class CoverageRun(NamedTuple):
    """Pages [first_page, first_page + page_count) of a file touched in a window."""

    window_id: int
    file_id: int
    first_page: int
    page_count: int


class FilePageRun(NamedTuple):
    file_id: int
    first_page: int
    page_count: int


class WindowFileBytes(NamedTuple):
    window_id: int
    file_id: int
    bytes: int


class SocketWrite(NamedTuple):
    """Bytes written to one socket, and read from it; local_addr/remote_addr None where the backend
    kept only `path` ('tcp LOCAL->REMOTE')."""

    node_id: int | None
    path: str
    local_addr: str | None
    remote_addr: str | None
    written: int
    read: int = 0


class NodeExecution(NamedTuple):
    node_id: int
    execution: int


class OffsetEvent(NamedTuple):
    ts_ns: int
    syscall: str
    offset: int
    returned: int | None


class HeatmapCell(NamedTuple):
    slot: int
    offset_bucket: int
    calls: int
    bytes: int


class ReadCall(NamedTuple):
    """One logged read syscall that returned bytes from a file."""

    tid: int
    ts_ns: int
    file_id: int
    bytes: int
    node_id: int | None = None  # the node in a trace of several (None: the one process)


class LatencyCell(NamedTuple):
    slot: int
    bucket: int
    calls: int


class SyscallLatencyCell(NamedTuple):
    syscall: str
    target: str
    bucket: int
    calls: int


class StackReadBytes(NamedTuple):
    stack_id: int
    bytes: int
    calls_fill_bytes: int
    faults_fill_bytes: int


class ThreadRead(NamedTuple):
    tid: int
    read_bytes: int
    fill_pages: int


class StackSamples(NamedTuple):
    stack_id: int
    samples: int


class StatementSession(NamedTuple):
    """One request Cassandra traced during a watch; the statement normalized."""

    session: int
    session_id: str
    statement: str
    consistency: str | None
    client: str | None
    started_ns: int
    duration_ns: int | None
    live_rows: int | None
    tombstone_cells: int | None
    sstables_merged: int | None
    execution: int | None = None  # the run's execution it traced (None: a watch's session)
    mutations: int | None = None  # 'Appending to commitlog' events (None: none, or not counted)
    commitlog_ns: int | None = None  # from each to its thread's next event: time in the commit log


class SessionThread(NamedTuple):
    """A traced request's events on one thread, first to last."""

    session: int
    thread: str
    tid: int | None
    first_ns: int
    last_ns: int
    events: int
    source: str | None = None  # the address of the node whose events these are (None: not recorded)
    node_id: int | None = None  # that node in a trace of several captured ones (None: the one process)


class ThreadIO(NamedTuple):
    """One thread's bytes from one file in one thread_slot_ns slot."""

    tid: int
    slot: int
    file_id: int
    read_calls: int
    read_bytes: int
    cache_miss_pages: int
    node_id: int | None = None  # the node in a trace of several (None: the one process)
    # format 5 (None: not measured, or a trace from before)
    write_calls: int | None = None
    write_bytes: int | None = None
    dirtied_pages: int | None = None
    mapped_dirtied_pages: int | None = None


class SyncLatencyCell(NamedTuple):
    """Sync calls of one kind on one file in one latency bucket (format 5's sync_latency), summed over windows."""

    file_id: int
    syscall: str
    bucket: int
    calls: int


class WindowMeasure(NamedTuple):
    """One registered measure's value in one window (casstrace.traces.measures); node_id None: the one
    process, or the client."""

    node_id: int | None
    window_id: int
    measure: str
    value: float


class ThreadCpu(NamedTuple):
    """One thread's on-CPU time within one time slot [ts_ns, ts_ns + slot_ns) (thread_cpu)."""

    node_id: int | None
    tid: int
    ts_ns: int
    slot_ns: int
    oncpu_ns: int


# -- how they are read ---------------------------------------------------------------------------


def _fetch(trace: Trace, sql: str, params: Sequence[object] = ()) -> list[tuple[Any, ...]]:
    """Plain tuples (not the Trace's sqlite3.Row): the records are built from them."""
    try:
        cursor = trace.db.cursor()
        cursor.row_factory = None
        return cursor.execute(sql, params).fetchall()
    except sqlite3.DatabaseError as error:
        raise CasstraceError(
            f"{trace.path} is not a whole casstrace trace ({error})",
            "the file is damaged or truncated: take the trace again, or copy it whole",
        ) from None


def _records(record: Callable[..., Record], trace: Trace, sql: str, params: Sequence[object] = ()) -> list[Record]:
    return list(starmap(record, _fetch(trace, sql, params)))


def _scalar(trace: Trace, sql: str, params: Sequence[object] = ()) -> Any:
    return _fetch(trace, sql, params)[0][0]


def _has_table(trace: Trace, table: str) -> bool:
    return bool(trace.columns(table))


def _column_or(trace: Trace, table: str, column: str, default: str = "NULL", alias: str = "") -> str:
    """`alias.column`, or `default` when the trace's format predates the column."""
    return f"{alias}{column}" if column in trace.columns(table) else default


def _select(trace: Trace, table: str) -> str:
    """The declared columns of `table` in order (casstrace.traces.tables), one the trace's format
    predates as NULL."""
    return select_list(TABLE[table], trace.columns(table).__contains__)


def _whole(record: Callable[..., Record], trace: Trace, table: str, order: str = "") -> list[Record]:
    """Every row of `table` as `record`s (their fields: its columns in order)."""
    return _records(record, trace, f"SELECT {_select(trace, table)} FROM {table}{order}")


def _in(*restrictions: tuple[str, Iterable[object]]) -> tuple[str, list[object]]:
    """`column IN (...) AND ...` for each (column, values), and the parameters (no values: matching nothing)."""
    clauses, params = [], []
    for column, values in restrictions:
        listed = list(values)
        clauses.append(f"{column} IN ({', '.join('?' for _ in listed) or 'NULL'})")
        params += listed
    return " AND ".join(clauses), params


# -- files, windows, executions, nodes -----------------------------------------------------------


def file_paths(trace: Trace, kind: str = "file") -> list[FilePath]:
    return _records(FilePath, trace, "SELECT file_id, path FROM files WHERE kind = ?", (kind,))


def file_sizes(trace: Trace) -> dict[int, int | None]:
    return dict(_fetch(trace, "SELECT file_id, size_bytes FROM files"))


def file_devices(trace: Trace) -> dict[int, int]:
    """file_id -> st_dev of the files whose device is known."""
    return dict(_fetch(trace, "SELECT file_id, dev FROM files WHERE dev IS NOT NULL"))


def window_bounds(trace: Trace) -> dict[int, tuple[int, int]]:
    """window_id -> (start_ns, end_ns)."""
    return {
        window_id: (start, end)
        for window_id, start, end in _fetch(trace, "SELECT window_id, start_ns, end_ns FROM windows")
    }


def window_ids(trace: Trace) -> list[int]:
    return [window_id for (window_id,) in _fetch(trace, "SELECT window_id FROM windows ORDER BY window_id")]


def executions(trace: Trace) -> list[ExecutionRecord]:
    return _whole(ExecutionRecord, trace, "executions", " ORDER BY execution")


def nodes(trace: Trace) -> list[NodeRecord]:
    if not _has_table(trace, "nodes"):
        return []
    columns = TABLE["nodes"].column_names
    found = []
    for row in _fetch(trace, f"SELECT {_select(trace, 'nodes')} FROM nodes ORDER BY node_id"):
        node = dict(zip(columns, row))
        replica, captured, meta = bool(node.pop("replica")), bool(node.pop("captured")), node.pop("meta")
        found.append(NodeRecord(**node, replica=replica, captured=captured, meta=json.loads(meta) if meta else None))
    return found


def file_node_ids(trace: Trace) -> dict[int, int]:
    if "node_id" not in trace.columns("files"):
        return {}
    return dict(_fetch(trace, "SELECT file_id, node_id FROM files WHERE node_id IS NOT NULL"))


def file_node_addresses(trace: Trace) -> dict[int, str]:
    if not _has_table(trace, "nodes"):
        return {}
    return dict(_fetch(trace, "SELECT f.file_id, n.address FROM files f JOIN nodes n ON n.node_id = f.node_id"))


# -- per-file I/O over windows -------------------------------------------------------------------


WRITE_PATH_COLUMNS = ("dirtied_pages", "mapped_dirtied_pages", "written_back_bytes", "sync_calls", "sync_ns")


def file_totals(trace: Trace, window_ids: Sequence[int]) -> list[FileTotals]:
    condition, params = _in(("io.window_id", window_ids))
    mapped = _column_or(trace, "file_io", "mapped_touched_bytes", alias="io.")
    writes = ", ".join(f"SUM({_column_or(trace, 'file_io', column, alias='io.')})" for column in WRITE_PATH_COLUMNS)
    return _records(
        FileTotals,
        trace,
        f"""SELECT f.file_id, f.path, f.kind, f.size_bytes,
                               SUM(read_calls), SUM(read_bytes), SUM(read_requested_bytes), SUM(read_ns),
                               SUM(write_calls), SUM(write_bytes), SUM(lseek_calls), SUM(seek_jumps),
                               MAX(longest_sequential_bytes), SUM(cache_miss_bytes), SUM({mapped}), {writes}
                        FROM file_io io JOIN files f ON f.file_id = io.file_id
                        WHERE {condition}
                        GROUP BY f.file_id""",
        params,
    )


def file_window_io(trace: Trace, window_ids: Sequence[int], file_ids: Sequence[int]) -> list[FileWindowIO]:
    condition, params = _in(("window_id", window_ids), ("file_id", file_ids))
    touched = _column_or(trace, "file_io", "mapped_touched_bytes")
    huge = _column_or(trace, "file_io", "mapped_huge_bytes")
    return _records(
        FileWindowIO,
        trace,
        f"SELECT window_id, file_id, read_bytes, cache_miss_bytes, {touched}, {huge} FROM file_io WHERE {condition}",
        params,
    )


def read_size_counts(trace: Trace, window_ids: Sequence[int]) -> list[ReadSizeCount]:
    condition, params = _in(("window_id", window_ids))
    return _records(
        ReadSizeCount,
        trace,
        f"SELECT file_id, log2_bucket, SUM(count) FROM read_sizes WHERE {condition}"
        " GROUP BY file_id, log2_bucket ORDER BY log2_bucket",
        params,
    )


def coverage_runs(
    trace: Trace, window_ids: Sequence[int], source: str | None = None, file_ids: Sequence[int] | None = None
) -> list[CoverageRun]:
    """For one source ('syscall' | 'page_cache') or both, of every file or of `file_ids` (found
    through the coverage_file index)."""
    restrictions: list[tuple[str, Iterable[object]]] = [("window_id", window_ids)]
    if file_ids is not None:
        restrictions.append(("file_id", file_ids))
    condition, params = _in(*restrictions)
    if source is not None:
        condition += " AND source = ?"
        params.append(source)
    return _records(
        CoverageRun, trace, f"SELECT window_id, file_id, first_page, page_count FROM coverage WHERE {condition}", params
    )


def distinct_coverage(trace: Trace, window_ids: Sequence[int]) -> list[FilePageRun]:
    """DISTINCT lets SQLite drop the runs repeated window after window (every execution of a query
    reads the same pages), so the union costs little however many executions there were."""
    condition, params = _in(("window_id", window_ids))
    return _records(
        FilePageRun, trace, f"SELECT DISTINCT file_id, first_page, page_count FROM coverage WHERE {condition}", params
    )


def syscall_page_bytes(trace: Trace, window_ids: Sequence[int], file_ids: Sequence[int]) -> list[WindowFileBytes]:
    """The runs of one window, file and source are disjoint (both trace writers make them from a page
    bitmap), so SQLite sums them itself."""
    condition, params = _in(("c.window_id", window_ids), ("c.file_id", file_ids))
    end = f"(c.first_page + c.page_count) * {PAGE_BYTES}"
    return _records(
        WindowFileBytes,
        trace,
        f"SELECT c.window_id, c.file_id,"
        f" SUM(MAX(0, MIN({end}, COALESCE(f.size_bytes, {end})) - c.first_page * {PAGE_BYTES}))"
        f" FROM coverage c JOIN files f ON f.file_id = c.file_id WHERE c.source = 'syscall'"
        f" AND {condition} GROUP BY c.window_id, c.file_id",
        params,
    )


def socket_writes(trace: Trace, window_ids: Sequence[int]) -> list[SocketWrite]:
    condition, params = _in(("io.window_id", window_ids))
    node_id = _column_or(trace, "files", "node_id", alias="f.")
    return _records(
        SocketWrite,
        trace,
        f"SELECT {node_id}, f.path, f.local_addr, f.remote_addr, COALESCE(SUM(io.write_bytes), 0),"
        " COALESCE(SUM(io.read_bytes), 0)"
        f" FROM file_io io JOIN files f ON f.file_id = io.file_id WHERE f.kind = 'socket' AND {condition}"
        " GROUP BY f.file_id",
        params,
    )


def socket_remotes(trace: Trace) -> dict[int, str | None]:
    return dict(_fetch(trace, "SELECT file_id, remote_addr FROM files WHERE kind = 'socket'"))


class WindowFileWrite(NamedTuple):
    window_id: int
    file_id: int
    written: int


def window_writes(trace: Trace, window_ids: Sequence[int], file_ids: Sequence[int]) -> list[WindowFileWrite]:
    condition, params = _in(("window_id", window_ids), ("file_id", file_ids))
    return _records(
        WindowFileWrite,
        trace,
        f"SELECT window_id, file_id, COALESCE(write_bytes, 0) FROM file_io WHERE {condition}",
        params,
    )


def mapped_bytes(trace: Trace, file_ids: Sequence[int]) -> int:
    if not _has_table(trace, "mappings"):
        return 0
    condition, params = _in(("file_id", file_ids))
    return int(_scalar(trace, f"SELECT COALESCE(SUM(mapped_bytes), 0) FROM mappings WHERE {condition}", params))


def node_executions_reading(
    trace: Trace, window_ids: Sequence[int], file_ids: Sequence[int], count_mapped: bool
) -> list[NodeExecution]:
    """Read: bytes read syscalls returned, page-cache fills, and (count_mapped) mapped pages touched."""
    if "node_id" not in trace.columns("files"):
        return []
    condition, params = _in(("io.window_id", window_ids), ("io.file_id", file_ids))
    mapped = " OR COALESCE(io.mapped_touched_bytes, 0) > 0" if count_mapped else ""
    return _records(
        NodeExecution,
        trace,
        "SELECT DISTINCT f.node_id, w.execution FROM file_io io JOIN files f ON f.file_id = io.file_id"
        " JOIN windows w ON w.window_id = io.window_id WHERE f.node_id IS NOT NULL"
        f" AND w.execution IS NOT NULL AND {condition}"
        f" AND (io.read_bytes > 0 OR COALESCE(io.cache_miss_bytes, 0) > 0{mapped}) ORDER BY w.execution",
        params,
    )


def mapped_touched_by_file(trace: Trace, label: str) -> dict[int, int]:
    if "mapped_touched_bytes" not in trace.columns("file_io"):
        return {}
    return dict(
        _fetch(
            trace,
            "SELECT file_id, SUM(mapped_touched_bytes) FROM file_io JOIN windows USING (window_id)"
            " WHERE label = ? AND mapped_touched_bytes IS NOT NULL GROUP BY file_id",
            (label,),
        )
    )


# -- per-call log and heat map -------------------------------------------------------------------


def file_call_count(trace: Trace, file_id: int) -> int:
    return int(
        _scalar(trace, "SELECT COALESCE(SUM(read_calls + lseek_calls), 0) FROM file_io WHERE file_id = ?", (file_id,))
    )


def streamed_call_count(trace: Trace, file_id: int) -> int:
    return int(_scalar(trace, "SELECT COUNT(*) FROM events WHERE file_id = ?", (file_id,)))


def offset_events(trace: Trace, file_id: int) -> list[OffsetEvent]:
    return _records(
        OffsetEvent,
        trace,
        "SELECT ts_ns, syscall, offset, returned FROM events WHERE file_id = ? AND offset IS NOT NULL ORDER BY ts_ns",
        (file_id,),
    )


def heatmap_cells(trace: Trace, file_id: int, source: str) -> list[HeatmapCell]:
    return _records(
        HeatmapCell,
        trace,
        "SELECT slot, offset_bucket, calls, bytes FROM heatmap"
        " WHERE file_id = ? AND source = ? ORDER BY slot, offset_bucket",
        (file_id, source),
    )


def read_calls(trace: Trace) -> list[ReadCall]:
    return _records(
        ReadCall,
        trace,
        f"SELECT tid, ts_ns, file_id, returned, {_column_or(trace, 'events', 'node_id')} FROM events"
        " WHERE syscall != 'lseek' AND returned > 0 AND file_id IS NOT NULL",
    )


# -- latency -------------------------------------------------------------------------------------


def latency_by_slot(trace: Trace, file_only: bool) -> list[LatencyCell]:
    """Calls per time slot and latency bucket: of syscalls on regular files (file_only), or all."""
    condition = "target = 'file'" if file_only else "1"
    return _records(
        LatencyCell, trace, f"SELECT slot, bucket, SUM(count) FROM latency WHERE {condition} GROUP BY slot, bucket"
    )


def latency_by_syscall(trace: Trace) -> list[SyscallLatencyCell]:
    return _records(
        SyscallLatencyCell,
        trace,
        "SELECT syscall, target, bucket, SUM(count) FROM latency GROUP BY syscall, target, bucket",
    )


def sync_latency(trace: Trace, window_ids: Sequence[int]) -> list[SyncLatencyCell]:
    """Sync calls per file, syscall and latency bucket in those windows ([] before format 5)."""
    if not _has_table(trace, "sync_latency"):
        return []
    condition, params = _in(("window_id", window_ids))
    return _records(
        SyncLatencyCell,
        trace,
        f"SELECT file_id, syscall, bucket, SUM(count) FROM sync_latency WHERE {condition}"
        " GROUP BY file_id, syscall, bucket ORDER BY file_id, syscall, bucket",
        params,
    )


# -- Java profile --------------------------------------------------------------------------------


def stacks(trace: Trace) -> dict[int, tuple[str, ...]]:
    if not _has_table(trace, "stacks"):
        return {}
    return {
        stack_id: tuple(json.loads(frames)) for stack_id, frames in _fetch(trace, "SELECT stack_id, frames FROM stacks")
    }


def stack_read_bytes(trace: Trace, window_ids: Sequence[int], file_ids: Sequence[int]) -> list[StackReadBytes]:
    """Fill bytes are 0 where the trace recorded none (meta profile.fill_join_ns absent)."""
    if not _has_table(trace, "profile_reads"):
        return []
    condition, params = _in(("window_id", window_ids), ("file_id", file_ids))
    fill = _column_or(trace, "profile_reads", "fill_bytes")
    fault_fill = _column_or(trace, "profile_reads", "fault_fill_bytes")
    return _records(
        StackReadBytes,
        trace,
        f"SELECT stack_id, SUM(bytes), COALESCE(SUM({fill}), 0), COALESCE(SUM({fault_fill}), 0)"
        f" FROM profile_reads WHERE {condition} GROUP BY stack_id",
        params,
    )


def thread_reads(trace: Trace, window_ids: Sequence[int], file_ids: Sequence[int]) -> list[ThreadRead]:
    """One pass over the windows' logged calls on the files (lseeks return no bytes)."""
    condition, params = _in(("w.window_id", window_ids), ("e.file_id", file_ids))
    fill_pages = _column_or(trace, "events", "cache_miss_pages", alias="e.", default="0")
    return _records(
        ThreadRead,
        trace,
        "SELECT e.tid, COALESCE(SUM(CASE WHEN e.syscall != 'lseek' THEN MAX(e.returned, 0) ELSE 0 END), 0),"
        f" COALESCE(SUM(CASE WHEN e.syscall != 'lseek' THEN {fill_pages} ELSE 0 END), 0)"
        " FROM events e JOIN windows w ON e.ts_ns >= w.start_ns AND e.ts_ns < w.end_ns"
        f" WHERE {condition} GROUP BY e.tid",
        params,
    )


class WindowCall(NamedTuple):
    tid: int
    ts_ns: int
    returned: int
    fill_pages: int


def window_calls(trace: Trace, window_ids: Sequence[int], file_ids: Sequence[int]) -> list[WindowCall]:
    """The windows' logged calls on the files that returned bytes, one by one (thread_reads sums them)."""
    condition, params = _in(("w.window_id", window_ids), ("e.file_id", file_ids))
    fill_pages = _column_or(trace, "events", "cache_miss_pages", alias="e.", default="0")
    return _records(
        WindowCall,
        trace,
        f"SELECT e.tid, e.ts_ns, MAX(e.returned, 0), {fill_pages} FROM events e JOIN windows w"
        f" ON e.ts_ns >= w.start_ns AND e.ts_ns < w.end_ns WHERE e.syscall != 'lseek' AND {condition}",
        params,
    )


def faulting_threads(trace: Trace, window_ids: Sequence[int], file_ids: Sequence[int]) -> set[int]:
    if not _has_table(trace, "page_cache_fills"):
        return set()
    condition, params = _in(("w.window_id", window_ids), ("p.file_id", file_ids))
    return {
        tid
        for (tid,) in _fetch(
            trace,
            "SELECT DISTINCT p.tid FROM page_cache_fills p JOIN windows w ON p.ts_ns >= w.start_ns"
            f" AND p.ts_ns < w.end_ns WHERE {condition}",
            params,
        )
    }


def fault_fill_pages(trace: Trace, window_ids: Sequence[int], file_ids: Sequence[int]) -> int:
    if not _has_table(trace, "page_cache_fills"):
        return 0
    condition, params = _in(("w.window_id", window_ids), ("p.file_id", file_ids))
    return int(
        _scalar(
            trace,
            "SELECT COALESCE(SUM(p.pages), 0) FROM page_cache_fills p JOIN windows w"
            f" ON p.ts_ns >= w.start_ns AND p.ts_ns < w.end_ns WHERE {condition}",
            params,
        )
    )


def fill_bytes(trace: Trace, window_ids: Sequence[int], file_ids: Sequence[int]) -> int:
    condition, params = _in(("window_id", window_ids), ("file_id", file_ids))
    return int(_scalar(trace, f"SELECT COALESCE(SUM(cache_miss_bytes), 0) FROM file_io WHERE {condition}", params))


def stack_samples(trace: Trace, window_ids: Sequence[int], tids: Sequence[int], state: str) -> list[StackSamples]:
    if not _has_table(trace, "profile_samples"):
        return []
    condition, params = _in(("window_id", window_ids), ("tid", tids))
    return _records(
        StackSamples,
        trace,
        f"SELECT stack_id, SUM(samples) FROM profile_samples WHERE {condition} AND state = ? GROUP BY stack_id",
        params + [state],
    )


def sampled_threads(trace: Trace, window_ids: Sequence[int], tids: Sequence[int], state: str) -> set[int]:
    if not _has_table(trace, "profile_samples"):
        return set()
    condition, params = _in(("window_id", window_ids), ("tid", tids))
    return {
        tid
        for (tid,) in _fetch(
            trace, f"SELECT DISTINCT tid FROM profile_samples WHERE {condition} AND state = ?", params + [state]
        )
    }


def thread_names(trace: Trace) -> dict[int, str]:
    return dict(_fetch(trace, "SELECT tid, name FROM threads"))


# -- per-window measures ---------------------------------------------------------------------------


def window_measures(trace: Trace) -> list[WindowMeasure]:
    if not _has_table(trace, "window_measures"):
        return []
    return _whole(WindowMeasure, trace, "window_measures", " ORDER BY window_id")


def thread_cpu(trace: Trace) -> list[ThreadCpu]:
    """Every thread's on-CPU time per slot, by thread and time ([] for a trace without the table)."""
    if not _has_table(trace, "thread_cpu"):
        return []
    return _whole(ThreadCpu, trace, "thread_cpu", " ORDER BY tid, ts_ns")


# -- watch ---------------------------------------------------------------------------------------


def has_watch_tables(trace: Trace) -> bool:
    return _has_table(trace, "thread_io")


def statement_sessions(trace: Trace) -> list[StatementSession]:
    return _whole(StatementSession, trace, "statement_sessions", " ORDER BY session")


def execution_sessions(trace: Trace) -> dict[int, int]:
    """session -> the run's execution it traced ({} in a watch, or a trace without the column)."""
    if "execution" not in trace.columns("statement_sessions"):
        return {}
    return dict(_fetch(trace, "SELECT session, execution FROM statement_sessions WHERE execution IS NOT NULL"))


def session_threads(trace: Trace) -> list[SessionThread]:
    return _whole(SessionThread, trace, "session_threads")


def thread_io(trace: Trace) -> list[ThreadIO]:
    return _whole(ThreadIO, trace, "thread_io")
