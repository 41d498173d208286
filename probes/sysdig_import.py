"""Turning a sysdig capture (.scap) into a casstrace trace.

The installed `sysdig -r` does the parsing (it knows the scap formats it was built for): we ask it
for a few fields of the syscalls casstrace uses, one tab-separated line per event, and fold that
stream into the trace's tables line by line. Memory holds per-file aggregates only; per-call records
wait in a spool (memory, then disk) until the process is chosen, then go into the trace.

What a scap can tell, and what it cannot:
- calls, bytes, fds with their names and types, pread/preadv/pwrite offsets, lseek arguments and
  results: always.
- the offset of a plain read/readv: only where the fd's position is known from the capture itself
  (the fd was opened or lseek'd in it); otherwise NULL.
- latency: only from enter/exit pairs. sysdig builds on falcosecurity libs >= 0.23 write exit events
  only; their captures give `measures.latency` false, never zeros.
- page-cache misses (so mmap reads): never, sysdig sees syscalls only (`measures.page_cache` false).
- driver drops: a scap file does not record them, so `lost_events` is 0 with a note saying so.
Data buffers are never asked for (no %evt.arg.data, no %evt.args).
"""

import itertools
import os
import shutil
import sqlite3
import subprocess
import tempfile
import threading
from bisect import bisect_right
from pathlib import Path
from typing import NamedTuple

from casstrace.errors import CasstraceError
from casstrace.paths import cache_dir
from casstrace.traces.schema import HEATMAP_OFFSET_BYTES, PAGE_BYTES, SLOT_NS, latency_bucket


# sysdig event type -> the kernel's syscall name (what the bcc backend records)
READ_SYSCALLS = {"read": "read", "pread": "pread64", "readv": "readv", "preadv": "preadv",
                 "recv": "recv", "recvfrom": "recvfrom", "recvmsg": "recvmsg"}
WRITE_SYSCALLS = {"write": "write", "pwrite": "pwrite64", "writev": "writev", "pwritev": "pwritev",
                  "send": "send", "sendto": "sendto", "sendmsg": "sendmsg"}
SEEK_SYSCALLS = {"lseek": "lseek", "llseek": "llseek"}
OPEN_SYSCALLS = {"open": "open", "openat": "openat", "openat2": "openat2", "creat": "creat"}
CLOSE_SYSCALLS = {"close": "close"}
SYSCALL_NAMES = READ_SYSCALLS | WRITE_SYSCALLS | SEEK_SYSCALLS | OPEN_SYSCALLS | CLOSE_SYSCALLS
IO_SYSCALLS = frozenset(READ_SYSCALLS) | frozenset(WRITE_SYSCALLS) | frozenset(SEEK_SYSCALLS)
# These carry their own offset and leave the fd's position alone.
POSITIONED = {"pread", "preadv", "pwrite", "pwritev"}
# Opens and closes matter only for their result (the fd a position starts at 0 on, or forgets).
EXIT_ONLY = sorted(OPEN_SYSCALLS) + sorted(CLOSE_SYSCALLS)

# One line per event. Free-text fields come last: the thread name, then the fd name (a path may hold
# anything, so it takes the rest of the line). '*' prints events that lack some of the fields.
# (proc.name is the thread's name in sysdig 0.29.)
FIELDS = ("%evt.dir %evt.rawtime %proc.pid %thread.tid %evt.type %fd.num %fd.typechar %fd.is_server"
          " %fd.l4proto %evt.rawarg.res %evt.arg.size %evt.arg.pos %evt.arg.offset %evt.arg.whence"
          " %proc.exe %proc.name %fd.name").split()
OUTPUT_FORMAT = "*" + "\t".join(FIELDS)
NA = "<NA>"

FD_KINDS = {"f": "file", "4": "socket", "6": "socket", "u": "socket", "p": "pipe"}
# sysdig's type letters for the fds that are neither files nor sockets, to name them by
FD_TYPE_NAMES = {"p": "pipe", "e": "eventfd", "s": "signalfd", "l": "eventpoll", "i": "inotify",
                 "t": "timerfd", "n": "netlink", "b": "bpf", "r": "userfaultfd", "o": "fd"}
SEEK_WHENCE = {"SEEK_SET": 0, "SEEK_CUR": 1, "SEEK_END": 2}

INSTALL_FIX = "install sysdig (Debian/Ubuntu: apt-get install sysdig), or put it on PATH"


class Window(NamedTuple):
    label: str
    execution: int | None
    start_ns: int
    end_ns: int


class ImportSummary(NamedTuple):
    pid: int
    process: str
    chosen_by: str       # why this process: 'pid', 'name', or 'most file I/O'
    events: int          # sysdig events of the process that went into the trace
    file_bytes: int      # bytes read and written on files by the process
    latency: bool


def find_sysdig() -> str:
    path = shutil.which("sysdig")
    if path is None:
        raise CasstraceError("sysdig is not installed (no `sysdig` on PATH)", INSTALL_FIX)
    return path


def sysdig_filter(pid: int | None = None, proc: str | None = None) -> str:
    """A sysdig filter for the event types casstrace uses, of one process (pid) or of processes
    whose executable is `proc`. Open/close enter events carry nothing we use and are dropped."""
    conditions = [f"evt.type in ({','.join(sorted(SYSCALL_NAMES))})",
                  f"not (evt.dir='>' and evt.type in ({','.join(EXIT_ONLY)}))"]
    if pid is not None:
        conditions.insert(0, f"proc.pid={int(pid)}")
    elif proc is not None:
        if not proc or any(ch in proc for ch in " \t\"'()/\\"):
            raise CasstraceError(f"--proc {proc!r} is not a process name",
                                 "give the executable's name, e.g. --proc java, or use --pid")
        # proc.exe is argv[0]; proc.exepath the binary. (proc.name names the thread in sysdig
        # 0.29, so it would pick single threads out of a process.)
        conditions.insert(0, f'(proc.exe="{proc}" or proc.exepath endswith "/{proc}")')
    return " and ".join(conditions)


# -- per-file aggregates --------------------------------------------------------------------------
class _PageRuns:
    """Disjoint sorted runs of pages [start, end), merged as they are added: stays small for the
    mostly sequential reads of real workloads, however many pages they cover."""

    __slots__ = ("starts", "ends")

    def __init__(self):
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

    def runs(self):
        return zip(self.starts, self.ends)


class _FileWindow:
    """One file's totals in one window (a row of file_io, plus its read_sizes and coverage)."""

    __slots__ = ("read_calls", "read_bytes", "read_requested_bytes", "read_ns", "write_calls",
                 "write_bytes", "lseek_calls", "seek_jumps", "longest_sequential_bytes",
                 "run_bytes", "read_sizes", "pages")

    def __init__(self):
        self.read_calls = self.read_bytes = self.read_requested_bytes = 0
        self.read_ns = None
        self.write_calls = self.write_bytes = self.lseek_calls = 0
        self.seek_jumps = self.longest_sequential_bytes = self.run_bytes = 0
        self.read_sizes: dict[int, int] = {}
        self.pages = _PageRuns()


class _File:
    __slots__ = ("index", "path", "kind", "latency_target", "local_addr", "remote_addr",
                 "next_read_offset", "windows")

    def __init__(self, index, path, kind, local_addr=None, remote_addr=None):
        self.index = index
        self.path = path
        self.kind = kind
        # what the latency spectrogram calls the target of a call on this fd
        self.latency_target = kind if kind in ("file", "socket") else "other"
        self.local_addr = local_addr
        self.remote_addr = remote_addr
        self.next_read_offset = None
        self.windows: dict[int, _FileWindow] = {}


def describe_fd(fd: int | None, typechar: str, name: str, is_server: str, l4proto: str):
    """(path, kind, local_addr, remote_addr) of an fd as sysdig names it. sysdig names an IP
    socket 'client:port->server:port' whichever side we are; the trace names it local->remote."""
    kind = FD_KINDS.get(typechar, "other" if typechar not in (NA, "") else "unknown")
    if kind == "socket" and typechar in "46" and "->" in name:
        client, server = name.split("->", 1)
        local, remote = (server, client) if is_server == "true" else (client, server)
        proto = l4proto if l4proto not in (NA, "") else "ip"
        return f"{proto} {local}->{remote}", kind, local, remote
    if name in (NA, ""):
        return f"{FD_TYPE_NAMES.get(typechar, kind)} fd {fd}", kind, None, None
    if kind == "socket":
        return f"unix {name}", kind, None, None
    return name, kind, None, None


def _to_int(text: str) -> int | None:
    """A number sysdig printed, or None for <NA>; leading digits of '3(SEEK_END)'-style values."""
    if text == NA or not text:
        return None
    try:
        return int(text)
    except ValueError:
        digits = text.split("(", 1)[0]
        return int(digits) if digits.lstrip("-").isdigit() else None


def _signed64(value: int | None) -> int | None:
    # sysdig prints lseek's offset as UINT64; a negative offset wraps.
    return value - (1 << 64) if value is not None and value >= 1 << 63 else value


def _whence(text: str) -> int | None:
    for name, value in SEEK_WHENCE.items():
        if name in text:
            return value
    return _to_int(text)


class _Process:
    """Everything one process did in the capture, folded into the trace's aggregates."""

    def __init__(self, pid: int, exe: str):
        self.pid = pid
        self.exe = exe
        self.threads: dict[int, str] = {}
        self.fd_files: dict[tuple, _File] = {}       # what sysdig said about an fd -> its file
        self.files: dict[tuple, _File] = {}          # (path, kind) -> file
        self.file_list: list[_File] = []
        self.positions: dict[int, int] = {}    # fd -> file position, where the capture shows it
        self.pending: dict[int, tuple] = {}    # tid -> enter event waiting for its exit
        self.heatmap: dict[tuple, list] = {}   # (file index, slot, offset bucket) -> [calls, bytes]
        self.latency: dict[tuple, int] = {}    # (slot, syscall, target, bucket) -> count
        self.events = 0
        self.records = 0     # per-call records (the events table)
        self.paired = 0      # exits matched with their enter event
        self.blind = 0       # I/O exits with neither an enter event nor arguments of their own
        self.file_bytes = 0


class _EventSpool:
    """Per-call records of every process, in arrival order, until one process is chosen: in memory
    up to MEMORY_ROWS, the rest in a database under `directory`, so a long capture never sits in
    memory whole. Rows are (pid, ts_ns, tid, syscall, fd, file index, offset, requested, returned,
    latency_ns)."""

    MEMORY_ROWS = 100_000

    def __init__(self, directory: Path):
        self.directory = directory
        self.rows: list[tuple] = []
        self.db = None

    def spill(self) -> None:
        """Moves the rows in memory to disk (the importer appends to `rows` and calls this once
        they reach MEMORY_ROWS)."""
        if self.db is None:
            self.db = sqlite3.connect(self.directory / "events.db")
            self.db.execute("PRAGMA journal_mode = OFF")
            self.db.execute("PRAGMA synchronous = OFF")
            self.db.execute("CREATE TABLE events (pid, ts_ns, tid, syscall, fd, file_index, offset,"
                            " requested, returned, latency_ns)")
        self.db.executemany("INSERT INTO events VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", self.rows)
        self.rows.clear()

    def of_process(self, pid: int):
        """The process's records in arrival order, without the pid."""
        if self.db is not None:
            yield from self.db.execute(
                "SELECT ts_ns, tid, syscall, fd, file_index, offset, requested, returned, latency_ns"
                " FROM events WHERE pid = ? ORDER BY rowid", (pid,))
        for row in self.rows:
            if row[0] == pid:
                yield row[1:]

    def close(self) -> None:
        if self.db is not None:
            self.db.close()


class ScapImporter:
    """Folds sysdig's event lines into per-process aggregates; `write` puts one process in a trace."""

    def __init__(self, windows: list[Window] | None, spool_dir: Path, event_limit: int | None = None):
        self.windows = windows
        self.window_starts = [w.start_ns for w in windows] if windows else None
        self.processes: dict[int, _Process] = {}
        self._processes_by_pid_text: dict[str, _Process] = {}   # as sysdig prints the pid
        self.first_ns = self.last_ns = self.start_ns = None
        self.event_limit = event_limit
        self.spool = _EventSpool(spool_dir)
        self.unparsed = 0

    # -- the stream -----------------------------------------------------------------------------
    def feed(self, line: str) -> None:
        """Folds one line of sysdig's output (OUTPUT_FORMAT) into the aggregates."""
        self.feed_lines((line,))

    def feed_lines(self, lines) -> None:
        """Folds lines of sysdig's output into the aggregates. This loop runs once per event and is
        most of an import's own CPU time (which competes with sysdig's for the node's cores): hence
        locals instead of attributes and the common cases inline."""
        processes = self._processes_by_pid_text
        windows, window_starts = self.windows, self.window_starts
        staged = self.spool.rows
        memory_rows = self.spool.MEMORY_ROWS
        start_ns, last_ns = self.start_ns, self.last_ns
        try:
            for line in lines:
                fields = line.rstrip("\n").split("\t", 16)
                if len(fields) != 17:
                    self.unparsed += 1
                    continue
                (direction, rawtime, pid, tid, etype, fd, typechar, is_server, l4proto, res, size, pos,
                 offset, whence, exe, thread_name, fd_name) = fields
                last_ns = ts = int(rawtime)
                if start_ns is None:
                    self.first_ns = ts
                    # Slot 0 starts with the first window, or else with the first event.
                    start_ns = self.start_ns = windows[0].start_ns if windows else ts
                process = processes.get(pid)
                if process is None:
                    process = self._process(pid, exe)
                tid = int(tid)
                if direction == ">":
                    process.pending[tid] = (etype, ts, size, pos, offset, whence)
                    continue
                process.threads[tid] = thread_name
                process.events += 1
                enter = process.pending.pop(tid, None)
                latency = None
                entry_ts = ts
                if enter is not None and enter[0] == etype:
                    entry_ts = enter[1]
                    latency = ts - entry_ts
                    process.paired += 1
                    # Old scap formats carry the arguments on the enter event, newer ones on the exit.
                    if size == NA:
                        size = enter[2]
                    if pos == NA:
                        pos = enter[3]
                    if offset == NA:
                        offset = enter[4]
                    if whence == NA:
                        whence = enter[5]
                elif size == NA and pos == NA and offset == NA and etype in IO_SYSCALLS:
                    # Without its enter event an old-format exit does not say which fd it used:
                    # sysdig names whichever fd the thread used last. Normal for calls in flight when
                    # the capture began; for a whole capture it means sysdig cannot read this format
                    # (see choose()).
                    process.blind += 1

                try:
                    fd = int(fd)
                except ValueError:
                    fd = _to_int(fd)
                file = None
                if fd is not None and fd >= 0:
                    key = (fd, typechar, fd_name, is_server, l4proto)
                    file = process.fd_files.get(key)
                    if file is None:
                        file = self._file(process, key, *describe_fd(fd, typechar, fd_name, is_server, l4proto))

                slot = (ts - start_ns) // SLOT_NS
                if slot < 0:
                    slot = 0
                if latency is not None:
                    target = "none" if etype in OPEN_SYSCALLS else (
                        file.latency_target if file is not None else "other")
                    key = (slot, SYSCALL_NAMES[etype], target, latency_bucket(latency))
                    process.latency[key] = process.latency.get(key, 0) + 1

                if etype in OPEN_SYSCALLS:
                    if fd is not None and fd >= 0:
                        process.positions[fd] = 0
                    continue
                if etype in CLOSE_SYSCALLS:
                    process.positions.pop(fd, None)
                    continue
                if file is None:
                    continue
                window = 0 if window_starts is None else max(0, bisect_right(window_starts, ts) - 1)
                stats = file.windows.get(window)
                if stats is None:
                    stats = file.windows[window] = _FileWindow()
                try:
                    result = int(res)
                except ValueError:
                    result = _to_int(res)
                if etype in READ_SYSCALLS:
                    stats.read_calls += 1
                    try:
                        size = int(size)
                    except ValueError:
                        size = _to_int(size)
                    if size is not None:
                        stats.read_requested_bytes += size
                    if latency is not None:
                        stats.read_ns = (stats.read_ns or 0) + latency
                    returned = result if result is not None else 0
                    if result is not None and result >= 0:
                        bucket = returned.bit_length() - 1   # 0 bytes -> -1
                        stats.read_sizes[bucket] = stats.read_sizes.get(bucket, 0) + 1
                    if etype in POSITIONED:
                        try:
                            read_offset = int(pos)
                        except ValueError:
                            read_offset = _to_int(pos)
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
                        file.next_read_offset = None   # lost track of where the file is being read
                    record = (process.pid, entry_ts, tid, READ_SYSCALLS[etype], fd, file.index,
                              read_offset, size, result, latency)
                elif etype in WRITE_SYSCALLS:
                    stats.write_calls += 1
                    if result is not None and result > 0:
                        stats.write_bytes += result
                        if file.kind == "file":
                            process.file_bytes += result
                        if etype not in POSITIONED and fd in process.positions:
                            process.positions[fd] += result
                    continue
                else:  # lseek
                    stats.lseek_calls += 1
                    if result is not None and result >= 0:
                        process.positions[fd] = result
                    else:
                        process.positions.pop(fd, None)
                    if file.kind != "file":
                        continue
                    record = (process.pid, entry_ts, tid, SYSCALL_NAMES[etype], fd, file.index,
                              _signed64(_to_int(offset)), _whence(whence), result, latency)
                # A per-call record of a read or lseek on a file, for the events table.
                process.records += 1
                staged.append(record)
                if len(staged) >= memory_rows:
                    self.spool.spill()
        finally:
            self.last_ns = last_ns

    def _process(self, pid_text: str, exe: str) -> _Process:
        pid = int(pid_text)
        process = self.processes.get(pid)
        if process is None:
            process = self.processes[pid] = _Process(pid, os.path.basename(exe) if exe != NA else str(pid))
        self._processes_by_pid_text[pid_text] = process
        return process

    def _file(self, process, key, path, kind, local, remote) -> _File:
        # An fd number reused for a file seen before (reopened) is the same trace file.
        identity = (path, kind)
        file = process.files.get(identity)
        if file is None:
            file = _File(len(process.file_list), path, kind, local, remote)
            process.file_list.append(file)
            process.files[identity] = file
        process.fd_files[key] = file
        return file

    # -- choosing and writing -------------------------------------------------------------------
    def choose(self, pid: int | None, proc: str | None) -> tuple[_Process, str]:
        if pid is not None:
            if pid not in self.processes:
                raise CasstraceError(f"the capture holds no reads, writes, seeks, opens or closes of pid {pid}",
                                     "check the pid with `sysdig -r FILE -c topprocs_file`, or leave out --pid")
            return self.processes[pid], "pid"
        if not self.processes:
            what = f"of a process named {proc!r}" if proc else "of any process"
            raise CasstraceError(f"the capture holds no reads, writes, seeks, opens or closes {what}",
                                 "check the capture with `sysdig -r FILE -c topprocs_file`")
        chosen = max(self.processes.values(), key=lambda p: (p.file_bytes, p.events))
        return chosen, ("name, most file I/O" if proc else "most file I/O")

    @staticmethod
    def check_readable(process: _Process, version: str) -> None:
        """Refuses a capture whose I/O calls sysdig cannot tie to fds (see `blind` in feed)."""
        if process.blind and not process.paired:
            raise CasstraceError(
                f"sysdig {version} is too old for this capture: its I/O events are exit events only"
                " (written by falcosecurity libs >= 0.23), which this sysdig reads without their fd",
                "import it with a sysdig built on falcosecurity libs >= 0.23",
            )

    def write(self, writer, process: _Process, meta: dict) -> None:
        windows = self.windows or [Window("capture", None, self.first_ns, self.last_ns)]
        window_ids = [writer.add_window(w.label, w.start_ns, w.end_ns, w.execution) for w in windows]
        file_ids = [
            writer.file_id(f.path, f.kind, local_addr=f.local_addr, remote_addr=f.remote_addr)
            for f in process.file_list
        ]
        file_io, read_sizes, coverage = [], [], []
        for file in process.file_list:
            file_id = file_ids[file.index]
            for window, stats in file.windows.items():
                window_id = window_ids[window]
                file_io.append(dict(
                    window_id=window_id, file_id=file_id,
                    read_calls=stats.read_calls, read_bytes=stats.read_bytes,
                    read_requested_bytes=stats.read_requested_bytes, read_ns=stats.read_ns,
                    write_calls=stats.write_calls, write_bytes=stats.write_bytes,
                    lseek_calls=stats.lseek_calls, seek_jumps=stats.seek_jumps,
                    longest_sequential_bytes=stats.longest_sequential_bytes,
                    cache_miss_pages=None, cache_miss_bytes=None,
                ))
                read_sizes.extend(
                    dict(window_id=window_id, file_id=file_id, log2_bucket=bucket, count=count)
                    for bucket, count in stats.read_sizes.items()
                )
                coverage.extend(
                    dict(window_id=window_id, file_id=file_id, source="syscall",
                         first_page=start, page_count=end - start)
                    for start, end in stats.pages.runs()
                )
        writer.add_file_io(file_io)
        writer.add_read_sizes(read_sizes)
        writer.add_coverage(coverage)
        writer.add_heatmap(
            dict(file_id=file_ids[index], source="syscall", slot=slot, offset_bucket=bucket,
                 calls=calls, bytes=nbytes)
            for (index, slot, bucket), (calls, nbytes) in process.heatmap.items()
        )
        if process.paired:
            writer.add_latency(
                dict(slot=slot, syscall=syscall, target=target, bucket=bucket, count=count)
                for (slot, syscall, target, bucket), count in process.latency.items()
            )
        unstreamed = self._write_events(writer, process, file_ids)
        writer.add_threads(process.threads)
        writer.set_meta(
            backend="sysdig",
            measures={"syscalls": True, "offsets": True, "page_cache": False,
                      "latency": bool(process.paired), "wire": True},
            pid=process.pid,
            process=process.exe,
            capture_start_ns=windows[0].start_ns,
            capture_end_ns=windows[-1].end_ns,
            clock_offset_ns=0,
            slot_ns=SLOT_NS,
            heatmap_offset_bytes=HEATMAP_OFFSET_BYTES,
            unstreamed_events=unstreamed,
            **meta,
        )

    def _write_events(self, writer, process, file_ids) -> int:
        """Moves the process's records into the trace, up to the event limit; returns how many
        were left out."""
        rows = itertools.islice(self.spool.of_process(process.pid), self.event_limit)
        writer.add_events((ts, tid, syscall, fd, file_ids[index], offset, requested, returned, latency)
                          for ts, tid, syscall, fd, index, offset, requested, returned, latency in rows)
        return 0 if self.event_limit is None else max(0, process.records - self.event_limit)

    def close(self) -> None:
        self.spool.close()


# -- running sysdig -------------------------------------------------------------------------------
def _read_timeout_s(scap: Path) -> float:
    # sysdig parses tens of MB/s; a run slower than 1 MB/s (plus start-up) is stuck, not busy.
    return 60 + scap.stat().st_size / 1e6


def _failure(scap: Path, returncode: int, stderr: str, version: str) -> CasstraceError:
    lines = [line.strip() for line in stderr.splitlines() if line.strip()]
    said = lines[-1] if lines else "no message"
    if returncode < 0:
        import signal   # here, not at the top: only a crashed sysdig needs it
        name = signal.Signals(-returncode).name if -returncode in signal.valid_signals() else -returncode
        return CasstraceError(
            f"sysdig {version} crashed ({name}) reading {scap}: it may be too old for this capture's"
            f" event types (last message: {said})",
            "read the capture with the sysdig version that wrote it, or a newer one",
        )
    if "truncated" in said:
        return CasstraceError(f"{scap} is truncated: sysdig {version} says: {said}",
                              "copy the capture again, whole")
    if "Could not initialize reader" in said or "error reading from file" in said:
        return CasstraceError(f"{scap} is not a sysdig capture sysdig {version} can read: {said}",
                              "give a .scap file written by `sysdig -w`")
    return CasstraceError(f"sysdig {version} could not read {scap} (exit status {returncode}): {said}",
                          "check the file with `sysdig -r FILE`; a newer sysdig may read it")


class SysdigVersion:
    """`sysdig --version`. Asking costs a start-up of sysdig (~18 ms of CPU, a third of what the
    import's own sysdig run costs on the largest shared capture), so the answer is kept in the cache
    dir under the binary's identity (path, inode, size, mtime): an upgraded or different sysdig is
    asked again. When asked, it runs alongside the real work."""

    def __init__(self, sysdig: str):
        self.process = None
        try:
            binary = os.stat(sysdig)
        except OSError as error:
            raise CasstraceError(f"cannot run {sysdig}: {error}", INSTALL_FIX) from None
        self._identity = f"{os.path.realpath(sysdig)} {binary.st_ino} {binary.st_size} {binary.st_mtime_ns}"
        self._version = self._remembered()
        if self._version is None:
            try:
                self.process = subprocess.Popen([sysdig, "--version"], stdout=subprocess.PIPE,
                                                stderr=subprocess.DEVNULL, text=True)
            except OSError as error:
                raise CasstraceError(f"cannot run {sysdig}: {error}", INSTALL_FIX) from None

    def __str__(self) -> str:
        if self._version is None:
            try:
                words = self.process.communicate(timeout=30)[0].split()
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
                words = []
            if words:
                self._version = words[-1]
                self._remember()
            else:
                self._version = "(unknown version)"
        return self._version

    @staticmethod
    def _cache() -> Path:
        return cache_dir() / "sysdig-version"

    def _remembered(self) -> str | None:
        try:
            identity, version = self._cache().read_text().split("\n")[:2]
        except (OSError, ValueError):
            return None
        return version if identity == self._identity and version else None

    def _remember(self) -> None:
        # One entry, the sysdig last asked; written aside and renamed, so a reader never sees half.
        cache = self._cache()
        aside = cache.with_name(f".{cache.name}.{os.getpid()}")
        try:
            cache.parent.mkdir(parents=True, exist_ok=True)
            aside.write_text(f"{self._identity}\n{self._version}\n")
            os.replace(aside, cache)
        except OSError:
            aside.unlink(missing_ok=True)   # an unwritable cache only means asking again next time


def _stream(command: list[str], feed_lines, stderr, timeout_s: float) -> tuple[int, bool]:
    """Runs sysdig, handing the lines it prints to `feed_lines` as they come. Returns (exit status, timed out):
    a sysdig that is still running after timeout_s is killed, never waited on forever."""
    try:
        process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=stderr, text=True,
                                   errors="replace", bufsize=1 << 16)
    except OSError as error:
        raise CasstraceError(f"cannot run {command[0]}: {error}", INSTALL_FIX) from None
    timed_out = threading.Event()

    def stop_stuck_sysdig():
        timed_out.set()
        process.kill()

    watchdog = threading.Timer(timeout_s, stop_stuck_sysdig)
    watchdog.start()
    try:
        feed_lines(process.stdout)
        return process.wait(), timed_out.is_set()
    finally:
        watchdog.cancel()
        if process.poll() is None:   # we are leaving on an exception (or Ctrl-C)
            process.kill()
            process.wait()
        process.stdout.close()


def import_scap(scap: str | os.PathLike, writer, *, pid: int | None = None, proc: str | None = None,
                windows: list[Window] | None = None, source: str | None = None,
                event_limit: int | None = None, timeout_s: float | None = None) -> ImportSummary:
    """Reads a sysdig capture into `writer` (a TraceWriter): one process — `pid`, or the process
    whose executable is `proc`, or else the one with the most file I/O — with `windows` (default:
    one window 'capture' from its first to its last event). Raises CasstraceError on any failure,
    after which the caller discards the writer."""
    scap = Path(scap)
    if not scap.is_file():
        raise CasstraceError(f"no capture file at {scap}", "give the path of a .scap file")
    sysdig = find_sysdig()
    version = SysdigVersion(sysdig)
    command = [sysdig, "-r", str(scap), "-p", OUTPUT_FORMAT, sysdig_filter(pid, proc)]
    timeout_s = _read_timeout_s(scap) if timeout_s is None else timeout_s
    with tempfile.TemporaryDirectory(prefix="casstrace-import-") as spool_dir, \
            tempfile.TemporaryFile(mode="w+", dir=spool_dir) as stderr:
        importer = ScapImporter(windows, Path(spool_dir), event_limit)
        try:
            returncode, timed_out = _stream(command, importer.feed_lines, stderr, timeout_s)
            if timed_out:
                raise CasstraceError(f"sysdig {version} did not finish reading {scap} within {timeout_s:.0f} s",
                                     "check the file with `sysdig -r FILE`; a newer sysdig may read it")
            if returncode != 0:
                stderr.seek(0)
                raise _failure(scap, returncode, stderr.read(), str(version))
            chosen, chosen_by = importer.choose(pid, proc)
            importer.check_readable(chosen, version)
            notes = [
                "a scap file does not record the driver's drops: lost_events 0 means none are"
                " recorded, not that none happened",
                f"process chosen by {chosen_by}: pid {chosen.pid} ({chosen.exe})",
            ]
            if not chosen.paired:
                notes.append("the capture holds no enter events (sysdig on falcosecurity libs >= 0.23"
                             " writes exit events only): syscall latency is not measured")
            elif chosen.blind:
                notes.append(f"{chosen.blind} I/O calls had no enter event (in flight when the capture"
                             " began): sysdig names their fd from the thread's previous call")
            if importer.unparsed:
                notes.append(f"{importer.unparsed} lines of sysdig output could not be parsed")
            importer.write(writer, chosen, dict(
                source=source or f"import of {scap.name}",
                lost_events=0,
                sysdig_version=str(version),
                notes=notes,
            ))
            return ImportSummary(chosen.pid, chosen.exe, chosen_by, chosen.events, chosen.file_bytes,
                                 bool(chosen.paired))
        finally:
            importer.close()
