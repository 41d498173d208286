"""Turning what a BccCapture read from its BPF maps into trace rows (casstrace.traces.schema).

The kernel names files by (owner, fd, generation) for syscalls (owner: the process, when following
a command's descendants; else 0) and by (device, inode) for the page cache; here both become
file_ids, so a file read through its fd and filled by the page cache is one row.
Reads and lseeks that found room in the event log are in no map (the kernel leaves them to us to
save their cost): their totals, coverage and heat map cells are added up here from the log.
"""

import functools
import os
from collections import defaultdict
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, cast

from casstrace.probes.backends import BCC
from casstrace.probes.bcc import syscalls
from casstrace.probes.bcc.program import (
    GEN_BITS,
    NO_CALL,
    SOURCE_NAMES,
    TARGET_NAMES,
    EventRecord,
    FillRecord,
    FollowedEventRecord,
    Source,
    Target,
    record_struct,
)
from casstrace.probes.proc import mapped_pages, proc_fds
from casstrace.probes.proc.proc_fds import Descriptor
from casstrace.probes.protocol import Window
from casstrace.traces.rows import EventRow, FileIORow, PageCacheFillRow, ThreadIORow
from casstrace.traces.schema import HEATMAP_OFFSET_BYTES, PAGE_BYTES, SLOT_NS, latency_bucket
from casstrace.traces.writer import TraceWriter

EVENT = record_struct(EventRecord)
FOLLOWED_EVENT = record_struct(FollowedEventRecord)
FILL = record_struct(FillRecord)
READ_SYSCALLS = {syscalls.NUMBERS[name] for name in syscalls.READS}
LSEEK = syscalls.NUMBERS["lseek"]


# thread_io's columns, each with the field of capture.c's struct thread_io that counts it
THREAD_IO_FIELDS = {
    "read_calls": "read_calls",
    "read_bytes": "read_bytes",
    "cache_miss_pages": "cache_pages",
    "write_calls": "write_calls",
    "write_bytes": "write_bytes",
    "dirtied_pages": "dirtied_pages",
    "mapped_dirtied_pages": "mapped_dirtied_pages",
}
# The file systems whose writeback the 'written_back' tracepoint (ext4_writepages_result) sees: a file
# on any other (tmpfs, xfs, btrfs) has its bytes written back not measured (NULL), never 0.
WRITTEN_BACK_FILESYSTEMS = frozenset({"ext4"})
MapRows = list[tuple[Any, Any]]  # a BPF map's (key, value) pairs: ctypes structures, or ints
# A logged call: (ts, latency, offset, requested, returned, run_bytes, tid, fd, gen, nr, epoch,
# seek_jump, fill_inode, fill_dev, fill_pages, owner)
LoggedCall = tuple[int, int, int, int, int, int, int, int, int, int, int, int, int, int, int, int]


@dataclass(frozen=True)
class BccCaptured:
    """What a BccCapture captured (its stop() returns it): the capture protocol's CaptureResult."""

    pid: int
    source: str  # what was captured, for meta `source`
    process: str  # the process's description, for meta `process`
    follow_children: bool
    extra_dirs: tuple[str, ...]  # where to look for files the page cache filled, by inode
    stream_limit: int  # per-call records the event log could keep
    logged_calls_in_maps: bool  # the maps hold the logged calls too (ProgramOptions): not added up again
    windows: tuple[Window, ...]
    ended_early: str | None
    counters: dict[str, int]  # program.Counter's names, lower case -> value
    # every aggregate map, by name in capture.c: iterated, never indexed (an interval's are read from bytes)
    tables: Mapping[str, Iterable[tuple[Any, Any]]]
    events: memoryview  # the kept part of the event log, where the kernel wrote it
    fills: memoryview  # the kept part of the fill log (FillRecord), likewise
    descriptors: dict[tuple[int, int, int], Descriptor]  # (owner, fd, gen) -> what it was
    thread_names: dict[int, str]
    descendants: dict[int, int]  # pid -> parent pid, for every process followed
    poller_cpu_seconds: float  # CPU the notice poller used while capturing (for benchmarks)
    thread_slot_ns: int  # > 0: tables["thread_io"] counts per (thread, slot of this many ns, file)
    # the write path's measures this kernel took ('dirtied', 'written_back': bcc_capture.write_path_tracepoints)
    write_tracepoints: Mapping[str, str]
    # the process's file mappings at the start and the end, to name the file of an msync's address
    address_mappings: tuple[mapped_pages.Mapping, ...]
    filesystems: Mapping[int, str]  # st_dev -> file system type, of the process's mounts (mounts.py)

    @property
    def start_ns(self) -> int:
        return self.windows[0].start_ns

    @property
    def end_ns(self) -> int:
        return self.windows[-1].end_ns

    @property
    def streamed_events(self) -> int:
        """Logged calls the event log kept."""
        return min(self.counters["events_offered"], self.stream_limit)

    @property
    def unstreamed_events(self) -> int:
        """Logged calls offered after the event log was full: in the aggregates, not in the events table."""
        return max(0, self.counters["events_offered"] - self.stream_limit)

    def event_records(self) -> Iterator[LoggedCall]:
        if self.follow_children:
            return FOLLOWED_EVENT.iter_unpack(self.events)
        return (record + (0,) for record in EVENT.iter_unpack(self.events))

    def write(self, writer: TraceWriter) -> None:
        TraceBuilder(self, writer).write()


def page_runs(words: dict[int, int]) -> list[tuple[int, int]]:
    """Runs (first_page, page_count) of the set bits of a bitmap given as word index -> 64 bits."""
    runs: list[list[int]] = []
    for word in sorted(words):
        bits, base = words[word], word * 64
        while bits:
            low = (bits & -bits).bit_length() - 1  # first set bit
            length = (~(bits >> low) & ((bits >> low) + 1)).bit_length() - 1  # ones from there
            first = base + low
            if runs and runs[-1][0] + runs[-1][1] == first:
                runs[-1][1] += length
            else:
                runs.append([first, length])
            bits &= ~(((1 << length) - 1) << low)
    return [(first, count) for first, count in runs]


def page_bits(first: int, last: int) -> dict[int, int]:
    """Pages [first, last] as a bitmap: word index -> 64 bits (bit p of word w: page 64 w + p)."""
    words = {}
    for word in range(first // 64, last // 64 + 1):
        low = first % 64 if word == first // 64 else 0
        high = last % 64 if word == last // 64 else 63
        words[word] = ((1 << (high + 1)) - 1) ^ ((1 << low) - 1)
    return words


class LoggedCalls:
    """What the logged calls add to the per-file totals, coverage, heat map and latency spectrogram,
    keyed as the kernel keys its maps, computed as capture.c would have (on_read, on_lseek)."""

    def __init__(self, records: Iterable[LoggedCall], start_ns: int):
        # keys: (epoch, owner, fd, gen), + log2 bucket for sizes
        self.totals: dict[tuple[int, int, int, int], dict[str, int]] = defaultdict(lambda: defaultdict(int))
        self.sizes: dict[tuple[int, int, int, int, int], int] = defaultdict(int)
        self.coverage: dict[tuple[int, int, int, int], dict[int, int]] = defaultdict(lambda: defaultdict(int))
        self.heat: dict[tuple[int, int, int, int, int], list[int]] = defaultdict(lambda: [0, 0])
        self.latency: dict[tuple[int, int, int, int], int] = defaultdict(int)  # as latency_key
        # Locals, not attribute look-ups, in a loop that runs once per logged call (500,000 by default).
        latencies, all_totals, sizes, coverage, heat = self.latency, self.totals, self.sizes, self.coverage, self.heat
        on_file = Target.FILE  # a logged call is on a file
        for ts, latency, offset, requested, returned, run, _tid, fd, gen, nr, epoch, jump, *_fill, owner in records:
            slot = (ts - start_ns) // SLOT_NS if ts >= start_ns else 0
            latencies[(slot, nr, on_file, latency_bucket(latency))] += 1
            key = (epoch, owner, fd, gen)
            totals = all_totals[key]
            if nr == LSEEK:
                totals["lseek_calls"] += 1
                continue
            totals["read_calls"] += 1
            totals["read_bytes"] += returned
            totals["read_requested_bytes"] += requested
            totals["read_ns"] += latency
            totals["seek_jumps"] += jump
            totals["longest_sequential_bytes"] = max(totals["longest_sequential_bytes"], run)
            sizes[(*key, returned.bit_length() - 1)] += 1
            if offset < 0 or returned == 0:
                continue
            bitmap = coverage[key]
            first, last = offset // PAGE_BYTES, (offset + returned - 1) // PAGE_BYTES
            if first >> 6 == last >> 6:  # most reads (a chunk of a few pages) stay in one word
                bitmap[first >> 6] |= ((1 << (last - first + 1)) - 1) << (first & 63)
            else:
                for word, bits in page_bits(first, last).items():
                    bitmap[word] |= bits
            cell = heat[(owner, fd, gen, slot, offset // HEATMAP_OFFSET_BYTES)]
            cell[0] += 1
            cell[1] += returned


class TraceBuilder:
    """Writes one BccCaptured into a fresh trace."""

    def __init__(self, capture: BccCaptured, writer: TraceWriter):
        self.capture = capture
        self.writer = writer
        self.tables = capture.tables
        self._fd_file_ids: dict[tuple[int, int, int], int] = {}
        self._page_file_ids: dict[tuple[int, int], int] = {}
        self._file_devs: dict[int, int | None] = {}  # file_id -> st_dev
        self._names_by_inode: dict[tuple[int, int], Descriptor] | None = None
        self.logged = LoggedCalls(() if capture.logged_calls_in_maps else capture.event_records(), capture.start_ns)
        self._foreign_fills: list[PageCacheFillRow] = []  # fills of another file inside a logged read

    def write(self) -> None:
        self._windows()
        self._file_io()
        self._coverage()
        self._heatmap()
        self._latency()
        self._events()
        self._page_cache_fills()
        self._thread_io()
        self.writer.add_threads(self.capture.thread_names)
        self._meta()

    # -- files ---------------------------------------------------------------------------------
    def fd_file(self, owner: int, fd: int, gen: int) -> int:
        key = (owner, fd, gen)
        if key not in self._fd_file_ids:
            descriptor = self.capture.descriptors.get(key) or Descriptor(
                path=f"fd {fd}" + (f" of pid {owner}" if owner else ""), kind="unknown"
            )
            self._fd_file_ids[key] = self._add_file(descriptor)
        return self._fd_file_ids[key]

    def page_file(self, kernel_dev: int, inode: int) -> int:
        return self.inode_file(proc_fds.user_dev(kernel_dev), inode)

    def address_file(self, address: int) -> int:
        """The file mapped at an address of the process (msync's), at the capture's start or end."""
        for mapping in self.capture.address_mappings:
            if mapping.start <= address < mapping.end:
                return self.inode_file(mapping.dev, mapping.inode)
        return self._add_file(Descriptor(path=f"<mapping at {address:#x}, gone at the capture's end>", kind="unknown"))

    def inode_file(self, dev: int, inode: int) -> int:
        key = (dev, inode)
        if key not in self._page_file_ids:
            descriptor = self._named_inodes().get(key)
            if descriptor is None:
                major, minor = os.major(key[0]), os.minor(key[0])
                descriptor = Descriptor(
                    path=f"<dev {major}:{minor} inode {inode}>", kind="file", dev=key[0], inode=inode
                )
            self._page_file_ids[key] = self._add_file(descriptor)
        return self._page_file_ids[key]

    @functools.cached_property
    def _root(self) -> str:
        """The process's root_prefix, looked up once for every file (10,000 on a node of 5,000 SSTables)."""
        return proc_fds.root_prefix(self.capture.pid)

    def _add_file(self, d: Descriptor) -> int:
        file_id = self.writer.file_id(
            d.path,
            d.kind,
            size_bytes=proc_fds.size_of(d, self.capture.pid, self._root),
            dev=d.dev,
            inode=d.inode,
            local_addr=d.local_addr,
            remote_addr=d.remote_addr,
        )
        self._file_devs[file_id] = d.dev
        return file_id

    def _named_inodes(self) -> dict[tuple[int, int], Descriptor]:
        """(dev, inode) -> a descriptor naming it: the process's fds, then its mappings, then files
        under extra_dirs (searched only for inodes still unnamed)."""
        if self._names_by_inode is None:
            named: dict[tuple[int, int], Descriptor] = {}
            for key, path in proc_fds.mapped_files(self.capture.pid).items():
                named[key] = Descriptor(path=path, kind="file", dev=key[0], inode=key[1])
            for descriptor in self.capture.descriptors.values():
                if descriptor.kind == "file" and descriptor.dev is not None and descriptor.inode is not None:
                    named[(descriptor.dev, descriptor.inode)] = descriptor
            wanted = {
                (proc_fds.user_dev(key.dev), key.inode)
                for name in ("page_cache_pages", "dirtied_pages", "written_back")
                for key, _ in self.tables.get(name, ())
            }
            missing = wanted - named.keys()
            if missing and self.capture.extra_dirs:
                for key, path in proc_fds.files_under(self.capture.pid, self.capture.extra_dirs, missing).items():
                    named[key] = Descriptor(path=path, kind="file", dev=key[0], inode=key[1])
            self._names_by_inode = named
        return self._names_by_inode

    def file_of(self, source: int, fd_or_dev: int, gen_or_inode: int) -> int:
        if source == Source.SYSCALL:
            return self.fd_file(gen_or_inode >> GEN_BITS, fd_or_dev, gen_or_inode & ((1 << GEN_BITS) - 1))
        if source == Source.ADDRESS:
            return self.address_file(gen_or_inode)
        return self.page_file(fd_or_dev, gen_or_inode)

    # -- tables --------------------------------------------------------------------------------
    def _windows(self) -> None:
        for window_id, window in enumerate(self.capture.windows, start=1):
            written = self.writer.add_window(window.label, window.start_ns, window.end_ns, window.execution)
            assert written == window_id, "windows must be the first rows written to a fresh trace"

    def _file_io(self) -> None:
        rows: dict[tuple[int, int], dict[str, int]] = {}
        sizes: dict[tuple[int, int, int], int] = defaultdict(int)

        def row(window_id: int, file_id: int) -> dict[str, int]:
            return rows.setdefault(
                (window_id, file_id),
                {
                    "window_id": window_id,
                    "file_id": file_id,
                    "read_calls": 0,
                    "read_bytes": 0,
                    "read_requested_bytes": 0,
                    "read_ns": 0,
                    "write_calls": 0,
                    "write_bytes": 0,
                    "lseek_calls": 0,
                    "seek_jumps": 0,
                    "longest_sequential_bytes": 0,
                    "cache_miss_pages": 0,
                    "cache_miss_bytes": 0,
                    **dict.fromkeys(self._write_columns, 0),
                },
            )

        def add(totals: dict[str, int], figures: Mapping[str, int]) -> None:
            for name, value in figures.items():
                if name == "longest_sequential_bytes":
                    totals[name] = max(totals[name], value)
                else:
                    totals[name] += value

        for key, stats in self.tables["stats_by_fd"]:
            file_id = self.fd_file(key.owner, key.fd, key.gen)
            add(
                row(key.epoch, file_id),
                {
                    "read_calls": stats.read_calls,
                    "read_bytes": stats.read_bytes,
                    "read_requested_bytes": stats.read_requested,
                    "read_ns": stats.read_ns,
                    "write_calls": stats.write_calls,
                    "write_bytes": stats.write_bytes,
                    "lseek_calls": stats.lseek_calls,
                    "seek_jumps": stats.seek_jumps,
                    "longest_sequential_bytes": stats.longest_run,
                },
            )
            for index, count in enumerate(stats.read_sizes):
                if count:
                    sizes[(key.epoch, file_id, index - 1)] += count
        for (epoch, owner, fd, gen), figures in self.logged.totals.items():
            add(row(epoch, self.fd_file(owner, fd, gen)), figures)
        for (epoch, owner, fd, gen, bucket), count in self.logged.sizes.items():
            sizes[(epoch, self.fd_file(owner, fd, gen), bucket)] += count
        for key, pages in self.tables["page_cache_pages"]:
            totals = row(key.epoch, self.page_file(key.dev, key.inode))
            totals["cache_miss_pages"] += pages
            totals["cache_miss_bytes"] += pages * PAGE_BYTES
        self._write_path(row)
        self.writer.add_file_io(cast(FileIORow, self._written_back_where_seen(totals)) for totals in rows.values())
        self.writer.add_read_sizes(
            {"window_id": w, "file_id": f, "log2_bucket": b, "count": n} for (w, f, b), n in sizes.items()
        )

    @functools.cached_property
    def _write_columns(self) -> tuple[str, ...]:
        """file_io's write-path columns this capture measured (the others stay NULL: not measured)."""
        taken = self.capture.write_tracepoints
        return (
            ("dirtied_pages", "mapped_dirtied_pages") * ("dirtied" in taken)
            + ("written_back_bytes",) * ("written_back" in taken)
            + ("sync_calls", "sync_ns")
        )

    def _write_path(self, row: Callable[[int, int], dict[str, int]]) -> None:
        """Pages dirtied, bytes written back and sync calls, into each window's and file's file_io row;
        the sync calls' spectrogram."""
        for key, dirtied in self.tables.get("dirtied_pages", ()):
            totals = row(key.epoch, self.page_file(key.dev, key.inode))
            totals["dirtied_pages"] += dirtied.pages
            totals["mapped_dirtied_pages"] += dirtied.mapped_pages
        # Writeback is counted by inode (it runs in kernel threads): a file of another file system
        # with the same inode number is none of the process's.
        named = self._named_inodes()
        for key, pages in self.tables.get("written_back", ()):
            if (proc_fds.user_dev(key.dev), key.inode) in named or ((key.dev, key.inode) in self._dirtied_inodes):
                row(key.epoch, self.page_file(key.dev, key.inode))["written_back_bytes"] += pages * PAGE_BYTES
        buckets: dict[tuple[int, int, str, int], int] = defaultdict(int)
        for key, stats in self.tables.get("sync_latency", ()):
            f = key.file
            file_id = self.file_of(f.source, f.fd_or_dev, f.gen_or_inode)
            totals = row(key.epoch, file_id)
            totals["sync_calls"] += stats.calls
            totals["sync_ns"] += stats.ns
            buckets[(key.epoch, file_id, syscalls.name(key.nr), key.bucket)] += stats.calls
        self.writer.add_sync_latency(
            {"window_id": w, "file_id": f, "syscall": name, "bucket": b, "count": n}
            for (w, f, name, b), n in buckets.items()
        )

    def _written_back_where_seen(self, totals: dict[str, int]) -> Mapping[str, int | None]:
        """A file_io row, its bytes written back NULL (not measured) unless its file lies on a file
        system whose writeback the tracepoint sees."""
        if "written_back_bytes" not in totals:
            return totals
        dev = self._file_devs.get(totals["file_id"])
        if dev is not None and self.capture.filesystems.get(dev) in WRITTEN_BACK_FILESYSTEMS:
            return totals
        return {**totals, "written_back_bytes": None}

    @functools.cached_property
    def _dirtied_inodes(self) -> set[tuple[int, int]]:
        """(kernel dev, inode) of the files whose pages the process dirtied."""
        return {(key.dev, key.inode) for key, _ in self.tables.get("dirtied_pages", ())}

    def _coverage(self) -> None:
        bitmaps: dict[tuple[int, int, int], dict[int, int]] = defaultdict(lambda: defaultdict(int))
        for key, region in self.tables["coverage"]:
            f = key.file
            bitmap = bitmaps[(key.epoch, self.file_of(f.source, f.fd_or_dev, f.gen_or_inode), f.source)]
            first_word = key.region * len(region.words)
            for index, bits in enumerate(region.words):
                if bits:
                    bitmap[first_word + index] |= bits
        for (epoch, owner, fd, gen), words in self.logged.coverage.items():
            bitmap = bitmaps[(epoch, self.fd_file(owner, fd, gen), Source.SYSCALL)]
            for word, bits in words.items():
                bitmap[word] |= bits
        # Executions of one query touch the same pages: a long run's windows repeat a few bitmaps
        # hundreds of times, so each distinct bitmap is turned into runs once (a third of the
        # trace write of `run --repeat 300` went to page_runs).
        runs_of_bitmap: dict[tuple[tuple[int, int], ...], list[tuple[int, int]]] = {}

        def runs(chunks: dict[int, int]) -> list[tuple[int, int]]:
            key = tuple(sorted(chunks.items()))
            found = runs_of_bitmap.get(key)
            if found is None:
                found = runs_of_bitmap[key] = page_runs(chunks)
            return found

        self.writer.add_coverage(
            {
                "window_id": window_id,
                "file_id": file_id,
                "source": SOURCE_NAMES[source],
                "first_page": first,
                "page_count": count,
            }
            for (window_id, file_id, source), chunks in bitmaps.items()
            for first, count in runs(chunks)
        )

    def _heatmap(self) -> None:
        cells: dict[tuple, list[int]] = defaultdict(lambda: [0, 0])
        for key, row in self.tables["heatmap"]:
            f = key.file
            file_id = self.file_of(f.source, f.fd_or_dev, f.gen_or_inode)
            for index, value in enumerate(row.cells):
                if value.calls:
                    cell = cells[(file_id, SOURCE_NAMES[f.source], key.slot, key.row * len(row.cells) + index)]
                    cell[0] += value.calls
                    cell[1] += value.bytes
        for (owner, fd, gen, slot, bucket), (calls, size) in self.logged.heat.items():
            cell = cells[(self.fd_file(owner, fd, gen), SOURCE_NAMES[Source.SYSCALL], slot, bucket)]
            cell[0] += calls
            cell[1] += size
        self.writer.add_heatmap(
            {"file_id": file_id, "source": source, "slot": slot, "offset_bucket": bucket, "calls": calls, "bytes": size}
            for (file_id, source, slot, bucket), (calls, size) in cells.items()
        )

    def _latency(self) -> None:
        counts: dict[tuple[int, int, int, int], int] = defaultdict(int)
        for key, count in self.tables["latency_hist"]:
            counts[(key.slot, key.nr, key.target, key.bucket)] += count
        for key, count in self.logged.latency.items():
            counts[key] += count
        self.writer.add_latency(
            {
                "slot": slot,
                "syscall": syscalls.name(nr),
                "target": TARGET_NAMES[target],
                "bucket": bucket,
                "count": count,
            }
            for (slot, nr, target, bucket), count in counts.items()
        )

    def _events(self) -> None:
        """The logged calls, each read with the pages the page cache filled of its own file while it
        ran; fills of another file (the first one a read filled was not its own) join the other fills."""

        def rows() -> Iterator[EventRow]:
            for (
                ts,
                latency,
                offset,
                requested,
                returned,
                _run,
                tid,
                fd,
                gen,
                nr,
                _epoch,
                _jump,
                fill_inode,
                fill_dev,
                fill_pages,
                owner,
            ) in self.capture.event_records():
                file_id = self.fd_file(owner, fd, gen)
                if fill_pages and self.page_file(fill_dev, fill_inode) != file_id:
                    self._foreign_fills.append(
                        {
                            "ts_ns": ts,
                            "tid": tid,
                            "file_id": self.page_file(fill_dev, fill_inode),
                            "pages": fill_pages,
                            "syscall": syscalls.name(nr),
                        }
                    )
                    fill_pages = 0
                yield (
                    ts,
                    tid,
                    syscalls.name(nr),
                    fd,
                    file_id,
                    None if nr in READ_SYSCALLS and offset < 0 else offset,
                    requested,
                    returned,
                    latency,
                    fill_pages if nr in READ_SYSCALLS else None,
                )

        self.writer.add_events(rows())

    def _page_cache_fills(self) -> None:
        def rows() -> Iterator[PageCacheFillRow]:
            yield from self._foreign_fills
            for ts, inode, dev, pages, tid, nr, _epoch in FILL.iter_unpack(self.capture.fills):
                yield {
                    "ts_ns": ts,
                    "tid": tid,
                    "file_id": self.page_file(dev, inode),
                    "pages": pages,
                    "syscall": None if nr == NO_CALL else syscalls.name(nr),
                }

        self.writer.add_page_cache_fills(rows())

    def _thread_io(self) -> None:
        if "thread_io" not in self.tables:
            return
        rows: dict[tuple[int, int, int], list[int]] = defaultdict(lambda: [0] * len(THREAD_IO_FIELDS))
        for key, io in self.tables["thread_io"]:
            f = key.file
            row = rows[(key.tid, key.slot, self.file_of(f.source, f.fd_or_dev, f.gen_or_inode))]
            for index, field in enumerate(THREAD_IO_FIELDS.values()):
                row[index] += getattr(io, field)
        self.writer.add_thread_io(
            cast(ThreadIORow, {"tid": tid, "slot": slot, "file_id": file_id, **dict(zip(THREAD_IO_FIELDS, figures))})
            for (tid, slot, file_id), figures in rows.items()
        )

    def _meta(self) -> None:
        capture, counters = self.capture, self.capture.counters
        meta = dict(
            **BCC.meta(),
            source=capture.source,
            pid=capture.pid,
            process=capture.process,
            measures={
                "syscalls": True,
                "offsets": True,
                "page_cache": True,
                "latency": True,
                "wire": True,
                "call_fills": True,
                "dirtied": "dirtied" in capture.write_tracepoints,
                "written_back": "written_back" in capture.write_tracepoints,
                "syncs": True,
            },
            capture_start_ns=capture.start_ns,
            capture_end_ns=capture.end_ns,
            slot_ns=SLOT_NS,
            heatmap_offset_bytes=HEATMAP_OFFSET_BYTES,
            lost_events=counters["notices_lost"],
            unstreamed_events=capture.unstreamed_events,
            aggregate_overflows=counters["aggregate_overflow"],
            unlogged_fill_pages=counters["fill_pages_unlogged"],
        )
        if capture.thread_slot_ns:
            meta["thread_slot_ns"] = capture.thread_slot_ns
        if capture.ended_early:
            meta["ended_early"] = capture.ended_early
        if capture.follow_children:
            meta["notes"] = [
                f"followed the descendants of pid {capture.pid}: {len(capture.descendants)} processes started"
                " during the capture, with their threads; their fds are named as opened, or as their parent"
                " held them at the fork (reads through an inherited fd are counted without offsets)"
            ]
        self.writer.set_meta(**meta)
