"""Which thread read what, for whom: the join of per-thread I/O with Cassandra's traced sessions.

The probes count every thread's file bytes per 1 ms slot (thread_io, in the kernel) and, as far as
the per-call log keeps them, every read call with its thread and time. Cassandra's tracing says on
which threads a traced request (a session) worked, from when to when (its events). A session is
charged what its own threads read while its events span them: one implementation for
`casstrace watch` (sampled sessions of a live node's clients) and `casstrace run` (each measured
execution traced), so neither charges a statement what other requests read meanwhile.

`serving_threads(trace)` gives, per execution of a run, the threads that served it and when: the
seam for any per-execution measure taken per thread (I/O here; CPU in `serving_cpu_ns`).
"""

import bisect
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Protocol, TypeVar

from casstrace.analyses.amplification import data_read
from casstrace.analyses.query import parse_select
from casstrace.traces import Trace, queries
from casstrace.traces.queries import ReadCall, ThreadCpu
from casstrace.traces.schema import PAGE_BYTES
from casstrace.traces.serving import CALL_MARGIN_NS
from casstrace.traces.sstable_names import SSTableName, parse_sstable_path

Served = TypeVar("Served")  # what a request is known by: a run's execution, a watch's session
SLACK_SLOTS = 1  # slots claimed either side of a session's events on a thread


@dataclass(frozen=True)
class Span:
    """A session's events on one thread of one node, first to last (the trace's clock); tid None: no
    thread of that name was found, or the events are of a node not captured. node_id: the node in a
    trace of several (None: the one process)."""

    session: int
    thread: str
    tid: int | None
    first_ns: int
    last_ns: int
    node_id: int | None = None

    @classmethod
    def of(cls, row: queries.SessionThread) -> "Span":
        return cls(row.session, row.thread, row.tid, row.first_ns, row.last_ns, row.node_id)


@dataclass(frozen=True)
class SlotIO:
    tid: int
    slot: int
    file_id: int
    read_bytes: int
    cache_miss_pages: int
    node_id: int | None = None  # the node in a trace of several (None: the one process)

    @classmethod
    def of(cls, row: queries.ThreadIO) -> "SlotIO":
        return cls(row.tid, row.slot, row.file_id, row.read_bytes, row.cache_miss_pages, row.node_id)

    @property
    def data_read_bytes(self) -> int:
        """`casstrace run`'s data read (amplification.data_read) of one thread's slot: no pages are kept
        per slot, so the fills outside the syscalls' pages are estimated as the fills past the bytes they
        returned, and no mapped page touched is any thread's (the watch shows them per table)."""
        return data_read(self.read_bytes, max(0, self.cache_miss_pages * PAGE_BYTES - self.read_bytes))


@dataclass(frozen=True)
class _Statement:
    session: int
    statement: str


class TracedStatement(Protocol):
    """A traced session as the join needs it: its number and its statement's text."""

    @property
    def session(self) -> int: ...

    @property
    def statement(self) -> str: ...


class JoinInputs(Protocol):
    """What the join reads: the sessions, their spans, every thread's slots, the SSTable files
    (file_id -> component), the slots' clock, and every read call when the per-call log kept all."""

    @property
    def sessions(self) -> Sequence[TracedStatement]: ...

    @property
    def spans(self) -> Sequence[Span]: ...

    @property
    def thread_io(self) -> Sequence[SlotIO]: ...

    @property
    def sstables(self) -> dict[int, SSTableName]: ...

    @property
    def capture_start_ns(self) -> int: ...

    @property
    def slot_ns(self) -> int: ...

    @property
    def calls(self) -> Sequence[ReadCall] | None: ...


def reads_table(statement: str) -> tuple[str | None, str] | None:
    """(keyspace or None, table) a SELECT reads; None when the text names no one table to hold it to."""
    select = parse_select(statement)
    return (select.keyspace, select.table) if select and select.table else None


def _may_read(table: tuple[str | None, str] | None, name: SSTableName) -> bool:
    return table is None or (table[1] == name.table and table[0] in (None, name.keyspace))


def attribute(
    inputs: JoinInputs,
) -> tuple[dict[int, dict[int, list[float]]], dict[tuple[int | None, int], float]]:
    """(session -> file_id -> [data read, syscall bytes, cache-miss bytes]) claimed by each session,
    and (node_id, tid) -> SSTable bytes nobody claimed. A thread is one node's (its tid and node_id).

    A session claims, on each of its threads, the slots from its first to its last event there
    (its core), and one slot either side (its margin, for the events' sub-ms uncertainty), and in
    them only the files of the table its statement reads (any file when the text does not say):
    a thread that goes straight on to another request, sampled or not, reads other tables at
    rates that would swamp a small statement's bytes. A file's bytes in a slot go to the cores
    that may have read them, else to such margins; several alike share them equally.

    When the per-call log kept every read syscall (inputs.calls), syscall bytes go by call instead:
    a read belongs to the sessions whose events on its thread surround it (else come within
    CALL_MARGIN_NS of it), so a neighbour's reads in a shared millisecond stay the neighbour's.
    The slots then carry only the page-cache fills beyond what the reads returned."""
    # keyed by (node, thread, slot): every node has its own thread ids
    core: dict[tuple[int | None, int, int], list[int]] = defaultdict(list)
    margin: dict[tuple[int | None, int, int], list[int]] = defaultdict(list)
    for span in inputs.spans:
        if span.tid is None:
            continue
        first = (span.first_ns - inputs.capture_start_ns) // inputs.slot_ns
        last = (span.last_ns - inputs.capture_start_ns) // inputs.slot_ns
        for slot in range(max(0, first - SLACK_SLOTS), last + SLACK_SLOTS + 1):
            claimants = (core if first <= slot <= last else margin)[(span.node_id, span.tid, slot)]
            if span.session not in claimants:
                claimants.append(span.session)
    tables = {session.session: reads_table(session.statement) for session in inputs.sessions}
    claimed: dict[int, dict[int, list[float]]] = defaultdict(lambda: defaultdict(lambda: [0.0, 0.0, 0.0]))
    unclaimed: dict[tuple[int | None, int], float] = defaultdict(float)
    by_call = inputs.calls is not None
    for row in inputs.thread_io:
        name = inputs.sstables.get(row.file_id)
        if name is None:
            continue
        # By call, the slot keeps only the fills beyond the reads (their bytes go by call below).
        size = row.data_read_bytes - row.read_bytes if by_call else row.data_read_bytes
        syscall = 0 if by_call else row.read_bytes
        key = (row.node_id, row.tid, row.slot)
        slot_claimants = [s for s in core.get(key, ()) if _may_read(tables.get(s), name)] or [
            s for s in margin.get(key, ()) if _may_read(tables.get(s), name)
        ]
        if not slot_claimants:
            unclaimed[row.node_id, row.tid] += size
            continue
        share = 1 / len(slot_claimants)
        for session in slot_claimants:
            figures = claimed[session][row.file_id]
            figures[0] += size * share
            figures[1] += syscall * share
            figures[2] += row.cache_miss_pages * PAGE_BYTES * share
    if inputs.calls is not None:
        _attribute_calls(inputs, tables, claimed, unclaimed)
    return claimed, unclaimed


def _attribute_calls(
    inputs: JoinInputs,
    tables: dict[int, tuple[str | None, str] | None],
    claimed: dict[int, dict[int, list[float]]],
    unclaimed: dict[tuple[int | None, int], float],
) -> None:
    spans_by_tid: dict[tuple[int | None, int], list[Span]] = defaultdict(list)
    for span in inputs.spans:
        if span.tid is not None:
            spans_by_tid[span.node_id, span.tid].append(span)
    for spans in spans_by_tid.values():
        spans.sort(key=lambda span: span.first_ns)
    starts = {tid: [span.first_ns - CALL_MARGIN_NS for span in spans] for tid, spans in spans_by_tid.items()}
    for call in inputs.calls or ():
        name = inputs.sstables[call.file_id]
        thread = (call.node_id, call.tid)
        spans = spans_by_tid.get(thread, [])
        # The spans that start (with their margin) before the call; a thread runs one request at a
        # time, so only the last few can still be open.
        before = bisect.bisect_right(starts.get(thread, []), call.ts_ns)
        nearby = spans[max(0, before - 4) : before]
        inside = [
            s.session
            for s in nearby
            if s.first_ns <= call.ts_ns <= s.last_ns and _may_read(tables.get(s.session), name)
        ]
        around = inside or [
            s.session
            for s in nearby
            if call.ts_ns <= s.last_ns + CALL_MARGIN_NS and _may_read(tables.get(s.session), name)
        ]
        if not around:
            unclaimed[thread] += call.bytes
            continue
        share = call.bytes / len(set(around))
        for session in set(around):
            figures = claimed[session][call.file_id]
            figures[0] += share
            figures[1] += share


def slot_spans(trace: Trace) -> list[Span]:
    """Every session's spans in a trace (session_threads)."""
    return [Span.of(row) for row in queries.session_threads(trace)]


def slot_io(trace: Trace) -> list[SlotIO]:
    """Every thread's slots in a trace (thread_io)."""
    return [SlotIO.of(row) for row in queries.thread_io(trace)]


def serving_threads(trace: Trace) -> dict[int, list[Span]]:
    """execution -> the threads that served it and when (the spans of its traced sessions, one per
    page), for a `casstrace run` trace whose measured executions were traced; {} otherwise."""
    sessions = queries.execution_sessions(trace)
    served: dict[int, list[Span]] = defaultdict(list)
    for span in slot_spans(trace):
        if span.session in sessions:
            served[sessions[span.session]].append(span)
    return {execution: sorted(spans, key=lambda s: s.first_ns) for execution, spans in served.items()}


def serving_cpu_ns(trace: Trace) -> dict[int, float]:
    """execution -> the on-CPU time of the threads that served it, while they served it (served_cpu_ns);
    {} for a trace without thread_cpu rows or traced executions."""
    rows = queries.thread_cpu(trace)
    return served_cpu_ns(serving_threads(trace), rows) if rows else {}


def served_cpu_ns(served: dict[Served, list[Span]], thread_cpu: Iterable[ThreadCpu]) -> dict[Served, float]:
    """What each request (an execution of a run, a session of a watch: the key of `served`) cost its
    threads in CPU: of each thread of its spans, its CPU time (thread_cpu) in the slots that meet its
    events there, widened by CALL_MARGIN_NS either side (the events' times are known that well), each
    slot once. A request none of whose threads was found has none."""
    # by thread of each node: two machines' threads may share a tid
    slots: dict[tuple[int | None, int], list[ThreadCpu]] = defaultdict(list)
    for row in sorted(thread_cpu, key=lambda r: r.ts_ns):
        slots[(row.node_id, row.tid)].append(row)  # by time
    starts = {thread: [row.ts_ns for row in rows] for thread, rows in slots.items()}
    widest = max((row.slot_ns for rows in slots.values() for row in rows), default=0)
    found: dict[Served, float] = {}
    for request, spans in served.items():
        taken: set[tuple[tuple[int | None, int], int]] = set()
        for span in spans:
            if span.tid is None:
                continue
            thread = (span.node_id, span.tid)
            first, last = span.first_ns - CALL_MARGIN_NS, span.last_ns + CALL_MARGIN_NS
            rows = slots.get(thread, [])
            at = bisect.bisect_right(starts.get(thread, []), first - widest)
            while at < len(rows) and rows[at].ts_ns <= last:
                if rows[at].ts_ns + rows[at].slot_ns > first:
                    taken.add((thread, at))
                at += 1
        if any(span.tid is not None for span in spans):
            found[request] = float(sum(slots[thread][at].oncpu_ns for thread, at in taken))
    return found


@dataclass(frozen=True)
class ExecutionShare:
    """One measured execution of a run, charged by thread: what the threads that served it read of
    the queried table's Data files while they served it, and what the node read meanwhile in its
    window for other requests (never added to the execution's figures)."""

    execution: int
    window_id: int
    syscall_bytes: int  # what its threads' read syscalls returned
    fill_outside_syscall_bytes: int  # page-cache fills of its threads beyond what their reads returned
    cache_miss_bytes: int  # every page-cache fill of its threads
    files: frozenset[int]  # the Data files its threads read
    table_bytes: int  # the queried table's Data bytes every thread read in the window
    other_tables_bytes: int  # other tables' SSTable bytes read in the window (by any thread)
    other_requests: int | None  # the node's other clients' requests around the window (None: not measured)
    sessions: int  # its traced sessions found (one a page)

    @property
    def data_read_bytes(self) -> int:
        return data_read(self.syscall_bytes, self.fill_outside_syscall_bytes)

    @property
    def others_table_bytes(self) -> int:
        """The queried table's Data bytes read in the window by threads not serving it."""
        return max(0, self.table_bytes - self.data_read_bytes)

    @property
    def busy(self) -> bool:
        """Other requests touched the node in the window: by its own count, or by what other threads read."""
        return bool(self.others_table_bytes or self.other_tables_bytes or self.other_requests)


@dataclass
class _RunJoin:
    sessions: list[_Statement]
    spans: list[Span]
    thread_io: list[SlotIO]
    sstables: dict[int, SSTableName]
    capture_start_ns: int
    slot_ns: int
    calls: list[ReadCall] | None


@dataclass
class RunAttribution:
    """A run's join, done once (run_attribution): what each measured execution's sessions claimed, by
    file, and every thread slot in each measured window; shares() of any set of Data files from it
    (the whole table, or one node's part of it)."""

    windows: dict[int, queries.ExecutionRecord]  # execution -> its row (measured, with a window)
    claims: dict[int, list[dict[int, list[float]]]]  # execution -> each of its sessions' claims by file
    in_window: dict[int, list[SlotIO]]  # window_id -> the thread slots that start in it
    sstables: dict[int, SSTableName]
    file_nodes: dict[int, int]  # file_id -> its node (run traces: every file has one)

    def shares(self, data: dict[int, SSTableName]) -> dict[int, ExecutionShare]:
        """window_id -> each measured execution's share of the reads of `data` (Data files) in its window;
        the reads of other tables in it are those of the nodes `data` is on."""
        nodes = {self.file_nodes.get(file_id) for file_id in data}
        shares = {}
        for execution, row in self.windows.items():
            assert row.window_id is not None
            figures = [0.0, 0.0, 0.0]
            files = set()
            for claim in self.claims.get(execution, []):
                for file_id, (read_bytes, syscall, cache) in claim.items():
                    if file_id in data:
                        figures = [figures[0] + read_bytes, figures[1] + syscall, figures[2] + cache]
                        files.add(file_id)
            slots = self.in_window.get(row.window_id, [])
            shares[row.window_id] = ExecutionShare(
                execution=execution,
                window_id=row.window_id,
                syscall_bytes=round(figures[1]),
                fill_outside_syscall_bytes=round(figures[0] - figures[1]),
                cache_miss_bytes=round(figures[2]),
                files=frozenset(files),
                table_bytes=sum(slot.data_read_bytes for slot in slots if slot.file_id in data),
                other_tables_bytes=sum(
                    slot.data_read_bytes
                    for slot in slots
                    if (name := self.sstables.get(slot.file_id)) is not None
                    and slot.file_id not in data
                    and self.file_nodes.get(slot.file_id) in nodes
                    and not _same_table(name, data)
                ),
                other_requests=row.other_requests,
                sessions=len(self.claims.get(execution, [])),
            )
        return shares


def run_attribution(trace: Trace) -> RunAttribution | None:
    """The join of a run trace whose executions were traced and whose probes counted per thread (on
    every node captured); None for any other trace (its executions are charged by window)."""
    sessions = queries.execution_sessions(trace)
    slot_ns = trace.meta.get("thread_slot_ns")
    if not sessions or not slot_ns:
        return None
    sstables = {
        file_id: name for file_id, path in queries.file_paths(trace, "file") if (name := parse_sstable_path(path))
    }
    statements = {r.session: r.statement for r in queries.statement_sessions(trace) if r.session in sessions}
    logged_all = not trace.meta.get("unstreamed_events") and not trace.meta.get("lost_events")
    join = _RunJoin(
        sessions=[_Statement(session, statement) for session, statement in statements.items()],
        spans=[span for span in slot_spans(trace) if span.session in sessions],
        thread_io=slot_io(trace),
        sstables=sstables,
        capture_start_ns=trace.meta["capture_start_ns"],
        slot_ns=slot_ns,
        calls=[call for call in queries.read_calls(trace) if call.file_id in sstables] if logged_all else None,
    )
    claimed, _ = attribute(join)
    bounds = queries.window_bounds(trace)
    windows = {
        row.execution: row for row in queries.executions(trace) if row.kind == "measured" and row.window_id in bounds
    }
    # Each slot in the window it starts in: the windows of a run are milliseconds apart at least.
    starts = sorted((bounds[row.window_id][0], row.window_id) for row in windows.values() if row.window_id is not None)
    in_window: dict[int, list[SlotIO]] = defaultdict(list)
    for slot_row in join.thread_io:
        at = join.capture_start_ns + slot_row.slot * slot_ns
        index = bisect.bisect_right(starts, (at, float("inf"))) - 1
        if index >= 0 and at < bounds[starts[index][1]][1]:
            in_window[starts[index][1]].append(slot_row)
    claims: dict[int, list[dict[int, list[float]]]] = defaultdict(list)
    for session, execution in sessions.items():
        claims[execution].append(claimed.get(session, {}))
    return RunAttribution(windows, dict(claims), dict(in_window), sstables, queries.file_node_ids(trace))


def _same_table(name: SSTableName, data: dict[int, SSTableName]) -> bool:
    """A component of the queried table (its Data, its index files): not another table's."""
    return any(name.keyspace == d.keyspace and name.table == d.table for d in data.values())
