"""The profiler's samples into trace rows: each logged read call joined with the Java stack that made it.

async-profiler records the stack of every call of the JDK's read method (at its entry, on the
thread making it, CLOCK_MONOTONIC); the probes log every read syscall (at its entry, same thread,
same clock). On one thread the method call precedes its own syscall and follows the previous
one, so a read joins the latest method sample of its thread that is at or before the read and
after that thread's previous read. A read with no such sample (a read through another path, e.g.
a native one) stays unjoined, and is counted as such; a sample whose syscall the log does not hold
joins nothing.

Page-cache fills: those inside a read call (events.cache_miss_pages) share the read's stack, exactly.
A fill no read holds — a fault on a mapped file, where no Java method brackets the access — takes the
stack of the same thread's wall-clock sample nearest in time, when one is within FILL_JOIN_NS: the
thread's code around the fault, not a stack taken at it. A fill with no such sample stays
undetermined, counted.
"""

import bisect
from collections import defaultdict
from collections.abc import Callable, Collection, Iterable
from dataclasses import dataclass, field, replace

from casstrace.errors import CasstraceError
from casstrace.phases import Phases
from casstrace.probes.jvm.async_profiler import VERSION as PROFILER_VERSION
from casstrace.probes.jvm.async_profiler import AsyncProfiler
from casstrace.probes.jvm.jfr import Sample, read_samples
from casstrace.probes.protocol import FIRST_WINDOW, GAP_WINDOW
from casstrace.traces import TraceWriter
from casstrace.traces.schema import PAGE_BYTES
from casstrace.traces.serving import ServingSpans

METHOD_EVENT = "jdk.ExecutionSample"
WALL_EVENT = "profiler.WallClockSample"
# How near a wall-clock sample of the faulting thread must be to lend a fault its stack. A thread
# blocked in a fault takes its profiling signal only when the fault returns, and a fault that reads
# ahead megabytes blocks for milliseconds: 10 ms catches most fault bytes' samples, and a sample that
# near names the same asking frame as the call's own stack for a sustained read, not for a brief one
# (a thread that reads briefly is sampled doing something else). Right in aggregate, not fill by fill.
# The figures: docs/profiling.md (benchmarks/fault_join_accuracy.py measures them).
FILL_JOIN_NS = 10_000_000


@dataclass(frozen=True)
class LoggedRead:
    ts_ns: int
    tid: int
    file_id: int
    returned: int
    window_id: int = 0
    fill_pages: int = 0  # pages the page cache filled of the file while the call ran


@dataclass(frozen=True)
class LoggedFill:
    """A page-cache fill no logged read holds (page_cache_fills)."""

    ts_ns: int
    tid: int
    file_id: int
    pages: int
    window_id: int = 0


def up_to(stack: tuple[str, ...], method: str) -> tuple[str, ...]:
    """The stack of a recorded call of `method` without the profiler's own frames above it (a mixed
    stack walk records the instrumentation's call into async-profiler too)."""
    if method not in stack:
        return stack
    return stack[: len(stack) - stack[::-1].index(method)]


def _by_thread(samples: Iterable[Sample]) -> tuple[dict[int, list[Sample]], dict[int, list[int]]]:
    """The samples of each thread in time order, and their times (to bisect)."""
    by_thread: dict[int, list[Sample]] = defaultdict(list)
    for sample in samples:
        by_thread[sample.tid].append(sample)
    times: dict[int, list[int]] = {}
    for tid, thread_samples in by_thread.items():
        thread_samples.sort(key=lambda s: s.ts_ns)
        times[tid] = [s.ts_ns for s in thread_samples]
    return by_thread, times


def join_reads(reads: Iterable[LoggedRead], method_samples: Iterable[Sample]) -> list[tuple[LoggedRead, Sample | None]]:
    """Each read with the method sample that made it (None when there is none), by thread and time."""
    by_thread, times = _by_thread(method_samples)
    previous: dict[int, int] = {}  # tid -> ts of its previous read
    used: dict[int, int] = {}  # tid -> index of the last sample joined
    joined = []
    for read in sorted(reads, key=lambda r: (r.tid, r.ts_ns)):
        match = None
        stamps = times.get(read.tid)
        if stamps:
            index = bisect.bisect_right(stamps, read.ts_ns) - 1
            after = previous.get(read.tid)
            if index >= 0 and index > used.get(read.tid, -1) and (after is None or stamps[index] > after):
                match = by_thread[read.tid][index]
                used[read.tid] = index
        previous[read.tid] = read.ts_ns
        joined.append((read, match))
    return joined


def nearest_samples(
    fills: Iterable[LoggedFill], samples: Iterable[Sample], before_ns: int = FILL_JOIN_NS, after_ns: int = FILL_JOIN_NS
) -> list[tuple[LoggedFill, Sample | None]]:
    """Each fill with its thread's sample nearest in time among those from `before_ns` before it to
    `after_ns` after it (None when there is none)."""
    by_thread, times = _by_thread(samples)
    joined = []
    for fill in fills:
        stamps = times.get(fill.tid, [])
        index = bisect.bisect_left(stamps, fill.ts_ns)
        candidates = [
            i for i in (index - 1, index) if 0 <= i < len(stamps) and -before_ns <= stamps[i] - fill.ts_ns <= after_ns
        ]
        best = min(candidates, key=lambda i: abs(stamps[i] - fill.ts_ns), default=None)
        joined.append((fill, None if best is None else by_thread[fill.tid][best]))
    return joined


def write_profile(
    writer: TraceWriter,
    samples: Iterable[Sample],
    *,
    window_ids: list[int],
    profiler: str,
    read_method: str,
    wall_interval_ns: int,
    serving: ServingSpans | None = None,
) -> None:
    """The stacks, wall-clock samples and joined reads of the profiled windows, and meta `profile`.
    Call after the capture has written its windows, files and per-call log. `serving`: the threads
    that served the measured executions and when (their traced sessions): only their samples, reads
    and fills then go into the profile, and meta profile.other_threads counts what was left out
    (another request's work on a busy node, the node's own background threads)."""
    windows = _ProfiledWindows.of(writer, window_ids, serving)
    kept = _kept_samples(writer, samples, windows, read_method)
    logged = [LoggedRead(*read) for read in writer.logged_reads(windows.ids)]
    reads = [read for read in logged if windows.served(read.tid, read.ts_ns)]
    measured_fills = writer.measured("call_fills")
    fills = [LoggedFill(*fill) for fill in writer.logged_fills(windows.ids)] if measured_fills else []
    fills = [fill for fill in fills if windows.served(fill.tid, fill.ts_ns)]
    joined = _joined(writer, reads, fills, kept)

    writer.add_profile_samples(
        {"window_id": w, "tid": tid, "stack_id": s, "state": state, "samples": n}
        for (w, tid, s, state), n in kept.wall_cells.items()
    )
    writer.add_profile_reads(
        {
            "window_id": w,
            "file_id": f,
            "stack_id": s,
            "calls": calls,
            "bytes": size,
            "fill_bytes": in_calls,
            "fault_fill_bytes": faults,
        }
        for (w, f, s), (calls, size, in_calls, faults) in joined.totals.items()
    )
    writer.add_threads(kept.names)
    fill_meta = {
        "fill_join_ns": FILL_JOIN_NS,
        "fill_pages": sum(read.fill_pages for read in reads) + sum(fill.pages for fill in fills),
        "joined_fill_pages": joined.fill_pages,
        "sampled_fill_pages": joined.sampled_fill_pages,
    }
    other_threads = {
        "samples": kept.other_samples,
        "read_calls": len(logged) - len(reads),
        "read_bytes": sum(read.returned for read in logged) - sum(read.returned for read in reads),
    }
    writer.set_meta(
        profile={
            "profiler": profiler,
            "read_method": read_method,
            "wall_interval_ns": wall_interval_ns,
            "window_ids": sorted(windows.ids),
            "samples": len(kept.method),
            "read_calls": len(reads),
            "read_bytes": sum(read.returned for read in reads),
            "joined_calls": joined.calls,
            "joined_bytes": joined.bytes,
            **(fill_meta if measured_fills else {}),
            **({"other_threads": other_threads} if serving is not None else {}),
        }
    )


@dataclass(frozen=True)
class _ProfiledWindows:
    """The profiled windows, and the threads whose work in them the profile keeps."""

    ids: set[int]
    spans: list[tuple[int, int, int]]  # (start ns, end ns, window_id), by start
    starts: list[int]
    serving: ServingSpans | None

    @classmethod
    def of(cls, writer: TraceWriter, window_ids: list[int], serving: ServingSpans | None) -> "_ProfiledWindows":
        ids = set(window_ids)
        # The profiled windows never overlap (the trace format's rule): a time is in one of them at most.
        spans = writer.window_spans(ids)
        return cls(ids, spans, [start for start, _, _ in spans], serving)

    def window_of(self, ts: int) -> int | None:
        index = bisect.bisect_right(self.starts, ts) - 1
        if index >= 0 and ts < self.spans[index][1]:
            return self.spans[index][2]
        return None

    def served(self, tid: int, ts_ns: int) -> bool:
        return self.serving is None or self.serving.holds(tid, ts_ns)


@dataclass
class _KeptSamples:
    """The serving threads' samples, by event, and what the others' wall-clock samples came to."""

    method: list[Sample] = field(default_factory=list)  # each stack up to the read method
    wall: list[Sample] = field(default_factory=list)
    # (window_id, tid, stack_id, state) -> wall-clock samples in the profiled windows
    wall_cells: dict[tuple[int, int, int, str | None], int] = field(default_factory=lambda: defaultdict(int))
    names: dict[int, str] = field(default_factory=dict)  # tid -> thread name, of every sample
    other_samples: int = 0  # wall-clock samples in the profiled windows of threads not serving then


def _kept_samples(
    writer: TraceWriter, samples: Iterable[Sample], windows: _ProfiledWindows, read_method: str
) -> _KeptSamples:
    kept = _KeptSamples()
    for sample in samples:
        if sample.thread:
            kept.names[sample.tid] = sample.thread
        if not windows.served(sample.tid, sample.ts_ns):
            if sample.event == WALL_EVENT and windows.window_of(sample.ts_ns) is not None:
                kept.other_samples += sample.weight
            continue
        if sample.event == METHOD_EVENT:
            kept.method.append(replace(sample, stack=up_to(sample.stack, read_method)))
        elif sample.event == WALL_EVENT:
            kept.wall.append(sample)
            window_id = windows.window_of(sample.ts_ns)
            if window_id in windows.ids:
                kept.wall_cells[(window_id, sample.tid, writer.add_stack(sample.stack), sample.state)] += sample.weight
    return kept


@dataclass
class _Joined:
    """The reads joined to the method samples that made them, and the fills to their nearest wall-clock sample."""

    # (window, file, stack) -> [calls, bytes, fill bytes in those calls, fill bytes of faults]
    totals: dict[tuple[int, int, int], list[int]] = field(default_factory=lambda: defaultdict(lambda: [0, 0, 0, 0]))
    calls: int = 0
    bytes: int = 0
    fill_pages: int = 0  # of the joined calls
    sampled_fill_pages: int = 0  # of the faults given a wall-clock sample's stack


def _joined(writer: TraceWriter, reads: list[LoggedRead], fills: list[LoggedFill], kept: _KeptSamples) -> _Joined:
    joined = _Joined()
    totals = joined.totals
    for read, maker in join_reads(reads, kept.method):
        if maker is None:
            continue
        joined.calls += 1
        joined.bytes += read.returned
        joined.fill_pages += read.fill_pages
        cell = totals[(read.window_id, read.file_id, writer.add_stack(maker.stack))]
        cell[0] += 1
        cell[1] += read.returned
        cell[2] += read.fill_pages * PAGE_BYTES
    for fill, nearest in nearest_samples(fills, kept.wall):
        if nearest is not None:
            joined.sampled_fill_pages += fill.pages
            totals[(fill.window_id, fill.file_id, writer.add_stack(nearest.stack))][3] += fill.pages * PAGE_BYTES
    return joined


def write_recording(
    writer: TraceWriter,
    profiler: AsyncProfiler,
    window_ids: list[int],
    warn: Callable[[str], None],
    serving: ServingSpans | None = None,
) -> None:
    """The profiler's recording of the given windows into the trace. A recording that cannot be
    read costs the profile, said as a warning, not the trace."""
    if not profiler.recorded:
        return
    try:
        samples = list(read_samples(profiler.recording))
    except CasstraceError as error:
        warn(f"the profile is left out of the trace: {error}")
        return
    write_profile(
        writer,
        samples,
        window_ids=window_ids,
        profiler=f"async-profiler {PROFILER_VERSION}",
        read_method=profiler.method,
        wall_interval_ns=profiler.wall_interval_ns,
        serving=serving,
    )


@dataclass
class ProfiledWindows:
    """async-profiler in the JVM over the capture's windows labelled `labels`: started just before
    the first of them opens, stopped just before a window that is neither one of them nor a gap opens
    (run: the tracing execution's), else when the capture stops. A casstrace.probes.protocol
    WindowSource, so it is stopped on every way out; its recording of those windows goes into the
    trace (write_recording)."""

    profiler: AsyncProfiler
    labels: Collection[str]
    warn: Callable[[str], None]
    phases: Phases = field(default_factory=Phases)
    window_ids: list[int] = field(default_factory=list)  # the profiled windows
    # the threads that served the profiled executions and when, once known (run: their traced sessions)
    serving: ServingSpans | None = None

    def on_window_start(self, window_id: int, label: str, execution: int | None) -> None:
        if label in self.labels:
            self.window_ids.append(window_id)
            if not self.profiler.recorded:
                with self.phases("start profiler"):
                    self.profiler.start()
        elif label not in (FIRST_WINDOW, GAP_WINDOW):
            self.stop()

    def on_window_end(self, window_id: int) -> None:
        pass

    def stop(self) -> None:
        if self.profiler.active:
            with self.phases("stop profiler"):
                self.profiler.stop_or_warn(self.warn)

    def write(self, writer: TraceWriter) -> None:
        write_recording(writer, self.profiler, self.window_ids, self.warn, self.serving)
