"""The bcc capture backend: exact, tracepoint-only eBPF capture of one process's I/O.

The BPF program (capture.c) keeps every aggregate the analyses use in kernel maps keyed by the
window epoch, so nothing is lost however fast the process makes syscalls; per-call records of
reads and lseeks go to an in-place event log read once at the end, and only descriptor changes
(opens, connects, thread renames) reach Python while the capture runs.

BccCapture implements casstrace.probes.protocol.Capture; stop() returns a bcc_trace.BccCaptured,
which the trace builder (bcc_trace) reads.
"""

import ctypes
import errno
import functools
import itertools
import mmap
import os
import select
import struct
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

from casstrace.errors import CasstraceError
from casstrace.probes.backends import DEFAULT_STREAM_LIMIT
from casstrace.probes.bcc import kernel_btf, syscalls
from casstrace.probes.bcc.bcc_trace import EVENT, FILL, FOLLOWED_EVENT, BccCaptured, MapRows
from casstrace.probes.bcc.program import (
    GEN_BITS,
    KIND_NAMES,
    NOTICE_PATH,
    Control,
    Counter,
    FollowedNoticeRecord,
    Kind,
    NoticeRecord,
    NoticeType,
    Source,
    c_defines,
    c_structs,
)
from casstrace.probes.proc import mapped_pages, mounts, proc_fds
from casstrace.probes.proc.mapped_pages import Mapping
from casstrace.probes.proc.proc_fds import Descriptor
from casstrace.probes.protocol import GAP_WINDOW, Window, WindowLog
from casstrace.traces.schema import HEATMAP_OFFSET_BYTES, SLOT_NS, latency_bucket, latency_bucket_starts

FILL_CAPACITY = 1 << 17  # fills no logged read holds: 512 MiB of faults in 4 KiB pages, more in folios
MAP_ENTRIES = 1 << 17
REGION_ENTRIES = 1 << 15  # coverage regions (16 MiB of a file) and heat map rows (16 offset buckets)
FOLLOWED_ENTRIES = 1 << 16  # descendants alive at once, when following them
BATCH_ENTRIES = 4096  # map entries read per bpf() call at stop
# A thread_io slot this far in the past is complete: no read still running adds to it, so it can
# leave the kernel's map (drain_thread_io) without losing a byte (a read longer than this re-creates
# its slot's entry, which is summed with the one drained). Short, because every drain scans what the
# map holds, and on a busy node 10 s of entries made those scans raise its p99 (docs/watch-service.md).
DRAIN_MARGIN_NS = 2_000_000_000
# What the program could not record, per stretch a long watch takes (take_slots) and in the rest.
LOSS_COUNTERS = ("notices_lost", "aggregate_overflow", "iov_truncated", "coverage_truncated", "fill_pages_unlogged")
TRACEFS = Path("/sys/kernel/tracing")

CAP_PERFMON, CAP_BPF = 38, 39
BPF_NOEXIST = 1
SYS_BPF, BPF_PROG_GET_FD_BY_ID = 321, 13  # x86_64, as syscalls.check_architecture() requires
SYS_MEMBARRIER, MEMBARRIER_CMD_GLOBAL = 324, 1


@functools.cache
def latency_octaves() -> list[tuple[int, list[int]]]:
    """For each power of two 2^k, the latency bucket of 2^k and the first latencies (ns) of the
    buckets that start inside [2^k, 2^(k+1)) (at most four: an octave spans 3.01 tenths of a
    decade), from the trace format's exact bucket starts. capture.c bins with it."""
    starts = latency_bucket_starts()
    octaves = []
    for k in range(64):
        first = latency_bucket(1 << k)
        limits = [start if start < 1 << (k + 1) else 2**64 - 1 for start in starts[first + 1 : first + 5]]
        octaves.append((first, limits))
    return octaves


def check_privileges() -> None:
    if os.geteuid() == 0:
        return
    with open("/proc/self/status") as status:
        effective = next(int(line.split()[1], 16) for line in status if line.startswith("CapEff:"))
    if not (effective >> CAP_BPF & 1 and effective >> CAP_PERFMON & 1):
        raise CasstraceError(
            "capturing needs root, or the CAP_BPF and CAP_PERFMON capabilities",
            "run casstrace as root (sudo), or grant them: setcap cap_bpf,cap_perfmon+ep on the python binary",
        )


def check_kernel_headers(modules_dir: Path | None = None) -> None:
    modules_dir = modules_dir or Path("/lib/modules") / os.uname().release
    if not (modules_dir / "build").exists():
        raise CasstraceError(
            f"no kernel headers at {modules_dir / 'build'} for bcc to compile against",
            "run scripts/install (it links Debian's kernel headers for this kernel)",
        )


def check_tracefs() -> None:
    if not (TRACEFS / "events" / "syscalls").is_dir():
        raise CasstraceError(
            f"no tracepoints under {TRACEFS}/events (tracefs not mounted, or a kernel without tracepoints)",
            "mount it: mount -t tracefs nodev /sys/kernel/tracing (scripts/install does)",
        )


def check_can_load() -> None:
    """What loading the program asks of this user and machine, in the order their errors are given."""
    check_privileges()
    check_kernel_headers()
    check_tracefs()


def check_process(pid: int) -> None:
    if not Path(f"/proc/{pid}").is_dir():
        raise CasstraceError(f"no process with pid {pid}", "check the pid (e.g. pgrep -f CassandraDaemon)")


def _folio_order_field() -> bool:
    """Kernels since 6.? report large folios with an `order` field; older ones insert single pages."""
    fmt = TRACEFS / "events/filemap/mm_filemap_add_to_page_cache/format"
    return "field:unsigned char order" in fmt.read_text()


WINDOW_WRITE_MAPS = ("dirtied_pages", "written_back", "sync_latency")  # capture.c's, per window and file
# The hash maps of capture.c every program has (ProgramOptions.hash_maps: with the optional ones).
# A capture fills them all: a kept program's are emptied before its next capture (KeptProgram). Its
# arrays need no emptying: control is idled, counters zeroed, the logs read only up to their
# counters; each thread's call in flight counts only from the capture's start (capture.c call_in_flight).
HASH_MAPS = (
    "fds",
    "stats_by_fd",
    "page_cache_pages",
    "coverage",
    "heatmap",
    "latency_hist",
    *WINDOW_WRITE_MAPS,
    "written_inodes",
)

# The write path's tracepoints, by the measure each takes (capture.c reads them raw, with kernel_btf's
# offsets). Pages dirtied, by the thread that dirtied them; pages written back, by any thread: ext4's
# writepages result counts each page sent, for background writeback and a sync alike (the generic
# writeback_single_inode misses fsync's, which never goes through it; wbc_writepage only sees file
# systems with a ->writepage; writeback_written counts a whole writeback work's pages, of no inode).
# A file on another file system has its bytes written back not measured (bcc_trace.WRITTEN_BACK_FILESYSTEMS).
WRITE_PATH_TRACEPOINTS = {
    "dirtied": ("writeback", "writeback_dirty_folio", "HAS_DIRTY_FOLIO"),
    "written_back": ("ext4", "ext4_writepages_result", "HAS_WRITEPAGES_RESULT"),
}


def write_path_tracepoints() -> dict[str, str]:
    """measure -> 'category:name' of the tracepoint that takes it here (absent: this kernel has none,
    or its BTF does not say where the members read are)."""
    if kernel_btf.kernel_layout() is None:
        return {}
    return {
        measure: f"{category}:{name}"
        for measure, (category, name, _) in WRITE_PATH_TRACEPOINTS.items()
        if (TRACEFS / "events" / category / name / "format").is_file()
    }


def _write_path_defines() -> list[str]:
    """The raw write-path programs to build (capture.c HAS_*), with the kernel's offsets they read."""
    taken = write_path_tracepoints()
    defines = [f"-D{macro}={int(measure in taken)}" for measure, (_, _, macro) in WRITE_PATH_TRACEPOINTS.items()]
    layout = kernel_btf.kernel_layout()
    if layout is not None:
        defines += [f"-D{name.upper()}={value}" for name, value in layout._asdict().items()]
    return defines


@dataclass(frozen=True)
class ProgramOptions:
    """What the compiled program depends on (the process captured is not among it: see capture.c)."""

    follow_children: bool = False
    stream_limit: int = DEFAULT_STREAM_LIMIT
    thread_slot_ns: int = 0
    # Every syscall of the process timed into the spectrogram (raw_syscalls, run at every syscall of
    # every process on the machine); False: only the calls the program handles (syscalls.CAPTURED).
    all_syscalls: bool = False
    # Logged calls added up in the kernel's maps too (capture.c LOGGED_CALLS_IN_MAPS): one capture holding
    # each call both ways, for the test that the log's sums equal the kernel's; never a command's.
    logged_calls_in_maps: bool = False

    @property
    def hash_maps(self) -> tuple[str, ...]:
        """The hash maps of capture.c this program has."""
        return (
            HASH_MAPS
            + (("thread_io",) if self.thread_slot_ns else ())
            + (("followed",) if self.follow_children else ())
        )


def _loaded_program(options: ProgramOptions) -> Any:
    """capture.c compiled and loaded by bcc, its tables filled, its probes attached and idle (no
    process is captured until control[CONTROL_TGID] is written)."""
    from bcc import BPF  # imported here so `casstrace report` never needs bcc

    source = (
        c_structs(options.follow_children).encode()
        + resources.files("casstrace.probes.bcc").joinpath("capture.c").read_bytes()
    )
    cflags = [
        f"-DSLOT_NS={SLOT_NS}ULL",
        f"-DHEATMAP_BYTES={HEATMAP_OFFSET_BYTES}ULL",
        f"-DEVENT_CAPACITY={options.stream_limit}",
        f"-DFILL_CAPACITY={FILL_CAPACITY}",
        f"-DMAP_ENTRIES={MAP_ENTRIES}",
        f"-DREGION_ENTRIES={REGION_ENTRIES}",
        f"-DHAS_FOLIO_ORDER={int(_folio_order_field())}",
        f"-DFOLLOW_CHILDREN={int(options.follow_children)}",
        f"-DFOLLOWED_ENTRIES={FOLLOWED_ENTRIES}",
        *syscalls.program_defines(),
        *c_defines(),
        f"-DTHREAD_SLOT_NS={options.thread_slot_ns}ULL",
        f"-DALL_SYSCALLS={int(options.all_syscalls)}",
        f"-DLOGGED_CALLS_IN_MAPS={int(options.logged_calls_in_maps)}",
        *_write_path_defines(),
    ]
    try:
        bpf = BPF(text=source, cflags=cflags)
    except Exception as error:
        raise CasstraceError(
            f"could not load the BPF program ({error})",
            "check that this kernel has BPF enabled and that `scripts/install` ran (bcc, kernel headers)",
        ) from None
    flags = bpf[b"syscall_flags"]
    for nr, value in enumerate(syscalls.flag_table(flags.max_entries)):
        if value:
            flags[ctypes.c_int(nr)] = ctypes.c_uint8(value)
    if not options.all_syscalls:
        _attach_captured_syscalls(bpf)
    octaves = bpf[b"octaves"]
    for k, (first, limits) in enumerate(latency_octaves()):
        leaf = octaves.Leaf()
        leaf.first_bucket = first
        for i, limit in enumerate(limits):
            leaf.limits[i] = limit
        octaves[ctypes.c_int(k)] = leaf
    return bpf


ENTRY_ARGUMENTS_READ = 4  # what struct call keeps of a call's arguments (capture.c syscall_enter_N)


def _attach_captured_syscalls(bpf: Any) -> None:
    """The program's entry and exit attached to the tracepoints of each call it handles (a call this
    kernel has no tracepoint for cannot be made here either), the entry as the program that reads as
    many arguments as the call's record holds."""
    for syscall in syscalls.CAPTURED:
        tracepoint = syscalls.tracepoint_name(syscall)
        events = TRACEFS / "events/syscalls"
        try:
            record = (events / f"sys_enter_{tracepoint}" / "format").read_text()
        except FileNotFoundError:
            continue
        # Fields after the 4 common ones and __syscall_nr are the call's arguments.
        arguments = min(record.count("field:") - 5, ENTRY_ARGUMENTS_READ)
        bpf.attach_tracepoint(
            tp=f"syscalls:sys_enter_{tracepoint}".encode(), fn_name=f"syscall_enter_{arguments}".encode()
        )
        bpf.attach_tracepoint(tp=f"syscalls:sys_exit_{tracepoint}".encode(), fn_name=b"syscall_exit")


def _unload(bpf: Any) -> None:
    """Detach and free a loaded program, waiting until the kernel has let its programs go."""
    programs = _program_ids(bpf)
    bpf.cleanup()
    _wait_until_unloaded(programs)


def detach_all(bpf: Any) -> None:
    """Detach every probe of a loaded program at once: closing a tracepoint's perf event waits for an
    RCU grace period (tens of ms on a busy node), and closes in parallel mostly share theirs (the
    node-time program's 18 probes: ~0.15 s at once, ~0.8 s one by one as bcc's cleanup detaches)."""
    detaches = [functools.partial(bpf.detach_tracepoint, tracepoint) for tracepoint in list(bpf.tracepoint_fds)] + [
        functools.partial(bpf.detach_raw_tracepoint, tracepoint) for tracepoint in list(bpf.raw_tracepoint_fds)
    ]
    failures: list[BaseException] = []

    def detach(one: Callable[[], None]) -> None:
        try:
            one()
        except BaseException as error:  # raised again below, in the stopping thread
            failures.append(error)

    threads = [threading.Thread(target=detach, args=(one,), name="casstrace-detach") for one in detaches]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    if failures:
        raise failures[0]


CLONE_FS = 0x200  # <linux/sched.h>: the working directory, root and umask


def _own_working_directory() -> None:
    """Give the calling thread a working directory of its own. bcc's compiler changes directory (to
    the kernel headers) while it compiles; from a thread of its own, without this, it would move the
    rest of casstrace, which runs meanwhile, and relative paths (--out, --cqlshrc) would name files there."""
    if ctypes.CDLL(None, use_errno=True).unshare(CLONE_FS) != 0:
        error = ctypes.get_errno()
        raise OSError(error, f"unshare(CLONE_FS): {os.strerror(error)}")


COMPILE_THREAD = "casstrace-compile"


def compile_running() -> bool:
    """Whether a program build is compiling now, in its thread."""
    return any(thread.name == COMPILE_THREAD and thread.is_alive() for thread in threading.enumerate())


def wait_for_compile() -> None:
    """Wait for a program build compiling in its thread to end: bcc's compiler is not to be run from two
    threads at once (a crash), so a second program compiles after it."""
    for thread in threading.enumerate():
        if thread.name == COMPILE_THREAD:
            thread.join()


class ProgramBuild:
    """The program compiled and loaded in a thread of its own (seconds of one core) while the
    caller does other things, such as connecting and finding the process: a BccCapture given it
    takes the program at start(). Its probes attach as bcc loads them but watch no process until a
    capture starts. close() frees a program no capture took (when the thread is done: the thread
    frees what it builds after close); a with block closes it."""

    def __init__(self, options: ProgramOptions = ProgramOptions()):
        self.options = options
        self._bpf: Any = None
        self._error: BaseException | None = None
        self._lock = threading.Lock()
        self._unwanted = False
        self._thread = threading.Thread(target=self._compile, name=COMPILE_THREAD, daemon=True)
        self._thread.start()

    def __enter__(self) -> "ProgramBuild":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _compile(self) -> None:
        try:
            _own_working_directory()
            # What BccCapture checks first: its errors come from take(), or from the capture's checks
            # before that, in the order a run without a build would give them.
            check_can_load()
            bpf = _loaded_program(self.options)
        except BaseException as error:
            self._error = error
            return
        with self._lock:
            if not self._unwanted:
                self._bpf = bpf
                return
        _unload(bpf)

    def take(self) -> Any:
        """The loaded program, once built (this caller owns it from now on); its error if it failed."""
        self._thread.join()
        if self._error is not None:
            raise self._error
        with self._lock:
            bpf, self._bpf = self._bpf, None
        if bpf is None:
            raise RuntimeError("a program build taken twice, or after close()")
        return bpf

    def close(self, wait: bool = False) -> None:
        """Free the program unless a capture took it. `wait`: until its compile has ended, so that
        none of it runs beside what comes next (a run's measured executions)."""
        with self._lock:
            self._unwanted = True
            bpf, self._bpf = self._bpf, None
        if bpf is not None:
            _unload(bpf)
        if wait:
            self._thread.join()


def _wait_for_program_runs() -> None:
    """Wait until every run of a BPF program begun before now has ended. A tracepoint's program runs
    inside an RCU read-side section (preemption off), and membarrier(MEMBARRIER_CMD_GLOBAL) returns
    after an RCU grace period: one grace period, where detaching waits two per tracepoint."""
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.syscall(SYS_MEMBARRIER, MEMBARRIER_CMD_GLOBAL, 0, 0) != 0:
        error = ctypes.get_errno()
        raise OSError(error, f"membarrier(MEMBARRIER_CMD_GLOBAL): {os.strerror(error)}")


class KeptProgram:
    """One loaded program lent to the captures of one command in turn (compare's variants, a demo's
    queries, a sweep's points): attached once and detached once, at close(). Detaching is most of a
    `run`'s time: closing each of its ~145 tracepoints waits for two RCU grace periods, one close
    after another. Between two captures the program is idle (epoch and TGID 0), every run of it has
    ended, and each map a capture fills is emptied (ProgramOptions.hash_maps) and its counters zeroed: each
    capture starts as from a program just loaded, and holds nothing of the one before. Compiled in
    the background from creation, as a ProgramBuild. Not for a capture that follows children: the
    processes it followed would stay watched between captures."""

    def __init__(self, options: ProgramOptions = ProgramOptions()):
        if options.follow_children:
            raise ValueError("a program that follows children cannot be kept across captures")
        self.options = options
        self._build = ProgramBuild(options)
        self._bpf: Any = None
        self._lent = False
        self._idle = True  # every run of it that counted has ended
        self._on_notice: Callable[[Any, int, int], None] | None = None

    def __enter__(self) -> "KeptProgram":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def take(self) -> Any:
        """The loaded program, for one capture until it gives it back (give_back)."""
        if self._lent:
            raise RuntimeError("a kept program taken by a second capture before the first gave it back")
        if self._bpf is None:
            self._bpf = self._build.take()
            # Opened once: each capture's notices reach it through listen().
            self._bpf[b"notices"].open_ring_buffer(self._notice)
        self._lent, self._idle = True, False
        return self._bpf

    def listen(self, on_notice: Callable[[Any, int, int], None]) -> None:
        """Hand the notices from now on to the capture that took the program."""
        self._on_notice = on_notice

    def _notice(self, ctx: Any, data: int, size: int) -> None:
        if self._on_notice is not None:
            self._on_notice(ctx, data, size)

    def quiesce(self) -> None:
        """Stop counting: no process captured, no window open, and every run of the program ended
        (what a detach gives, without detaching), so that its maps hold all they will."""
        control = self._bpf[b"control"]
        for slot in (Control.EPOCH, Control.TGID):
            control[ctypes.c_int(slot)] = ctypes.c_uint64(0)
        _wait_for_program_runs()
        self._idle = True

    def give_back(self) -> None:
        """The capture that took the program is done with it (its maps read, or it failed): empty
        what it filled, for the next capture."""
        if self._bpf is None:
            return
        if not self._idle:
            self.quiesce()
        self._on_notice = None
        self._bpf.ring_buffer_consume()  # notices nobody read (a capture that failed): dropped
        for name in self.options.hash_maps:
            _clear_hash(self._bpf[name.encode()])
        counters = self._bpf[b"counters"]
        for slot in range(len(counters)):
            counters[ctypes.c_int(slot)] = ctypes.c_uint64(0)
        self._lent = False

    def close(self, wait: bool = False) -> None:
        """Detach and free the program (the one detach of the command); `wait`: as ProgramBuild's."""
        self._build.close(wait)
        bpf, self._bpf = self._bpf, None
        if bpf is not None:
            try:
                detach_all(bpf)  # as a capture's stop() detaches
            finally:
                _unload(bpf)


class BccCapture:
    """Capture one process (all its threads) with bcc: a casstrace.probes.protocol.Capture, and a
    context manager (start() / stop()).

    With follow_children, also every process it starts after start(), at any depth, and their
    threads. fds are then told apart by their process: descriptors are keyed (owner, fd, gen), where
    owner is the process's pid when following and 0 otherwise (the kernel keys its maps alike).
    With until_exit, the process exiting is how the capture is meant to end, not an early end.
    `source` and `process` describe what is captured in the trace (default: 'pid PID' and the
    process's command line now). With `build` (a ProgramBuild of the same options), start() takes
    its program instead of compiling one; with a KeptProgram, start() borrows its program and stop()
    gives it back, attached and emptied, instead of detaching it.
    """

    def __init__(
        self,
        pid: int,
        *,
        extra_dirs: Iterable[str | os.PathLike[str]] = (),
        stream_limit: int | None = None,
        source: str | None = None,
        process: str | None = None,
        follow_children: bool = False,
        until_exit: bool = False,
        thread_slot_ns: int = 0,
        all_syscalls: bool = False,
        build: ProgramBuild | KeptProgram | None = None,
        logged_calls_in_maps: bool = False,
    ):
        syscalls.check_architecture()
        check_process(pid)
        check_can_load()
        self.program_options = ProgramOptions(
            follow_children,
            max(1, int(stream_limit or DEFAULT_STREAM_LIMIT)),
            thread_slot_ns,
            all_syscalls,
            logged_calls_in_maps,
        )
        if build is not None and build.options != self.program_options:
            raise ValueError(f"a program built for {build.options} cannot capture with {self.program_options}")
        self._build = build
        self._kept = build if isinstance(build, KeptProgram) else None
        self.pid = pid
        self.until_exit = until_exit
        self.owner = pid if follow_children else 0  # the traced process's owner in fd keys
        self.extra_dirs = tuple(str(directory) for directory in extra_dirs)
        self.source = source or f"pid {pid}"
        self.process = process or proc_fds.process_description(pid)
        self.ended_early: str | None = None
        self._bpf: Any = None
        self._started = self._stopped = False
        self._windows: WindowLog | None = None
        # (owner, fd, gen) -> what it referred to; gen 0 is what the fd held when the capture began,
        # or, in a descendant, what it inherited from its parent.
        self._descriptors: dict[tuple[int, int, int], Descriptor] = {}
        self._current_gen: dict[int, dict[int, int]] = {}  # owner -> fd -> latest gen
        self._descendants: dict[int, int] = {}  # pid -> parent pid, for every process followed
        # pid -> its working directory, as of the notice being read: /proc's at the start, a child's
        # inherited at its fork, then each chdir/fchdir in turn (the notices come in the order the
        # calls were made), so a relative open is resolved where it was made, even once the process
        # has moved on or exited
        self._cwds: dict[int, str] = {}
        self._thread_names: dict[int, str] = {}
        self._lock = threading.Lock()
        # Entries of the time-slotted maps moved out of the kernel (drain_thread_io), by map, as the
        # map holds them (key, then value: 80 bytes a thread_io entry; ctypes objects took ~780)
        self._drained: dict[str, bytearray] = {}
        # What take_slots() already handed out: its end (capture clock), and the loss counters then.
        self._taken_until_ns: int | None = None
        self._losses_taken: dict[str, int] = {}
        self._offered_taken = 0
        self._poller: threading.Thread | None = None
        self._stop_polling = threading.Event()
        self._pidfd: int | None = None
        self._poller_cpu_seconds = 0.0
        self._start_mappings: tuple[Mapping, ...] = ()  # the process's file mappings at the start (msync's files)
        self.result: BccCaptured | None = None

    # What the program was compiled for, named as the callers know them.
    @property
    def follow_children(self) -> bool:
        return self.program_options.follow_children

    @property
    def stream_limit(self) -> int:
        return self.program_options.stream_limit

    @property
    def thread_slot_ns(self) -> int:
        """> 0: file bytes are also counted per (thread, slot of this many ns, file) (capture.c thread_io)."""
        return self.program_options.thread_slot_ns

    # -- the contract ------------------------------------------------------------------------
    @property
    def start_ns(self) -> int:
        """When the capture started, on now_ns()'s clock (slots count from it)."""
        if self._windows is None:
            raise RuntimeError("start_ns before start()")
        return self._windows.start_ns

    @property
    def thread_names(self) -> dict[int, str]:
        """tid -> name (/proc's comm, 15 characters at most) of the threads seen, as last named."""
        with self._lock:
            return dict(self._thread_names)

    def now_ns(self) -> int:
        return time.monotonic_ns()  # the clock of bpf_ktime_get_ns()

    def __enter__(self) -> "BccCapture":
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def start(self) -> None:
        if self._started:
            return
        self._started = True
        try:
            self._load()
            start_ns = self.now_ns()
            self._set_control(tgid=self.pid, start_ns=start_ns, epoch=1)
            self._windows = WindowLog(start_ns)
            self._seed_descriptors()
            self._start_mappings = tuple(mapped_pages.file_mappings(self.pid))
            self._seed_written_inodes()
            self._thread_names.update(proc_fds.thread_names(self.pid))
            if (directory := proc_fds.cwd(self.pid)) is not None:
                self._cwds[self.pid] = directory
            self._start_polling()
        except BaseException:
            self._release()
            self._stopped = True  # nothing to stop, nothing to write
            raise

    def begin_window(self, label: str, execution: int | None = None) -> int:
        if self._windows is None or self._stopped:
            raise RuntimeError("begin_window() outside a running capture")
        window_id = self._windows.begin(label, execution, self.now_ns())
        self._set_control(epoch=window_id)
        return window_id

    def stop(self) -> BccCaptured | None:
        """Detach every probe, keeping what was captured. Idempotent; safe after a failed start."""
        if self._stopped or not self._started:
            return self.result
        self._stopped = True
        assert self._windows is not None
        try:
            windows = self._windows.close(self.now_ns())
            self._set_control(epoch=0)
            self._stop_polling.set()  # the poller ends its last poll while the probes detach
            self._detach()
            if self._poller is not None:
                self._poller.join()
            self._bpf.ring_buffer_consume()
            counters, tables, events, fills = self._read_tables()
            self._final_snapshot()
        finally:
            self._release()
        self.result = BccCaptured(
            pid=self.pid,
            source=self.source,
            process=self.process,
            follow_children=self.follow_children,
            extra_dirs=self.extra_dirs,
            stream_limit=self.stream_limit,
            logged_calls_in_maps=self.program_options.logged_calls_in_maps,
            windows=windows,
            ended_early=self.ended_early,
            counters=counters,
            tables=tables,
            events=events,
            fills=fills,
            descriptors=self._descriptors,
            thread_names=self._thread_names,
            descendants=self._descendants,
            poller_cpu_seconds=self._poller_cpu_seconds,
            thread_slot_ns=self.thread_slot_ns,
            write_tracepoints=write_path_tracepoints(),
            address_mappings=self._start_mappings + tuple(mapped_pages.file_mappings(self.pid)),
            filesystems=mounts.filesystem_types(self.pid),
        )
        return self.result

    # -- loading -----------------------------------------------------------------------------
    def _load(self) -> None:
        self._bpf = self._build.take() if self._build is not None else _loaded_program(self.program_options)

    def _set_control(self, *, epoch: int | None = None, start_ns: int | None = None, tgid: int | None = None) -> None:
        control = self._bpf[b"control"]
        # The process and start_ns first: the program counts once the epoch is non-zero, and bins by start_ns.
        for slot, value in ((Control.TGID, tgid), (Control.START_NS, start_ns), (Control.EPOCH, epoch)):
            if value is not None:
                control[ctypes.c_int(slot)] = ctypes.c_uint64(value)

    def _seed_written_inodes(self) -> None:
        """Count the writeback of the files the process has open or mapped now (pages it dirtied before
        the capture); those it dirties from now on the program adds itself."""
        inodes = {d.inode for d in self._descriptors.values() if d.kind == "file" and d.inode is not None}
        table = self._bpf[b"written_inodes"]
        for inode in inodes | {mapping.inode for mapping in self._start_mappings}:
            table[ctypes.c_uint64(inode)] = ctypes.c_uint8(1)

    def _seed_descriptors(self) -> None:
        """Give the fds open at attach their names (gen 0) and file positions, unless the program
        already saw them replaced since attach (BPF_NOEXIST keeps its newer state)."""
        from bcc import lib

        fds = self._bpf[b"fds"]
        current_gen = self._current_gen.setdefault(self.owner, {})
        for fd, descriptor in proc_fds.fd_snapshot(self.pid).items():
            self._descriptors[(self.owner, fd, 0)] = descriptor
            state = fds.Leaf()
            state.gen = 0
            state.kind = Kind[descriptor.kind.upper()] if descriptor.kind.upper() in Kind.__members__ else Kind.OTHER
            state.pos_known = int(descriptor.position is not None)
            state.pos = descriptor.position or 0
            state.next_offset = -1
            key = fds.Key(self.owner << 32 | fd)  # FD_SLOT in capture.c
            lib.bpf_update_elem(fds.map_fd, ctypes.byref(key), ctypes.byref(state), BPF_NOEXIST)
            current_gen.setdefault(fd, 0)
        self._name_sockets()

    # -- while capturing: descriptor changes -----------------------------------------------------
    def _start_polling(self) -> None:
        if self._kept is not None:
            self._kept.listen(self._on_notice)
        else:
            self._bpf[b"notices"].open_ring_buffer(self._on_notice)
        try:
            self._pidfd = os.pidfd_open(self.pid)
        except OSError:
            self._pidfd = None
        self._poller = threading.Thread(target=self._poll, name="casstrace-notices", daemon=True)
        self._poller.start()

    def _poll(self) -> None:
        began = time.thread_time()
        while not self._stop_polling.is_set():
            self._bpf.ring_buffer_poll(timeout=50)
            self._bpf.ring_buffer_consume()  # the renames, which wake no one (capture.c notify)
            if self.ended_early is None and not self.until_exit and self._process_exited():
                self.ended_early = f"process {self.pid} exited"
        self._poller_cpu_seconds = time.thread_time() - began

    def _process_exited(self) -> bool:
        if self._pidfd is None:
            return not Path(f"/proc/{self.pid}").exists()
        readable, _, _ = select.select([self._pidfd], [], [], 0)
        return bool(readable)

    def _on_notice(self, _ctx: Any, data: int, _size: int) -> None:
        notice = ctypes.cast(
            data, ctypes.POINTER(FollowedNoticeRecord if self.follow_children else NoticeRecord)
        ).contents
        raw = ctypes.string_at(data + NoticeRecord.text.offset, NOTICE_PATH)
        text = notice.text.decode(errors="replace")
        # owner: the process in fd keys; process: its pid, for /proc
        owner, process = (notice.tgid, notice.tgid) if self.follow_children else (0, self.pid)
        with self._lock:
            if notice.type == NoticeType.NEW_FD:
                self._on_new_fd(notice, owner, process, "" if notice.kind == Kind.SOCKET else text)
                if notice.nr in (syscalls.NUMBERS["accept"], syscalls.NUMBERS["accept4"]):
                    self._peer_seen(owner, notice.fd, notice.gen, raw)
            elif notice.type == NoticeType.CONNECT:
                self._peer_seen(owner, notice.fd, notice.gen, raw)
            elif notice.type == NoticeType.CHDIR:
                self._on_chdir(owner, process, notice.fd, notice.gen, text)
            elif notice.type == NoticeType.FORK:
                self._inherit(parent=owner, child=notice.tid)
                self._thread_names[notice.tid] = text
            elif notice.type in (NoticeType.RENAME, NoticeType.EXIT, NoticeType.THREAD):
                self._thread_names[notice.tid] = text

    def _inherit(self, parent: int, child: int) -> None:
        """A new process holds its parent's fds as they were at the fork: the notices before this
        one are everything the parent opened until then. The kernel has no state for the child's fds
        yet, so it counts their calls under gen 0, which names them here."""
        self._descendants[child] = parent
        if parent in self._cwds:
            self._cwds.setdefault(child, self._cwds[parent])
        inherited = self._current_gen[child] = {}
        for fd, gen in self._current_gen.get(parent, {}).items():
            descriptor = self._descriptors.get((parent, fd, gen))
            if descriptor is not None:
                self._descriptors[(child, fd, 0)] = descriptor
                inherited[fd] = 0

    def _on_new_fd(self, notice: NoticeRecord, owner: int, process: int, text: str) -> None:
        fd, kind = notice.fd, KIND_NAMES.get(notice.kind, "unknown")
        current_gen = self._current_gen.setdefault(owner, {})
        current_gen[fd] = max(current_gen.get(fd, 0), notice.gen)
        now = proc_fds.describe_fd(process, fd, with_position=False)
        descriptor: Descriptor | None
        if text:  # open/openat/openat2/creat: the path the process asked for
            path = text if text.startswith("/") else self._resolve_relative(owner, process, text, notice.aux_fd)
            descriptor = Descriptor(path=os.path.normpath(path), kind="file")
            self._stat_into(descriptor, process)
            # The fd may already hold another file (closed and its number reused before this notice
            # was read): /proc's canonical path is taken only for the very inode that was opened.
            if (
                now is not None
                and now.kind == "file"
                and descriptor.inode is not None
                and (now.dev, now.inode) == (descriptor.dev, descriptor.inode)
            ):
                descriptor = now
        elif notice.aux_fd >= 0 and notice.nr in (
            syscalls.NUMBERS["dup"],
            syscalls.NUMBERS["dup2"],
            syscalls.NUMBERS["dup3"],
            syscalls.NUMBERS["fcntl"],
        ):
            original = self._descriptors.get((owner, notice.aux_fd, notice.aux_gen))
            descriptor = Descriptor(**vars(original)) if original else now
        else:
            descriptor = now
        if descriptor is None:
            descriptor = Descriptor(path=f"{kind} fd {fd}" + (f" of pid {owner}" if owner else ""), kind=kind)
        self._descriptors[(owner, fd, notice.gen)] = descriptor
        if descriptor.kind == "socket":
            self._name_sockets()

    def _on_chdir(self, owner: int, process: int, fd: int, gen: int, path: str) -> None:
        """The process's working directory from now on: chdir's path (from the one before, when
        relative), or the directory fchdir's fd names. One that cannot be told is forgotten: /proc
        says where the process is, when asked."""
        if fd >= 0:
            directory = self._descriptors.get((owner, fd, gen))
            working = directory.path if directory is not None and directory.kind == "file" else None
        else:
            base = "" if path.startswith("/") else self._cwds.get(process)
            working = os.path.normpath(os.path.join(base, path)) if base is not None else None
        if working is None:
            self._cwds.pop(process, None)
        else:
            self._cwds[process] = working

    def _resolve_relative(self, owner: int, process: int, path: str, dirfd: int) -> str:
        if dirfd == -100:  # AT_FDCWD
            # Where it was when it opened (followed since the capture began); else where it is now;
            # else where it was born; else the path stays relative rather than taken as from /.
            base = (
                self._cwds.get(process)
                or proc_fds.cwd(process)
                or self._cwds.get(self._descendants.get(process, -1), "")
            )
        else:
            directory = self._descriptors.get((owner, dirfd, self._current_gen.get(owner, {}).get(dirfd, 0)))
            base = directory.path if directory else f"/proc/{process}/fd/{dirfd}"
        return os.path.join(base, path)

    @staticmethod
    def _stat_into(descriptor: Descriptor, process: int) -> None:
        try:
            stat = proc_fds.stat_in_root(process, descriptor.path)
        except OSError:
            return
        descriptor.dev, descriptor.inode = stat.st_dev, stat.st_ino

    def _peer_seen(self, owner: int, fd: int, gen: int, sockaddr: bytes) -> None:
        descriptor = self._descriptors.get((owner, fd, gen))
        if descriptor is not None and descriptor.kind == "socket":
            descriptor.remote_addr = descriptor.remote_addr or proc_fds.sockaddr_address(sockaddr)
        self._name_sockets()

    def _name_sockets(self) -> None:
        unnamed = [
            d
            for d in self._descriptors.values()
            if d.kind == "socket" and d.local_addr is None and d.local_family is None
        ]
        if unnamed:  # a JVM's unix sockets would otherwise have the TCP tables read at every stop
            families = proc_fds.local_socket_families(self.pid)
            for descriptor in unnamed:
                descriptor.local_family = families.get(descriptor.socket_inode or 0)
            unnamed = [d for d in unnamed if d.local_family is None]
        if unnamed:
            sockets = proc_fds.tcp_sockets(self.pid)
            for descriptor in unnamed:
                proc_fds.name_socket(descriptor, sockets)

    # -- stopping ----------------------------------------------------------------------------
    def _detach(self) -> None:
        """Stop the program counting: detached, or quiesced when it is kept for the next capture."""
        if self._kept is not None:
            self._kept.quiesce()
        else:
            detach_all(self._bpf)

    def _release(self) -> None:
        self._stop_polling.set()
        if self._poller is not None and self._poller is not threading.current_thread():
            self._poller.join()
        if self._pidfd is not None:
            os.close(self._pidfd)
            self._pidfd = None
        if self._bpf is not None:
            if self._kept is not None:
                self._kept.give_back()
            else:
                _unload(self._bpf)
            self._bpf = None

    def _read_tables(self) -> tuple[dict[str, int], dict[str, MapRows], memoryview, memoryview]:
        """The counters, every aggregate map, and the kept parts of the event log and the fill log."""
        bpf = self._bpf
        values = self._counters()
        for name, taken in self._losses_taken.items():  # the stretches take_slots() handed out hold theirs
            values[name] -= taken
        names = [
            "stats_by_fd",
            "page_cache_pages",
            "coverage",
            "heatmap",
            "latency_hist",
            *WINDOW_WRITE_MAPS,
        ]
        slotted = self._slotted_maps() if self.thread_slot_ns else {}  # drained while capturing
        tables = {
            name: self._rows(name) if name in slotted else read_hash(bpf[name.encode()])
            for name in names + (["thread_io"] if self.thread_slot_ns else [])
        }
        events = _read_log(
            bpf[b"event_log"], FOLLOWED_EVENT if self.follow_children else EVENT, values["events_offered"]
        )
        fills = _read_log(bpf[b"fill_log"], FILL, values["fills_offered"])
        if self._kept is not None:  # the next capture writes its records over these
            events, fills = memoryview(bytes(events)), memoryview(bytes(fills))
        return values, tables, events, fills

    def drain_thread_io(self) -> int:
        """Move the complete slots of the kernel's time-slotted maps (thread_io, and the heat map and
        latency spectrogram, SLOT_NS slots) into this process, so none fills: a full map refuses
        updates (counted): a watch's thread_io went blind after ~20 minutes at the test load, its heat
        map refused 19 million updates in 10 minutes at 170 requests/s. Returns the entries moved. Not
        cut by a signal halfway: call it deferred."""
        if not self.thread_slot_ns or self._bpf is None or self._stopped:
            return 0
        moved = 0
        elapsed = self.now_ns() - self.start_ns - DRAIN_MARGIN_NS
        for name, slot_ns in self._slotted_maps().items():
            table = self._bpf[name.encode()]
            key_size, leaf_size = ctypes.sizeof(table.Key), ctypes.sizeof(table.Leaf)
            # The entries' slots read straight from the batches' bytes, in C (struct): the map holds
            # DRAIN_MARGIN_NS of entries and more, of which a drain moves one refresh's;
            # a ctypes object for each made every drain a 40-100 ms burst of this process's CPU.
            slots = _slot_reader(table, key_size)
            last = elapsed // slot_ns
            old_keys, old_entries = bytearray(), bytearray()
            for keys, values, count in _hash_batches(table):
                key_bytes = ctypes.string_at(keys, count * key_size)
                leaf_bytes = ctypes.string_at(values, count * leaf_size)
                for index, (entry_slot,) in enumerate(slots.iter_unpack(key_bytes)):
                    if entry_slot < last:
                        key = key_bytes[index * key_size : (index + 1) * key_size]
                        old_keys += key
                        old_entries += key + leaf_bytes[index * leaf_size : (index + 1) * leaf_size]
            count = delete_keys(table, old_keys)
            if not count:
                continue
            with self._lock:
                self._drained.setdefault(name, bytearray()).extend(old_entries)
            moved += count
        return moved

    def _slotted_maps(self) -> dict[str, int]:
        """The maps keyed by a time slot since start_ns, with the slot's width in ns."""
        return {"thread_io": self.thread_slot_ns, "heatmap": SLOT_NS, "latency_hist": SLOT_NS}

    def _rows(self, name: str) -> MapRows:
        """A map's entries: those drained, and those still in the kernel (an entry found twice, a slot
        a late call re-created after it was drained, counts the sum)."""
        with self._lock:
            drained = bytes(self._drained.get(name, b""))
        table = self._bpf[name.encode()]
        return _summed(table, itertools.chain(_entries(table, drained), ((bytes(k), v) for k, v in read_hash(table))))

    def complete_until_ns(self) -> int:
        """Slots that end by this time (now_ns()'s clock) are complete: no read still running adds to them."""
        return self.now_ns() - DRAIN_MARGIN_NS

    def take_slots(self, until_ns: int, label: str) -> BccCaptured:
        """The time-slotted maps' slots that end by `until_ns` (complete: see complete_until_ns) and
        that no earlier call took, moved out of this capture: one stretch of a long watch, written as
        a trace of its own (window `label`), so that a watch of hours holds one stretch at a time.
        The stretch's loss counters are its own; the capture's final result holds the rest. Its
        other tables (per-file totals, the per-call log) stay whole in that final result."""
        if until_ns > self.complete_until_ns():
            raise ValueError(f"slots up to {until_ns} are not complete yet")
        self.drain_thread_io()
        start = self.start_ns if self._taken_until_ns is None else self._taken_until_ns
        tables: dict[str, Iterable[tuple[Any, Any]]] = {
            name: [] for name in ("stats_by_fd", "page_cache_pages", "coverage", *WINDOW_WRITE_MAPS)
        }
        for name, slot_ns in self._slotted_maps().items():
            table = self._bpf[name.encode()]
            entry_size = ctypes.sizeof(table.Key) + ctypes.sizeof(table.Leaf)
            last = (until_ns - self.start_ns) // slot_ns  # slots before it end by until_ns
            taken, kept = bytearray(), bytearray()
            with self._lock:
                drained = self._drained.get(name, bytearray())
                for index, (entry_slot,) in enumerate(_slot_reader(table, entry_size).iter_unpack(drained)):
                    (taken if entry_slot < last else kept).extend(
                        drained[index * entry_size : (index + 1) * entry_size]
                    )
                self._drained[name] = kept
            tables[name] = StoredEntries(table, bytes(taken))
        counters = self._counters()
        for name in LOSS_COUNTERS:
            counters[name], self._losses_taken[name] = (
                counters[name] - self._losses_taken.get(name, 0),
                counters[name],
            )
        # Calls go by slot in a stretch (meta unstreamed_events: every call it saw): the per-call log
        # is read once, at the capture's end.
        counters["events_offered"] = counters["events_offered"] - self._offered_taken
        self._offered_taken += counters["events_offered"]
        self._taken_until_ns = until_ns
        with self._lock:
            descriptors, thread_names = dict(self._descriptors), dict(self._thread_names)
        windows = [Window(label, None, start, until_ns)]
        if start > self.start_ns:  # the capture's start stays the trace's (its slots count from it)
            windows.insert(0, Window(GAP_WINDOW, None, self.start_ns, start))
        return BccCaptured(
            pid=self.pid,
            source=self.source,
            process=self.process,
            follow_children=self.follow_children,
            extra_dirs=self.extra_dirs,
            stream_limit=0,
            logged_calls_in_maps=self.program_options.logged_calls_in_maps,
            windows=tuple(windows),
            ended_early=None,
            counters=counters,
            tables=tables,
            events=memoryview(b""),
            fills=memoryview(b""),
            descriptors=descriptors,
            thread_names=thread_names,
            descendants={},
            poller_cpu_seconds=0.0,
            thread_slot_ns=self.thread_slot_ns,
            write_tracepoints=write_path_tracepoints(),
            address_mappings=(),
            filesystems=mounts.filesystem_types(self.pid),
        )

    def _counters(self) -> dict[str, int]:
        counters = self._bpf[b"counters"]
        return {counter.name.lower(): counters[ctypes.c_int(counter)].value for counter in Counter}

    def thread_io_so_far(self) -> list[tuple[int, int, str | None, int, int, int, int | None]]:
        """The per-thread counts (capture.c thread_io) as they stand now, for a live view while capturing:
        (tid, slot, path or None, read_bytes, cache_miss_pages, write_bytes, dirtied_pages or None when this
        kernel has no tracepoint for it). Empty unless the capture counts per thread, or once it stopped
        (its result has them all, with every file named)."""
        if not self.thread_slot_ns or self._bpf is None or self._stopped:
            return []
        dirtied = "dirtied" in write_path_tracepoints()
        with self._lock:
            by_fd = {key: d.path for key, d in self._descriptors.items()}
            by_inode = {(d.dev, d.inode): d.path for d in self._descriptors.values() if d.dev is not None}
        rows = []
        mapped: dict[tuple[int, int], str] | None = None  # read once, at the first page of a file no fd names
        for key, io in self._rows("thread_io"):
            f = key.file
            if f.source == Source.SYSCALL:  # (fd, owner << GEN_BITS | gen)
                path = by_fd.get((f.gen_or_inode >> GEN_BITS, f.fd_or_dev, f.gen_or_inode & ((1 << GEN_BITS) - 1)))
            else:  # a page dirtied through a mapping (the commit log's segments) may be of a file no fd names
                inode = (proc_fds.user_dev(f.fd_or_dev), f.gen_or_inode)
                path = by_inode.get(inode)
                if path is None:
                    mapped = proc_fds.mapped_files(self.pid) if mapped is None else mapped
                    path = mapped.get(inode)
            rows.append(
                (
                    key.tid,
                    key.slot,
                    path,
                    io.read_bytes,
                    io.cache_pages,
                    io.write_bytes,
                    io.dirtied_pages if dirtied else None,
                )
            )
        return rows

    def socket_reads_so_far(self) -> list[tuple[str, str, int]]:
        """(local 'ip:port', remote 'ip:port', bytes read) of each TCP connection of the process as they
        stand now (capture.c stats_by_fd: a socket's reads are never in the event log), for a live view."""
        if self._bpf is None or self._stopped:
            return []
        with self._lock:
            connections = {
                key: (d.local_addr, d.remote_addr)
                for key, d in self._descriptors.items()
                if d.kind == "socket" and d.local_addr is not None and d.remote_addr is not None
            }
        read: dict[tuple[str, str], int] = {}
        for key, stats in self._rows("stats_by_fd"):
            ends = connections.get((key.owner, key.fd, key.gen))
            if ends is not None:
                read[ends] = read.get(ends, 0) + stats.read_bytes
        return [(local, remote, size) for (local, remote), size in read.items()]

    def program_run_times(self) -> dict[str, tuple[int, int]]:
        """(ns spent in it, runs) of each BPF program so far, counted only while
        /proc/sys/kernel/bpf_stats_enabled is 1 (benchmarks/probe_overhead.py --bpf-stats turns it on)."""
        if self._bpf is None or self._stopped:
            return {}
        return {
            name: (int(info.get("run_time_ns", 0)), int(info.get("run_cnt", 0)))
            for name, info in _program_info(self._bpf).items()
        }

    def _final_snapshot(self) -> None:
        """Name what is still open: sockets connected before their notice was handled, files
        whose notice arrived after they were closed, thread names set after start."""
        with self._lock:
            current_gen = self._current_gen.get(self.owner, {})
            for fd in proc_fds.open_fds(self.pid):
                key = (self.owner, fd, current_gen.get(fd, 0))
                known = self._descriptors.get(key)
                if known is not None and known.dev is not None:
                    continue  # named at start or when opened: nothing /proc says now would add to it
                descriptor = proc_fds.describe_fd(self.pid, fd, with_position=False)
                if descriptor is not None and (known is None or known.kind == descriptor.kind):
                    self._descriptors[key] = descriptor
            self._name_sockets()
            self._thread_names.update(proc_fds.thread_names(self.pid))


def _program_info(bpf: Any) -> dict[str, dict[str, str]]:
    """Each loaded program's fdinfo fields (prog_id, run_time_ns, run_cnt, ...), by function name."""
    programs = {}
    for name, function in bpf.funcs.items():
        try:
            info = Path(f"/proc/self/fdinfo/{function.fd}").read_text()
        except OSError:
            continue
        programs[name.decode()] = dict(line.split(":\t", 1) for line in info.splitlines() if ":\t" in line)
    return programs


def _program_ids(bpf: Any) -> set[int]:
    return {int(info["prog_id"]) for info in _program_info(bpf).values() if "prog_id" in info}


def _wait_until_unloaded(program_ids: set[int], timeout: float = 2.0) -> None:
    """The kernel frees a raw tracepoint's program after an RCU grace period, not when its link is
    closed: wait for that, so that a stopped capture leaves no program loaded."""
    libc = ctypes.CDLL(None, use_errno=True)
    deadline = time.monotonic() + timeout
    for prog_id in program_ids:
        while time.monotonic() < deadline:
            attr = (ctypes.c_uint32 * 4)(prog_id, 0, 0, 0)
            fd = libc.syscall(SYS_BPF, BPF_PROG_GET_FD_BY_ID, ctypes.byref(attr), ctypes.sizeof(attr))
            if fd < 0:
                break
            os.close(fd)
            time.sleep(0.002)


def read_hash(table: Any) -> MapRows:
    """All (key, value) pairs of a BPF hash (scalar values as ints, structs as ctypes structures)."""
    rows: MapRows = []
    for keys, values, count in _hash_batches(table):
        rows += zip(keys[:count], map(_plain, values[:count]))
    return rows


def _hash_batches(table: Any) -> Iterator[tuple[Any, Any, int]]:
    """A BPF hash's entries, BATCH_ENTRIES at a time (one bpf() call each), as (key array, value
    array, entries in them): bcc's own items_lookup_batch allocates and zeroes arrays of the map's
    full size (70 MB for these maps, most of the time reading them took)."""
    from bcc import lib

    position, following = ctypes.c_uint32(0), ctypes.c_uint32(0)  # a hash map's batch position: a bucket
    size, started = BATCH_ENTRIES, False
    while True:
        keys, values = (table.Key * size)(), (table.Leaf * size)()
        count = ctypes.c_uint32(size)
        failed = lib.bpf_lookup_batch(
            table.map_fd,
            ctypes.byref(position) if started else None,
            ctypes.byref(following),
            keys,
            values,
            ctypes.byref(count),
        )
        error = ctypes.get_errno() if failed else 0
        if error == errno.ENOSPC and not count.value:  # a bucket holds more than `size` entries
            size *= 2
            continue
        if failed and error != errno.ENOENT:  # kernels without batch operations on this map type
            items = table.items()
            yield (
                (table.Key * len(items))(*(k for k, _ in items)),
                (table.Leaf * len(items))(*(v for _, v in items)),
                len(items),
            )
            return
        yield keys, values, count.value
        if error == errno.ENOENT:  # that was the last batch
            return
        position.value, started = following.value, True


def delete_keys(table: Any, keys: bytes | bytearray) -> int:
    """Delete the entries of a BPF hash whose keys `keys` holds end to end; returns how many."""
    key_size = ctypes.sizeof(table.Key)
    count = len(keys) // key_size
    if not count:
        return 0
    try:
        table.items_delete_batch((table.Key * count).from_buffer_copy(keys))
    except Exception:  # kernels without batch deletion on hash maps
        for at in range(0, len(keys), key_size):
            table.__delitem__(table.Key.from_buffer_copy(keys, at))
    return count


def _clear_hash(table: Any) -> None:
    """Empty a BPF hash no program writes to now (bcc's clear() deletes one key per bpf() call)."""
    key_size = ctypes.sizeof(table.Key)
    keys = b"".join(ctypes.string_at(keys, count * key_size) for keys, _, count in _hash_batches(table))
    delete_keys(table, keys)


def _slot_reader(table: Any, size: int) -> struct.Struct:
    """Reads the slot of a time-slotted map's key from each `size` bytes that start with the key."""
    slot = table.Key.slot
    return struct.Struct(f"<{slot.offset}x{'I' if slot.size == 4 else 'Q'}{size - slot.offset - slot.size}x")


def _entries(table: Any, raw: bytes) -> Iterator[tuple[bytes, Any]]:
    """(key bytes, value) of entries stored as the map holds them (drain_thread_io)."""
    key_size = ctypes.sizeof(table.Key)
    entry_size = key_size + ctypes.sizeof(table.Leaf)
    for at in range(0, len(raw), entry_size):
        yield raw[at : at + key_size], _plain(table.Leaf.from_buffer_copy(raw, at + key_size))


class StoredEntries:
    """A map's entries as drain_thread_io stores them, read as (key, value) rows each time they are
    iterated: an interval of a long watch is held in the map's own 16-80 bytes an entry (a
    ctypes key object for each took ~200 more). An entry found twice (a slot a late call re-created
    after it was drained) is two rows: the trace builder sums rows of one key."""

    def __init__(self, table: Any, stored: bytes):
        self.table = table
        self.stored = stored

    def __iter__(self) -> Iterator[tuple[Any, Any]]:
        for raw, value in _entries(self.table, self.stored):
            yield self.table.Key.from_buffer_copy(raw), value


def _summed(table: Any, entries: Iterable[tuple[bytes, Any]]) -> MapRows:
    """(key, value) rows of a map, an entry found twice counted once with the sum of its values."""
    rows: dict[bytes, list[Any]] = {}
    for raw, value in entries:
        kept = rows.get(raw)
        if kept is None:
            rows[raw] = [table.Key.from_buffer_copy(raw), value]
        elif isinstance(value, int):
            kept[1] += value
        else:
            _add_counts(kept[1], value)
    return [(key, value) for key, value in rows.values()]


def _add_counts(into: Any, counts: Any) -> None:
    """Add a ctypes structure of counters (fields, arrays, structures of them) to another of its type."""
    for field, _ in counts._fields_:
        mine, theirs = getattr(into, field), getattr(counts, field)
        if isinstance(theirs, ctypes.Array):
            for index, value in enumerate(theirs):
                if isinstance(value, ctypes.Structure):
                    _add_counts(mine[index], value)
                else:
                    mine[index] += value
        elif isinstance(theirs, ctypes.Structure):
            _add_counts(mine, theirs)
        else:
            setattr(into, field, mine + theirs)


def _plain(value: Any) -> Any:
    return value.value if isinstance(value, ctypes._SimpleCData) else value


def _read_log(log: Any, layout: struct.Struct, offered: int) -> memoryview:
    """The records an in-place log (a BPF_F_MMAPABLE array) kept: the first `offered`, at most all,
    read where the kernel wrote them. The mapping keeps the log (kernel memory the program had
    anyway) until the view is dropped, once the trace is written: a copy made 44 MB of fresh pages
    for the default 500,000 calls, whose ~11,000 first-touch faults took 20-100 ms of each stop.
    Only the pages holding records are mapped: the kernel fills in the page table of the whole
    mapping at mmap, and clears it at munmap (~10 ms a stop for the default logs)."""
    length = min(offered, log.max_entries) * layout.size
    if not length:
        return memoryview(b"")
    memory = mmap.mmap(log.get_fd(), _page_round(length), mmap.MAP_SHARED, mmap.PROT_READ)
    return memoryview(memory)[:length]


def _page_round(size: int) -> int:
    return (size + mmap.PAGESIZE - 1) // mmap.PAGESIZE * mmap.PAGESIZE
