"""What each write statement cost a watched node (`casstrace watch`): beside the reads' SSTable bytes,
per INSERT, UPDATE, DELETE and BATCH:

- rows and cells written, from the normalized statement (columns set per INSERT or UPDATE, statements
  per BATCH) times executions; partitions, from Cassandra's trace events (one 'Appending to commitlog'
  per mutation: a partition of one keyspace, on each node traced);
- the bytes of its requests on the wire: what the node read from its clients' connections (a socket
  with the native port at its local end: traces.addresses.ClientSockets, the one rule for a client's
  socket) during the watch, each client's bytes split over the statements its sampled sessions ran, by
  their estimated executions (exact for a client that ran one statement; an estimate otherwise);
- the commit-log bytes it appended: 4 KiB pages of commit-log segments its threads dirtied while its
  events ran on them (thread_io per slot, as the reads are charged: analyses.attribution);
- its node time (the session's duration) split into the commit log (from each append to its
  thread's next event: the append, and the wait for the sync under commitlog_sync batch or group),
  the JVM's GC and safepoint pauses it overlapped, the CPU its threads ran while they served it, and
  the rest. The CPU is `casstrace run`'s serving CPU (analyses.attribution.served_cpu_ns: its threads'
  1 ms slots that meet its events), taken where neither of the others is: of each execution, at most
  its time outside the commit log and the pauses (a thread waiting on the sync, or stopped at a
  safepoint, runs no request code; the CPU of the append itself is in the commit log's part). So the
  four parts add up to the node time. An execution with a span on a thread whose CPU the watch does
  not keep (traces.thread_roles.SESSION_ROLES), or on no thread found, has no CPU figure.

Pure: WriteInputs in, a WritesTally (figures that add up, interval by interval) and per statement a
StatementWrites out. The findings (a large batch; GC suspending writes) go through the one seam
(analyses.causes).
"""

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field

from casstrace.analyses import causes
from casstrace.analyses.amplification import client_rule, socket_writes
from casstrace.analyses.attribution import Span
from casstrace.analyses.findings import BatchFigures, CommitLogWait, FindingContext
from casstrace.analyses.model import Finding
from casstrace.analyses.percentiles import histogram_percentile
from casstrace.analyses.query import Token, find_table, tokenize
from casstrace.analyses.session_measures import Figures
from casstrace.analyses.spectrogram import bucket_upper_ns
from casstrace.analyses.write_io import is_commitlog_segment
from casstrace.traces import Trace, queries
from casstrace.traces.activities import DRIVER_BATCH_STATEMENT
from casstrace.traces.addresses import ClientSockets, normalize_ip, parse_address
from casstrace.traces.meta import CassandraMeta
from casstrace.traces.queries import ThreadIO
from casstrace.traces.schema import PAGE_BYTES
from casstrace.traces.sstable_names import parse_sstable_path

WRITE_KINDS = ("INSERT", "UPDATE", "DELETE", "BATCH")


@dataclass(frozen=True)
class WriteShape:
    """What a write statement writes per execution, as its normalized text says (None: it does not)."""

    kind: str  # one of WRITE_KINDS
    tables: tuple[str, ...]  # 'ks.table' or 'table' as written
    statements: int | None  # 1, or a batch's (None: a driver's batch, which names none)
    rows: int | None  # rows written (None: an IN list, whose length the normalized text hides)
    cells: int | None  # cells written: regular columns set (None: the table's key columns not known)
    logged: bool | None  # a batch: logged unless UNLOGGED or COUNTER (None: not a batch)


def write_shape(statement: str, cassandra: CassandraMeta | None = None) -> WriteShape | None:
    """The shape of a write statement; None for anything else (a SELECT, a schema change)."""
    if statement == DRIVER_BATCH_STATEMENT:
        return WriteShape("BATCH", (), None, None, None, None)
    tokens = tokenize(statement)
    if not tokens or tokens[0].kind != "ident":
        return None
    if tokens[0].is_word("begin"):
        return _batch(tokens, cassandra)
    return _single(tokens, cassandra)


def _batch(tokens: list[Token], cassandra: CassandraMeta | None) -> WriteShape | None:
    words = [t.text for t in tokens[1:4] if t.kind == "ident"]
    if "batch" not in words:
        return None
    logged = not ({"unlogged", "counter"} & set(words[: words.index("batch")]))
    start = next(i for i, t in enumerate(tokens) if t.is_word("batch")) + 1
    while start < len(tokens) and not tokens[start].is_word("insert", "update", "delete"):
        start += 1  # USING TIMESTAMP ?
    inner: list[WriteShape] = []
    statement: list[Token] = []
    for token in tokens[start:]:
        if token.is_word("apply") or (token.kind == "op" and token.text == ";"):
            if statement and (shape := _single(statement, cassandra)) is not None:
                inner.append(shape)
            statement = []
            if token.is_word("apply"):
                break
        else:
            statement.append(token)
    if not inner:
        return WriteShape("BATCH", (), None, None, None, logged)
    return WriteShape(
        "BATCH",
        tuple(dict.fromkeys(table for shape in inner for table in shape.tables)),
        len(inner),
        _total([shape.rows for shape in inner]),
        _total([shape.cells for shape in inner]),
        logged,
    )


def _total(values: list[int | None]) -> int | None:
    return None if any(value is None for value in values) else sum(value or 0 for value in values)


def _single(tokens: list[Token], cassandra: CassandraMeta | None) -> WriteShape | None:
    verb = tokens[0].text.upper() if tokens[0].kind == "ident" else ""
    if verb not in ("INSERT", "UPDATE", "DELETE"):
        return None
    at = {"INSERT": "into", "UPDATE": "update", "DELETE": "from"}[verb]
    start = next((i + 1 for i, t in enumerate(tokens) if t.is_word(at)), None)
    if start is None or start >= len(tokens):
        return None
    name = [tokens[start].text]
    if start + 2 < len(tokens) and tokens[start + 1].text == "." and tokens[start + 1].kind == "op":
        name.append(tokens[start + 2].text)
    table = ".".join(name)
    schema = find_table(cassandra, *(name if len(name) == 2 else (None, name[0]))) if cassandra else None
    in_list = any(t.is_word("in") for t in tokens)
    if verb == "INSERT":
        opening = next((i for i, t in enumerate(tokens) if t.kind == "op" and t.text == "("), None)
        columns = [] if opening is None else _names(tokens, opening + 1, ")")
        keys = set(schema.partition_key + schema.clustering) if schema else None
        cells = None if keys is None or not columns else len([c for c in columns if c not in keys])
        return WriteShape(verb, (table,), 1, 1, cells, None)
    if verb == "UPDATE":
        set_at = next((i for i, t in enumerate(tokens) if t.is_word("set")), None)
        assignments = _top_level_items(tokens, set_at + 1, "where") if set_at is not None else None
        return WriteShape(verb, (table,), 1, None if in_list else 1, assignments, None)
    deleted = _top_level_items(tokens, 1, "from") or 0  # DELETE a, b FROM ...: cell tombstones; none: the row
    return WriteShape(verb, (table,), 1, None if in_list else 1, deleted, None)


def _names(tokens: list[Token], start: int, end: str) -> list[str]:
    """The names from `start` to the first `end`."""
    stop = next((i for i in range(start, len(tokens)) if tokens[i].kind == "op" and tokens[i].text == end), len(tokens))
    return [t.text for t in tokens[start:stop] if t.kind == "ident"]


def _top_level_items(tokens: list[Token], start: int, until: str) -> int | None:
    """How many comma-separated items from `start` to the word `until` (outside brackets); None when
    the word is not there."""
    depth, items, seen = 0, 0, False
    for token in tokens[start:]:
        if token.is_word(until) and depth == 0:
            return items + (1 if seen else 0)
        if token.kind == "op" and token.text in "([{":
            depth += 1
        elif token.kind == "op" and token.text in ")]}":
            depth -= 1
        elif token.kind == "op" and token.text == "," and depth == 0:
            items += 1
            continue
        seen = True
    return None


def commitlog_slots(
    thread_io: Iterable[ThreadIO], files: dict[int, str]
) -> dict[tuple[int | None, int, int], int] | None:
    """(node_id, tid, slot) -> commit-log pages the thread dirtied in it; None when the rows do not
    measure dirtied pages (a trace before format 5, or a backend that cannot)."""
    segments = {file_id for file_id, path in files.items() if is_commitlog_segment(path)}
    measured, slots = False, Counter[tuple[int | None, int, int]]()
    for row in thread_io:
        if row.dirtied_pages is None:
            continue
        measured = True
        if row.file_id in segments and row.dirtied_pages:
            slots[(row.node_id, row.tid, row.slot)] += row.dirtied_pages
    return dict(slots) if measured else None


def client_bytes(trace: Trace, casstrace_addresses: list[str]) -> dict[str, int] | None:
    """Client address -> bytes the node read from that client's connections over the trace (sockets
    with the native port at their local end, amplification.client_rule), but casstrace's own
    (`casstrace_addresses`, 'ip:port'); None when socket I/O was not measured."""
    if not trace.measured("wire"):
        return None
    sockets = socket_writes(trace, queries.window_ids(trace))
    return clients_read(((s.local_end, s.remote_end, s.read) for s in sockets), client_rule(trace), casstrace_addresses)


Ends = tuple[str, int] | None  # (ip, port) of a socket's end (None: not recorded)


def clients_read(
    sockets: Iterable[tuple[Ends, Ends, int]], rule: ClientSockets, casstrace_addresses: list[str]
) -> dict[str, int]:
    """Client address -> bytes the node read from that client's connections, of the node's sockets
    (its end, the remote end, bytes read): a client's by `rule`, but casstrace's own
    (`casstrace_addresses`, 'ip:port'). A trace's (client_bytes), or a watch's so far."""
    own = {parse_address(address) for address in casstrace_addresses}
    found: Counter[str] = Counter()
    for local, remote, read in sockets:
        if rule.holds(local, remote) and remote is not None and remote not in own:
            found[remote[0]] += read
    return dict(found)


@dataclass(frozen=True)
class WriteSession:
    """A sampled session as the write figures need it (its time, and its time in the commit log: its
    figures, WriteInputs.figures)."""

    session: int
    statement: str
    client: str | None
    mutations: int | None


@dataclass
class CommitLogSyncs:
    """The commit log's sync calls in a watch (fsync, fdatasync, msync of its segments): bucket (the
    latency table's) -> calls, and whether its segments lie on a device the data files are on too
    (None: either device not known)."""

    histogram: Counter[int] = field(default_factory=Counter)
    shares_data_device: bool | None = None

    def add(self, other: "CommitLogSyncs") -> None:
        self.histogram.update(other.histogram)
        if other.shares_data_device is not None:
            self.shares_data_device = bool(self.shares_data_device) or other.shares_data_device

    @property
    def calls(self) -> int:
        return self.histogram.total()

    def percentile_ns(self, fraction: float) -> float | None:
        bucket = histogram_percentile(self.histogram, fraction)
        return None if bucket is None else bucket_upper_ns(bucket)


def commitlog_syncs(trace: Trace, paths: dict[int, str]) -> CommitLogSyncs | None:
    """The commit log's syncs over the whole trace (None: sync calls not measured); `paths`: the
    trace's files, file_id -> path."""
    if not trace.measured("syncs"):
        return None
    segments = {file_id for file_id, path in paths.items() if is_commitlog_segment(path)}
    found = CommitLogSyncs()
    for file_id, _syscall, bucket, calls in queries.sync_latency(trace, queries.window_ids(trace)):
        if file_id in segments:
            found.histogram[bucket] += calls
    devices = queries.file_devices(trace)
    data = {
        devices[f]
        for f, path in paths.items()
        if f in devices and (n := parse_sstable_path(path)) and n.component == "Data"
    }
    logs = {devices[f] for f in segments if f in devices}
    if data and logs:
        found.shares_data_device = bool(data & logs)
    return found


@dataclass
class WriteInputs:
    sessions: list[WriteSession]
    spans: list[Span]
    # (node_id, tid, slot) -> commit-log pages the thread dirtied in that slot (None: not measured)
    commitlog_slots: dict[tuple[int | None, int, int], int] | None
    capture_start_ns: int
    slot_ns: int
    # each session's per-execution measures (analyses.session_measures): its traced time, its time in the
    # commit log, its pauses and its serving CPU
    figures: Figures
    # client address -> bytes the node read from that client's connections in the watch (None: not measured)
    client_bytes: dict[str, int] | None = None
    commitlog_syncs: CommitLogSyncs | None = None  # None: not measured


@dataclass
class StatementWriteTally:
    """One write statement's sampled executions, as figures that add up."""

    executions: int = 0
    mutations: int = 0
    mutations_known: int = 0  # executions whose events counted them
    commitlog_ns: int = 0
    # (node time, GC pause overlapped, every pause overlapped) of each timed execution, ns
    timed: Counter[tuple[int, int, int]] = field(default_factory=Counter)
    clients: Counter[str] = field(default_factory=Counter)  # executions by client address
    commitlog_bytes: float = 0.0  # claimed by its executions' threads
    cpu_ns: float = 0.0  # its serving threads' CPU outside the commit log and the pauses, over cpu_known
    cpu_known: int = 0  # timed executions whose every thread's CPU was measured

    def add(self, other: "StatementWriteTally") -> None:
        self.executions += other.executions
        self.cpu_ns += other.cpu_ns
        self.cpu_known += other.cpu_known
        self.mutations += other.mutations
        self.mutations_known += other.mutations_known
        self.commitlog_ns += other.commitlog_ns
        self.timed.update(other.timed)
        self.clients.update(other.clients)
        self.commitlog_bytes += other.commitlog_bytes


@dataclass
class WritesTally:
    """A watch's write figures as they add up: per write statement, and what they are split from."""

    statements: dict[str, StatementWriteTally] = field(default_factory=dict)
    executions_by_client: Counter[str] = field(default_factory=Counter)  # every sampled statement's
    client_bytes: Counter[str] | None = field(default_factory=Counter)  # None: not measured in some stretch
    commitlog_measured: bool = True
    commitlog_bytes: int = 0  # every thread's commit-log pages dirtied, in bytes
    commitlog_syncs: CommitLogSyncs | None = None  # None: not measured in any stretch

    def add(self, other: "WritesTally") -> None:
        for text, statement in other.statements.items():
            self.statements.setdefault(text, StatementWriteTally()).add(statement)
        self.executions_by_client.update(other.executions_by_client)
        if self.client_bytes is None or other.client_bytes is None:
            self.client_bytes = None
        else:
            self.client_bytes.update(other.client_bytes)
        self.commitlog_measured = self.commitlog_measured and other.commitlog_measured
        self.commitlog_bytes += other.commitlog_bytes
        if other.commitlog_syncs is not None:
            self.commitlog_syncs = self.commitlog_syncs or CommitLogSyncs()
            self.commitlog_syncs.add(other.commitlog_syncs)


def tally(inputs: WriteInputs) -> WritesTally:
    """The write statements' figures of a watch (or a stretch of it)."""
    found = WritesTally(
        client_bytes=None if inputs.client_bytes is None else Counter(inputs.client_bytes),
        commitlog_measured=inputs.commitlog_slots is not None,
        commitlog_bytes=sum((inputs.commitlog_slots or {}).values()) * PAGE_BYTES,
        commitlog_syncs=inputs.commitlog_syncs,
    )
    writes = {s.session: s for s in inputs.sessions if write_shape(s.statement) is not None}
    for session in inputs.sessions:
        if session.client:
            found.executions_by_client[normalize_ip(session.client)] += 1
    claims = _commitlog_claims(inputs, set(writes))
    for session in writes.values():
        figures = inputs.figures.get(session.session, {})
        statement = found.statements.setdefault(session.statement, StatementWriteTally())
        statement.executions += 1
        commitlog_ns = round(figures.get("commitlog_ns", 0.0))  # a session that appended has the figure
        if session.mutations is not None:
            statement.mutations += session.mutations
            statement.mutations_known += 1
            statement.commitlog_ns += commitlog_ns
        if "traced_ns" in figures:
            duration_ns = round(figures["traced_ns"])
            paused = round(figures.get("safepoint_ns", 0.0))  # every pause's: a GC's lies in its safepoint
            statement.timed[(duration_ns, round(figures.get("gc_pause_ns", 0.0)), paused)] += 1
            if "serving_cpu_ns" in figures:
                statement.cpu_ns += cpu_part(figures["serving_cpu_ns"], duration_ns, commitlog_ns, paused)
                statement.cpu_known += 1
        if session.client:
            statement.clients[normalize_ip(session.client)] += 1
        statement.commitlog_bytes += claims.get(session.session, 0.0)
    return found


def cpu_part(serving_cpu_ns: float, duration_ns: int, commitlog_ns: int, paused_ns: int) -> float:
    """An execution's CPU part of its node time: its serving threads' CPU, at most the time the commit
    log and the pauses leave (the slots are 1 ms wide, so they may hold a neighbour's CPU too)."""
    return min(serving_cpu_ns, max(0, duration_ns - commitlog_ns - paused_ns))


def _commitlog_claims(inputs: WriteInputs, writes: set[int]) -> dict[int, float]:
    """session -> commit-log bytes its threads dirtied in the slots its events span there; a slot's
    pages shared equally by the write sessions whose events span it (a read appends nothing)."""
    if inputs.commitlog_slots is None:
        return {}
    claimants: dict[tuple[int | None, int, int], list[int]] = {}
    for span in inputs.spans:
        if span.tid is None or span.session not in writes:
            continue
        first = (span.first_ns - inputs.capture_start_ns) // inputs.slot_ns
        last = (span.last_ns - inputs.capture_start_ns) // inputs.slot_ns
        for slot in range(first, last + 1):
            sessions = claimants.setdefault((span.node_id, span.tid, slot), [])
            if span.session not in sessions:
                sessions.append(span.session)
    claimed: dict[int, float] = {}
    for key, sessions in claimants.items():
        pages = inputs.commitlog_slots.get(key, 0)
        for session in sessions:
            claimed[session] = claimed.get(session, 0.0) + pages * PAGE_BYTES / len(sessions)
    return claimed


@dataclass
class StatementWrites:
    """A write statement's figures per sampled execution (None: not measured, or not known)."""

    kind: str
    tables: list[str]
    statements_per_execution: int | None
    logged: bool | None
    rows_per_execution: int | None  # from the text
    cells_per_execution: int | None
    estimated_rows: float | None  # times the estimated executions
    estimated_cells: float | None
    partitions_per_execution: float | None  # mutations in its trace events
    wire_bytes_per_execution: float | None
    wire_estimated: bool  # its clients ran other statements too: their bytes split by executions
    commitlog_bytes_per_execution: float | None
    node_ns_per_execution: float | None  # the session's duration
    commitlog_ns_per_execution: float | None
    pause_ns_per_execution: float | None  # GC and safepoint pauses overlapped (None: not measured)
    cpu_ns_per_execution: float | None  # its threads' CPU outside the commit log and pauses (None: not measured)
    rest_ns_per_execution: float | None
    estimated_storage_bytes: float  # commit-log bytes appended ÷ P, else wire bytes ÷ P: the ranking figure
    findings: list[Finding] = field(default_factory=list)


def summarise(
    text: str, tallied: WritesTally, probability: float, cassandra: CassandraMeta | None, pauses_measured: bool
) -> StatementWrites | None:
    """The write figures of one statement of the watch (None: not a write, or none sampled)."""
    shape = write_shape(text, cassandra)
    statement = tallied.statements.get(text)
    if shape is None or statement is None or not statement.executions:
        return None
    count = statement.executions
    estimated = count / probability if probability else float(count)
    wire, wire_estimated = _wire(statement, tallied, probability)
    timed = statement.timed.total()
    node_ns = sum(d * n for (d, _, _), n in statement.timed.items()) / timed if timed else None
    pause_ns = sum(p * n for (_, _, p), n in statement.timed.items()) / timed if timed and pauses_measured else None
    commitlog_ns = statement.commitlog_ns / statement.mutations_known if statement.mutations_known else None
    cpu_ns = statement.cpu_ns / statement.cpu_known if statement.cpu_known else None
    rest = None
    if node_ns is not None:
        rest = max(0.0, node_ns - (commitlog_ns or 0.0) - (pause_ns or 0.0) - (cpu_ns or 0.0))
    commitlog_bytes = statement.commitlog_bytes / count if tallied.commitlog_measured else None
    storage = commitlog_bytes if commitlog_bytes is not None else wire
    partitions = statement.mutations / statement.mutations_known if statement.mutations_known else None
    writes = StatementWrites(
        kind=shape.kind,
        tables=list(shape.tables),
        statements_per_execution=shape.statements,
        logged=shape.logged,
        rows_per_execution=shape.rows,
        cells_per_execution=shape.cells,
        estimated_rows=None if shape.rows is None else shape.rows * estimated,
        estimated_cells=None if shape.cells is None else shape.cells * estimated,
        partitions_per_execution=partitions,
        wire_bytes_per_execution=wire,
        wire_estimated=wire_estimated,
        commitlog_bytes_per_execution=commitlog_bytes,
        node_ns_per_execution=node_ns,
        commitlog_ns_per_execution=commitlog_ns,
        pause_ns_per_execution=pause_ns,
        cpu_ns_per_execution=cpu_ns,
        rest_ns_per_execution=rest,
        estimated_storage_bytes=(storage or 0.0) * estimated,
    )
    writes.findings = _findings(writes, statement, count, pauses_measured, tallied.commitlog_syncs)
    return writes


def _wire(statement: StatementWriteTally, tallied: WritesTally, probability: float) -> tuple[float | None, bool]:
    """Bytes per execution its requests took on the wire, and whether that is split from a client's
    bytes with other statements'. Each client's bytes go to its statements by their sampled
    executions (÷ P alike, so the share is that of the sampled ones)."""
    if tallied.client_bytes is None or not statement.clients:
        return None, False
    total, shared = 0.0, False
    for client, executions in statement.clients.items():
        everyone = tallied.executions_by_client[client]
        shared = shared or everyone > executions
        total += tallied.client_bytes.get(client, 0) * executions / everyone
    sampled = sum(statement.clients.values())
    return total / (sampled / probability if probability else sampled), shared


def _findings(
    writes: StatementWrites,
    statement: StatementWriteTally,
    count: int,
    pauses_measured: bool,
    syncs: CommitLogSyncs | None,
) -> list[Finding]:
    """The causes the seam finds in a write: a large batch, GC suspending its executions, and its
    time in a commit log whose syncs are slow."""
    measures = [
        {"node_ns": float(duration), "gc_pause_ns": float(gc)}
        for (duration, gc, _), n in statement.timed.items()
        for _ in range(n)
    ]
    context = FindingContext(
        flagged=False,
        threshold=0.0,
        executions=count,
        data_read_bytes=0,
        syscall_bytes=0,
        cache_outside_syscall_bytes=None,
        payload_bytes=None,
        rows=None,
        necessary=None,
        select=None,
        schema=None,
        measures=measures if pauses_measured else [],
        batch=BatchFigures(
            statements=writes.statements_per_execution,
            partitions=writes.partitions_per_execution,
            wire_bytes=writes.wire_bytes_per_execution,
            node_ns=writes.node_ns_per_execution,
            logged=writes.logged,
        )
        if writes.kind == "BATCH"
        else None,
        commitlog=CommitLogWait(
            commitlog_ns=writes.commitlog_ns_per_execution,
            node_ns=writes.node_ns_per_execution,
            syncs=syncs.calls,
            sync_p99_ns=syncs.percentile_ns(0.99),
            shares_data_device=syncs.shares_data_device,
        )
        if syncs is not None and syncs.calls
        else None,
    )
    found = causes.write_findings(context)
    return found.causes + found.notes
