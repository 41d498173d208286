"""Which statements a live node's SSTable bytes went to (`casstrace watch`), and what nobody asked for.

The join (analyses.attribution, the same `casstrace run` uses): Cassandra traced a random share P
of the requests (statement_sessions), and said on which threads each one worked, from when to when
(session_threads); the probes counted every thread's file bytes per 1 ms slot (thread_io). A sampled
session's I/O is what its threads read from its table's files in the slots its events span.

Per statement, per sampled execution: the bytes by table and component; "data read" by `casstrace run`'s
formula (amplification.data_read, docs/verdicts.md: what read syscalls returned, plus page-cache fills
beyond that, e.g. readahead or faults on mapped files); rows from the trace events, latency from the session durations.
Estimated executions are sampled ÷ P. What sampled sessions do not explain is shown by thread pool
(compaction, memtable flush, requests that were not sampled, ...).

Pure: the trace's rows in (WatchInputs.from_rows: a trace's, or a watch's so far for its live table),
a Watch out (summarise); `analyse_watch` reads a trace file.
"""

import os
import re
import shlex
from collections import Counter, defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path

from casstrace.analyses import causes, statement_writes
from casstrace.analyses.amplification import data_files
from casstrace.analyses.attribution import SlotIO, Span, attribute
from casstrace.analyses.findings import CassandraCounts, FindingContext
from casstrace.analyses.hints import HintsFor, HintsTally, hints_files, hints_per_replica, tally_hints
from casstrace.analyses.measures import MeasureTally
from casstrace.analyses.model import Finding, MeasureSummary, NecessaryRead, Profile
from casstrace.analyses.necessary import filtering_scan, necessary_read
from casstrace.analyses.percentiles import histogram_percentile
from casstrace.analyses.profile import profile as java_profile
from casstrace.analyses.query import find_table, parse_select
from casstrace.analyses.session_measures import SessionInputs, TracedSession, session_figures
from casstrace.analyses.statement_writes import StatementWrites, WritesTally
from casstrace.analyses.table_writes import TableFinding, TableWrites, TableWriteTally, table_findings, table_writes
from casstrace.analyses.table_writes import tally_writes as tally_table_writes
from casstrace.analyses.units import MIB, human_bytes, ns_to_s
from casstrace.analyses.verdict_rule import DEFAULT_RULE, Status, VerdictRule, judge
from casstrace.errors import CasstraceError
from casstrace.traces import Trace, queries
from casstrace.traces.activities import DRIVER_BATCH_STATEMENT
from casstrace.traces.meta import CassandraMeta, JvmPause
from casstrace.traces.queries import ReadCall, SessionThread, StatementSession, ThreadCpu, ThreadIO
from casstrace.traces.schema import PAGE_BYTES
from casstrace.traces.sstable_names import SSTableName, parse_sstable_path
from casstrace.traces.thread_roles import Role, role_of, shared_pool_worker

SHARED_POOL = "SharedPool"  # Cassandra's request stages' workers (traces.thread_roles.SHARED_POOL_STAGES)
UNSAMPLED_REQUESTS = (
    "requests not sampled (the request stages' shared workers: ReadStage, Native-Transport-Requests, ...)"
)
_POOL_SUFFIX = re.compile(r"[-:#]\d+$")
# The write causes that flag a write statement (GC pauses are a note, as for reads)
WRITE_FLAGS = ("large_batch",)
WRITE_ELSEWHERE = (
    "`casstrace run` writes only to a node casstrace started: create the table on one "
    "(`casstrace sandbox start`, then its CREATE TABLE) and `casstrace run` the statement there, "
    "its ? values generated; on this node, watch with a higher --sample for more of its executions."
)
DRIVER_BATCH_UNNAMED = (
    "a driver's batch: its trace names none of its statements, so there is nothing to run; write them as "
    "one BEGIN BATCH … APPLY BATCH and `casstrace run` that on a node casstrace started."
)
INSTEAD_OF_RUN = (WRITE_ELSEWHERE, DRIVER_BATCH_UNNAMED)  # what run_command says where no run can measure it


@dataclass(frozen=True)
class Session:
    session: int
    statement: str
    consistency: str | None
    started_ns: int
    duration_ns: int | None
    live_rows: int | None
    tombstone_cells: int | None
    sstables_merged: int | None
    client: str | None = None
    mutations: int | None = None  # a write's 'Appending to commitlog' events
    commitlog_ns: int | None = None  # and its time from each to its thread's next event


@dataclass
class WatchInputs:
    sessions: list[Session]
    spans: list[Span]
    thread_io: list[SlotIO]
    sstables: dict[int, SSTableName]  # file_id -> SSTable component, for the SSTable files only
    thread_names: dict[int, str]
    capture_start_ns: int
    slot_ns: int
    probability: float
    duration_s: float
    calls: list[ReadCall] | None = None  # every read syscall on an SSTable, when the per-call log kept them all
    # mapped pages touched during the watch, by file_id (None: not measured): no thread to charge
    mapped_touched: dict[int, int] | None = None
    # the JVM's GC and safepoint pauses, (start_ns, end_ns) on the sessions' clock (None: not measured)
    pauses: list[tuple[int, int]] | None = None
    table_writes: TableWriteTally | None = None  # the flush and compaction bytes by table (analyses.table_writes)
    hints: HintsTally = field(default_factory=HintsTally)  # per replica, its hints files' bytes (analyses.hints)
    gc_pauses: list[tuple[int, int]] | None = None  # of which the GCs'
    # (node_id, tid, slot) -> commit-log pages the thread dirtied (None: not measured)
    commitlog_slots: dict[tuple[int | None, int, int], int] | None = None
    client_bytes: dict[str, int] | None = None  # client address -> bytes the node read from it (None: not measured)
    commitlog_syncs: statement_writes.CommitLogSyncs | None = None  # None: not measured
    # the request threads' on-CPU ns per slot, where the sampled sessions' spans meet them (None: not measured)
    thread_cpu: list[ThreadCpu] | None = None

    @classmethod
    def from_rows(
        cls,
        sessions: Iterable[StatementSession],
        spans: Iterable[SessionThread],
        thread_io: Iterable[ThreadIO],
        files: dict[int, str],
        thread_names: dict[int, str],
        *,
        capture_start_ns: int,
        slot_ns: int,
        probability: float,
        duration_s: float,
        calls: Iterable[ReadCall] | None = None,
        mapped_touched: dict[int, int] | None = None,
        pauses: Iterable[JvmPause] | None = None,
        client_bytes: dict[str, int] | None = None,
        commitlog_syncs: statement_writes.CommitLogSyncs | None = None,
        thread_cpu: Iterable[ThreadCpu] | None = None,
    ) -> "WatchInputs":
        """From the records of a watch trace's tables (casstrace.traces.queries), or those a watch in
        progress would write; `files`: file_id -> path; `calls`: every read syscall, when the log
        kept every one; `mapped_touched`: file_id -> mapped pages touched in the watch, when measured;
        `pauses`: the JVM's pauses in the watch (meta jvm_pauses), when measured; `client_bytes`: the
        bytes the node read from each client address's connections, when measured; `thread_cpu`: the
        request threads' CPU per slot, when measured."""
        sstables = {file_id: name for file_id, path in files.items() if (name := parse_sstable_path(path))}
        thread_io = list(thread_io)
        pauses = None if pauses is None else list(pauses)
        return cls(
            sessions=[
                Session(
                    r.session,
                    r.statement,
                    r.consistency,
                    r.started_ns,
                    r.duration_ns,
                    r.live_rows,
                    r.tombstone_cells,
                    r.sstables_merged,
                    r.client,
                    r.mutations,
                    r.commitlog_ns,
                )
                for r in sessions
            ],
            spans=[Span.of(row) for row in spans],
            thread_io=[SlotIO.of(row) for row in thread_io],
            sstables=sstables,
            thread_names=thread_names,
            capture_start_ns=capture_start_ns,
            slot_ns=slot_ns,
            probability=probability,
            duration_s=duration_s,
            calls=None if calls is None else [call for call in calls if call.file_id in sstables],
            mapped_touched=mapped_touched,
            pauses=None if pauses is None else [(p["start_ns"], p["end_ns"]) for p in pauses],
            table_writes=tally_table_writes(thread_io, sstables, thread_names),
            hints=tally_hints(thread_io, hints_files(files)),
            gc_pauses=None if pauses is None else [(p["start_ns"], p["end_ns"]) for p in pauses if p["kind"] == "gc"],
            commitlog_slots=statement_writes.commitlog_slots(thread_io, files),
            client_bytes=client_bytes,
            commitlog_syncs=commitlog_syncs,
            thread_cpu=None if thread_cpu is None else list(thread_cpu),
        )


@dataclass
class ComponentRead:
    table: str  # 'ks.table' (or ks.table.index)
    component: str  # 'Data', 'Index', 'Partitions', ...
    bytes_per_execution: float
    syscall_bytes_per_execution: float
    cache_miss_bytes_per_execution: float


@dataclass
class StatementIO:
    statement: str
    sampled_executions: int
    estimated_executions: float
    sstable_bytes: int  # claimed by its sampled executions, every component
    estimated_sstable_bytes: float  # ÷ P: the ranking figure
    sstable_read_bytes_per_execution: float
    data_read_bytes_per_execution: float  # Data components only, as `casstrace run` counts
    components: list[ComponentRead]
    rows_per_execution: float | None
    bytes_per_row: float | None  # data read per row returned
    latency_p50_s: float | None
    latency_p99_s: float | None
    consistency: list[str]
    unmatched_threads: list[str]  # threads of its events with no known tid
    findings: list[Finding] = field(default_factory=list)  # the causes of a flagged read first, then notes
    run_command: str = ""
    verdict: Status = "undetermined"  # as `casstrace run` judges: flagged | not flagged | undetermined
    necessary_bytes_per_execution: float | None = None  # the necessary read of its rows (None: no model)
    # the p99 over the executions no GC or safepoint pause of the JVM overlapped, and how many one did
    # (None: the pauses were not measured)
    latency_p99_without_pauses_s: float | None = None
    paused_executions: int | None = None
    write: StatementWrites | None = None  # a write statement's figures (None: not a write)
    # the registered per-execution measures (traces.measures) over its sampled executions, as `run`
    # summarises its executions' (analyses.session_measures: each sampled session's)
    measures: list[MeasureSummary] = field(default_factory=list)

    @property
    def estimated_storage_bytes(self) -> float:
        """The ranking figure, reads and writes alike: the SSTable bytes it read and the commit-log
        bytes it appended (else the bytes it sent on the wire, which the commit log appends), ÷ P."""
        return self.estimated_sstable_bytes + (self.write.estimated_storage_bytes if self.write else 0.0)


@dataclass
class MappedTouch:
    table: str
    component: str
    touched_bytes: int


@dataclass
class PoolIO:
    pool: str  # the thread pool ('CompactionExecutor') or thread name
    what: str  # in words ('compaction')
    sstable_bytes: int


# Over this many tables, their cost shows (cassandra-many-tables.md: "over 200 tables, the impact gets
# massive"); each costs about TABLE_HEAP_BYTES of heap for its metadata, used or not.
MANY_TABLES = 200
TABLE_HEAP_BYTES = MIB
# A flush of fewer writes than this makes a small SSTable, for compaction to rewrite rounds later.
FEW_WRITES_PER_FLUSH = 1_000


@dataclass(frozen=True)
class TableCost:
    """A table that flushed or served requests during the watch (casstrace.node.tablestats)."""

    table: str
    flushes: int
    reads: int
    writes: int
    memtable_bytes: int

    @property
    def little_traffic(self) -> bool:
        """It flushed for few writes: its memtable held little, yet cost a flush (and an SSTable)."""
        return self.flushes > 0 and self.writes / self.flushes < FEW_WRITES_PER_FLUSH


@dataclass
class Watch:
    trace_path: str
    complete: bool
    warnings: list[str]
    notes: list[str]
    duration_s: float
    probability: float
    statements: list[StatementIO]  # most estimated SSTable bytes first
    sstable_bytes: int  # every thread's SSTable bytes in the watch
    explained_bytes: int  # claimed by sampled sessions
    unexplained: list[PoolIO]  # the rest, by pool, most first
    context: dict
    # SSTable pages the JVM touched through its memory maps in the watch, by table and component
    # (None: not measured). In no figure above: no syscall, no page-cache fill, no thread.
    mapped_touched: list[MappedTouch] | None = None
    profile: Profile | None = None  # Java stacks of every thread's Data reads, and CPU (--profile)
    tables: int | None = None  # the schema's table count (None: not read)
    table_costs: list[TableCost] | None = None  # the tables that flushed or served requests (None: not read)
    table_writes: list[TableWrites] = field(default_factory=list)  # per table, its flushes and compactions
    hints: list[HintsFor] = field(default_factory=list)  # per replica, the hints stored and replayed for it
    table_findings: list[TableFinding] = field(default_factory=list)  # about them, the most bytes saved first
    # the figures as they add up: a watch cut into intervals sums its intervals' (WatchTally.add)
    tally: "WatchTally | None" = field(default=None, repr=False, compare=False)

    @property
    def explained_share(self) -> float | None:
        return self.explained_bytes / self.sstable_bytes if self.sstable_bytes else None


def pool_of(thread: str) -> str:
    """'CompactionExecutor:2' -> 'CompactionExecutor'; 'ReadStage-3' -> SHARED_POOL (its worker also
    serves the other request stages, and is named after whichever it served last)."""
    if shared_pool_worker(thread) is not None:
        return SHARED_POOL
    return _POOL_SUFFIX.sub("", thread)


def pool_activity(pool: str) -> str:
    """What a pool's reads are, in words: its threads' role ('compaction'), else the pool's name."""
    if pool == SHARED_POOL:
        return UNSAMPLED_REQUESTS
    role = role_of(pool)
    return pool if role is Role.OTHER else role.value


@dataclass
class StatementTally:
    """One statement's sampled executions as figures that add up: the tallies of two stretches of a
    watch, added, are the tally of both (a watch cut into intervals, the live figures of a long one).
    Held per statement, not per execution, so a shift's tally stays the size of an interval's."""

    executions: int = 0
    # (table, component) -> [data read, syscall, cache-miss] bytes claimed by its executions
    components: dict[tuple[str, str], list[float]] = field(default_factory=dict)
    # the distinct counts of SSTables whose Data file one execution read (the findings use the most)
    data_sstables_read: set[int] = field(default_factory=set)
    rows: int = 0  # live rows returned, over the executions whose trace said
    rows_known: int = 0
    durations_ns: Counter[int] = field(default_factory=Counter)  # exact: the node's durations are whole µs
    paused_durations_ns: Counter[int] = field(default_factory=Counter)  # of those a JVM pause overlapped
    cassandra: Counter[CassandraCounts] = field(default_factory=Counter)
    consistency: set[str] = field(default_factory=set)
    unmatched_threads: set[str] = field(default_factory=set)  # threads of its events with no known tid
    measures: MeasureTally = field(default_factory=MeasureTally)  # its sessions' (analyses.session_measures)

    def add(self, other: "StatementTally") -> None:
        self.executions += other.executions
        self.measures.add(other.measures)
        _add_figures(self.components, other.components)
        self.data_sstables_read |= other.data_sstables_read
        self.rows += other.rows
        self.rows_known += other.rows_known
        self.durations_ns.update(other.durations_ns)
        self.paused_durations_ns.update(other.paused_durations_ns)
        self.cassandra.update(other.cassandra)
        self.consistency |= other.consistency
        self.unmatched_threads |= other.unmatched_threads


@dataclass
class WatchTally:
    """A watch's join, as figures that add up (StatementTally); summarise_tally makes a Watch of it.
    `meta` is the trace meta the verdicts read (the node, its tables' schemas): added, the newer
    one's, with the tables of both."""

    probability: float
    meta: dict = field(default_factory=dict)
    duration_s: float = 0.0
    statements: dict[str, StatementTally] = field(default_factory=dict)
    sstable_bytes: int = 0  # every thread's SSTable bytes
    explained_bytes: float = 0.0  # claimed by sampled sessions
    unexplained: dict[str, float] = field(default_factory=dict)  # pool -> SSTable bytes nobody claimed
    # (table, component) -> [data read, syscall, cache-miss] bytes of every thread (watch_tables)
    tables: dict[tuple[str, str], list[float]] = field(default_factory=dict)
    mapped_touched: dict[tuple[str, str], int] | None = None  # (table, component) -> bytes; None: not measured
    pauses_measured: bool = True  # the JVM's pauses were measured in every stretch added
    table_writes: TableWriteTally | None = None  # flush and compaction bytes by table (None: not tallied)
    hints: HintsTally = field(default_factory=HintsTally)
    writes: WritesTally = field(default_factory=WritesTally)  # the write statements' figures

    def add(self, other: "WatchTally") -> None:
        self.meta = _newer_meta(self.meta, other.meta)
        self.duration_s += other.duration_s
        for text, statement in other.statements.items():
            self.statements.setdefault(text, StatementTally()).add(statement)
        self.sstable_bytes += other.sstable_bytes
        self.explained_bytes += other.explained_bytes
        self.pauses_measured = self.pauses_measured and other.pauses_measured
        self.writes.add(other.writes)
        for pool, size in other.unexplained.items():
            self.unexplained[pool] = self.unexplained.get(pool, 0.0) + size
        _add_figures(self.tables, other.tables)
        if other.mapped_touched is not None:
            mapped = self.mapped_touched if self.mapped_touched is not None else {}
            for key, size in other.mapped_touched.items():
                mapped[key] = mapped.get(key, 0) + size
            self.mapped_touched = mapped
        if other.table_writes is not None:
            self.table_writes = self.table_writes or TableWriteTally()
            self.table_writes.add(other.table_writes)
        self.hints.add(other.hints)


def _add_figures(into: dict[tuple[str, str], list[float]], figures: dict[tuple[str, str], list[float]]) -> None:
    for key, values in figures.items():
        _add(into, key, values)


def _add(into: dict[tuple[str, str], list[float]], key: tuple[str, str], values: list[float]) -> None:
    totals = into.setdefault(key, [0.0] * len(values))
    for index, value in enumerate(values):
        totals[index] += value


def _newer_meta(older: dict, newer: dict) -> dict:
    """The newer trace meta, its node's tables those of both (the verdicts find a statement's there)."""
    if not older or not newer:
        return newer or older
    tables = {(t.get("keyspace"), t.get("table")): t for t in (older.get("cassandra") or {}).get("tables") or []}
    tables.update({(t.get("keyspace"), t.get("table")): t for t in (newer.get("cassandra") or {}).get("tables") or []})
    merged = {**newer, "cassandra": {**(newer.get("cassandra") or {}), "tables": list(tables.values())}}
    if "start_ns" in (older.get("watch") or {}) and "watch" in newer:  # one watch: one clock
        merged["watch"] = {**newer["watch"], "start_ns": older["watch"]["start_ns"]}
    return merged


def tally(inputs: WatchInputs, meta: dict) -> WatchTally:
    """The join of a watch's (or a stretch of it's) rows, as figures that add up."""
    claimed, unclaimed = attribute(inputs)
    unmatched: dict[int, list[str]] = defaultdict(list)
    for span in inputs.spans:
        if span.tid is None:
            unmatched[span.session].append(span.thread)
    measured = _session_figures(inputs)
    statements: dict[str, StatementTally] = {}
    for session in inputs.sessions:
        statement = statements.setdefault(session.statement, StatementTally())
        statement.executions += 1
        statement.measures.count(measured.get(session.session, {}))
        files = claimed.get(session.session, {})
        for file_id, figures in files.items():
            name = inputs.sstables[file_id]
            _add(statement.components, (name.owner, name.component), figures)
        statement.data_sstables_read.add(
            len({inputs.sstables[f].sstable for f in files if inputs.sstables[f].component == "Data"})
        )
        if session.live_rows is not None:
            statement.rows += session.live_rows
            statement.rows_known += 1
        if session.duration_ns is not None:
            statement.durations_ns[session.duration_ns] += 1
            end = session.started_ns + session.duration_ns
            if any(start < end and session.started_ns < stop for start, stop in inputs.pauses or ()):
                statement.paused_durations_ns[session.duration_ns] += 1
        statement.cassandra[CassandraCounts(session.live_rows, session.tombstone_cells, session.sstables_merged)] += 1
        if session.consistency:
            statement.consistency.add(session.consistency)
        statement.unmatched_threads.update(unmatched.get(session.session, ()))
    tables: dict[tuple[str, str], list[float]] = {}
    for row in inputs.thread_io:
        if (component := inputs.sstables.get(row.file_id)) is not None:
            _add(
                tables,
                (component.owner, component.component),
                [row.data_read_bytes, row.read_bytes, row.cache_miss_pages * PAGE_BYTES],
            )
    pools: dict[str, float] = defaultdict(float)
    for (_, tid), size in unclaimed.items():  # one node's threads in a watch
        if size:
            pools[pool_of(inputs.thread_names.get(tid, f"thread {tid}"))] += size
    return WatchTally(
        probability=inputs.probability,
        meta=meta,
        duration_s=inputs.duration_s,
        statements=statements,
        sstable_bytes=round(sum(figures[0] for figures in tables.values())),
        explained_bytes=sum(f[0] for files in claimed.values() for f in files.values()),
        unexplained=dict(pools),
        tables=tables,
        mapped_touched=_mapped(inputs),
        pauses_measured=inputs.pauses is not None,
        table_writes=inputs.table_writes,
        hints=inputs.hints,
        writes=statement_writes.tally(
            statement_writes.WriteInputs(
                sessions=[
                    statement_writes.WriteSession(s.session, s.statement, s.client, s.mutations)
                    for s in inputs.sessions
                ],
                spans=inputs.spans,
                commitlog_slots=inputs.commitlog_slots,
                capture_start_ns=inputs.capture_start_ns,
                slot_ns=inputs.slot_ns,
                figures=measured,
                client_bytes=inputs.client_bytes,
                commitlog_syncs=inputs.commitlog_syncs,
            )
        ),
    )


def _session_figures(inputs: WatchInputs) -> dict[int, dict[str, float]]:
    """Each sampled session's per-execution measures (analyses.session_measures)."""
    return session_figures(
        SessionInputs(
            sessions=[
                TracedSession(s.session, s.started_ns, s.duration_ns, s.mutations, s.commitlog_ns)
                for s in inputs.sessions
            ],
            spans=inputs.spans,
            pauses=inputs.pauses,
            gc_pauses=inputs.gc_pauses,
            thread_cpu=inputs.thread_cpu,
        )
    )


class RunningFigures:
    """A watch's figures as it runs: the intervals done (`watch --interval`), added up, and the stretch
    in progress. The live table, the metrics endpoint and the summary at the end all read them here;
    the command only renders what they give."""

    def __init__(self, rule: VerdictRule = DEFAULT_RULE) -> None:
        self.rule = rule  # each statement's verdict (--threshold and --min-excess)
        self.done: WatchTally | None = None  # the intervals finished so far, added up
        self.traces: list[Path] = []
        self.warnings: list[str] = []
        self.complete = True

    def add_interval(self, watched: Watch, trace: Path) -> int:
        """Count a finished interval (its Watch, from analyse_watch); its number, from 1."""
        self.traces.append(trace)
        number = len(self.traces)
        self.warnings += [f"Interval {number}: {warning}" for warning in watched.warnings]
        self.complete = self.complete and watched.complete
        assert watched.tally is not None  # analyse_watch's Watch has its tally
        if self.done is None:
            self.done = WatchTally(watched.probability)
        self.done.add(watched.tally)
        return number

    def so_far(self, current: WatchInputs) -> WatchTally:
        """The intervals done and the stretch in progress (its rows as `current`), added up."""
        figures = WatchTally(current.probability)
        for part in (self.done, tally(current, {})):
            if part is not None:
                figures.add(part)
        return figures

    def summary(self) -> Watch:
        """The whole watch: every interval's figures added up."""
        assert self.done is not None, "the last interval is always counted"
        first, last = self.traces[0], self.traces[-1]
        return summarise_tally(
            self.done,
            trace_path=f"{first} … {last.name} ({len(self.traces)} intervals)" if first != last else str(first),
            complete=self.complete,
            warnings=self.warnings,
            rule=self.rule,
        )


def summarise(
    inputs: WatchInputs,
    meta: dict,
    *,
    trace_path: str = "",
    complete: bool = True,
    warnings: list[str] | None = None,
    rule: VerdictRule = DEFAULT_RULE,
) -> Watch:
    return summarise_tally(tally(inputs, meta), trace_path=trace_path, complete=complete, warnings=warnings, rule=rule)


def summarise_tally(
    tallied: WatchTally,
    *,
    trace_path: str = "",
    complete: bool = True,
    warnings: list[str] | None = None,
    rule: VerdictRule = DEFAULT_RULE,
) -> Watch:
    """The Watch of a tally; each statement judged by `rule` (--threshold and --min-excess)."""
    meta = tallied.meta
    statements = [_statement(text, statement, tallied, meta, rule) for text, statement in tallied.statements.items()]
    statements.sort(key=lambda s: (-s.estimated_storage_bytes, -s.sampled_executions, s.statement))
    unexplained = sorted(
        (PoolIO(pool, pool_activity(pool), round(size)) for pool, size in tallied.unexplained.items() if size),
        key=lambda p: -p.sstable_bytes,
    )
    writes = table_writes(tallied.table_writes, meta.get("table_background"), _sstables_merged(tallied))
    hints = hints_per_replica(tallied.hints)
    return Watch(
        trace_path=trace_path,
        complete=complete,
        warnings=list(warnings or []),
        notes=_notes(meta, tallied),
        duration_s=tallied.duration_s,
        probability=tallied.probability,
        statements=statements,
        sstable_bytes=tallied.sstable_bytes,
        explained_bytes=round(tallied.explained_bytes),
        unexplained=unexplained,
        context=_context(meta),
        tables=(meta.get("table_activity") or {}).get("tables"),
        table_costs=None
        if "table_activity" not in meta
        else [TableCost(**active) for active in meta["table_activity"]["active"]],
        mapped_touched=None
        if tallied.mapped_touched is None
        else sorted(
            (
                MappedTouch(table, component, size)
                for (table, component), size in tallied.mapped_touched.items()
                if size
            ),
            key=lambda m: -m.touched_bytes,
        ),
        table_writes=writes,
        hints=hints,
        table_findings=table_findings(writes, hints),
        tally=tallied,
    )


def _sstables_merged(tallied: WatchTally) -> dict[str, Counter[int]]:
    """Per statement, how many of its sampled reads merged how many SSTables (Cassandra's trace)."""
    merged: dict[str, Counter[int]] = {}
    for text, statement in tallied.statements.items():
        for counts, reads in statement.cassandra.items():
            if counts.sstables_merged is not None:
                merged.setdefault(text, Counter())[counts.sstables_merged] += reads
    return merged


def _mapped(inputs: WatchInputs) -> dict[tuple[str, str], int] | None:
    if inputs.mapped_touched is None:
        return None
    touched: dict[tuple[str, str], int] = defaultdict(int)
    for file_id, size in inputs.mapped_touched.items():
        if (name := inputs.sstables.get(file_id)) is not None:
            touched[(name.owner, name.component)] += size
    return dict(touched)


def _statement(text: str, tallied: StatementTally, watched: WatchTally, meta: dict, rule: VerdictRule) -> StatementIO:
    probability, pauses_measured = watched.probability, watched.pauses_measured
    count = tallied.executions
    components = sorted(
        (
            ComponentRead(table, component, data / count, syscall / count, cache / count)
            for (table, component), (data, syscall, cache) in tallied.components.items()
        ),
        key=lambda c: -c.bytes_per_execution,
    )
    sstable_bytes = sum(c.bytes_per_execution for c in components) * count
    data_bytes = sum(c.bytes_per_execution for c in components if c.component == "Data")
    rows_per_execution = tallied.rows / tallied.rows_known if tallied.rows_known else None
    statement = StatementIO(
        statement=text,
        sampled_executions=count,
        estimated_executions=count / probability if probability else float(count),
        sstable_bytes=round(sstable_bytes),
        estimated_sstable_bytes=sstable_bytes / probability if probability else sstable_bytes,
        sstable_read_bytes_per_execution=sstable_bytes / count,
        data_read_bytes_per_execution=data_bytes,
        components=components,
        rows_per_execution=rows_per_execution,
        bytes_per_row=data_bytes / rows_per_execution if rows_per_execution else None,
        latency_p50_s=_seconds(histogram_percentile(tallied.durations_ns, 0.5)),
        latency_p99_s=_seconds(histogram_percentile(tallied.durations_ns, 0.99)),
        latency_p99_without_pauses_s=_seconds(
            histogram_percentile(tallied.durations_ns - tallied.paused_durations_ns, 0.99)
        )
        if pauses_measured
        else None,
        paused_executions=tallied.paused_durations_ns.total() if pauses_measured else None,
        consistency=sorted(tallied.consistency),
        unmatched_threads=sorted(tallied.unmatched_threads),
        measures=tallied.measures.summaries(),
    )
    statement.write = statement_writes.summarise(
        text, watched.writes, probability, meta.get("cassandra"), pauses_measured
    )
    if statement.write is None:
        _judge(statement, tallied, meta, rule)
    else:  # no read to judge: flagged for a write cause found
        statement.findings = statement.write.findings
        statement.verdict = "flagged" if any(f.cause in WRITE_FLAGS for f in statement.findings) else "not flagged"
    statement.run_command = run_command(statement, meta)
    return statement


def _seconds(ns: int | None) -> float | None:
    return ns_to_s(ns) if ns is not None else None


def _judge(statement: StatementIO, tallied: StatementTally, meta: dict, rule: VerdictRule) -> None:
    """The verdict and causes `casstrace run` gives, on the sampled executions: the Data bytes each
    read against the necessary read of the rows Cassandra says it returned (no payload is seen here:
    the stored bytes per cell stand in for the values, analyses.necessary)."""
    select = parse_select(statement.statement)
    schema = find_table(meta.get("cassandra") or CassandraMeta(), select.keyspace, select.table) if select else None
    judged_by = rule.for_read(select is not None and schema is not None and filtering_scan(select, schema))
    count = statement.sampled_executions
    data = [figures for (_, component), figures in tallied.components.items() if component == "Data"]
    rows = statement.rows_per_execution
    aggregated = round(rows) if rows is not None else None
    read_ahead = (meta.get("cassandra") or {}).get("compressed_read_ahead_bytes")
    necessary, least = (
        necessary_read(
            select,
            schema,
            payload_bytes=None,
            rows=rows,
            rows_aggregated=aggregated,
            read_ahead=read_ahead,
            least=at_least,
        )
        for at_least in (False, True)
    )
    read = statement.data_read_bytes_per_execution

    def total(model: NecessaryRead | None) -> float | None:
        return None if model is None else model.bytes * count

    # The payload is not seen here: flagged against the table's mean cell, undetermined when only
    # the least the selected cells take says so (`casstrace run` measures the payload).
    statement.verdict = judge(judged_by, read * count, total(necessary), count, necessary_least=total(least))
    if statement.verdict == "undetermined" and least and judged_by.exceeds(read * count, least.bytes * count, count):
        necessary = least
    statement.necessary_bytes_per_execution = necessary.bytes if necessary else None
    syscall = round(sum(f[1] for f in data))
    found = causes.findings(
        FindingContext(
            flagged=necessary is not None and judged_by.exceeds(read * count, necessary.bytes * count, count),
            threshold=rule.threshold,
            executions=count,
            data_read_bytes=round(read * count),
            syscall_bytes=syscall,
            cache_outside_syscall_bytes=max(0, round(read * count) - syscall),
            payload_bytes=None,
            rows=round(rows * count) if rows is not None else None,
            necessary=necessary,
            select=select,
            schema=schema,
            sstables_read=sorted(tallied.data_sstables_read),
            cassandra=list(tallied.cassandra.elements()),
            cassandra_executions=count,
            disk_access_mode=(meta.get("cassandra") or {}).get("disk_access_mode"),
        )
    )
    if statement.verdict == "undetermined":  # causes of a read that may not be flagged: possible at most
        found.causes = [replace(finding, certainty="possible") for finding in found.causes]
    statement.findings = found.causes + found.notes


def run_command(statement: StatementIO, meta: dict) -> str:
    """The `casstrace run` that measures the statement alone, precisely (values to fill in for ?); for
    a write on a node casstrace did not start (which `run` refuses to write to), what to do instead."""
    if statement.statement == DRIVER_BATCH_STATEMENT:
        return DRIVER_BATCH_UNNAMED
    if statement.write is not None and not (meta.get("watch") or {}).get("own_sandbox"):
        return WRITE_ELSEWHERE
    node = meta.get("node") or {}
    parts = ["casstrace", "run"]
    if node.get("host"):
        parts += ["--host", str(node["host"])]
    if node.get("port"):
        parts += ["--port", str(node["port"])]
    if len(statement.consistency) == 1 and statement.consistency[0] not in ("ONE", "LOCAL_ONE"):
        parts += ["--consistency", statement.consistency[0]]
    return " ".join(parts) + " " + shlex.quote(statement.statement)


def _notes(meta: dict, tallied: "WatchTally") -> list[str]:
    mode = ((meta.get("cassandra") or {}).get("disk_access_mode") or "unknown").lower()
    notes = _table_notes(meta.get("table_activity"))
    notes += [
        f"Cassandra traced {tallied.probability:.3g} of the requests it coordinated; estimated executions are "
        "the sampled ones ÷ that share, so a statement seen a few times is estimated roughly."
    ]
    what = (
        "its Data and index files"
        if mode in causes.MMAP_DATA_MODES
        else "its index files at least (5.0 maps them even where it reports 'standard')"
    )
    notes.append(
        f"disk_access_mode is '{mode}': the node reads {what} through memory maps. A mapped page already in "
        "the page cache is read with no syscall and no page-cache fill, so no thread can be charged for it: "
        "such reads are in no statement's figure (per thread they cannot be attributed)"
        + (
            "; the pages touched are shown per table for the whole watch."
            if tallied.mapped_touched is not None
            else "."
        )
    )
    return notes


def _table_notes(activity: dict | None) -> list[str]:
    """What the schema's tables cost the node beside their traffic: heap for many tables, flushes for
    little traffic."""
    if activity is None:
        return []
    notes = []
    tables = activity["tables"]
    if tables > MANY_TABLES:
        notes.append(
            f"MANY TABLES: the schema has {tables} tables, about {human_bytes(tables * TABLE_HEAP_BYTES)} of heap "
            "for their metadata whether used or not, a memtable each and their flushes and compactions: tables "
            "of the same columns can share one (a partition key column telling them apart)."
        )
    small = [TableCost(**active) for active in activity["active"]]
    small = [table for table in small if table.little_traffic]
    if small:
        notes.append(
            f"{len(small)} table(s) flushed their memtable during the watch for fewer than {FEW_WRITES_PER_FLUSH:,} "
            "writes a flush ("
            + ", ".join(f"{t.table}: {t.flushes} flush(es), {t.writes:,} writes" for t in small[:5])
            + "): each flush writes a small SSTable that compaction rewrites later, for little traffic."
        )
    return notes


def _context(meta: dict) -> dict:
    cassandra = meta.get("cassandra") or {}
    watch = meta.get("watch") or {}
    return {
        key: value
        for key, value in {
            "node": meta.get("node"),
            "pid": meta.get("pid"),
            "release_version": cassandra.get("release_version"),
            "disk_access_mode": cassandra.get("disk_access_mode"),
            "commitlog_sync": cassandra.get("commitlog_sync"),
            "commitlog_disk_access_mode": cassandra.get("commitlog_disk_access_mode"),
            "watched": _watched_span(meta),
            "kernel": meta.get("kernel"),
            "hostname": meta.get("hostname"),
            "previous_trace_probability": watch.get("previous_probability"),
            "trace_probability_restored": watch.get("probability_restored"),
            "thread_map": watch.get("thread_map"),
        }.items()
        if value is not None
    }


def _watched_span(meta: dict) -> str | None:
    """When the node traced, in UTC: for a ticket, and to line an interval up with other graphs."""
    watch, offset = meta.get("watch") or {}, meta.get("clock_offset_ns")
    if offset is None or watch.get("start_ns") is None or watch.get("end_ns") is None:
        return None
    start, end = (datetime.fromtimestamp(ns_to_s(watch[key] + offset), UTC) for key in ("start_ns", "end_ns"))
    return f"{start:%Y-%m-%d %H:%M:%S} – {end:%H:%M:%S} UTC" + (
        "" if start.date() == end.date() else f" ({end:%Y-%m-%d})"
    )


def load(trace: Trace) -> WatchInputs:
    """The rows of a watch trace the join needs."""
    meta = trace.meta
    watch = meta.get("watch")
    if watch is None or not queries.has_watch_tables(trace):
        raise CasstraceError(
            f"{trace.path} is not a trace of `casstrace watch`",
            "give a trace that `casstrace watch --out` wrote (casstrace report reads any trace)",
        )
    files = dict(queries.file_paths(trace, "file"))
    return WatchInputs.from_rows(
        queries.statement_sessions(trace),
        queries.session_threads(trace),
        queries.thread_io(trace),
        files,
        queries.thread_names(trace),
        capture_start_ns=meta["capture_start_ns"],
        slot_ns=meta["thread_slot_ns"],
        probability=float(watch["sample_probability"]),
        duration_s=float(watch["duration_s"]),
        calls=None if meta.get("unstreamed_events") else queries.read_calls(trace),
        mapped_touched=queries.mapped_touched_by_file(trace, "watch") if trace.measured("mapped") else None,
        pauses=meta.get("jvm_pauses"),
        client_bytes=statement_writes.client_bytes(trace, watch.get("casstrace_addresses") or []),
        commitlog_syncs=statement_writes.commitlog_syncs(trace, files),
        thread_cpu=queries.thread_cpu(trace) if trace.measured("thread_cpu") else None,
    )


def analyse_watch(trace: Trace | str | os.PathLike, rule: VerdictRule = DEFAULT_RULE) -> Watch:
    """The Watch of a watch trace; each statement judged by `rule` (--threshold and --min-excess)."""
    if not isinstance(trace, Trace):
        with Trace(Path(trace)) as opened:
            return analyse_watch(opened, rule)
    warnings = []
    if not trace.complete:
        warnings.append(
            f"The watch did not finish: {trace.meta.get('incomplete_reason', 'interrupted')}. "
            "The figures cover what was captured."
        )
    lost = trace.meta.get("lost_events") or 0
    if lost:
        warnings.append(f"{lost:,} probe notices were lost (the ring buffer was full): some files may be unnamed.")
    overflows = trace.meta.get("aggregate_overflows") or 0
    if overflows:
        warnings.append(f"{overflows:,} kernel map updates were refused (a map was full): some bytes are missing.")
    watch = trace.meta.get("watch") or {}
    if watch.get("probability_restored") is False:
        warnings.append(
            "The node's trace probability could not be put back after the watch: "
            f"set it to {watch.get('previous_probability')} (nodetool settraceprobability)."
        )
    watched = summarise(
        load(trace), dict(trace.meta), trace_path=str(trace.path), complete=trace.complete, warnings=warnings, rule=rule
    )
    windows = queries.window_ids(trace)
    watched.profile = java_profile(trace, windows, sorted(data_files(trace, None, None)))
    return watched


def is_watch_trace(trace: Trace) -> bool:
    return "watch" in trace.meta


def describe_share(watch: Watch) -> str:
    """One sentence: how much of the node's SSTable bytes the sampled sessions explain."""
    if not watch.sstable_bytes:
        return "The node read no SSTable bytes during the watch (that the probes could see)."
    return (
        f"Sampled sessions explain {human_bytes(watch.explained_bytes)} of the {human_bytes(watch.sstable_bytes)} "
        f"of SSTable bytes the node read in {watch.duration_s:.0f} s ({watch.explained_share:.0%}); "
        "the rest by thread pool below."
    )
