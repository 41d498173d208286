"""Reads through memory maps: the one I/O that makes no syscall and, on a warm node, no page-cache event.

Cassandra 4.x maps its Data files by default (disk_access_mode auto -> mmap) and 5.0 maps its index
files; a warm JVM then reads them by touching mapped pages. Two /proc interfaces measure that touch,
per file, for one process:

- writing `3` to /proc/PID/clear_refs clears the accessed ("young") bit of every page table entry of
  the process's file mappings, and the referenced flag of the pages they map (fs/proc/task_mmu.c
  clear_refs_write; `1` would walk the anonymous memory too, the JVM's heap: 26 ms a clear on a
  1 GiB heap where `3` takes 3 ms, and every heap page the execution touches then marked again);
  then `4` flushes its TLB, without which cached translations are used without marking (clear_referenced);
- `Referenced:` of each mapping in /proc/PID/smaps then counts the mapped pages accessed since.

So a window starts with a clear and ends with a read of smaps, both outside the timed execution
(tens to hundreds of ms on a 1 GiB-heap JVM: benchmarks/mapped_pages.py). Clearing the accessed
bits changes nothing to restore: the kernel only reads them to age pages for reclaim, and the next
access sets them again.

Where the kernel maps a large folio with one 2 MiB (PMD) entry, one access marks the whole 2 MiB:
smaps' FilePmdMapped says how much of a file is so mapped (FileMapped.huge_bytes), and the
analyses bound the figure with it.

What `Referenced:` also counts, and so what this measure may hold besides the process's own touches:
a page of a mapped file that a read syscall (of any process) returned in the window is marked
referenced too (folio_mark_accessed), and a page fault maps up to fault_around_bytes (64 KiB) of
cached neighbours as young. casstrace.analyses.amplification does not count a page twice for this.

`--cold` also needs the opposite: pushing a file's mapped pages out of the process and the page cache,
which drop_caches alone cannot do (it keeps mapped pages). process_madvise(MADV_PAGEOUT) on the
process's own ranges of those files does it (Linux 5.10 and later); see `page_out`.
"""

import ctypes
import errno
import os
from collections.abc import Collection, Iterable, Iterator
from dataclasses import dataclass

from casstrace.interrupts import INTERRUPTS
from casstrace.probes.proc import proc_fds
from casstrace.probes.protocol import FIRST_WINDOW, GAP_WINDOW
from casstrace.traces.writer import TraceWriter

SYS_PROCESS_MADVISE = 440  # x86_64 (syscalls.check_architecture() is what the probes require)
MADV_PAGEOUT = 21
IOV_MAX = 1024  # ranges one process_madvise call takes
SMAPS_KB = 1024  # smaps figures are in kB


class MappedPagesUnavailable(Exception):
    """The measure cannot be taken for this process; str() says why, `fix` what to do."""

    def __init__(self, reason: str, fix: str):
        super().__init__(reason)
        self.fix = fix


@dataclass(frozen=True)
class Mapping:
    """One mapping of a file in a process's address space (a line of /proc/PID/maps)."""

    start: int
    end: int
    offset: int  # offset in the file of `start`
    dev: int  # st_dev as userspace sees it (os.makedev)
    inode: int
    path: str
    perms: str  # as maps shows them: read, write, execute, shared or private

    @property
    def size(self) -> int:
        return self.end - self.start

    @property
    def is_file_data(self) -> bool:
        """Whether a touch of it reads the file: not its code (touched whenever the process runs
        it), nor a private writable copy (a library's data: the process's own memory)."""
        executable, writable_copy = self.perms[2] == "x", self.perms[1] == "w" and self.perms[3] == "p"
        return not executable and not writable_copy


@dataclass
class FileMapped:
    """What smaps says about one file, summed over the process's mappings of it."""

    dev: int
    inode: int
    path: str
    mapped_bytes: int = 0  # address space mapping the file
    resident_bytes: int = 0  # of which in memory and mapped (Rss)
    referenced_bytes: int = 0  # of which accessed since the last clear_refs
    huge_bytes: int = 0  # of which mapped by 2 MiB (PMD) entries: one access marks all 2 MiB


def _parse_maps_line(line: str) -> Mapping | None:
    """A file mapping from a maps/smaps header line, None for anonymous or special ones."""
    fields = line.split(maxsplit=5)
    if len(fields) < 6 or not fields[5].startswith("/"):
        return None
    start, end = (int(value, 16) for value in fields[0].split("-"))
    major, minor = (int(part, 16) for part in fields[3].split(":"))
    path = fields[5].rstrip("\n")
    if path.endswith(" (deleted)"):
        path = path[: -len(" (deleted)")]
    return Mapping(start, end, int(fields[2], 16), os.makedev(major, minor), int(fields[4]), path, fields[1])


def file_mappings(pid: int, wanted: Collection[tuple[int, int]] | None = None) -> list[Mapping]:
    """The process's mappings of files ((dev, inode) in `wanted`, or all), from /proc/PID/maps.
    [] when the process is gone or its maps unreadable."""
    return _read_mappings(pid, wanted) or []


def _read_mappings(pid: int, wanted: Collection[tuple[int, int]] | None = None) -> list[Mapping] | None:
    """file_mappings, but None when /proc/PID/maps cannot be read."""
    found = []
    try:
        with open(f"/proc/{pid}/maps") as lines:
            for line in lines:
                mapping = _parse_maps_line(line)
                if mapping is not None and (wanted is None or (mapping.dev, mapping.inode) in wanted):
                    found.append(mapping)
    except OSError:
        return None
    return found


def parse_smaps(lines: Iterable[str]) -> dict[tuple[int, int], FileMapped]:
    """Per file ((dev, inode)), its mapped, resident and referenced bytes, from smaps text, over
    the mappings of its data (Mapping.is_file_data: a library's code and writable copies left out).

    Written for speed (a JVM has thousands of mappings, about 20 lines each): a header line is the
    only kind whose first field holds a '-'; of the others only Rss, Referenced and FilePmdMapped
    are read."""
    files: dict[tuple[int, int], FileMapped] = {}
    current: FileMapped | None = None
    for line in lines:
        key, _, rest = line.partition(" ")
        if "-" in key:  # "start-end perms offset dev inode path"
            current = _file_of_header(files, line)
        elif current is not None:
            if key == "Referenced:":
                current.referenced_bytes += int(rest.split()[0]) * SMAPS_KB
            elif key == "Rss:":
                current.resident_bytes += int(rest.split()[0]) * SMAPS_KB
            elif key == "FilePmdMapped:":
                current.huge_bytes += int(rest.split()[0]) * SMAPS_KB
    return files


def _file_of_header(files: dict[tuple[int, int], FileMapped], header: str) -> FileMapped | None:
    """The FileMapped (made on first sight) that a smaps header line's mapping adds to, its size
    added; None for a mapping that is no file's data."""
    mapping = _parse_maps_line(header)
    if mapping is None or not mapping.is_file_data:
        return None
    current = files.get((mapping.dev, mapping.inode))
    if current is None:
        current = files[(mapping.dev, mapping.inode)] = FileMapped(mapping.dev, mapping.inode, mapping.path)
    current.mapped_bytes += mapping.size
    return current


# The fields parse_smaps_under reads in each block, in smaps' order; every block ends with VmFlags.
_FIELDS = ((b"\nRss:", "resident_bytes"), (b"\nReferenced:", "referenced_bytes"), (b"\nFilePmdMapped:", "huge_bytes"))
_BLOCK_END = b"\nVmFlags:"


def parse_smaps_under(text: bytes, prefixes: tuple[str, ...]) -> dict[tuple[int, int], FileMapped]:
    """parse_smaps of smaps text, over the mappings of files under `prefixes` only (each ending in
    '/'), at the speed of a byte search: a JVM of 5,000 SSTables has 10,000 mappings (9 MB of smaps,
    250,000 lines) of which the data directories' are found by their path, which only a header line
    holds, and the rest is never split into lines (benchmarks/scale.py: 50 ms of parsing -> 5)."""
    files: dict[tuple[int, int], FileMapped] = {}
    headers_seen: set[int] = set()  # a mapping under two of the prefixes (one inside the other) counts once
    for prefix in {p.encode() for p in prefixes}:
        found = text.find(prefix)
        while found >= 0:
            start = text.rfind(b"\n", 0, found) + 1
            header_end = text.find(b"\n", found)
            block_end = text.find(_BLOCK_END, header_end)
            # the path column, not a prefix inside another path (it follows the padding spaces)
            if text[found - 1 : found] == b" " and header_end > 0 and block_end > 0 and start not in headers_seen:
                headers_seen.add(start)
                current = _file_of_header(files, text[start:header_end].decode(errors="surrogateescape"))
                if current is not None:
                    for name, attribute in _FIELDS:
                        at = text.find(name, header_end, block_end)
                        if at >= 0:
                            value = int(text[at + len(name) : text.find(b"k", at, block_end)])
                            setattr(current, attribute, getattr(current, attribute) + value * SMAPS_KB)
            found = text.find(prefix, max(header_end, found + 1))
    return files


def read_smaps(pid: int, prefixes: tuple[str, ...] = ()) -> dict[tuple[int, int], FileMapped]:
    """parse_smaps of the process's /proc/PID/smaps (with prefixes: of the files under them only,
    parse_smaps_under); MappedPagesUnavailable when it cannot be read."""
    try:
        with open(f"/proc/{pid}/smaps", "rb", buffering=0) as smaps:
            text = smaps.readall()
    except OSError as error:
        raise MappedPagesUnavailable(
            f"/proc/{pid}/smaps could not be read ({error.strerror})",
            "run casstrace as root, on the node's host, while the node runs",
        ) from None
    if prefixes:
        return parse_smaps_under(text, prefixes)
    return parse_smaps(text.decode(errors="surrogateescape").splitlines(keepends=True))


def clear_referenced(pid: int) -> None:
    """Clear the accessed bits of the process's file-mapped pages (/proc/PID/clear_refs <- 3), then
    make its CPUs forget their cached translations (<- 4). MappedPagesUnavailable when the kernel
    refuses.

    Clearing a page table entry's accessed bit does not flush the TLB, and a CPU sets the bit only
    when it walks the page table: a page whose translation is still cached is read without marking
    it (measured here: 0 to 8 of 8 pages touched right after a clear). Clearing the soft-dirty bits
    (4) flushes the process's TLB; its cost is one minor fault on the first write to each page of
    the process after it (soft-dirty tracking write-protects them), nothing to restore."""
    try:
        with open(f"/proc/{pid}/clear_refs", "w") as clear_refs:
            clear_refs.write("3")
    except OSError as error:
        raise MappedPagesUnavailable(
            f"/proc/{pid}/clear_refs refused the clear ({error.strerror})",
            "run casstrace as root on the node's host (it needs to write /proc/PID/clear_refs of the Cassandra JVM)",
        ) from None
    try:
        with open(f"/proc/{pid}/clear_refs", "w") as clear_refs:
            clear_refs.write("4")
    except OSError as error:
        raise MappedPagesUnavailable(
            f"/proc/{pid}/clear_refs refused the TLB flush (soft-dirty clear: {error.strerror}), without which "
            "accessed bits miss pages whose translations the CPUs cached",
            "use a kernel built with CONFIG_MEM_SOFT_DIRTY (Debian's is)",
        ) from None


class MappedPages:
    """The "mapped pages touched" measure of one process, window by window.

    begin() before a window's execution, end() after it: end() returns the bytes of each mapped file
    touched in between, by (dev, inode). Once the measure fails (clear_refs refused, smaps unreadable)
    it stays unavailable for the rest of the capture, with `unavailable` saying why: a window measured
    and the next one not would make totals that mean nothing.
    """

    def __init__(self, pid: int, prefixes: tuple[str, ...] = ()):
        self.pid = pid
        self.prefixes = prefixes  # only files under these directories (each ending in '/'); () all
        self.unavailable: MappedPagesUnavailable | None = None
        self.last: dict[tuple[int, int], FileMapped] = {}  # smaps as the last end() read it
        self._open = False
        self._cleared = False  # begin() cleared the accessed bits (else nothing was mapped to clear)
        self._data_mapped = False  # a file under the prefixes was seen mapped: measured from then on

    @property
    def available(self) -> bool:
        return self.unavailable is None

    def begin(self) -> None:
        if self.unavailable is not None:
            return
        if self._nothing_mapped():
            self._open, self._cleared = True, False
            return
        try:
            clear_referenced(self.pid)
            self._open, self._cleared = True, True
        except MappedPagesUnavailable as failure:
            self.unavailable = failure

    def end(self) -> dict[tuple[int, int], FileMapped] | None:
        """Per mapped file, what it was touched for since begin(); None when not measured."""
        if self.unavailable is not None or not self._open:
            return None
        self._open = False
        if not self._cleared and self._nothing_mapped():
            self.last = {}
            return self.last
        # Without a clear, what was mapped since begin() was all mapped in the window, where a new
        # page table entry starts accessed: smaps counts it as a cleared one would be.
        try:
            self.last = read_smaps(self.pid, self.prefixes)
        except MappedPagesUnavailable as failure:
            self.unavailable = failure
            return None
        return self.last

    def _nothing_mapped(self) -> bool:
        """Whether the process maps no file under the prefixes now (a node reading by pread:
        disk_access_mode standard), as /proc/PID/maps says in a millisecond or two where smaps walks
        every page table (150 ms on an 8 GiB heap: benchmarks/scale.py), and the clear has nothing
        to clear. Asked until a file under them is seen mapped, never after: such a node keeps
        mapping them. False without prefixes (every file counts) or when maps cannot be read (the
        clear and smaps then say why)."""
        if not self.prefixes or self._data_mapped:
            return False
        try:
            with open(f"/proc/{self.pid}/maps", "rb") as maps:
                text = maps.read()
        except OSError:
            return False
        # the path column follows spaces; a prefix inside a path with a space only costs a measure
        self._data_mapped = any(b" " + prefix.encode() in text for prefix in self.prefixes)
        return not self._data_mapped


class MappedPagesCapture:
    """The measure over a capture's execution windows, written into its trace (format 2).

    before_window() just before a window begins, after_window(window_id) just after it ended: the
    clear and the smaps read stay outside the window, so outside the timed execution. With
    `directories`, only files under them are recorded: a JVM also maps its own code (libjvm.so, jars),
    whose touches are instruction fetches, not I/O. `whole_capture`: the first window is measured
    too, while it is the whole capture (`casstrace capture --pid`, which cuts no window)."""

    def __init__(self, pid: int, directories: Iterable[str] = (), *, whole_capture: bool = False):
        self.pid = pid
        self.prefixes = tuple(os.path.join(os.path.realpath(d), "") for d in directories)
        self.whole_capture = whole_capture
        self.measure = MappedPages(pid, self.prefixes)
        self.windows: dict[int, dict[tuple[int, int], FileMapped]] = {}
        self._measuring: int | None = None  # the window whose accessed bits were cleared

    def before_window(self) -> None:
        self.measure.begin()

    def after_window(self, window_id: int) -> None:
        touched = self.measure.end()
        if touched is not None:
            self.windows[window_id] = {
                key: f for key, f in touched.items() if f.referenced_bytes and self._recorded(f.path)
            }

    # -- as a casstrace.probes.protocol.WindowSource: every window but the gaps is measured -------------
    def on_window_start(self, window_id: int, label: str, execution: int | None) -> None:
        # An execution's window (run), the watch's (watch), the whole capture's (capture --pid).
        if label not in (FIRST_WINDOW, GAP_WINDOW) or (label == FIRST_WINDOW and self.whole_capture):
            self.before_window()
            self._measuring = window_id

    def on_window_end(self, window_id: int) -> None:
        if window_id == self._measuring:
            self._measuring = None
            self.after_window(window_id)

    def stop(self) -> None:
        """Nothing to undo: cleared accessed bits are the kernel's to set again."""

    def _recorded(self, path: str) -> bool:
        return not self.prefixes or path.startswith(self.prefixes)

    def write(self, writer: TraceWriter) -> None:
        """file_io.mapped_touched_bytes per window and file, the mappings table, meta measures.mapped
        and .mappings (and mapped_unmeasured when the measure failed)."""
        listed = self.measure.last or _maps_only(self.pid)
        mapped = {key: f for key, f in (listed or {}).items() if self._recorded(f.path)}
        root = proc_fds.root_prefix(self.pid)  # once: a node of 5,000 SSTables maps 10,000 files
        file_ids = {
            key: writer.file_of_inode(
                f.path, f.dev, f.inode, proc_fds.size_if_same(self.pid, f.path, f.dev, f.inode, root)
            )
            for key, f in mapped.items()
        }
        writer.add_mappings(
            {
                "file_id": file_ids[key],
                "mapped_bytes": f.mapped_bytes,
                "resident_bytes": f.resident_bytes if self.measure.last else None,
            }
            for key, f in mapped.items()
        )
        available = self.measure.available and bool(self.windows)
        if available:
            rows = []
            for window_id, touched in self.windows.items():
                for key, f in touched.items():
                    file_id = file_ids.get(key) or writer.file_of_inode(
                        f.path, f.dev, f.inode, proc_fds.size_if_same(self.pid, f.path, f.dev, f.inode, root)
                    )
                    rows.append((window_id, file_id, f.referenced_bytes, f.huge_bytes))
            writer.add_mapped_touched(rows)
        # mappings: whether the table lists the mapped files. Unknown when neither smaps nor maps
        # could be read, which must not read as "nothing mapped".
        writer.add_measures(mapped=available, mappings=listed is not None)
        if self.measure.unavailable is not None:
            writer.set_meta(
                mapped_unmeasured={"reason": str(self.measure.unavailable), "fix": self.measure.unavailable.fix}
            )


def _maps_only(pid: int) -> dict[tuple[int, int], FileMapped] | None:
    """The process's mapped files from /proc/PID/maps, when smaps could not be read: sizes only,
    over the same mappings as parse_smaps. None when maps cannot be read either."""
    mappings = _read_mappings(pid)
    if mappings is None:
        return None
    files: dict[tuple[int, int], FileMapped] = {}
    for m in mappings:
        if not m.is_file_data:
            continue
        f = files.setdefault((m.dev, m.inode), FileMapped(m.dev, m.inode, m.path))
        f.mapped_bytes += m.size
    return files


# -- pushing mapped pages out (--cold) ------------------------------------------------------------


class PageOutUnavailable(Exception):
    """Mapped pages cannot be pushed out of this process; str() says why."""


class _IOVec(ctypes.Structure):
    _fields_ = [("iov_base", ctypes.c_void_p), ("iov_len", ctypes.c_size_t)]


def _chunks(mappings: list[Mapping], size: int) -> Iterator[list[Mapping]]:
    for first in range(0, len(mappings), size):
        yield mappings[first : first + size]


def page_out(pid: int, mappings: list[Mapping]) -> int:
    """Ask the kernel to reclaim the pages of these mappings of process `pid` (MADV_PAGEOUT through
    process_madvise): clean file pages leave the process's page tables and the page cache, unless
    another process maps them too. Returns the bytes of address space advised.

    A signal (Ctrl-C, SIGTERM, SIGHUP: casstrace.interrupts) waits until the last call returns: a cold
    execution never starts with half its files pushed out, and nothing needs restoring afterwards (the
    node reads the pages back on demand).
    Raises PageOutUnavailable when the kernel cannot do it (before 5.10, no permission, no process)."""
    if not mappings:
        return 0
    libc = ctypes.CDLL(None, use_errno=True)
    try:
        pidfd = os.pidfd_open(pid)
    except OSError as error:
        raise PageOutUnavailable(f"cannot open pid {pid} ({error.strerror})") from None
    advised = 0
    try:
        with INTERRUPTS.deferred():
            for chunk in _chunks(mappings, IOV_MAX):
                vectors = (_IOVec * len(chunk))(*(_IOVec(m.start, m.size) for m in chunk))
                result = libc.syscall(SYS_PROCESS_MADVISE, pidfd, vectors, len(chunk), MADV_PAGEOUT, 0)
                if result < 0:
                    raise PageOutUnavailable(f"process_madvise(MADV_PAGEOUT) failed: {_why(ctypes.get_errno(), pid)}")
                advised += result
    finally:
        os.close(pidfd)
    return advised


def _why(code: int, pid: int) -> str:
    return {
        errno.ENOSYS: "this kernel has no process_madvise (Linux 5.10 or later has)",
        errno.EINVAL: "this kernel does not take MADV_PAGEOUT through process_madvise",
        errno.EPERM: "not permitted (it needs CAP_SYS_NICE and ptrace access to the node)",
        errno.ESRCH: f"process {pid} is gone",
    }.get(code, os.strerror(code))
