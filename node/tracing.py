"""Cassandra's probabilistic tracing, as `casstrace watch` uses it to learn which statements a node served.

`nodetool settraceprobability P` makes the node trace a random share P of the requests it
coordinates into system_traces: the statement (`parameters['query']`), its consistency, client and
duration (sessions), and what each thread did when (events). TraceProbability switches it on for a
watch and puts the previous value back on every way out (normal end, Ctrl-C, error); when it cannot,
it says so with the command that would (and the ledger keeps it for the next casstrace to put back:
casstrace.ledger, node.leftovers). read_sessions reads the sampled sessions afterwards.

What is kept of a session is the statement normalized (node.statements: literals as `?`), and
numbers: bound values (`bound_var_*` parameters) and the events' activity texts, which can quote
literals ('Parsing SELECT ... WHERE id = 42'), are never kept.

nodetool runs as the node's own classes (the JVM's -cp) on its JMX port, unless a nodetool command
is given (a packaged node's `nodetool`, perhaps with credentials in its own configuration).
"""

import calendar
import itertools
import shutil
import statistics
import time
import uuid
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from importlib import resources
from typing import Any, NamedTuple

from casstrace.errors import CasstraceError
from casstrace.ledger import TRACE_PROBABILITY, Ledger
from casstrace.node.connection import normalize_ip
from casstrace.node.jvm import NODETOOL_CLASS, CassandraProcess, in_node_namespaces, node_java, run_tool
from casstrace.node.statements import normalize
from casstrace.redaction import redact_command
from casstrace.traces import TraceWriter
from casstrace.traces.activities import (
    COMMITLOG_APPEND,
    DRIVER_BATCH_STATEMENT,
    LIVE_AND_TOMBSTONES,
    MERGED_SSTABLES,
)

JMX_PORT_PROPERTIES = ("cassandra.jmx.local.port", "cassandra.jmx.remote.port", "com.sun.management.jmxremote.port")
DEFAULT_JMX_PORT = 7199
TOOLS_LOGBACK = "tools-logback.xml"  # beside this module: a Cassandra tool's warnings to stderr, no file
NODETOOL_TIMEOUT_S = 120.0
# Requests that run a statement (others: preparing one, a session's own bookkeeping).
EXECUTE_REQUESTS = ("Execute CQL3 query", "Execute CQL3 prepared query")
# A driver's batch of statements (a BATCH message): its session names none of them
BATCH_REQUEST = "Execute batch of CQL3 queries"
UUID_EPOCH_100NS = 0x01B21DD213814000  # 1582-10-15 to 1970-01-01 in a version-1 UUID's 100 ns units
MS_NS = 1_000_000
EVENTS_PER_QUERY = 100  # sessions per `session_id IN (...)` read of the events
TRACE_WAIT_S = 5.0  # for the node to finish writing a session casstrace traced
TRACE_POLL_S = 0.1
EVENTS_SETTLE_S = 0.05  # between two reads of finished sessions' events (_read_events)
EVENTS_READS = 5
# The sessions that started in a span (Unix ms, both ends in) of one slice of the token ring: filtered
# on the node, so that only their rows come back (sessions is keyed by session_id alone: the node reads
# every row to filter them). The ring is read in TOKEN_SLICES slices, each a request of its own: a
# filtered read of the whole ring is one request, which a node holding 220,000 sessions could not
# finish within its read timeout on a loaded machine (a failure after 5 s, where 128 slices took 12 s).
SESSIONS_IN_SPAN = (
    "SELECT session_id, started_at, duration, request, parameters, client FROM system_traces.sessions"
    " WHERE token(session_id) > %s AND token(session_id) <= %s AND started_at >= %s AND started_at <= %s"
    " ALLOW FILTERING"
)
TOKEN_SLICES = 128
MIN_TOKEN, MAX_TOKEN = -(2**63), 2**63 - 1  # Murmur3Partitioner's ring (no key has MIN_TOKEN)


def token_slices(count: int = TOKEN_SLICES) -> list[tuple[int, int]]:
    """The ring as `count` slices (exclusive start, inclusive end), together exactly the whole ring."""
    step = (MAX_TOKEN - MIN_TOKEN) // count
    edges = [MIN_TOKEN + index * step for index in range(count)] + [MAX_TOKEN]
    return list(itertools.pairwise(edges))


@dataclass(frozen=True)
class Nodetool:
    """How to run nodetool against one node: `command` is everything before the subcommand."""

    command: tuple[str, ...]

    def run(self, *args: str) -> str:
        return run_tool(
            [*self.command, *args],
            f"nodetool {' '.join(args)}",
            NODETOOL_TIMEOUT_S,
            cannot_run_fix="give --nodetool with the node's nodetool command",
            failed_fix="check that JMX answers on the node (give --nodetool with the node's own command)",
        )

    def trace_probability(self) -> float:
        output = self.run("gettraceprobability")
        try:
            return float(output.strip().rsplit(":", 1)[-1])
        except ValueError:
            raise CasstraceError(
                f"unexpected nodetool gettraceprobability output: {output.strip()[:80]!r}",
                "give --nodetool with a nodetool for this node's Cassandra version",
            ) from None

    def set_trace_probability(self, probability: float) -> None:
        self.run("settraceprobability", format_probability(probability))

    def shown(self, *args: str) -> str:
        """The command line, for a message telling the user what to run."""
        if NODETOOL_CLASS in self.command:
            return redact_command(("nodetool", *self.command[self.command.index(NODETOOL_CLASS) + 1 :], *args))
        return redact_command((*self.command, *args))  # --nodetool 'nodetool -u R -pw SECRET' is the user's


def format_probability(probability: float) -> str:
    return f"{probability:g}"


def nodetool_for(process: CassandraProcess, command: str | None = None) -> Nodetool:
    """nodetool for the node in `process`: `command` (split on spaces) when given, else the node's own
    classes on its JMX port, with the java on PATH (nodetool needs a full JDK's RMI modules), else the node's."""
    jmx_port = next(
        (int(port) for name in JMX_PORT_PROPERTIES if (port := process.system_property(name))), DEFAULT_JMX_PORT
    )
    if command:
        return Nodetool((*command.split(), *_jmx_address(jmx_port)))
    classpath = _classpath(process.argv)
    # In a container the node's classes are in its file tree: they run there, on its own java.
    inside = in_node_namespaces(process.pid)
    java = node_java(process.pid) if inside else shutil.which("java") or node_java(process.pid)
    if classpath is None or java is None:
        raise CasstraceError(
            "cannot run nodetool for this node: no classpath in its command line, or no java",
            "give --nodetool with the node's nodetool command (e.g. /usr/bin/nodetool)",
        )
    # The node's own module flags: its classes need them on Java 11+ whatever tool they run in.
    modules = [arg for arg in process.argv if arg.startswith(("--add-exports", "--add-opens", "--add-modules"))]
    return Nodetool(
        (
            *inside,
            java,
            "-Xmx256M",
            "-XX:+UseSerialGC",
            "-XX:TieredStopAtLevel=1",
            *tool_logging(inside_node=bool(inside)),
            "-cp",
            classpath,
            *modules,
            NODETOOL_CLASS,
            *_jmx_address(jmx_port),
        )
    )


def _jmx_address(jmx_port: int) -> tuple[str, ...]:
    """nodetool's options naming the node's JMX: long ones, since the command is shown redacted in
    messages (Nodetool.shown), where -p's value would be taken for a password."""
    return ("--host", "127.0.0.1", "--port", str(jmx_port))


def tool_logging(inside_node: bool) -> tuple[str, ...]:
    """How a Cassandra tool run on the node's classpath logs: to stderr, never to a file. A packaged
    node's classpath holds its conf directory, whose logback.xml writes to ${cassandra.logdir}: a tool
    started without that property wrote `cassandra.logdir_IS_UNDEFINED/system.log` into the user's
    working directory. As Cassandra's own nodetool script does, the tool gets a tools configuration:
    casstrace's, or on a node in another mount namespace (where casstrace's files are not) the
    distribution's logback-tools.xml from the conf directory on its classpath (where there is none,
    logback logs to the console: a configuration file named is never replaced by logback.xml)."""
    if inside_node:
        return ("-Dlogback.configurationFile=logback-tools.xml",)
    return (f"-Dlogback.configurationFile=file://{resources.files('casstrace.node').joinpath(TOOLS_LOGBACK)}",)


def _classpath(argv: tuple[str, ...]) -> str | None:
    for flag in ("-cp", "-classpath", "--class-path"):
        if flag in argv[:-1]:
            return argv[argv.index(flag) + 1]
    return None


class TraceProbability:
    """A context manager: the node traces `probability` of its requests inside, what it did before after.

    The previous value is read first, so nothing is changed when it cannot be. On the way out
    (whatever the way) it is put back, retried once if interrupted; when it still cannot be,
    `warn` says so with the command to run. `restored` tells which happened."""

    def __init__(self, nodetool: Nodetool, probability: float, warn: Callable[[str], None], ledger: Ledger):
        self.nodetool = nodetool
        self.probability = probability
        self.warn = warn
        self.ledger = ledger
        self.previous: float | None = None
        self.restored: bool | None = None  # None: nothing was changed, or nothing is left to put back (node_gone)
        self.node_gone = False  # the JVM ended before the value could be put back: nothing to put back

    def __enter__(self) -> "TraceProbability":
        self.previous = self.nodetool.trace_probability()
        # Written down first: a SIGKILL from here on leaves the next casstrace what to put back.
        self.ledger.record(TRACE_PROBABILITY, self.previous, self.probability)
        try:
            self.nodetool.set_trace_probability(self.probability)
        except BaseException:
            self.restore()  # the set may have reached the node before failing here
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self.restore()

    # -- as a casstrace.probes.protocol.WindowSource: on for the whole capture -------------------------
    def on_window_start(self, window_id: int, label: str, execution: int | None) -> None:
        if window_id == 1:
            self.__enter__()

    def on_window_end(self, window_id: int) -> None:
        pass

    def write(self, writer: TraceWriter) -> None:
        pass  # the watch writes what the switch did with the rest of its meta

    def stop(self) -> None:
        self.restore()

    def restore(self) -> None:
        if self.previous is None or self.restored or self.node_gone or self._node_went_away():
            return
        failure = None
        for _ in range(2):
            try:
                self.nodetool.set_trace_probability(self.previous)
                self.restored = True
                self.ledger.forget(TRACE_PROBABILITY)
                return
            except (CasstraceError, KeyboardInterrupt) as error:  # a second Ctrl-C: try once more
                failure = error
        if self._node_went_away():  # JMX refused because the JVM was on its way out
            return
        self.restored = False
        reason = "interrupted" if isinstance(failure, KeyboardInterrupt) else str(failure)
        self.warn(
            f"could not put the node's trace probability back to {format_probability(self.previous)} "
            f"({reason}); it is still {format_probability(self.probability)}: run "
            f"`{self.nodetool.shown('settraceprobability', format_probability(self.previous))}`"
        )

    def _node_went_away(self) -> bool:
        """The JVM is gone, and its trace probability with it (it does not persist): nothing to put
        back, no command to give, and the ledger's record is cleared."""
        if self.ledger.node_alive:
            return False
        self.ledger.forget(TRACE_PROBABILITY)
        self.node_gone = True
        self.warn(
            f"the node's JVM (pid {self.ledger.node_pid}) is gone, and the trace probability casstrace set "
            "with it: nothing to put back (a restarted node starts with its configured probability, 0: "
            "nodetool's setting does not persist)"
        )
        return True


class TraceEvent(NamedTuple):
    """One row of system_traces.events as casstrace reads it: the id's time (the event's millisecond,
    plus a counter), the µs since the session's start (exact), the thread, the activity (never kept)
    and the address of the node that recorded it (a replica's events are in its coordinator's session)."""

    event_ns: int
    elapsed_ns: int
    thread: str
    activity: str
    source: str | None = None


@dataclass
class ThreadSpan:
    """A session's events on one thread of one node: from its first to its last (Unix ns)."""

    thread: str
    first_ns: int
    last_ns: int
    events: int
    source: str | None = None  # the node's address (system_traces.events.source)


@dataclass
class SampledSession:
    """One traced request, as much of it as casstrace keeps (never values, never activity texts)."""

    session_id: str
    statement: str  # normalized: literals as ?
    consistency: str | None
    client: str | None
    started_ns: int  # Unix ns, from the events when they allow (sessions keep ms)
    duration_ns: int | None
    live_rows: int | None  # 'Read N live rows and M tombstone cells', summed over the session
    tombstone_cells: int | None
    sstables_merged: int | None  # most 'Merged data from memtables and N sstables' of one read
    spans: list[ThreadSpan] = field(default_factory=list)
    mutations: int | None = None  # 'Appending to commitlog' events: partitions written, on every node traced
    commitlog_ns: int | None = None  # from each of them to its thread's next event: in the commit log
    # Unix ns: the client's send of the request and its receipt of the answer, when casstrace was the
    # client (a run's execution): every node's events of the session lie between them
    client_span_ns: tuple[int, int] | None = None


def read_sessions(
    session: Any,
    since_ns: int,
    until_ns: int,
    seen: set[str] | None = None,
    ignore: Callable[[str], bool] = lambda statement: False,
) -> list[SampledSession]:
    """The statements the node traced that started in [since_ns, until_ns] (Unix ns) and have
    finished, except those in `seen` (ids, updated) and those whose normalized text `ignore` is true of.

    Only the rows of sessions that started in the span come back (SESSIONS_IN_SPAN): what a read sends
    and what casstrace parses depend on the span, not on the day of sessions the table keeps (a row
    lives a day: 864,000 at 0.01 of 1,000 requests/s). The node still looks at every row to filter
    them: the table is keyed by session id alone, with no index by time, so no read can find the new
    sessions without looking at the old (docs/watch-service.md states what that costs); it does so
    slice by slice of the token ring, each slice a request of its own (TOKEN_SLICES)."""
    seen = set() if seen is None else seen
    wanted = []
    span_ms = ((since_ns - MS_NS) // MS_NS, until_ns // MS_NS + 1)
    rows = (row for ring in token_slices() for row in session.execute(SESSIONS_IN_SPAN, (*ring, *span_ms)))
    for row in rows:
        key = str(row.session_id)
        if key in seen or row.started_at is None or row.duration is None:
            continue
        started = _unix_ns(row.started_at)
        query = (row.parameters or {}).get("query")
        if row.request == BATCH_REQUEST:
            query = DRIVER_BATCH_STATEMENT
        elif row.request not in EXECUTE_REQUESTS:
            continue
        if not since_ns - MS_NS <= started <= until_ns or not query:
            continue
        statement = query if query == DRIVER_BATCH_STATEMENT else normalize(query)
        seen.add(key)
        if ignore(statement):
            continue
        wanted.append(
            SampledSession(
                session_id=key,
                statement=statement,
                consistency=(row.parameters or {}).get("consistency_level"),
                client=str(row.client) if row.client is not None else None,
                started_ns=started,
                duration_ns=row.duration * 1000,
                live_rows=None,
                tombstone_cells=None,
                sstables_merged=None,
            )
        )
    _read_events(session, {s.session_id: s for s in wanted})
    return wanted


def _read_events(session: Any, by_id: dict[str, SampledSession]) -> None:
    """Each session's events from system_traces.events. A node writes a session's duration without
    waiting for its events (cassandra.wait_for_tracing_events_timeout_secs is 0 by default), so a
    finished session's last events may still be on their way: they are read again, EVENTS_SETTLE_S
    apart, until a read finds no more (at most EVENTS_READS reads)."""
    if not by_id:
        return
    events = _events_of(session, list(by_id))
    for _ in range(EVENTS_READS - 1):
        time.sleep(EVENTS_SETTLE_S)
        again = _events_of(session, list(by_id))
        if sum(map(len, again.values())) <= sum(map(len, events.values())):
            break
        events = again
    for key, session_events in events.items():
        add_events(by_id[key], session_events)


def _events_of(session: Any, keys: list[str]) -> dict[str, list[TraceEvent]]:
    """The sessions' events as they are now (EVENTS_PER_QUERY sessions a read)."""
    events: dict[str, list[TraceEvent]] = {key: [] for key in keys}
    for batch in _batches(keys, EVENTS_PER_QUERY):
        rows = session.execute(
            "SELECT session_id, event_id, source_elapsed, thread, activity, source FROM system_traces.events"
            f" WHERE session_id IN ({', '.join(batch)})"
        )
        for row in rows:
            events[str(row.session_id)].append(
                TraceEvent(
                    _uuid_unix_ns(row.event_id),
                    (row.source_elapsed or 0) * 1000,
                    row.thread or "",
                    row.activity or "",
                    normalize_ip(str(row.source)) if row.source is not None else None,
                )
            )
    return events


def traced_sessions(
    session: Any,
    session_ids: list[str],
    statement: str,
    client_spans: Mapping[str, tuple[int, int]] | None = None,
    wait_s: float = TRACE_WAIT_S,
) -> list[SampledSession]:
    """The sessions of requests casstrace itself traced (its run's executions), by id, with their
    events: `statement` is what casstrace ran (normalized); `client_spans`: each session's
    client_span_ns, where known. The node writes a session's records after answering: a session not
    finished yet is waited for up to `wait_s`, then left out."""
    found: dict[str, SampledSession] = {}
    deadline = time.monotonic() + wait_s
    while True:
        missing = [key for key in session_ids if key not in found]
        for batch in _batches(missing, EVENTS_PER_QUERY):
            for row in session.execute(
                "SELECT session_id, started_at, duration, parameters, client FROM system_traces.sessions"
                f" WHERE session_id IN ({', '.join(batch)})"
            ):
                if row.started_at is None or row.duration is None:
                    continue
                found[str(row.session_id)] = SampledSession(
                    session_id=str(row.session_id),
                    statement=statement,
                    consistency=(row.parameters or {}).get("consistency_level"),
                    client=str(row.client) if row.client is not None else None,
                    started_ns=_unix_ns(row.started_at),
                    duration_ns=row.duration * 1000,
                    live_rows=None,
                    tombstone_cells=None,
                    sstables_merged=None,
                    client_span_ns=(client_spans or {}).get(str(row.session_id)),
                )
        if len(found) == len(session_ids) or time.monotonic() >= deadline:
            break
        time.sleep(TRACE_POLL_S)
    _read_events(session, found)
    return [found[key] for key in session_ids if key in found]


def add_events(sampled: SampledSession, events: list[TraceEvent]) -> None:
    """Spans per thread of each node and the numbers the activities give; the activity texts go no
    further. Every node names its threads alike ('ReadStage-1'): a span is one node's thread. A
    replica's events count their elapsed time from when it got the request, not from the session's
    start: each node's events are timed from that node's own start (session_start_ns of its events;
    the session starts with the earliest, its coordinator's)."""
    if not events:
        return
    by_source: dict[str | None, list[TraceEvent]] = {}
    for event in events:
        by_source.setdefault(event.source, []).append(event)
    starts = {
        source: session_start_ns(own, sampled.started_ns, _start_bounds(sampled.client_span_ns, own))
        for source, own in by_source.items()
    }
    sampled.started_ns = min(starts.values())
    spans: dict[tuple[str | None, str], ThreadSpan] = {}
    for _, elapsed_ns, thread, activity, source in events:
        at = starts[source] + elapsed_ns
        span = spans.get((source, thread))
        if span is None:
            spans[source, thread] = ThreadSpan(thread, at, at, 1, source)
        else:
            span.first_ns, span.last_ns, span.events = min(span.first_ns, at), max(span.last_ns, at), span.events + 1
        if match := LIVE_AND_TOMBSTONES.search(activity):
            sampled.live_rows = (sampled.live_rows or 0) + int(match.group(1))
            sampled.tombstone_cells = (sampled.tombstone_cells or 0) + int(match.group(2))
        if match := MERGED_SSTABLES.search(activity):
            sampled.sstables_merged = max(sampled.sstables_merged or 0, int(match.group(1)))
    sampled.spans = sorted(spans.values(), key=lambda s: s.first_ns)
    _add_commitlog(sampled, events)


def _add_commitlog(sampled: SampledSession, events: list[TraceEvent]) -> None:
    """The mutations the session applied ('Appending to commitlog', on every node traced) and the time
    from each to its thread's next event: the append, and the wait for the sync where the commit log
    syncs before it answers (batch, group). An append with no later event on its thread has no time."""
    by_thread: dict[tuple[str | None, str], list[TraceEvent]] = {}
    for event in events:
        by_thread.setdefault((event.source, event.thread), []).append(event)
    for thread_events in by_thread.values():
        thread_events.sort(key=lambda event: event.elapsed_ns)
        for at, event in enumerate(thread_events):
            if not COMMITLOG_APPEND.match(event.activity):
                continue
            sampled.mutations = (sampled.mutations or 0) + 1
            sampled.commitlog_ns = sampled.commitlog_ns or 0
            if at + 1 < len(thread_events):
                sampled.commitlog_ns += thread_events[at + 1].elapsed_ns - event.elapsed_ns


def _start_bounds(client_span_ns: tuple[int, int] | None, events: list[TraceEvent]) -> tuple[int, int] | None:
    """The earliest and latest start a node's events allow within the client's span: after the send,
    and early enough for its last event to come before the answer arrived."""
    if client_span_ns is None or not events:
        return None
    return client_span_ns[0], client_span_ns[1] - max(event.elapsed_ns for event in events)


def session_start_ns(events: Iterable[TraceEvent], fallback_ns: int, bounds: tuple[int, int] | None = None) -> int:
    """When the session started (Unix ns), well under a millisecond: each event's id carries its
    time to the millisecond (then a counter) and its source_elapsed the µs since the start, so each
    bounds the start to a 1 ms interval; their intersection is narrower, but events within one
    millisecond leave it up to 1 ms wide. `bounds` (the client's send and answer, _start_bounds)
    narrow it further where they overlap it; they are left out where they contradict it (another
    machine's clock). Its middle, or the median estimate when clocks disagree (then the session's own
    ms start when there is nothing)."""
    lows, highs = [], []
    for event in events:
        low = event.event_ns // MS_NS * MS_NS - event.elapsed_ns
        lows.append(low)
        highs.append(low + MS_NS)
    if not lows:
        return fallback_ns
    low, high = max(lows), min(highs)
    if low > high:
        return int(statistics.median(lows)) + MS_NS // 2
    if bounds is not None and max(low, bounds[0]) <= min(high, bounds[1]):
        low, high = max(low, bounds[0]), min(high, bounds[1])
    return (low + high) // 2


def _unix_ns(timestamp: Any) -> int:
    """A driver datetime (naive UTC, as the driver returns timestamps) as Unix ns."""
    return calendar.timegm(timestamp.utctimetuple()) * 1_000_000_000 + timestamp.microsecond * 1000


def _uuid_unix_ns(event_id: uuid.UUID) -> int:
    return (event_id.time - UUID_EPOCH_100NS) * 100


def _batches(items: list[str], size: int) -> Iterable[list[str]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]
