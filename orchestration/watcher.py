"""`casstrace watch`: which statements a live node's reads go to, with the probes and Cassandra's own
sampled tracing, running nothing on the node's data.

Order matters: everything that can fail on the user's input (connection, finding the JVM and its
nodetool, the thread list, the output path) fails before anything changes on the node. Then the
probes attach (counting file bytes per thread and 1 ms slot), the node starts tracing a share P of
its requests, and the watch runs until its duration or Ctrl-C, refreshing a live top-N table.
The probes and the switch share one capture → trace routine (probes.recording): on every way out
the probes detach and the trace probability goes back to what it was (node.tracing.TraceProbability).
The sampled sessions are read from system_traces afterwards (statements normalized, never a value),
with the JVM's thread names mapped to thread ids, and all of it goes into one trace that `casstrace report` reads.

A watch of hours is cut into intervals (--interval): each interval's slots are taken out of the
capture once complete (ThreadIOCapture.take_slots) and written with its sessions as a trace of its
own, NAME-0001.trace, NAME-0002.trace, ...; the last one is the capture's own trace, renamed. So the
watch holds one interval's rows at a time, whatever its length.

A node that stops or dies during the watch ends it early, keeping what was captured: the intervals
that ended before it went are written whole, the rest as the capture's trace marked incomplete; its
sampled sessions, which lived in its tables, are read while it answers and not after. The watch then
raises node.gone.NodeWentAway, which names the trace and says why the node went (its pid gone, its
log's last word), and gives no advice about a JVM that no longer exists (node.tracing).
"""

import os
import sys
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar, cast

from casstrace.errors import CasstraceError
from casstrace.interrupts import INTERRUPTS, Interrupted
from casstrace.ledger import Ledger, process_start
from casstrace.node import context
from casstrace.node.connection import ConnectionSettings, NodeSession
from casstrace.node.flush_log import LogMark, log_path, received_bytes
from casstrace.node.gc_pauses import GcPauses, pause_meta
from casstrace.node.gone import NodeWentAway, gone_message, node_gone
from casstrace.node.jvm import CassandraProcess, ThreadIds, find_cassandra, java_thread_ids
from casstrace.node.leftovers import restore_left_behind, say, unchanged_evidence
from casstrace.node.own_sandbox import sandbox_root
from casstrace.node.tablestats import TableStats, activity, background, pending_compactions, table_stats
from casstrace.node.thread_pools import trace_writes_done
from casstrace.node.tracing import (
    Nodetool,
    SampledSession,
    TraceProbability,
    format_probability,
    nodetool_for,
    read_sessions,
)
from casstrace.orchestration.targets import Target
from casstrace.outputs import check_output, numbered
from casstrace.paths import default_traces_dir
from casstrace.probes.backends import DEFAULT_BACKEND, backend
from casstrace.probes.bcc.serving_cpu import ServingCpu, Slots
from casstrace.probes.jvm.async_profiler import AsyncProfiler
from casstrace.probes.jvm.java_stacks import ProfiledWindows
from casstrace.probes.proc.mapped_pages import MappedPagesCapture
from casstrace.probes.protocol import GAP_WINDOW, CaptureOptions, ThreadIOCapture, Windows, WindowSource
from casstrace.probes.recording import record
from casstrace.terminal import warn
from casstrace.traces import TraceWriter
from casstrace.traces.meta import CassandraMeta, JvmPause
from casstrace.traces.rows import SessionThreadRow, StatementSessionRow, ThreadCpuRow, ThreadIORow
from casstrace.traces.schema import SLOT_NS, THREAD_SLOT_NS
from casstrace.traces.serving import ServingSpans

Reading = TypeVar("Reading")
DEFAULT_PROBABILITY = 0.01
WATCH_WINDOW = "watch"  # the watch's own window (then a gap, GAP_WINDOW, while the probes detach)
REFRESH_S = 2.0
SETTLE_S = 1.0  # after tracing stops, for the requests traced to end (their last events queued)
TRACE_WRITES_TIMEOUT_S = 10.0  # at most this long for the tracing stage to catch up
LIVE_SHARE = 0.1  # of a core, at most, for the live figures (the table, the metrics page)
MIN_INTERVAL_S = 10.0  # an interval is written SETTLE_INTERVAL_NS after its end: shorter ones would pile up
# An interval is written once its slots are complete and its sessions have ended and reached
# system_traces: sessions are read only once finished, and one still running would belong to none.
SETTLE_INTERVAL_NS = 10_000_000_000


@dataclass
class LiveSnapshot:
    """A watch so far, as the rows its trace will hold (files by path: they have no ids yet)."""

    sessions: list[StatementSessionRow]
    spans: list[SessionThreadRow]
    thread_io: list[ThreadIORow]
    files: dict[int, str]
    thread_names: dict[int, str]
    capture_start_ns: int
    slot_ns: int
    probability: float
    elapsed_s: float
    pauses: list[JvmPause] | None = None  # the JVM's pauses so far (None: not measured)
    received_bytes: dict[str, int] | None = None  # per table, the memtables it flushed so far (None: not read)
    # the node's TCP connections so far, (local 'ip:port', remote 'ip:port', bytes read), with the node's
    # native port and casstrace's own ends ('ip:port'): which are its clients' (statement_writes.clients_read)
    sockets: list[tuple[str, str, int]] = field(default_factory=list)
    native_port: int = 0
    casstrace_addresses: list[str] = field(default_factory=list)
    thread_cpu: list[ThreadCpuRow] | None = None  # the sessions' threads' CPU slots so far (None: not measured)


@dataclass
class WatchOptions:
    connection: ConnectionSettings
    pid: int | None = None
    duration_s: float | None = None  # None: until Ctrl-C
    probability: float = DEFAULT_PROBABILITY
    top: int = 10
    out: Path | None = None
    force: bool = False  # replace an existing regular file at `out` (casstrace.outputs)
    nodetool: str | None = None  # the node's nodetool command, when casstrace cannot build one
    profile: bool = False  # async-profiler in the JVM during the watch window
    interval_s: float | None = None  # a trace per interval of this many seconds (None: one trace)

    @property
    def target(self) -> Target:
        return Target(self.connection, self.pid)


def default_trace_path() -> Path:
    return default_traces_dir() / f"{time.strftime('%Y%m%d-%H%M%S')}-watch.trace"


def interval_trace_path(path: Path, number: int) -> Path:
    """The trace of a watch's interval `number` (from 1): NAME-0001.trace beside NAME.trace."""
    return numbered(path, number)


# A live refresh reads again the sessions that started this long before the last one: those that had
# not finished then (the live table leaves out a session that runs longer; the traces do not).
LATE_SESSION_NS = 10_000_000_000


def is_own_statement(statement: str) -> bool:
    """casstrace's own reads of the node's trace tables, traced at P like any request."""
    return "system_traces." in statement.lower()


def check_options(options: WatchOptions) -> None:
    """What the user asked, refused before anything connects."""
    if not 0 < options.probability <= 1:
        raise CasstraceError(
            f"--sample must be in (0, 1], got {options.probability}",
            "give a share of requests to trace, e.g. --sample 0.01",
        )
    if options.duration_s is not None and options.duration_s <= 0:
        raise CasstraceError(f"--duration must be positive, got {options.duration_s}", "give seconds > 0")
    if options.interval_s is not None and options.interval_s < MIN_INTERVAL_S:
        raise CasstraceError(
            f"--interval must be at least {MIN_INTERVAL_S:g} s, got {options.interval_s:g}",
            f"give --interval {MIN_INTERVAL_S:g} or more (a trace and a report per interval)",
        )
    if options.interval_s is not None and options.profile:
        raise CasstraceError(
            "--profile cannot be given with --interval (the profiler's samples cover the whole watch)",
            "profile a watch of its own, without --interval",
        )


def watch(
    options: WatchOptions,
    live: Callable[[LiveSnapshot], None] | None = None,
    started: Callable[[], None] = lambda: None,
    interval_done: Callable[[Path], None] = lambda path: None,
) -> Path:
    """Watch the node; returns the trace's path (with --interval, the last interval's). `started` is
    called once the probes are attached and the node traces; `live` with the figures so far (of the
    interval so far, with --interval) every REFRESH_S seconds; `interval_done` with each interval's
    trace but the last once written. A signal (Ctrl-C) is how a watch without a duration ends: its
    trace is whole. A watch with a duration cut short by a signal keeps its trace, marked
    incomplete, and raises casstrace.interrupts.Interrupted with it (probes.recording.record); one
    whose node went away keeps it so too, and raises NodeWentAway with it. The options were checked
    (check_options: experiment.Plan.check, before anything connects)."""
    with ExitStack() as stack:
        return Watch(options, stack, WatchCallbacks(live, started, interval_done)).record()


@dataclass
class WatchCallbacks:
    """How a watch tells its caller how it goes (watch()'s arguments)."""

    live: Callable[[LiveSnapshot], None] | None = None
    started: Callable[[], None] = lambda: None
    interval_done: Callable[[Path], None] = lambda path: None


@dataclass
class WatchedNode:
    """What a watch reads of the node before anything on it changes: a node that goes away takes its
    tables along."""

    session: NodeSession
    process: CassandraProcess
    nodetool: Nodetool
    thread_ids: ThreadIds
    start: int | None  # the JVM's start time (ledger.process_start): the same pid, a new JVM, is gone
    settings: dict
    data_dirs: list[str]
    meta: CassandraMeta  # 'cassandra' without tables

    def casstrace_addresses(self) -> list[str]:
        """casstrace's own connections to the node, 'ip:port' (its reads of the trace tables)."""
        return sorted(f"{ip}:{port}" for ip, port in self.session.client_addresses())

    @classmethod
    def connect(cls, options: WatchOptions, stack: ExitStack) -> "WatchedNode":
        session = stack.enter_context(NodeSession(options.connection))
        process = find_cassandra(options.pid, native_port=options.connection.port, address=session.address())
        nodetool = nodetool_for(process, options.nodetool)
        restore_left_behind(process, lambda: nodetool)  # what a killed casstrace left changed on the node
        settings = context.settings(session.session)
        data_dirs = context.data_directories(settings, process)
        return cls(
            session=session,
            process=process,
            nodetool=nodetool,
            thread_ids=ThreadIds(session.own_addresses()).add(java_thread_ids(process.pid)),
            start=process_start(process.pid),
            settings=settings,
            data_dirs=data_dirs,
            meta=context.cassandra_meta(session.session, process, settings, data_dirs, ()),
        )


class Watch:
    """One watch of a node: what it reads before, the capture and the sources it switches on, and what
    it writes (one trace, or one per interval)."""

    def __init__(self, options: WatchOptions, stack: ExitStack, callbacks: WatchCallbacks):
        self.options, self.callbacks = options, callbacks
        self.out = options.out or default_trace_path()
        self.node = node = WatchedNode.connect(options, stack)
        pid = node.process.pid
        # Asked for per-thread counts, a capture is a ThreadIOCapture (the backend refuses otherwise).
        self.capture = cast(
            ThreadIOCapture,
            backend(DEFAULT_BACKEND)(
                pid,
                extra_dirs=tuple(node.data_dirs),
                # Per call, a shift's first calls would be logged and its intervals' go by slot; by slot, all.
                stream_limit=1 if options.interval_s is not None else None,
                options=CaptureOptions(thread_slot_ns=THREAD_SLOT_NS, source=f"pid {pid} (casstrace watch)"),
            ),
        )
        # On from before the probes attach to after they detach, put back on every way out.
        self.switch = TraceProbability(node.nodetool, options.probability, warn, Ledger(pid))
        # Mapped pages the JVM touched during the watch: per window only (no thread to charge them to),
        # so not per interval.
        self.mapped = MappedPagesCapture(pid, node.data_dirs) if options.interval_s is None else None
        # The JVM's GC and safepoint pauses (its own log, turned off on every way out): each interval's
        # trace holds those of its stretch, to tell the sessions a pause overlapped.
        self.pauses = GcPauses(pid, warn)
        # The request threads' CPU per 1 ms slot in the watch window: each sampled write's serving CPU.
        self.cpu = ServingCpu(pid, frozenset({WATCH_WINDOW}), warn)
        stack.callback(self.cpu.stop)
        # What the schema's tables cost beside their traffic: their flushes and requests over the watch,
        # their pending compactions, and the memtables the node's log says they flushed meanwhile.
        self.table_readings = [read_table_stats(node.nodetool)]
        self.flush_log = LogMark.now(log_path(node.process))
        stack.callback(self.pauses.stop)  # also when the watch fails before its capture (stop is idempotent)
        self.profiler = None
        if options.profile:
            self.profiler = AsyncProfiler(pid, progress=lambda line: print(line, file=sys.stderr))
            stack.callback(self.profiler.cleanup)
        self.writer = TraceWriter(self.out, force=options.force)
        self.span: list[int] = []  # the watch's start and end, in Unix ns
        self.sampled: list[SampledSession] = []
        self.intervals = Intervals(callbacks.interval_done)  # what --interval wrote so far
        self.went_away: list[str] = []  # why, once the node went away during the watch

    def record(self) -> Path:
        sources: list[WindowSource] = [
            self.switch,
            self.pauses,
            self.cpu,
            *([self.mapped] if self.mapped is not None else []),
        ]
        if self.profiler is not None:  # active across the watch window, started in the gap before it
            sources.append(ProfiledWindows(self.profiler, {WATCH_WINDOW}, warn))
        try:
            path = record(
                self.capture, self.writer, self.body, sources=sources, collect=self.collect, annotate=self.annotate
            )
        except Interrupted as interrupted:
            if interrupted.trace is not None and self.options.interval_s is not None:
                interrupted.trace = self.intervals.last(interrupted.trace, self.options.force)
            raise
        if self.options.interval_s is not None:  # the capture's own trace holds the last interval, numbered
            path = self.intervals.last(path, self.options.force)
        if self.went_away:
            raise NodeWentAway(self.went_away[0], path)
        return path

    def gone(self) -> str | None:
        """Why the watch cannot go on: the node's JVM ended (None while it runs)."""
        if not self.went_away and node_gone(self.node.process.pid, self.node.start):
            self.went_away.append(gone_message(self.node.process))
        return self.went_away[0] if self.went_away else None

    def sessions_between(self, since: int, until: int, seen: set[str], what: str) -> list[SampledSession]:
        """The sampled sessions, or none with a warning when the node cannot give them: a trace
        with the probes' figures alone is worth keeping."""
        if self.gone() is not None:
            warn(
                f"the sampled sessions of {what} cannot be read: the node went away; "
                "its trace holds the probes' figures only"
            )
            return []
        try:
            return read_sessions(self.node.session.session, since, until, seen, ignore=is_own_statement)
        except Exception as error:  # a node stopping (its CQL closed first), or too slow to answer
            warn(
                f"the sampled sessions of {what} could not be read ({type(error).__name__}: {error}); "
                "its trace holds the probes' figures only"
            )
            return []

    def write_interval(self, until_ns: int) -> int:
        """The interval that ends at `until_ns` (the capture's clock), as a trace of its own; returns
        its end in Unix ns, where the next one starts."""
        intervals = self.intervals
        since, until = intervals.since_ns or self.span[0], until_ns + clock_offset_ns()
        stretch = self.capture.take_slots(until_ns, WATCH_WINDOW)
        cpu = self.cpu.take(until_ns)
        sessions = self.sessions_between(since, until - 1, intervals.seen, f"interval {intervals.count + 1}")
        self.node.thread_ids.add({name: tid for tid, name in self.capture.thread_names.items()}, cut=True)
        interval = TraceWriter(interval_trace_path(self.out, intervals.count + 1), force=self.options.force)
        with interval.writing():
            stretch.write(interval)
            self.write_node_rows(interval, sessions, (since, until), cpu)
            path = interval.finish()
        intervals.done(path, until, {s.session_id for s in sessions})
        return until

    def body(self, windows: Windows) -> str | None:
        windows.begin_window(WATCH_WINDOW)
        self.span.append(time.time_ns())
        self.callbacks.started()
        try:
            return self.wait()
        except KeyboardInterrupt:
            if self.options.duration_s is not None:
                raise  # cut short
            INTERRUPTS.expected()  # how an open-ended watch ends: its trace is whole
            return None
        finally:
            self.span.append(time.time_ns())
            windows.begin_window(GAP_WINDOW)

    def collect(self, interrupted: bool) -> None:
        """The sampled sessions (read however the watch ended: they are what it is for), and the
        threads started during the watch (pools grow on demand), as /proc named them (15
        characters: enough for 'ReadStage-12'), then as the JVM lists them now."""
        if self.switch.restored:
            print(
                f"casstrace: the watch is over, trace probability back to "
                f"{format_probability(self.switch.previous or 0)}; reading the sampled sessions",
                file=sys.stderr,
            )
        thread_ids = self.node.thread_ids
        thread_ids.add({name: tid for tid, name in self.capture.thread_names.items()}, cut=True)
        if self.gone() is None:
            thread_ids.add(_thread_ids_now(self.node.process.pid))
            self.table_readings.append(read_table_stats(self.node.nodetool))
        if len(self.span) == 2:
            if self.gone() is None:
                time.sleep(SETTLE_S)
                if trace_writes_done(self.node.session.session, TRACE_WRITES_TIMEOUT_S) is False:
                    warn(
                        f"the node was still writing traced requests' events {TRACE_WRITES_TIMEOUT_S:.0f} s after "
                        "the watch: the last sampled sessions may show fewer rows than they returned"
                    )
            last = "the watch" if self.options.interval_s is None else f"interval {self.intervals.count + 1}"
            since = self.intervals.since_ns or self.span[0]
            self.sampled.extend(self.sessions_between(since, self.span[1], self.intervals.seen, last))

    def annotate(self, writer: TraceWriter) -> None:
        (before, pending_before), (after, pending_after) = (self.table_readings + [(None, None)])[:2]
        if before is not None and after is not None:  # the whole watch's
            writer.set_meta(table_activity={"tables": after.tables, "active": activity(before, after)})
            pending = None if pending_before is None or pending_after is None else (pending_before, pending_after)
            flushed = self.flush_log.flushes_since() if self.flush_log is not None else None
            writer.set_meta(table_background=background(pending, flushed))
        window = (self.intervals.since_ns or self.span[0], self.span[-1]) if self.span else (time.time_ns(),) * 2
        self.write_node_rows(writer, self.sampled, window, self.cpu.slots())

    def write_node_rows(
        self, writer: TraceWriter, sampled: list[SampledSession], window: tuple[int, int], cpu: Slots
    ) -> None:
        """What the watch adds to the probes' rows: full thread names, the sessions, the node, the switch,
        the JVM's pauses in the window, the CPU slots (`cpu`) the sessions' threads ran while they
        served them. The node's settings, data directories and meta are those read before the watch
        (all a node that went away leaves: its sessions were not read either)."""
        node, options = self.node, self.options
        offset = clock_offset_ns()
        writer.set_meta(clock_offset_ns=offset)
        writer.add_threads(node.thread_ids.names())  # full names, where /proc cuts them
        sessions, spans = session_rows(sampled, [node.thread_ids], offset)
        writer.add_statement_sessions(sessions)
        writer.add_session_threads(spans)
        if self.cpu.measured:
            writer.add_thread_cpu(serving_slots(cpu, spans))
            writer.add_measures(thread_cpu=True)
        tables_read = sorted({ref for s in sampled for ref in context.tables_touched(None, s.statement, None)})
        process = node.process
        writer.set_meta(
            node={"host": options.connection.host, "port": options.connection.port, "pid": process.pid},
            cassandra=context.cassandra_meta(node.session.session, process, node.settings, node.data_dirs, tables_read)
            if tables_read
            else node.meta,
            watch={
                "sample_probability": options.probability,
                "previous_probability": self.switch.previous,
                "probability_restored": self.switch.restored,  # None too when the JVM went away with it
                "duration_s": (window[1] - window[0]) / 1e9,
                "start_ns": window[0] - offset,
                "end_ns": window[1] - offset,
                "thread_map": "jcmd",
                "casstrace_addresses": node.casstrace_addresses(),
                "own_sandbox": sandbox_root(process) is not None,
            },
        )
        if self.pauses.measured:
            writer.set_meta(jvm_pauses=pause_meta(self.pauses.pauses(), window[0] - offset, window[1] - offset))

    def wait(self) -> str | None:
        """Watch until the deadline (or a signal), writing each interval once complete; returns why the
        watch ended early (the node went away: the intervals that ended before it went are written), or None."""
        options, capture = self.options, self.capture
        deadline = None if options.duration_s is None else time.monotonic() + options.duration_s
        # Intervals end on whole heat-map slots of the capture's clock (the per-thread slots divide them).
        interval_ns = None if options.interval_s is None else round(options.interval_s * 1e9 / SLOT_NS) * SLOT_NS
        next_end = None if interval_ns is None else capture.start_ns + interval_ns
        refresh = LiveRefresh(self, self.span[0]) if self.callbacks.live is not None else None
        while deadline is None or time.monotonic() < deadline:
            if capture.ended_early:
                ended = self.gone() or f"the capture ended early: {capture.ended_early}"
                went_ns = capture.now_ns()
                while next_end is not None and interval_ns is not None and next_end <= went_ns:
                    while capture.complete_until_ns() < next_end:  # the last reads' slots, a drain margin later
                        time.sleep(0.1)
                    with INTERRUPTS.deferred():
                        self.write_interval(next_end)
                    next_end += interval_ns
                return ended
            time.sleep(REFRESH_S if deadline is None else max(0.0, min(REFRESH_S, deadline - time.monotonic())))
            with INTERRUPTS.deferred():  # read, then deleted from the kernel's map: both or neither
                capture.drain_thread_io()
                self.cpu.drain()
            while (
                next_end is not None
                and interval_ns is not None
                and next_end + SETTLE_INTERVAL_NS <= capture.complete_until_ns()
            ):
                with INTERRUPTS.deferred():  # taken from the capture and written: both or neither
                    since = self.write_interval(next_end)
                if refresh is not None:
                    refresh.next_interval(since)
                next_end += interval_ns
            if refresh is not None and not refresh.due():
                refresh = None  # the live table stopped
        return None


class LiveRefresh:
    """The live figures of a watch, refreshed every REFRESH_S seconds at most, of the interval so far."""

    def __init__(self, watched: Watch, since: int):
        self.watched, self.since = watched, since
        self.seen: set[str] = set()
        self.sampled: list[SampledSession] = []
        self.next_live = 0.0  # monotonic time of the next live refresh
        self.last_read_ns = 0  # Unix ns of the last live read of the sessions

    def next_interval(self, since: int) -> None:
        """The live figures go on with the next interval's sessions (those read are known: a session on
        the boundary is not read twice)."""
        self.seen = {s.session_id for s in self.sampled}
        self.sampled = [s for s in self.sampled if s.started_ns >= since]
        self.since = since

    def due(self) -> bool:
        """Refresh if it is time; False once the live table stopped (the node too slow to answer)."""
        watched = self.watched
        capture, live = watched.capture, watched.callbacks.live
        if live is None or time.monotonic() < self.next_live or capture.ended_early:
            return True
        began, began_cpu = time.monotonic(), time.thread_time()
        thread_ids = watched.node.thread_ids
        try:
            thread_ids.add({name: tid for tid, name in capture.thread_names.items()}, cut=True)  # workers started since
            # Each refresh reads the sessions that started since the last, and those of the last
            # LATE_SESSION_NS again (a session's row is written as it starts, its duration as it ends).
            now_ns = time.time_ns()
            read_from = max(self.since, self.last_read_ns - LATE_SESSION_NS)
            self.sampled += read_sessions(
                watched.node.session.session, read_from, now_ns, self.seen, ignore=is_own_statement
            )
            self.last_read_ns = now_ns
            elapsed_s = (time.time_ns() - self.since) / 1e9
            figures = live_figures(capture, self.sampled, thread_ids, watched.options.probability, elapsed_s)
            if watched.pauses.measured:  # every pause so far: the sessions tell which they overlapped
                figures.pauses = pause_meta(watched.pauses.pauses(), 0, time.monotonic_ns())
            flushed = watched.flush_log.flushes_since() if watched.flush_log is not None else None
            figures.received_bytes = None if flushed is None else received_bytes(flushed)
            figures.sockets = capture.socket_reads_so_far()
            figures.native_port = watched.options.connection.port
            figures.casstrace_addresses = watched.node.casstrace_addresses()
            if watched.cpu.measured:
                figures.thread_cpu = serving_slots(watched.cpu.slots(), figures.spans)
        except Exception as error:  # the node slow to answer, say: the watch goes on without the live table
            if watched.gone() is None:  # else the watch ends, and says why
                warn(f"the live table stops ({type(error).__name__}: {error}); the watch goes on")
            return False
        live(figures)
        # A refresh that takes long comes less often: casstrace's own work (a long interval's rows) at most
        # LIVE_SHARE of a core, and the node's reads of its sessions (which scan its table, slice by slice)
        # at most half the time. Throttling by the whole wall time made a slow node's 4 s reads stop the
        # live figures for 36 s, longer than the interval watch of the tests.
        cpu_s, wall_s = time.thread_time() - began_cpu, time.monotonic() - began
        self.next_live = time.monotonic() + max(cpu_s * (1 / LIVE_SHARE - 1), wall_s)
        return True


class Intervals:
    """The intervals of a watch written so far (--interval), for the next one to start where they end."""

    def __init__(self, done: Callable[[Path], None]):
        self.count = 0
        self.since_ns: int | None = None  # Unix ns the next interval starts at (None: the watch's start)
        self.seen: set[str] = set()  # the last interval's sessions: a session on a boundary is read once
        self._done = done

    def done(self, path: Path, until_ns: int, sessions: set[str]) -> None:
        self.count += 1
        self.since_ns, self.seen = until_ns, sessions
        self._done(path)

    def last(self, path: Path, force: bool) -> Path:
        """The capture's own trace, renamed as the last interval."""
        renamed = check_output(interval_trace_path(path, self.count + 1), force)
        os.replace(path, renamed)
        return renamed


def restore_left(options: WatchOptions) -> list[str]:
    """`watch --restore`: put back what a killed casstrace left changed on the node (node.leftovers),
    without connecting to it (a node too busy for CQL still answers JMX). Returns the lines told:
    what was put back, else the evidence that nothing was left changed (the node's value, read), each
    said on standard error."""
    process = find_cassandra(options.pid, native_port=options.connection.port)
    nodetool: list[Nodetool] = []  # built once, when a record or the evidence needs it

    def tool() -> Nodetool:
        if not nodetool:
            nodetool.append(nodetool_for(process, options.nodetool))
        return nodetool[0]

    told = restore_left_behind(process, tool)
    if not told:
        told.append(unchanged_evidence(process, tool()))
        say(told[0])
    return told


def live_figures(
    capture: ThreadIOCapture, sampled: list[SampledSession], thread_ids: ThreadIds, probability: float, elapsed_s: float
) -> LiveSnapshot:
    """What the probes and the node's trace tables hold so far."""
    paths: dict[str, int] = {}
    rows: list[ThreadIORow] = []
    for tid, slot, path, read_bytes, cache_pages, write_bytes, dirtied_pages in capture.thread_io_so_far():
        if path is None:
            continue
        rows.append(
            {
                "tid": tid,
                "slot": slot,
                "file_id": paths.setdefault(path, len(paths)),
                "read_calls": 0,
                "read_bytes": read_bytes,
                "cache_miss_pages": cache_pages,
                "write_bytes": write_bytes,  # the tables' flushes and compactions (analyses.table_writes)
                "dirtied_pages": dirtied_pages,  # the commit log's appends (analyses.statement_writes)
            }
        )
    sessions, spans = session_rows(sampled, [thread_ids], clock_offset_ns())
    return LiveSnapshot(
        sessions=sessions,
        spans=spans,
        thread_io=rows,
        files={file_id: path for path, file_id in paths.items()},
        thread_names=thread_ids.names(),
        capture_start_ns=capture.start_ns,
        slot_ns=THREAD_SLOT_NS,
        probability=probability,
        elapsed_s=elapsed_s,
    )


def serving_slots(cpu: Slots, spans: list[SessionThreadRow]) -> list[ThreadCpuRow]:
    """The CPU slots the sessions' spans meet, widened as the analyses take them (traces.serving): a
    trace holds the sampled sessions' threads' CPU, not every request thread's."""
    serving = ServingSpans((span["tid"], span["first_ns"], span["last_ns"]) for span in spans)
    return [
        {"tid": tid, "ts_ns": slot * THREAD_SLOT_NS, "slot_ns": THREAD_SLOT_NS, "oncpu_ns": ns, "node_id": None}
        for (tid, slot), ns in sorted(cpu.items())
        if serving.meets(tid, slot * THREAD_SLOT_NS, THREAD_SLOT_NS)
    ]


def session_rows(
    sampled: list[SampledSession], nodes: Sequence[ThreadIds], clock_offset_ns: int
) -> tuple[list[StatementSessionRow], list[SessionThreadRow]]:
    """The sessions as trace rows, numbered from 1, times moved from Unix time to the trace's clock;
    each span on the thread of the captured node (of `nodes`) whose events it holds (the spans of
    nodes not captured are left out: no thread of this capture served them). A node
    reached over ssh has the same Unix time as this machine to within its clock's sync (NTP): its
    events' times are taken as they are."""
    sessions: list[StatementSessionRow] = []
    spans: list[SessionThreadRow] = []
    for number, s in enumerate(sampled, start=1):
        sessions.append(
            {
                "session": number,
                "session_id": s.session_id,
                "statement": s.statement,
                "consistency": s.consistency,
                "client": s.client,
                "started_ns": s.started_ns - clock_offset_ns,
                "duration_ns": s.duration_ns,
                "live_rows": s.live_rows,
                "tombstone_cells": s.tombstone_cells,
                "sstables_merged": s.sstables_merged,
                "mutations": s.mutations,
                "commitlog_ns": s.commitlog_ns,
            }
        )
        for span in s.spans:
            owner = next((ids for ids in nodes if ids.serves(span.source)), None)
            if owner is None:
                continue
            spans.append(
                {
                    "session": number,
                    "thread": span.thread,
                    "tid": owner.tid(span.thread),
                    "first_ns": span.first_ns - clock_offset_ns,
                    "last_ns": span.last_ns - clock_offset_ns,
                    "events": span.events,
                    "source": span.source,
                    "node_id": owner.node_id,
                }
            )
    return sessions, spans


def read_table_stats(nodetool: Nodetool) -> tuple[TableStats | None, dict[str, int] | None]:
    """nodetool tablestats and compactionstats (two JVMs at once: each takes seconds to start), each
    None with a warning when it fails: the watch goes on without the tables' flushes, or their pending
    compactions."""
    with ThreadPoolExecutor(2) as pool:
        stats, pending = pool.submit(table_stats, nodetool), pool.submit(pending_compactions, nodetool)
    return _or_warn(stats.result, "the tables' flushes and requests"), _or_warn(
        pending.result, "the tables' pending compactions"
    )


def _or_warn(result: Callable[[], Reading], what: str) -> Reading | None:
    try:
        return result()
    except CasstraceError as error:
        warn(f"{what} are not measured: {error}")
        return None


def _thread_ids_now(pid: int) -> dict[str, int]:
    """Threads started during the watch (pools grow on demand); what jcmd gave at the start stays."""
    try:
        return java_thread_ids(pid)
    except CasstraceError as error:
        warn(
            f"the JVM's thread list could not be read again after the watch ({error}): threads it started "
            "during the watch are matched by /proc names, or not at all"
        )
        return {}


def clock_offset_ns() -> int:
    return time.time_ns() - time.monotonic_ns()
