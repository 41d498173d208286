"""Turning a sysdig capture (.scap) into a casstrace trace: probes/sysdig/scap_reader.py reads the file
(blocks, thread and fd tables, the syscalls casstrace uses, which event versions it knows: see
there); ScapImporter folds those calls into the trace's tables. No sysdig runs: the import reads
captures whatever sysdig is installed, or none, including those the installed sysdig misreads
(exit-only captures of falcosecurity libs >= 0.23, whose exit events carry the arguments).

Memory stays bounded however long the capture: per-file aggregates stay in memory; per-call
records wait in a spool (memory, then disk) until the process is chosen, then go into the trace;
heat-map and latency cells of slots long past move to disk as the capture goes on.

What a scap can tell, and what it cannot:
- calls, bytes, fds with their names and types, pread/preadv/pwrite offsets, lseek arguments and
  results: always.
- the offset of a plain read/readv: only where the fd's position is known from the capture itself
  (the fd was opened or lseek'd in it); otherwise NULL.
- latency: only from enter/exit pairs. Exit-only captures give `measures.latency` false, never zeros.
- page-cache misses (so mmap reads): never, a scap holds syscalls only (`measures.page_cache` false).
- driver drops: a scap file does not record them, so `lost_events` is 0 with a note saying so.
Data buffers are never decoded.
"""

import gc
import itertools
import marshal
import os
from bisect import bisect_right
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, NamedTuple, cast

from casstrace.errors import CasstraceError
from casstrace.probes.backends import SYSDIG
from casstrace.probes.sysdig.scap_reader import (
    CLOSE,
    OPEN,
    READ,
    SEEK,
    WRITE,
    CallFields,
    Fd,
    ScapError,
    ScapReader,
    Thread,
)
from casstrace.traces.schema import HEATMAP_OFFSET_BYTES, PAGE_BYTES, SLOT_NS, latency_bucket, latency_bucket_starts

if TYPE_CHECKING:  # for mypy only: an import loads neither the rows nor the capture protocol
    from casstrace.probes.protocol import Window
    from casstrace.traces import TraceWriter
    from casstrace.traces.rows import CoverageRow, EventRow, FileIORow, ReadSizeRow

# Heat-map and latency cells of slots more than SLOT_LAG behind the newest call move to disk, every
# MOVE_EVERY_SLOTS slots: memory holds ~15 s of them however long the capture.
SLOT_LAG = 50
MOVE_EVERY_SLOTS = 100
# What the trace calls the kinds of fd the reader tells apart.
TRACE_KINDS = {
    "file": "file",
    "socket": "socket",
    "pipe": "pipe",
    "directory": "other",
    "other": "other",
    "unknown": "unknown",
}


class ImportSummary(NamedTuple):
    pid: int
    process: str
    chosen_by: str  # why this process: 'pid', 'name', or 'most file I/O'
    events: int  # calls of the process that went into the trace
    file_bytes: int  # bytes read and written on files by the process
    latency: bool
    records: int  # per-call records kept (reads and lseeks: the calls' log)
    unstreamed: int  # per-call records past the event limit: counted, in every aggregate, not logged


def describe_fd(fd: int | None, info: Fd) -> tuple[str, str, str | None, str | None]:
    """(path, kind, local_addr, remote_addr) of an fd in the trace: files by their path, IP sockets
    'proto local->remote', the rest by what they are and their number."""
    kind = TRACE_KINDS[info.kind]
    if info.name:
        return info.name, kind, info.local, info.remote
    return f"{info.type_name or info.kind} fd {fd}", kind, None, None


# -- per-file aggregates --------------------------------------------------------------------------
class _PageRuns:
    """Disjoint sorted runs of pages [start, end), merged as they are added: stays small for the
    mostly sequential reads of real workloads, however many pages they cover."""

    __slots__ = ("starts", "ends")

    def __init__(self) -> None:
        self.starts: list[int] = []
        self.ends: list[int] = []

    def add(self, start: int, end: int) -> None:
        starts, ends = self.starts, self.ends
        if starts and start >= starts[-1]:
            # The common case: at or after the last run.
            if start <= ends[-1]:
                if end > ends[-1]:
                    ends[-1] = end
            else:
                starts.append(start)
                ends.append(end)
            return
        i = bisect_right(starts, start)
        if i and ends[i - 1] >= start:
            i -= 1
            start = starts[i]
            end = max(end, ends[i])
        j = i
        while j < len(starts) and starts[j] <= end:
            end = max(end, ends[j])
            j += 1
        starts[i:j] = [start]
        ends[i:j] = [end]

    def runs(self) -> Iterator[tuple[int, int]]:
        return zip(self.starts, self.ends)


class _FileWindow:
    """One file's totals in one window (a row of file_io, plus its read_sizes and coverage)."""

    __slots__ = (
        "read_calls",
        "read_bytes",
        "read_requested_bytes",
        "read_ns",
        "write_calls",
        "write_bytes",
        "lseek_calls",
        "seek_jumps",
        "longest_sequential_bytes",
        "run_bytes",
        "read_sizes",
        "pages",
    )

    def __init__(self) -> None:
        self.read_calls = self.read_bytes = self.read_requested_bytes = 0
        self.read_ns: int | None = None
        self.write_calls = self.write_bytes = self.lseek_calls = 0
        self.seek_jumps = self.longest_sequential_bytes = self.run_bytes = 0
        self.read_sizes: dict[int, int] = {}
        self.pages = _PageRuns()

    @classmethod
    def of(
        cls,
        read_calls: int,
        read_bytes: int,
        read_requested_bytes: int,
        read_ns: int | None,
        write_calls: int,
        write_bytes: int,
        lseek_calls: int,
        seek_jumps: int,
        longest_sequential_bytes: int,
        run_bytes: int,
        read_sizes: dict[int, int],
        starts: list[int],
        ends: list[int],
    ) -> "_FileWindow":
        """A window's totals as the compiled fold hands them over."""
        window = cls()
        window.read_calls, window.read_bytes, window.read_requested_bytes = read_calls, read_bytes, read_requested_bytes
        window.read_ns, window.write_calls, window.write_bytes = read_ns, write_calls, write_bytes
        window.lseek_calls, window.seek_jumps = lseek_calls, seek_jumps
        window.longest_sequential_bytes, window.run_bytes = longest_sequential_bytes, run_bytes
        window.read_sizes = read_sizes
        window.pages.starts, window.pages.ends = starts, ends
        return window


class _File:
    __slots__ = (
        "index",
        "number",
        "path",
        "kind",
        "latency_target",
        "local_addr",
        "remote_addr",
        "next_read_offset",
        "windows",
    )

    def __init__(
        self, index: int, path: str, kind: str, local_addr: str | None = None, remote_addr: str | None = None
    ) -> None:
        self.index = index
        # its file_id in a trace that holds no other files (files numbered from 1 in order): what
        # the per-call records carry, so that they go into the trace as they are
        self.number = index + 1
        self.path = path
        self.kind = kind
        # what the latency spectrogram calls the target of a call on this fd
        self.latency_target = kind if kind in ("file", "socket") else "other"
        self.local_addr = local_addr
        self.remote_addr = remote_addr
        self.next_read_offset: int | None = None
        self.windows: dict[int, _FileWindow] = {}


def _signed64(value: int | None) -> int | None:
    # lseek's offset is a UINT64 in the capture; a negative offset wraps.
    return value - (1 << 64) if value is not None and value >= 1 << 63 else value


class _Process:
    """Everything one process did in the capture, folded into the trace's aggregates."""

    def __init__(self, pid: int, exe: str) -> None:
        self.pid = pid
        self.exe = exe
        self.threads: dict[int, str] = {}
        self.fd_files: dict[Fd, _File] = {}  # what the capture said an fd is -> its file
        self.files: dict[tuple, _File] = {}  # (path, kind) -> file
        self.file_list: list[_File] = []
        self.positions: dict[int, int] = {}  # fd -> file position, where the capture shows it
        self.heatmap: dict[tuple[int, int, int], list[int]] = {}  # (file index, slot, offset bucket) -> [calls, bytes]
        self.latency: dict[tuple[int, str, str, int], int] = {}  # (slot, syscall, target, bucket) -> count
        self.heatmap_cells = _SlotCells(self.heatmap, 1)
        self.latency_cells = _SlotCells(self.latency, 0)
        self.events = 0
        self.records = 0  # per-call records (the events table)
        self.staged: list[EventRow] = []  # those in memory (the spool's list for the process)
        self.paired = 0  # exits matched with their enter event
        self.blind = 0  # I/O exits with neither an enter event nor an fd of their own
        self.file_bytes = 0


class _Spool:
    """Batches of rows written to a temporary file (under `directory`, or the system's temporary
    directory; gone when closed) and read back in order. In marshal's format: rows hold only ints,
    strs, None, tuples and lists, which it writes in a quarter of pickle's time (and a tenth of an
    insert into sqlite); the file never outlives the process that wrote it."""

    def __init__(self, directory: Path | None = None) -> None:
        self.directory = directory
        self.file: IO[bytes] | None = None

    def add(self, rows: list[Any]) -> None:
        if not rows:
            return
        if self.file is None:
            import tempfile  # here: only long captures spill, and start-up counts (cli/main.py)

            self.file = tempfile.TemporaryFile(prefix="casstrace-import-", dir=self.directory)
        self.file.seek(0, os.SEEK_END)
        # Each batch after its length: marshal.load on a file reads it a field at a time.
        batch = marshal.dumps(rows)
        self.file.write(len(batch).to_bytes(8, "little") + batch)

    def __iter__(self) -> Iterator[Any]:
        if self.file is None:
            return
        self.file.seek(0)
        while length := int.from_bytes(self.file.read(8), "little"):
            yield from marshal.loads(self.file.read(length))

    def close(self) -> None:
        if self.file is not None:
            self.file.close()


class _EventSpool:
    """Per-call records of every process, in arrival order, until one process is chosen: in memory
    up to MEMORY_ROWS in all, then on disk, so a long capture never sits in memory whole. Rows are
    the events table's (EventRow), with the file's `number` for its file_id (ScapImporter.write)."""

    MEMORY_ROWS = 100_000

    def __init__(self, directory: Path | None = None) -> None:
        self.rows: dict[int, list[EventRow]] = {}  # pid -> its records in memory
        self.disk = _Spool(directory)

    def of(self, pid: int) -> list["EventRow"]:
        """The list a process's records are appended to (the same list however often they spill)."""
        return self.rows.setdefault(pid, [])

    def spill(self) -> None:
        """Moves the rows in memory to disk (the folds call this once they hold MEMORY_ROWS)."""
        self.disk.add([(pid, rows) for pid, rows in self.rows.items() if rows])
        for rows in self.rows.values():
            rows.clear()

    def of_process(self, pid: int) -> Iterator["EventRow"]:
        """The process's records in arrival order."""
        on_disk = (rows for row_pid, rows in self.disk if row_pid == pid)
        return itertools.chain(itertools.chain.from_iterable(on_disk), self.rows.get(pid, []))

    def close(self) -> None:
        self.disk.close()


class _SlotCells:
    """A per-slot aggregate of one process (heat map cells, latency counts: key -> value, the slot
    at `slot_at` in the key) whose slots long past move to a spool, so that memory does not grow
    with the capture's length. A capture is in time order, but should a call come for a slot
    already moved, its cell waits in `late` and is added to the moved one when the trace is
    written (a key is moved once: the trace's primary keys see no duplicate)."""

    __slots__ = ("cells", "late", "moved_below", "slot_at")

    def __init__(self, cells: dict[Any, Any], slot_at: int) -> None:
        self.cells = cells
        self.late: dict[Any, Any] = {}
        self.moved_below = 0
        self.slot_at = slot_at

    def _to_late(self, key: Any, value: Any) -> None:
        before = self.late.get(key)
        self.late[key] = value if before is None else _added(before, value)

    def move(self, below: int, pid: int, spool: _Spool) -> None:
        """Moves the cells of slots before `below` to the spool (late ones to `late`)."""
        slot_at, moved_below = self.slot_at, self.moved_below
        rows = []
        for key in [key for key in self.cells if key[slot_at] < below]:
            value = self.cells.pop(key)
            if key[slot_at] < moved_below:
                self._to_late(key, value)
            else:
                rows.append((pid, key, value))
        spool.add(rows)
        self.moved_below = max(moved_below, below)

    def merged(self, pid: int, spool: _Spool) -> Iterator[tuple[Any, Any]]:
        """Every cell once: the moved ones (with their late additions), then the rest."""
        for key in [key for key in self.cells if key[self.slot_at] < self.moved_below]:
            self._to_late(key, self.cells.pop(key))
        late = self.late
        for row_pid, key, value in spool:
            if row_pid == pid:
                extra = late.pop(key, None)
                yield key, (value if extra is None else _added(value, extra))
        yield from late.items()
        yield from self.cells.items()


def _added(value: Any, other: Any) -> Any:
    """Two values of one cell added: counts, or [calls, bytes] pairs."""
    return value + other if isinstance(value, int) else [value[0] + other[0], value[1] + other[1]]


class ScapImporter:
    """Folds the reader's calls into per-process aggregates; `write` puts one process in a trace.
    `pid` or `proc` (an executable's name) keep only that process's calls."""

    def __init__(
        self,
        windows: "list[Window] | None",
        spool_dir: Path | None = None,
        event_limit: int | None = None,
        pid: int | None = None,
        proc: str | None = None,
    ) -> None:
        self.windows = windows
        self.window_starts = [w.start_ns for w in windows] if windows else None
        self.processes: dict[int, _Process] = {}
        self.first_ns: int | None = None
        self.last_ns: int | None = None
        self.start_ns: int | None = None
        self.event_limit = event_limit
        self.spool = _EventSpool(spool_dir)
        self.heatmap_spool = _Spool(spool_dir)
        self.latency_spool = _Spool(spool_dir)
        self.only_pid = pid
        self.only_proc = proc
        self._others: set[int] = set()  # pids whose calls are not wanted
        self._move_at = MOVE_EVERY_SLOTS + SLOT_LAG  # the slot past which cells next move to disk
        self._compiled: Any = None  # the compiled fold's state, made on its first call

    def _wanted(self, thread: Thread) -> bool:
        if self.only_pid is not None:
            return thread.pid == self.only_pid
        if self.only_proc is not None:
            # exe is argv[0]; exepath the binary (as sysdig's proc.exe and proc.exepath).
            return (
                thread.exe == self.only_proc
                or os.path.basename(thread.exe) == self.only_proc
                or thread.exepath.endswith("/" + self.only_proc)
            )
        return True

    # -- the stream -----------------------------------------------------------------------------
    def fold(self, calls: Iterable[CallFields]) -> None:
        """Folds the calls into the aggregates: compiled (probes/sysdig/scap_fold.c) where it was built,
        else in Python (_fold_python, the same steps; a unit test checks both write the same trace)."""
        if COMPILED_FOLD is None:
            self._fold_python(calls)
            return
        if self._compiled is None:
            self._compiled = COMPILED_FOLD(self, self.window_starts, self.event_limit, self.spool.MEMORY_ROWS)
        try:
            self._compiled.fold(calls, SLOT_LAG, MOVE_EVERY_SLOTS)
        finally:
            for process, counts, windows in self._compiled.export():
                process.events, process.records, process.paired, process.blind, process.file_bytes = counts
                for index, window, stats in windows:
                    process.file_list[index].windows[window] = _FileWindow.of(*stats)

    def _started(self, ts: int, entry_ts: int | None) -> int:
        """At the first call: the capture's first ns, and where slot 0 starts (returned)."""
        self.first_ns = ts if entry_ts is None else entry_ts
        # Slot 0 starts with the first window, or else with the first event.
        self.start_ns = self.windows[0].start_ns if self.windows else self.first_ns
        return self.start_ns

    def _process_of(self, thread: Thread) -> "_Process | None":
        """The process of a thread met for the first time: made on the first call of a wanted
        process; None for a process whose calls are not wanted."""
        pid = thread.pid
        process = self.processes.get(pid)
        if process is None:
            if pid in self._others:
                return None
            if not self._wanted(thread):
                self._others.add(pid)
                return None
            exe = thread.exe or thread.comm
            process = self.processes[pid] = _Process(pid, os.path.basename(exe) if exe else str(pid))
            process.staged = self.spool.of(pid)
        return process

    def _file_of(self, process: "_Process", fd_info: Fd, fd: int | None) -> "_File":
        """The trace file of an fd the process's calls have not used before."""
        return self._file(process, fd_info, *describe_fd(fd, fd_info))

    def _fold_python(self, calls: Iterable[CallFields]) -> None:
        """This loop runs once per call and is most of an import's time: hence locals instead of
        attributes and the common cases inline."""
        processes = self.processes
        window_starts = self.window_starts
        memory_rows = self.spool.MEMORY_ROWS
        held = 0  # records in memory since the last spill
        event_limit = self.event_limit
        start_ns, last_ns = self.start_ns, self.last_ns
        move_at = self._move_at
        try:
            for kind, syscall, positioned, ts, entry_ts, thread, fd, fd_info, result, size, offset, whence in calls:
                last_ns = ts
                if start_ns is None:
                    start_ns = self._started(ts, entry_ts)
                pid = thread.pid
                process = processes.get(pid)
                if process is None:
                    process = self._process_of(thread)
                    if process is None:
                        continue
                tid = thread.tid
                process.threads[tid] = thread.comm
                process.events += 1
                latency = None
                if entry_ts is not None:
                    latency = ts - entry_ts
                    process.paired += 1
                else:
                    entry_ts = ts
                    if fd is None and kind != OPEN:
                        # An old-format exit without its enter event does not say which fd it used:
                        # normal for calls in flight when the capture began; for a whole capture
                        # it means the enter events were lost (see check_readable()).
                        process.blind += 1

                file = None
                if fd_info is not None:
                    file = process.fd_files.get(fd_info)
                    if file is None:
                        file = self._file_of(process, fd_info, fd)

                slot = (ts - start_ns) // SLOT_NS
                if slot < 0:
                    slot = 0
                elif slot > move_at:
                    self._move_slots(slot - SLOT_LAG)
                    move_at = slot + MOVE_EVERY_SLOTS
                if latency is not None:
                    target = "none" if kind == OPEN else (file.latency_target if file is not None else "other")
                    key = (slot, syscall, target, latency_bucket(latency))
                    process.latency[key] = process.latency.get(key, 0) + 1

                if kind == OPEN:
                    if fd is not None:
                        process.positions[fd] = 0
                    continue
                if kind == CLOSE:
                    if fd is not None:
                        process.positions.pop(fd, None)
                    continue
                if file is None or fd is None:
                    continue
                window = 0 if window_starts is None else max(0, bisect_right(window_starts, ts) - 1)
                stats = file.windows.get(window)
                if stats is None:
                    stats = file.windows[window] = _FileWindow()
                if kind == READ:
                    stats.read_calls += 1
                    if size is not None:
                        stats.read_requested_bytes += size
                    if latency is not None:
                        stats.read_ns = (stats.read_ns or 0) + latency
                    returned = result
                    if result >= 0:
                        bucket = returned.bit_length() - 1  # 0 bytes -> -1
                        stats.read_sizes[bucket] = stats.read_sizes.get(bucket, 0) + 1
                    if positioned:
                        read_offset = offset
                    else:
                        read_offset = process.positions.get(fd)
                        if read_offset is not None and returned > 0:
                            process.positions[fd] = read_offset + returned
                    if returned > 0:
                        stats.read_bytes += returned
                        if file.kind == "file":
                            process.file_bytes += returned
                    if file.kind != "file":
                        continue
                    if read_offset is not None and returned > 0:
                        if file.next_read_offset is not None and read_offset != file.next_read_offset:
                            stats.seek_jumps += 1
                            stats.run_bytes = 0
                        stats.run_bytes += returned
                        if stats.run_bytes > stats.longest_sequential_bytes:
                            stats.longest_sequential_bytes = stats.run_bytes
                        file.next_read_offset = read_offset + returned
                        stats.pages.add(read_offset // PAGE_BYTES, (read_offset + returned - 1) // PAGE_BYTES + 1)
                        cell_key = (file.index, slot, read_offset // HEATMAP_OFFSET_BYTES)
                        cell = process.heatmap.get(cell_key)
                        if cell is None:
                            process.heatmap[cell_key] = [1, returned]
                        else:
                            cell[0] += 1
                            cell[1] += returned
                    elif returned > 0:
                        file.next_read_offset = None  # lost track of where the file is being read
                    record = (entry_ts, tid, syscall, fd, file.number, read_offset, size, result, latency, None)
                elif kind == WRITE:
                    stats.write_calls += 1
                    if result > 0:
                        stats.write_bytes += result
                        if file.kind == "file":
                            process.file_bytes += result
                        if not positioned and fd in process.positions:
                            process.positions[fd] += result
                    continue
                else:  # SEEK
                    stats.lseek_calls += 1
                    if result >= 0:
                        process.positions[fd] = result
                    else:
                        process.positions.pop(fd, None)
                    if file.kind != "file":
                        continue
                    record = (entry_ts, tid, syscall, fd, file.number, _signed64(offset), whence, result, latency, None)
                # A per-call record of a read or lseek on a file, for the events table; past the
                # limit only counted (the trace says how many: unstreamed_events).
                process.records += 1
                if event_limit is None or process.records <= event_limit:
                    process.staged.append(record)
                    held += 1
                    if held >= memory_rows:
                        self.spool.spill()
                        held = 0
        finally:
            self.last_ns = last_ns
            self._move_at = move_at

    def _move_slots(self, below: int) -> None:
        """Moves every process's heat-map and latency cells of slots before `below` to disk."""
        for process in self.processes.values():
            process.heatmap_cells.move(below, process.pid, self.heatmap_spool)
            process.latency_cells.move(below, process.pid, self.latency_spool)

    def _file(
        self, process: _Process, fd_info: Fd, path: str, kind: str, local: str | None, remote: str | None
    ) -> _File:
        # An fd reused for a file seen before (reopened) is the same trace file.
        identity = (path, kind)
        file = process.files.get(identity)
        if file is None:
            file = _File(len(process.file_list), path, kind, local, remote)
            process.file_list.append(file)
            process.files[identity] = file
        process.fd_files[fd_info] = file
        return file

    # -- choosing and writing -------------------------------------------------------------------
    def choose(self, pid: int | None, proc: str | None) -> tuple[_Process, str]:
        if pid is not None:
            if pid not in self.processes:
                raise CasstraceError(
                    f"the capture holds no reads, writes, seeks, opens or closes of pid {pid}",
                    "check the pid with `sysdig -r FILE -c topprocs_file`, or leave out --pid",
                )
            return self.processes[pid], "pid"
        if not self.processes:
            what = f"of a process named {proc!r}" if proc else "of any process"
            raise CasstraceError(
                f"the capture holds no reads, writes, seeks, opens or closes {what}",
                "check the capture with `sysdig -r FILE -c topprocs_file`",
            )
        chosen = max(self.processes.values(), key=lambda p: (p.file_bytes, p.events))
        return chosen, ("name, most file I/O" if proc else "most file I/O")

    @staticmethod
    def check_readable(process: _Process) -> None:
        """Refuses a capture whose I/O calls cannot be tied to fds: old-format exit events (no fd of
        their own) whose enter events are all missing."""
        if process.blind and not process.paired:
            raise CasstraceError(
                "the capture's I/O exit events name no fd and its enter events, which do, are missing"
                " (an old-format capture whose enter events were filtered out or lost)",
                "capture again with enter events (sysdig's default), or with falcosecurity libs >= 0.23,"
                " whose exit events carry their fd",
            )

    def write(self, writer: "TraceWriter", process: _Process, meta: dict[str, Any]) -> None:
        assert self.first_ns is not None and self.last_ns is not None  # choose() found calls
        if self.windows:
            window_ids = [writer.add_window(w.label, w.start_ns, w.end_ns, w.execution) for w in self.windows]
            capture_ns = (self.windows[0].start_ns, self.windows[-1].end_ns)
        else:  # one window 'capture', the whole of it
            window_ids = [writer.add_window("capture", self.first_ns, self.last_ns)]
            capture_ns = (self.first_ns, self.last_ns)
        file_ids = [
            writer.file_id(f.path, f.kind, local_addr=f.local_addr, remote_addr=f.remote_addr)
            for f in process.file_list
        ]
        file_io, read_sizes, coverage = _file_window_rows(process, window_ids, file_ids)
        writer.add_file_io(file_io)
        writer.add_read_sizes(read_sizes)
        writer.add_coverage(coverage)
        writer.add_heatmap(
            dict(file_id=file_ids[index], source="syscall", slot=slot, offset_bucket=bucket, calls=calls, bytes=nbytes)
            for (index, slot, bucket), (calls, nbytes) in process.heatmap_cells.merged(process.pid, self.heatmap_spool)
        )
        if process.paired:
            writer.add_latency(
                dict(slot=slot, syscall=syscall, target=target, bucket=bucket, count=count)
                for (slot, syscall, target, bucket), count in process.latency_cells.merged(
                    process.pid, self.latency_spool
                )
            )
        unstreamed = self._write_events(writer, process, file_ids)
        writer.add_threads(process.threads)
        writer.set_meta(
            **SYSDIG.meta(),
            measures={
                "syscalls": True,
                "offsets": True,
                "page_cache": False,
                "latency": bool(process.paired),
                "wire": True,
                # a syscall view: writes, but no page cache; sync calls are generic events (no fd, no address)
                "dirtied": False,
                "written_back": False,
                "syncs": False,
            },
            pid=process.pid,
            process=process.exe,
            capture_start_ns=capture_ns[0],
            capture_end_ns=capture_ns[1],
            clock_offset_ns=0,
            slot_ns=SLOT_NS,
            heatmap_offset_bytes=HEATMAP_OFFSET_BYTES,
            unstreamed_events=unstreamed,
            **meta,
        )

    def _write_events(self, writer: "TraceWriter", process: _Process, file_ids: list[int]) -> int:
        """Moves the process's records into the trace, up to the event limit; returns how many
        were left out."""
        rows = self.spool.of_process(process.pid)  # up to the limit: the folds keep no more
        if file_ids != [file.number for file in process.file_list]:  # the trace held files already
            rows = (
                (ts, tid, syscall, fd, file_ids[cast(int, number) - 1], offset, requested, returned, latency, misses)
                for ts, tid, syscall, fd, number, offset, requested, returned, latency, misses in rows
            )
        writer.add_events(rows)
        return self.unstreamed(process)

    def unstreamed(self, process: _Process) -> int:
        """The process's per-call records past the event limit (the folds counted, not kept, them)."""
        return 0 if self.event_limit is None else max(0, process.records - self.event_limit)

    def close(self) -> None:
        self.spool.close()
        self.heatmap_spool.close()
        self.latency_spool.close()


def _file_window_rows(
    process: _Process, window_ids: list[int], file_ids: list[int]
) -> tuple[list["FileIORow"], list["ReadSizeRow"], list["CoverageRow"]]:
    """The process's figures of each file in each window, as the trace's rows (by the trace's ids)."""
    file_io: list[FileIORow] = []
    read_sizes: list[ReadSizeRow] = []
    coverage: list[CoverageRow] = []
    for file in process.file_list:
        file_id = file_ids[file.index]
        for window, stats in file.windows.items():
            window_id = window_ids[window]
            file_io.append(
                {
                    "window_id": window_id,
                    "file_id": file_id,
                    "read_calls": stats.read_calls,
                    "read_bytes": stats.read_bytes,
                    "read_requested_bytes": stats.read_requested_bytes,
                    "read_ns": stats.read_ns,
                    "write_calls": stats.write_calls,
                    "write_bytes": stats.write_bytes,
                    "lseek_calls": stats.lseek_calls,
                    "seek_jumps": stats.seek_jumps,
                    "longest_sequential_bytes": stats.longest_sequential_bytes,
                    "cache_miss_pages": None,
                    "cache_miss_bytes": None,
                }
            )
            read_sizes.extend(
                {"window_id": window_id, "file_id": file_id, "log2_bucket": bucket, "count": count}
                for bucket, count in stats.read_sizes.items()
            )
            coverage.extend(
                {
                    "window_id": window_id,
                    "file_id": file_id,
                    "source": "syscall",
                    "first_page": start,
                    "page_count": end - start,
                }
                for start, end in stats.pages.runs()
            )
    return file_io, read_sizes, coverage


def _capture_error(scap: Path, error: ScapError) -> CasstraceError:
    if error.truncated:
        return CasstraceError(f"{scap} is truncated: {error}", "copy the capture again, whole")
    return CasstraceError(
        f"{scap} is not a sysdig capture casstrace can read: {error}", "give a .scap file written by `sysdig -w`"
    )


def import_scap(
    scap: str | os.PathLike,
    writer: "TraceWriter",
    *,
    pid: int | None = None,
    proc: str | None = None,
    windows: "list[Window] | None" = None,
    source: str | None = None,
    event_limit: int | None = None,
    meta: dict[str, Any] | None = None,
    filtered_to_pid: bool = False,
) -> ImportSummary:
    """Reads a sysdig capture into `writer` (a TraceWriter): one process — `pid`, or the process
    whose executable is `proc`, or else the one with the most file I/O — with `windows` (default:
    one window 'capture' from its first to its last event); `meta` adds to the trace's meta.
    `filtered_to_pid`: the capture holds `pid`'s events only (a live capture's filter), so a thread
    it never introduces is one of pid's. Raises CasstraceError on any failure, after which the
    caller discards the writer."""
    scap = Path(scap)
    if not scap.is_file():
        raise CasstraceError(f"no capture file at {scap}", "give the path of a .scap file")
    if proc is not None and (not proc or "/" in proc):
        raise CasstraceError(
            f"--proc {proc!r} is not a process name", "give the executable's name, e.g. --proc java, or use --pid"
        )
    importer = ScapImporter(windows, None, event_limit, pid=pid, proc=proc)
    # An import allocates millions of small tuples that reference counting frees; the cyclic
    # collector would only walk the live ones again and again (a sixth of the time) and find no
    # cycle among them: it waits until the import is done.
    collecting = gc.isenabled()
    gc.disable()
    try:
        reader = ScapReader(scap, pid if filtered_to_pid else None)
        try:
            importer.fold(reader.calls())
        except ScapError as error:
            raise _capture_error(scap, error) from None
        chosen, chosen_by = importer.choose(pid, proc)
        importer.check_readable(chosen)
        notes = [
            "a scap file does not record the driver's drops: lost_events 0 means none are"
            " recorded, not that none happened",
            f"process chosen by {chosen_by}: pid {chosen.pid} ({chosen.exe})",
        ]
        if not chosen.paired:
            notes.append(
                "the capture holds no enter events (falcosecurity libs >= 0.23 write exit"
                " events only): syscall latency is not measured"
            )
        elif chosen.blind:
            notes.append(
                f"{chosen.blind} I/O calls had no enter event (in flight when the capture"
                " began) and name no fd: they are counted as calls, not as file I/O"
            )
        importer.write(
            writer,
            chosen,
            dict(
                source=source or f"import of {scap.name}",
                lost_events=0,
                notes=notes,
                **(meta or {}),
            ),
        )
        unstreamed = importer.unstreamed(chosen)
        return ImportSummary(
            chosen.pid,
            chosen.exe,
            chosen_by,
            chosen.events,
            chosen.file_bytes,
            bool(chosen.paired),
            chosen.records - unstreamed,
            unstreamed,
        )
    finally:
        importer.close()
        if collecting:
            gc.enable()


def _compiled_fold() -> Any:
    """ScapImporter's fold compiled from probes/sysdig/scap_fold.c (scripts/install builds it), told the
    units above; None where it was not built (no compiler): _fold_python folds the same."""
    try:
        from casstrace.probes.sysdig import _scap_fold
    except ImportError:
        return None
    _scap_fold.configure(
        OPEN,
        CLOSE,
        READ,
        WRITE,
        SEEK,
        SLOT_NS,
        HEATMAP_OFFSET_BYTES,
        PAGE_BYTES,
        latency_bucket_starts(),
        "none",
        "other",
        "file",
    )
    return _scap_fold.Fold


# Which fold folds: the compiled one when built (tests set it to None to check both fold the same).
COMPILED_FOLD = _compiled_fold()
