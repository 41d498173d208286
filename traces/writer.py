"""Writing a trace file so that it is either absent or whole.

Everything goes into a hidden `.NAME.partial` beside the target; only `finish()` renames it into
place (os.replace is atomic on one filesystem), under casstrace.outputs' rules: an existing file
is replaced only with force, and never anything but a regular file (both checked when the writer
is made, before any capture, and again at the rename). A run that fails before it has anything worth
keeping calls `discard()`; a run that was interrupted part-way calls `finish(complete=False, ...)`
so the user keeps what was captured, clearly marked incomplete.

The writer holds an exclusive flock on its `.partial` while it writes, so a `.partial` nobody
holds is one a killed casstrace (SIGKILL, a crash, a power cut) left: the next writer in that
directory, and `casstrace traces`, remove those (remove_stale_partials).
"""

from __future__ import annotations  # the row types below are for mypy: rows.py loads in no writer

import contextlib
import errno
import fcntl
import json
import operator
import os
import sqlite3
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Unpack

from casstrace import __version__, outputs
from casstrace.errors import CasstraceError
from casstrace.traces.schema import FORMAT_VERSION, INDEXES, SCHEMA
from casstrace.traces.tables import TABLE, insert_sql

if TYPE_CHECKING:
    from casstrace.traces.rows import (
        CoverageRow,
        EventRow,
        ExecutionRow,
        FileIORow,
        HeatmapRow,
        LatencyRow,
        MappingRow,
        NodeRow,
        PageCacheFillRow,
        ProfileReadRow,
        ProfileSampleRow,
        ReadSizeRow,
        SessionThreadRow,
        StatementSessionRow,
        SyncLatencyRow,
        ThreadCpuRow,
        ThreadIORow,
        WindowMeasureRow,
    )

COVERAGE_COLUMNS = TABLE["coverage"].column_names
# every column but node_id, which only a merge of several nodes fills (EventRow's order)
EVENT_COLUMNS = tuple(name for name in TABLE["events"].column_names if name != "node_id")


def _bulk_insert() -> Callable[[str, str, tuple[str, ...], Iterable[Sequence[object]]], None] | None:
    """traces/bulk_insert.c's insert, where it was built (scripts/install: gcc, python3-dev,
    libsqlite3-dev); else None, and executemany inserts the same rows."""
    try:
        from casstrace.traces import _bulk_insert
    except ImportError:
        return None
    return _bulk_insert.insert


# The compiled bulk insert when built (tests set it to None to check both insert the same).
BULK_INSERT = _bulk_insert()


class TraceWriter:
    def __init__(
        self, path: str | os.PathLike[str], force: bool = False, inputs: Iterable[str | os.PathLike[str]] = ()
    ):
        """Raises CasstraceError when `path` may not be written (see casstrace.outputs: `inputs` are
        the files the command reads, which it never writes over), or while another casstrace writes it."""
        self.inputs = tuple(inputs)
        self.path = outputs.check_output(path, force, self.inputs)
        self.force = force
        self.partial_path = outputs.partial_path(self.path)
        self._lock: int | None = None
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            remove_stale_partials(self.path.parent, keep=self.inputs)
            self._lock = _claim(self.partial_path)
            self.db = sqlite3.connect(self.partial_path)
            # The partial file is thrown away on a crash, so durability per statement buys nothing.
            self.db.execute("PRAGMA journal_mode = OFF")
            self.db.execute("PRAGMA synchronous = OFF")
            self.db.executescript(f"BEGIN; {SCHEMA} COMMIT;")  # one transaction: a third of the time
        except (OSError, sqlite3.Error) as error:
            if self._lock is not None:
                with contextlib.suppress(OSError):
                    self.partial_path.unlink(missing_ok=True)
                os.close(self._lock)
            if _is_disk_full(error):
                raise outputs.disk_full(self.path) from None
            reason = error.strerror if isinstance(error, OSError) else str(error)
            raise CasstraceError(
                f"cannot write a trace at {self.path} ({reason})", "choose a writable --out path"
            ) from None
        self._file_ids: dict[tuple[str, str, int | None, int | None], int] = {}
        # (dev, inode) -> the first 'file' row with them (file_of_inode): a node of 5,000 SSTables maps
        # 10,000 files, and a query of the files table for each took 2.5 s of writing its trace.
        self._inode_ids: dict[tuple[int, int], int] = {}
        self._stack_ids: dict[str, int] = {}
        self.set_meta(
            format_version=FORMAT_VERSION,
            casstrace_version=__version__,
            # os.uname() is what platform.node() and .release() read, without importing platform
            hostname=os.uname().nodename,
            kernel=os.uname().release,
            clock_offset_ns=time.time_ns() - time.monotonic_ns(),
        )

    # -- metadata ---------------------------------------------------------------------------
    def set_meta(self, **values: Any) -> None:
        self.db.executemany(
            "INSERT OR REPLACE INTO meta(key, value) VALUES (?, ?)",
            [(key, json.dumps(value)) for key, value in values.items()],
        )

    def meta(self) -> dict[str, Any]:
        """The meta written so far."""
        return {key: json.loads(value) for key, value in self.db.execute("SELECT key, value FROM meta")}

    def add_measures(self, **taken: bool) -> None:
        """Add measures to meta `measures` (whatever the backend already recorded stays)."""
        row = self.db.execute("SELECT value FROM meta WHERE key = 'measures'").fetchone()
        self.set_meta(measures={**(json.loads(row[0]) if row else {}), **taken})

    # -- files ------------------------------------------------------------------------------
    def file_id(
        self,
        path: str,
        kind: str,
        *,
        size_bytes: int | None = None,
        dev: int | None = None,
        inode: int | None = None,
        local_addr: str | None = None,
        remote_addr: str | None = None,
    ) -> int:
        """The id of a file, adding it on first sight. Files are the same when path, kind,
        device and inode agree (a path re-created during the capture is a new file)."""
        key = (path, kind, dev, inode)
        found = self._file_ids.get(key)
        if found is not None:
            if size_bytes is not None:
                self.db.execute("UPDATE files SET size_bytes = ? WHERE file_id = ?", (size_bytes, found))
            return found
        cursor = self.db.execute(
            "INSERT INTO files(path, kind, size_bytes, dev, inode, local_addr, remote_addr)"
            " VALUES (?, ?, ?, ?, ?, ?, ?)",
            (path, kind, size_bytes, dev, inode, local_addr, remote_addr),
        )
        assert cursor.lastrowid is not None  # an INSERT of one row
        self._file_ids[key] = cursor.lastrowid
        if kind == "file" and dev is not None and inode is not None:
            self._inode_ids.setdefault((dev, inode), cursor.lastrowid)
        return cursor.lastrowid

    def file_of_inode(self, path: str, dev: int, inode: int, size_bytes: int | None = None) -> int:
        """The id of the file with this device and inode, whatever path a capture named it by, adding
        it under `path` when no file has them yet (a file seen only through a memory map)."""
        found = self._inode_ids.get((dev, inode))
        if found is not None:
            return found
        return self.file_id(path, "file", size_bytes=size_bytes, dev=dev, inode=inode)

    # -- nodes (format 3) --------------------------------------------------------------------
    def add_nodes(self, rows: Iterable[NodeRow]) -> None:
        self._insert("nodes", rows)

    def files_of_node(self, node_id: int) -> None:
        """Every file not yet given a node is that node's (a trace of one captured JVM)."""
        self.db.execute("UPDATE files SET node_id = ? WHERE node_id IS NULL", (node_id,))

    # -- windows and executions ------------------------------------------------------------
    def add_window(self, label: str, start_ns: int, end_ns: int, execution: int | None = None) -> int:
        cursor = self.db.execute(
            "INSERT INTO windows(label, execution, start_ns, end_ns) VALUES (?, ?, ?, ?)",
            (label, execution, start_ns, end_ns),
        )
        assert cursor.lastrowid is not None  # an INSERT of one row
        return cursor.lastrowid

    def add_execution(self, **columns: Unpack[ExecutionRow]) -> None:
        self._insert("executions", [columns])

    # -- bulk measurements -----------------------------------------------------------------
    def add_file_io(self, rows: Iterable[FileIORow]) -> None:
        self._insert("file_io", rows)

    def add_mapped_touched(self, rows: Iterable[tuple[int, int, int, int]]) -> None:
        """rows: (window_id, file_id, mapped_touched_bytes, mapped_huge_bytes), into file_io beside
        what the other measures wrote for the same window and file."""
        self.db.executemany(
            "INSERT INTO file_io(window_id, file_id, mapped_touched_bytes, mapped_huge_bytes) VALUES (?, ?, ?, ?)"
            " ON CONFLICT(window_id, file_id) DO UPDATE SET mapped_touched_bytes = excluded.mapped_touched_bytes,"
            " mapped_huge_bytes = excluded.mapped_huge_bytes",
            rows,
        )

    def add_mappings(self, rows: Iterable[MappingRow]) -> None:
        self._insert("mappings", rows)

    def add_read_sizes(self, rows: Iterable[ReadSizeRow]) -> None:
        self._insert("read_sizes", rows)

    def add_coverage(self, rows: Iterable[CoverageRow]) -> None:
        """Every key of CoverageRow is required, so the rows stream straight into SQLite, in bulk: a
        long run writes a million of them, and grouping them by shape (_insert) costs a third more."""
        self._insert_many("coverage", COVERAGE_COLUMNS, map(operator.itemgetter(*COVERAGE_COLUMNS), rows))

    def add_heatmap(self, rows: Iterable[HeatmapRow]) -> None:
        self._insert("heatmap", rows)

    def add_latency(self, rows: Iterable[LatencyRow]) -> None:
        self._insert("latency", rows)

    def add_sync_latency(self, rows: Iterable[SyncLatencyRow]) -> None:
        self._insert("sync_latency", rows)

    def add_events(self, rows: Iterable[EventRow]) -> None:
        """The per-call rows: an import's millions, a long run's 500,000 (see _insert_many)."""
        self._insert_many("events", EVENT_COLUMNS, rows)

    def _insert_many(self, table: str, columns: tuple[str, ...], rows: Iterable[Sequence[object]]) -> None:
        """Rows (tuples in the order of `columns`) inserted through SQLite's own API where
        traces/bulk_insert.c was built (a third of the time of executemany, on a connection of its
        own, after this one commits); else by executemany."""
        if BULK_INSERT is not None:
            self.db.commit()
            BULK_INSERT(os.fspath(self.partial_path), table, columns, rows)
        else:
            self.db.executemany(insert_sql(TABLE[table], columns), rows)

    def add_page_cache_fills(self, rows: Iterable[PageCacheFillRow]) -> None:
        self._insert("page_cache_fills", rows)

    def add_stack(self, frames: Sequence[str]) -> int:
        """The id of a Java stack (frame names, root first), adding it on first sight."""
        key = json.dumps(list(frames))
        found = self._stack_ids.get(key)
        if found is None:
            cursor = self.db.execute("INSERT INTO stacks(frames) VALUES (?)", (key,))
            assert cursor.lastrowid is not None  # an INSERT of one row
            found = self._stack_ids[key] = cursor.lastrowid
        return found

    def add_profile_samples(self, rows: Iterable[ProfileSampleRow]) -> None:
        self._insert("profile_samples", rows)

    def add_profile_reads(self, rows: Iterable[ProfileReadRow]) -> None:
        self._insert("profile_reads", rows)

    def add_thread_io(self, rows: Iterable[ThreadIORow]) -> None:
        self._insert("thread_io", rows)

    def add_thread_cpu(self, rows: Iterable[ThreadCpuRow]) -> None:
        self._insert("thread_cpu", rows)

    def add_statement_sessions(self, rows: Iterable[StatementSessionRow]) -> None:
        """Statements normalized (every literal as ?) only: a trace never holds a value."""
        self._insert("statement_sessions", rows)

    def add_session_threads(self, rows: Iterable[SessionThreadRow]) -> None:
        self._insert("session_threads", rows)

    def add_window_measures(self, rows: Iterable[WindowMeasureRow]) -> None:
        """Values of registered measures (casstrace.traces.measures): ValueError for a measure with no
        entry, or one the analyses derive, before anything is written."""
        from casstrace.traces.measures import recorded  # here: the registry loads only where measures are written

        checked = list(rows)
        for row in checked:
            recorded(row["measure"])
        self._insert("window_measures", checked)

    def add_threads(self, names: dict[int, str]) -> None:
        self.db.executemany("INSERT OR REPLACE INTO threads(tid, name) VALUES (?, ?)", names.items())

    def _insert(self, table: str, rows: Iterable[Mapping[str, object]]) -> None:
        # Rows of one call share their keys; group anyway so callers may mix shapes.
        by_columns: dict[tuple[str, ...], list[tuple[object, ...]]] = {}
        for row in rows:
            by_columns.setdefault(tuple(row), []).append(tuple(row.values()))
        for columns, values in by_columns.items():
            self.db.executemany(insert_sql(TABLE[table], columns), values)

    # -- reading back what a capture wrote (for what is added after it) --------------------------
    def measured(self, measure: str) -> bool:
        """Whether the backend took `measure` (a key of meta `measures`)."""
        row = self.db.execute("SELECT value FROM meta WHERE key = 'measures'").fetchone()
        return row is not None and bool(json.loads(row[0]).get(measure))

    def window_spans(self, window_ids: Iterable[int]) -> list[tuple[int, int, int]]:
        """(start_ns, end_ns, window_id) of the given windows, by start."""
        ids = tuple(window_ids)
        return sorted(
            (start, end, window_id)
            for window_id, start, end in self.db.execute(
                "SELECT window_id, start_ns, end_ns FROM windows"
                f" WHERE window_id IN ({', '.join('?' * len(ids)) or 'NULL'})",
                ids,
            )
        )

    def logged_reads(self, window_ids: Iterable[int]) -> list[tuple[int, int, int, int, int, int]]:
        """(ts_ns, tid, file_id, bytes returned, window_id, cache_miss_pages) of every logged read on a
        named file inside the given windows (a failed read returned 0 bytes; fills not measured: 0)."""
        ids = tuple(window_ids)
        return [
            (ts, tid, file_id, max(returned or 0, 0), window_id, pages or 0)
            for ts, tid, file_id, returned, window_id, pages in self.db.execute(
                "SELECT e.ts_ns, e.tid, e.file_id, e.returned, w.window_id, e.cache_miss_pages FROM events e"
                " JOIN windows w ON e.ts_ns >= w.start_ns AND e.ts_ns < w.end_ns"
                " WHERE e.syscall != 'lseek' AND e.file_id IS NOT NULL"
                f" AND w.window_id IN ({', '.join('?' * len(ids)) or 'NULL'})",
                ids,
            )
        ]

    def logged_fills(self, window_ids: Iterable[int]) -> list[tuple[int, int, int, int, int]]:
        """(ts_ns, tid, file_id, pages, window_id) of every page-cache fill no logged read holds
        (page_cache_fills) inside the given windows."""
        ids = tuple(window_ids)
        return self.db.execute(
            "SELECT p.ts_ns, p.tid, p.file_id, p.pages, w.window_id FROM page_cache_fills p JOIN windows w"
            " ON p.ts_ns >= w.start_ns AND p.ts_ns < w.end_ns"
            f" WHERE w.window_id IN ({', '.join('?' * len(ids)) or 'NULL'})",
            ids,
        ).fetchall()

    def thread_names(self) -> dict[int | None, dict[str, int]]:
        """node_id (None: the one process) -> its threads' names -> tids, as the capture listed them."""
        found: dict[int | None, dict[str, int]] = {}
        for node_id, tid, name in self.db.execute("SELECT node_id, tid, name FROM threads"):
            found.setdefault(node_id, {})[name] = tid
        return found

    # -- ending -----------------------------------------------------------------------------
    def finish(self, complete: bool = True, reason: str | None = None) -> Path:
        """Mark the trace complete or not, and move it into place. Returns its path."""
        self.db.executescript(INDEXES)
        self.set_meta(complete=complete)
        if not complete:
            self.set_meta(incomplete_reason=reason or "interrupted")
        self.db.commit()
        self.db.close()
        try:
            outputs.move_into_place(self.partial_path, self.path, self.force, self.inputs)
        finally:
            self.partial_path.unlink(missing_ok=True)  # gone when moved; refused: never half a trace
            self._release()
        return self.path

    @contextlib.contextmanager
    def writing(self) -> Iterator[None]:
        """Around filling the trace and finishing it: any failure discards the partial file (never half a
        trace), and a full disk is said as such."""
        try:
            yield
        except BaseException as error:
            self.discard()
            if _is_disk_full(error):
                raise outputs.disk_full(self.path) from None
            raise

    def discard(self) -> None:
        """Leave no file behind (the run failed before capturing anything worth keeping)."""
        try:
            self.db.close()
        finally:
            self.partial_path.unlink(missing_ok=True)
            self._release()

    def _release(self) -> None:
        if self._lock is not None:
            os.close(self._lock)
            self._lock = None


def _is_disk_full(error: BaseException) -> bool:
    # sqlite says SQLITE_FULL; traces/bulk_insert.c raises OperationalError with sqlite's message
    return (
        isinstance(error, sqlite3.Error)
        and (
            getattr(error, "sqlite_errorcode", None) == sqlite3.SQLITE_FULL or "database or disk is full" in str(error)
        )
    ) or (isinstance(error, OSError) and error.errno == errno.ENOSPC)


def _same_file(fd: int, path: Path) -> bool:
    try:
        return os.path.samestat(os.fstat(fd), os.stat(path))
    except FileNotFoundError:
        return False


def _claim(partial: Path) -> int:
    """Create `partial` empty and lock it for as long as the writer writes; returns the lock's fd."""
    while True:
        fd = os.open(partial, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            raise CasstraceError(
                f"another casstrace is writing {outputs.target_of(partial)} now",
                "wait until it is done, or give another --out",
            ) from None
        if _same_file(fd, partial):  # not removed as stale between open and lock
            os.ftruncate(fd, 0)  # whatever a killed writer left there
            return fd
        os.close(fd)


def remove_stale_partials(directory: Path, keep: Iterable[str | os.PathLike[str]] = ()) -> list[Path]:
    """Remove the `.partial` files in `directory` no writer holds (left by a killed casstrace),
    but those of `keep` (a command's inputs, whatever their names)."""
    removed = []
    for partial in directory.glob(f".*{outputs.PARTIAL_SUFFIX}"):
        if any(outputs.same_file(partial, kept) for kept in keep):
            continue
        try:
            fd = os.open(partial, os.O_RDONLY | os.O_CLOEXEC)
        except OSError:
            continue
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            if _same_file(fd, partial):
                partial.unlink()
                removed.append(partial)
        except OSError:
            continue  # being written, gone meanwhile, or not ours to remove
        finally:
            os.close(fd)
    return removed
