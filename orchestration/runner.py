"""`casstrace run`: execute a CQL query on this node under the probes and write the trace.

Order matters: everything that can fail because of the user's input (connection, query, keyspace,
finding the JVM) fails before a probe counts anything or a trace file exists. (The bcc program may
be compiling meanwhile, from `casstrace run`'s start: its probes attach idle, watching no process
until the capture starts; see probes.backends.started.) Then each execution gets its
own capture window, so every byte the probes see is attributed to one execution or to the gaps
between them. The driver's query tracing makes the node write to system_traces, so it runs once
more after the measured executions, in a 'tracing' window of its own, and its system_traces
records are fetched after the capture stops.

A node may serve other clients meanwhile: their reads fall in the same windows. So each measured
execution is traced too (its session's events say which threads served it, and when), the probes
count every thread's file bytes per 1 ms slot, and the analysis charges an execution only its own
threads' reads (analyses.attribution, the join `casstrace watch` uses). The node's own count of its
other clients' requests (system_views.clients) is read before and after each measured window.
The tracing's writes to system_traces are writes of another table: no read of the queried one.

The node runs the statement as given; the trace stores it with its literals as `?` (a value typed to
find a row is often a customer's: node.statements.normalize, watch's), unless `keep_literals` asks to
keep them.

A write (INSERT, UPDATE, DELETE, BATCH) runs only on a node casstrace started (node.own_sandbox,
checked once its JVM is found, before anything executes): each execution binds fresh values to the
statement's markers (node.generated_values), so it writes new rows; the values reach the driver only.
It has no result to page or sample; the trace's meta 'write' says what each execution wrote, and
each window's measure client_request_bytes what the client sent.
"""

import itertools
import json
import re
import sys
import time
from collections.abc import Mapping, Sequence
from contextlib import ExitStack
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, Protocol

from cassandra.query import PreparedStatement

from casstrace.errors import CasstraceError
from casstrace.ledger import process_start
from casstrace.node import context
from casstrace.node.cells import whole_cells
from casstrace.node.connection import ConnectionSettings, NodeSession
from casstrace.node.generated_values import GeneratedValues
from casstrace.node.gone import NodeWentAway, going_away, gone_message
from casstrace.node.jvm import CassandraProcess, ThreadIds, cassandra_at, find_cassandra, java_thread_ids, serving_jvms
from casstrace.node.leaves import RowShape, statement_shape
from casstrace.node.leftovers import restore_left_behind
from casstrace.node.own_sandbox import require_own_sandbox
from casstrace.node.paging import DEFAULT_CQL_PAGE_BYTES, Paging, paging, query_shape
from casstrace.node.query import (
    MeasuringProtocolHandler,
    QueryResult,
    execute,
    execution_failure,
    prepare,
    query_traces,
)
from casstrace.node.replicas import ReplicaSet, replica_set
from casstrace.node.statements import normalize, runnable_statement, statement_kind, writes, written_rows
from casstrace.node.tracing import SampledSession, nodetool_for, traced_sessions
from casstrace.orchestration.agents import AgentsCapture, AgentsResult, AgentTarget, TableRef
from casstrace.orchestration.sources import node_sources
from casstrace.orchestration.targets import PlannedNode, RemoteSettings, Target, plan_nodes
from casstrace.orchestration.watcher import clock_offset_ns, session_rows
from casstrace.paths import default_traces_dir
from casstrace.phases import Phases
from casstrace.probes.backends import DEFAULT_BACKEND, StartedBackend, backend, backends_with, run_thread_slot_ns
from casstrace.probes.jvm.async_profiler import AsyncProfiler
from casstrace.probes.jvm.java_stacks import ProfiledWindows
from casstrace.probes.protocol import (
    GAP_WINDOW,
    MEASURED_WINDOW,
    Capture,
    CaptureFactory,
    CaptureOptions,
    RequestSpans,
    Windows,
    WindowSource,
)
from casstrace.probes.recording import record
from casstrace.terminal import warn
from casstrace.traces import TraceWriter
from casstrace.traces.capabilities import Capability
from casstrace.traces.meta import CassandraMeta, QueryTraceSession, WholeCellsMeta, WriteMeta
from casstrace.traces.rows import NodeRow
from casstrace.traces.serving import ServingSpans


@dataclass
class RunOptions:
    query: str
    connection: ConnectionSettings
    keyspace: str | None = None
    pid: int | None = None
    repeat: int = 5
    warmup: int = 1
    cold: bool = False
    consistency: str = "ONE"
    page_size: int | None = None  # rows per page, 0: one page; None: chosen for page_bytes (node.paging)
    page_bytes: int = DEFAULT_CQL_PAGE_BYTES
    allow_large_rows: bool = False  # run a query whose rows the node's heap may not page (node.paging)
    backend: str = DEFAULT_BACKEND
    all_syscalls: bool = False  # the spectrogram of every syscall (--spectrogram all: probes.protocol.CaptureOptions)
    out: Path | None = None
    profile: bool = False
    force: bool = False  # replace an existing regular file at `out` (casstrace.outputs)
    keep_literals: bool = False  # store the statement as given, its literals too (run --keep-literals)
    targets: RemoteSettings = field(default_factory=RemoteSettings)  # --ssh, --hosts

    @classmethod
    def aimed_at(cls, target: Target, query: str, **options: Any) -> "RunOptions":
        """A run of `query` on `target`'s node, with `options` (RunOptions' other fields)."""
        return cls(query=query, connection=target.connection, pid=target.pid, targets=target.remote, **options)

    @property
    def target(self) -> Target:
        return Target(self.connection, self.pid, self.targets)


WINDOW_LABELS = {"warmup": "warmup", "measured": MEASURED_WINDOW, "tracing": "tracing"}  # by execution kind


@dataclass
class ClientExecution:
    """One execution as the client runs it, filled in as it goes: the driver's live result (its result
    set, whose tracing sessions say which threads served it), its error, the node's other requests
    meanwhile. The trace stores it as an executions row (_write_executions), read back as
    traces.queries.ExecutionRecord."""

    execution: int
    kind: str  # 'warmup' | 'measured' | 'tracing'
    window_id: int
    result: QueryResult | None = None
    error: str | None = None
    # requests of the node's other clients around its window (measured executions; None: not measured)
    other_requests: int | None = None
    # monotonic ns just before the driver sent it and just after its answer was in (None: it failed)
    client_span_ns: tuple[int, int] | None = None


def default_trace_path(query: str, now: datetime | None = None) -> Path:
    """A readable, sortable name: 20260122-165530-select-c0-from-streams.trace (no literal of the
    query's: the name is made of its normalized words)."""
    now = now or datetime.now()
    words = re.findall(r"[a-z0-9_]+", normalize(query).lower())[:6]
    slug = "-".join(words)[:60].strip("-") or "query"
    name = f"{now:%Y%m%d-%H%M%S}-{slug}"
    # Two runs of one query in the same second get two names (a trace is never written over).
    candidates = (f"{name}.trace" if number == 1 else f"{name}-{number}.trace" for number in itertools.count(1))
    return next(path for path in (default_traces_dir() / c for c in candidates) if not path.exists())


def stored_statement(query: str, options: RunOptions) -> str:
    """The statement as the trace stores it and every report shows it: literals as `?` (an IN list
    keeps its length, which the analyses count), or as given with `keep_literals`."""
    return query if options.keep_literals else normalize(query, keep_in_lengths=True)


def check_options(options: RunOptions) -> str:
    """The run's options, before anything connects: the statement to run (a read, or a write that only a
    node casstrace started will run), or CasstraceError."""
    query, _ = runnable_statement(options.query)
    if options.repeat < 1 or options.warmup < 0:
        raise CasstraceError("--repeat must be at least 1 and --warmup at least 0", "give --repeat N (N >= 1)")
    return query


def check_backend(options: RunOptions, capabilities: frozenset[Capability]) -> None:
    """What the options ask of the capture backend it cannot do (CasstraceError)."""
    if options.profile and Capability.PROFILE_JOIN not in capabilities:
        raise CasstraceError(
            f"--profile joins async-profiler's stacks with a log of each read on the profiler's "
            f"clock; the {options.backend} backend keeps no such log",
            f"use --profile with --backend {' or '.join(backends_with(Capability.PROFILE_JOIN))}",
        )


@dataclass
class RunPlan:
    """What a run will capture, decided before any probe attaches or any trace file exists: the node's
    JVM here (None: none of this machine's), its schema and settings, the query's replicas and, per
    node, whether and how it is captured (an agent here or over ssh)."""

    keyspace: str | None
    coordinator: str
    process: CassandraProcess | None
    cassandra: CassandraMeta
    replicas: ReplicaSet
    nodes: list[PlannedNode]

    @property
    def targets(self) -> list[AgentTarget]:
        return [planned.target for planned in self.nodes if planned.target is not None]

    @property
    def several(self) -> bool:
        """Captured by agents: more than one node, or one over ssh."""
        targets = self.targets
        return len(targets) > 1 or (len(targets) == 1 and targets[0].ssh is not None)

    def check(self, options: RunOptions) -> None:
        """Refuse what this plan cannot do with these options (CasstraceError), before any capture."""
        targets = self.targets
        if not targets:  # no node to capture: say why as for one node
            find_cassandra(None, native_port=options.connection.port, address=self.coordinator)
            raise CasstraceError(
                f"no JVM of the query's nodes runs on this machine ({self.nodes[0].not_captured})",
                "run casstrace on a replica, or give --ssh",
            )
        if self.several and options.profile:
            raise CasstraceError(
                f"--profile loads async-profiler into one JVM; this run captures {len(targets)} nodes' JVMs",
                "leave out --profile, or run on a one-node cluster",
            )
        if self.several and options.all_syscalls:
            raise CasstraceError(
                f"--spectrogram all is taken by a capture on this machine; this run captures {len(targets)} nodes",
                "leave out --spectrogram all, or run on a one-node cluster",
            )


def plan_run(
    node: NodeSession, prepared: PreparedStatement, query: str, options: RunOptions, phases: Phases
) -> RunPlan:
    """Discovery: the coordinator's JVM, the schema and settings the query reads, its replicas and how
    each is captured; checked against the options (RunPlan.check)."""
    with phases("find JVM, read schema"):
        coordinator = node.address()
        serving = serving_jvms()
        process = (
            find_cassandra(options.pid)
            if options.pid is not None
            else cassandra_at(coordinator, options.connection.port, serving=serving)
        )
        if writes(query):  # before anything reads the node's schema, let alone writes
            require_own_sandbox(process, options.connection.port)
        cassandra = context.gather(node.session, process, prepared, query, options.keyspace)
    keyspace = options.keyspace or next((t["keyspace"] for t in cassandra["tables"]), None)
    with phases("find replicas"):
        replicas = replica_set(
            node.cluster, coordinator, options.connection.port, keyspace, next(iter(cassandra["tables"]), None), query
        )
        nodes = plan_nodes(
            replicas,
            process,
            options.targets,
            options.backend,
            [TableRef(t["keyspace"], t["table"], t["id"]) for t in cassandra["tables"]],
            serving,
        )
    plan = RunPlan(keyspace, coordinator, process, cassandra, replicas, nodes)
    plan.check(options)
    return plan


def run(options: RunOptions, phases: Phases | None = None, started_backend: StartedBackend | None = None) -> Path:
    """Run the query under the probes and return the path of the trace written. On a signal, the
    trace so far is kept, marked incomplete, and casstrace.interrupts.Interrupted raised with it.
    `phases` records where the wall time went (casstrace run --timings). `started_backend`: the
    backend options.backend names, when the caller started it already (probes.backends.started)."""
    phases = phases or Phases()
    query = check_options(options)  # before anything connects
    # fails on an unknown backend before touching the node
    capture_factory: CaptureFactory = started_backend or backend(options.backend)
    check_backend(options, capture_factory.capabilities)

    with ExitStack() as stack:
        with phases("connect, prepare"):
            node = stack.enter_context(
                NodeSession(
                    options.connection, options.keyspace, protocol_handler=MeasuringProtocolHandler, token_map=True
                )
            )
            prepared = prepare(node.session, query, bind_markers=writes(query))
            # a write's values, one set per execution (refused here when casstrace cannot make them)
            generated = GeneratedValues([c.type for c in prepared.column_metadata]) if writes(query) else None
        plan = plan_run(node, prepared, query, options, phases)
        setup = _set_up(stack, plan, node, options, started_backend, phases)
        sample = _sample(node, prepared, query, options, plan.cassandra, setup.process, generated, phases)
        writer = TraceWriter(options.out or default_trace_path(query), force=options.force)
        try:
            capture = (
                setup.agents if setup.agents is not None else _local_capture(capture_factory, setup, plan, options)
            )
        except BaseException:
            writer.discard()
            raise
        # the one JVM's threads (a single node's run), named by every address its node goes by
        one = next(planned for planned in plan.nodes if planned.target is not None).node
        recording = _Recording(
            options=options,
            phases=phases,
            query=query,
            node=node,
            prepared=prepared,
            generated=generated,
            plan=plan,
            setup=setup,
            sample=sample,
            capture=capture,
            thread_ids=ThreadIds(one.addresses() | (node.own_addresses() if one.coordinator else set())),
            own_connections=node.client_addresses(),
        )
        path = record(
            capture,
            writer,
            recording.body,
            sources=setup.sources,
            collect=recording.collect,
            annotate=recording.annotate,
            phases=phases,
        )
        if recording.went_away:
            raise NodeWentAway(recording.went_away[0], path)
        return path


class Cold(Protocol):
    """--cold: what makes every execution cold, before it, on every node captured."""

    paged_out: int  # address space paged out before the last execution

    def before_execution(self) -> None: ...


@dataclass
class _Setup:
    """What a run captures with, set up before any probe counts: the agents of a run over several nodes,
    or this machine's one JVM (`process`; in an agents' run, the plan's, which may be None) with its
    window sources (the profile among them); and what makes every execution cold (--cold)."""

    process: CassandraProcess | None
    agents: AgentsCapture | None = None
    node_start: int | None = None  # the one JVM's start: for a node that goes away during the run
    cold: Cold | None = None
    profiled: ProfiledWindows | None = None
    sources: list[WindowSource] = field(default_factory=list)


def _set_up(
    stack: ExitStack,
    plan: RunPlan,
    node: NodeSession,
    options: RunOptions,
    started_backend: StartedBackend | None,
    phases: Phases,
) -> _Setup:
    """The capture's agents, or this machine's one JVM made ready (_set_up_local); each undone by `stack`."""
    if not plan.several:
        return _set_up_local(stack, plan, node, options, phases)
    if started_backend is not None:  # each agent compiles its own: none of this one may run beside them
        started_backend.release(wait=True)
    agents = AgentsCapture(plan.targets, primary_node_id=plan.nodes[0].node_id)
    stack.callback(agents.discard)
    return _Setup(plan.process, agents, cold=AgentsCold(agents) if options.cold else None)


def _set_up_local(stack: ExitStack, plan: RunPlan, node: NodeSession, options: RunOptions, phases: Phases) -> _Setup:
    """This machine's one JVM: what a killed casstrace left changed on it put back, --cold checked, its
    window sources and the profiler (--profile) ready; each undone by `stack`."""
    target = plan.targets[0]
    assert plan.process is not None or target.options.pid is not None
    process = (
        plan.process
        if plan.process is not None and plan.process.pid == target.options.pid
        else find_cassandra(target.options.pid)
    )
    setup = _Setup(process, node_start=process_start(process.pid))  # the JVM, not just its pid
    # What a killed casstrace left changed on this node, put back before this one changes anything.
    # A record it cannot read is warned of: run changes no trace probability.
    restore_left_behind(process, lambda: nodetool_for(process), strict=False)
    if options.cold:
        # Fails here, before a probe attaches, when the mapped pages cannot be pushed out.
        # (Again before each execution, in its turn.)
        local_cold = LocalCold(process.pid, context.table_file_keys(process.pid, plan.cassandra))
        local_cold.before_execution()
        setup.cold = local_cold
    # The mapped pages and CPU time of each execution, measured around its window (outside it).
    setup.sources += node_sources(
        process.pid, plan.cassandra["data_file_directories"], options.connection.port, node.client_addresses()
    )
    for source in setup.sources:  # stopped by the recording too; this covers a refusal before it starts
        stack.callback(source.stop)
    if options.profile:
        with phases("fetch profiler"):
            profiler = AsyncProfiler(process.pid, progress=lambda line: print(line, file=sys.stderr))
        stack.callback(profiler.cleanup)
        # From before the first measured execution to before the tracing one.
        setup.profiled = ProfiledWindows(profiler, {MEASURED_WINDOW}, warn, phases)
        setup.sources.append(setup.profiled)
    return setup


def _local_capture(capture_factory: CaptureFactory, setup: _Setup, plan: RunPlan, options: RunOptions) -> Capture:
    """The backend's capture of this machine's one JVM."""
    assert setup.process is not None
    thread_slot_ns = run_thread_slot_ns(capture_factory.capabilities)
    asked = CaptureOptions(thread_slot_ns=thread_slot_ns, all_syscalls=options.all_syscalls)
    return capture_factory(
        setup.process.pid,
        extra_dirs=plan.cassandra["data_file_directories"],
        options=asked if asked != CaptureOptions() else None,
    )


@dataclass
class _Sample:
    """What the executions run with, from the sample before the capture (_sample): the page size,
    the shape of the result's leaf values, the whole cells the statement selects parts of."""

    pages: Paging
    leaf_shape: RowShape | None
    cells: WholeCellsMeta | None


def _sample(
    node: NodeSession,
    prepared: PreparedStatement,
    query: str,
    options: RunOptions,
    cassandra: CassandraMeta,
    process: CassandraProcess | None,
    generated: GeneratedValues | None,
    phases: Phases,
) -> _Sample:
    """A read's first rows, sampled before the capture (the sample is no execution's): the page size
    its executions use (warned of when no page is within --page-bytes), the shape of its result's leaf
    values (digested in the tracing execution: how its data is told in another shape), and its whole
    cells when it selects an element or a field. A write has no result to page, sample or digest."""
    if generated is not None:
        return _Sample(Paging(0, False, None, None, "a write: no result to page"), None, None)
    with phases("choose page size"):
        shape = query_shape(
            node.session,
            prepared,
            query,
            next(iter(cassandra["tables"]), None),
            process.max_heap_bytes if process is not None else None,
        )
        pages = paging(
            node.session,
            prepared,
            options.consistency,
            options.page_size,
            options.page_bytes,
            shape,
            options.allow_large_rows,
        )
        leaf_shape = statement_shape(node.session, prepared)
    with phases("sample whole cells"):  # an element or a field: what the node reads is the whole cell
        cells = whole_cells(node.session, query, options.consistency, options.page_bytes, shape)
    if pages.row_over_budget:
        warn(
            f"a row of this query holds {pages.sampled_row_bytes:,} B, more than --page-bytes "
            f"({options.page_bytes:,} B): no page is within the budget; running one row a page"
        )
    return _Sample(pages, leaf_shape, cells)


@dataclass
class _Recording:
    """The capture's three steps for probes.recording.record: the executions in their windows (body), what
    the node says of them once the probes are off it (collect), and the trace's meta and rows (annotate).
    What the executions leave is kept here, from one step to the next."""

    options: RunOptions
    phases: Phases
    query: str
    node: NodeSession
    prepared: PreparedStatement
    generated: GeneratedValues | None  # a write's values
    plan: RunPlan
    setup: _Setup
    sample: _Sample
    capture: Capture
    thread_ids: ThreadIds  # the one JVM's threads (a single node's run)
    own_connections: set[tuple[str, int]]
    executions: list[ClientExecution] = field(default_factory=list)
    query_trace: list[QueryTraceSession] = field(default_factory=list)
    served: list[tuple[int, SampledSession]] = field(default_factory=list)  # (execution, its traced session)
    went_away: list[str] = field(default_factory=list)  # why, once the node went away during the run

    def body(self, windows: Windows) -> str | None:
        setup = self.setup
        with self.phases("run the query"):
            ended = _execute_all(
                windows,
                setup.cold,
                self.node,
                self.prepared,
                self.options,
                self.sample.pages,
                self.executions,
                self.own_connections,
                self.sample.leaf_shape,
                self.generated,
            )
        local = setup.process if setup.agents is None else None  # this machine's one JVM of a single-node run
        if (
            ended is not None
            and local is not None
            and going_away(local.pid, setup.node_start, self.options.connection.port)
        ):
            self.went_away.append(gone_message(local))
            return self.went_away[0]
        return ended

    def collect(self, interrupted: bool) -> None:
        """Cassandra's own trace of the tracing execution, once the probes are off the node (not
        when interrupted: stopping must take seconds, and the run is incomplete anyway)."""
        tracing = next((e for e in self.executions if e.kind == "tracing" and e.result), None)
        if tracing is not None and tracing.result is not None and not interrupted:
            try:
                with self.phases("read the node's query trace"):
                    self.query_trace.extend(query_traces(tracing.result))
            except Exception as error:  # TraceUnavailable, a timeout: the capture is still worth keeping
                warn(f"Cassandra's own query trace could not be read ({error}); the trace goes without it")
        if not interrupted and not self.went_away:  # the node's to say
            try:
                with self.phases("read the executions' threads"):
                    self._read_served()
            except Exception as error:  # the reads stay charged by window: said in the report
                warn(f"the threads that served each execution could not be read ({error})")
                self.served.clear()

    def _read_served(self) -> None:
        """The threads that served each measured execution, from its traced sessions."""
        setup = self.setup
        node_spans: dict[int, tuple[int, int]] = {}
        for source in setup.sources:
            if isinstance(source, RequestSpans):
                node_spans.update(source.request_spans())
        self.served.extend(_serving_sessions(self.node, self.executions, self.query, node_spans))
        if setup.agents is None and setup.process is not None:  # each agent lists its own JVM's
            self.thread_ids.add(java_thread_ids(setup.process.pid))
        if setup.profiled is not None and self.served:  # the profile keeps the serving threads' only
            _, spans = session_rows([session for _, session in self.served], [self.thread_ids], clock_offset_ns())
            setup.profiled.serving = ServingSpans((s["tid"], s["first_ns"], s["last_ns"]) for s in spans)

    def annotate(self, writer: TraceWriter) -> None:
        options, plan, setup, pages = self.options, self.plan, self.setup, self.sample.pages
        if setup.cold is not None:
            writer.set_meta(cold={"page_cache_dropped": True, "mapped_bytes_paged_out": setup.cold.paged_out})
        agents_result = setup.agents.stop() if setup.agents is not None else None  # stopped already: its result
        _write_nodes(writer, plan.nodes, setup.agents, agents_result)
        writer.set_meta(
            query=stored_statement(self.query, options),
            keyspace=plan.keyspace,
            consistency=options.consistency,
            page_size=pages.page_size,
            paging=pages.meta(),
            **({"whole_cells": self.sample.cells} if self.sample.cells is not None else {}),
            node={"host": options.connection.host, "port": options.connection.port, "pid": self.capture.pid},
            cassandra=_cassandra_of_coordinator(plan.cassandra, agents_result),
            query_trace=self.query_trace,
            replicas={
                "keyspace": plan.keyspace,
                "consistency": options.consistency,
                "routing": plan.replicas.routing,
                "partitions": plan.replicas.partitions,
                "ssh": any(t.ssh is not None for t in plan.targets),
            },
        )
        # the analyses find the sockets that carried each execution's results by these (not stored: derived)
        writer.set_meta(client_addresses=sorted(f"{ip}:{port}" for ip, port in self.node.client_addresses()))
        digested = next((e.result.leaf_digest for e in self.executions if e.result and e.result.leaf_digest), None)
        if digested is not None:
            writer.set_meta(leaf_digest=digested)
        if self.generated is not None:
            writer.set_meta(write=_write_meta(self.query, len(self.prepared.column_metadata)))
        _write_executions(writer, self.executions, write=self.generated is not None)
        if self.served:
            threads = [self.thread_ids] if setup.agents is None else _agents_threads(writer, plan.nodes)
            _write_serving(writer, self.served, threads)


@dataclass
class AgentsCold:
    """--cold on the nodes' agents (each makes its own node cold)."""

    agents: AgentsCapture
    paged_out: int = 0

    def before_execution(self) -> None:
        self.paged_out = self.agents.make_cold()


def _write_nodes(
    writer: TraceWriter, plan: Sequence[PlannedNode], agents: AgentsCapture | None, result: AgentsResult | None
) -> None:
    """The nodes rows: every node of the plan, with what its capture was (format 3)."""
    captured = {node.target.node_id: node for node in result.nodes} if result is not None else {}
    down = {target.node_id: reason for target, reason in agents.down} if agents is not None else {}
    if agents is None:
        single = next(planned for planned in plan if planned.target is not None)
        writer.files_of_node(single.node_id)
        own_meta = writer.meta()
    rows: list[NodeRow] = []
    for planned in plan:
        pid = shift = meta = None
        not_captured = planned.not_captured
        if agents is None and planned.target is not None:
            pid, shift, meta = planned.target.options.pid, 0, own_meta
        elif planned.node_id in captured and result is not None:
            node = captured[planned.node_id]
            pid, shift, meta = node.pid, node.clock_shift_ns, result.metas.get(planned.node_id)
        elif planned.node_id in down:
            not_captured = down[planned.node_id]
        rows.append(
            {
                "node_id": planned.node_id,
                "address": planned.node.address,
                "host": planned.target.ssh if planned.target is not None else None,
                "datacenter": planned.node.datacenter,
                "rack": planned.node.rack,
                "replica": planned.node.replica,
                "captured": pid is not None,
                "not_captured": None if pid is not None else not_captured,
                "pid": pid,
                "clock_shift_ns": shift,
                "meta": json.dumps(meta) if meta is not None else None,
            }
        )
    writer.add_nodes(rows)


def _cassandra_of_coordinator(cassandra: CassandraMeta, result: AgentsResult | None) -> CassandraMeta:
    """meta 'cassandra': the schema read from the coordinator, with the data directories and SSTables
    of the trace's primary node (the coordinator's when it was captured, else the first captured)."""
    if result is None or not result.nodes:
        return cassandra
    primary_meta = result.metas.get(result.nodes[result.primary].target.node_id) or {}
    own: CassandraMeta = primary_meta.get("cassandra") or CassandraMeta()
    sstables = {(t["keyspace"], t["table"]): t.get("sstables", []) for t in own.get("tables", [])}
    return {
        **cassandra,
        "data_file_directories": own.get("data_file_directories", []),
        "tables": [
            {**table, "sstables": sstables.get((table["keyspace"], table["table"]), [])}
            for table in cassandra["tables"]
        ],
    }


@dataclass
class LocalCold:
    """--cold on this machine's one JVM: the queried table's files to push out of the JVM and the page
    cache before each execution. Nothing to restore afterwards: the node reads the pages back as it
    needs them."""

    pid: int
    files: set[tuple[int, int]]
    paged_out: int = 0  # address space paged out before the last execution

    def before_execution(self) -> None:
        self.paged_out = context.make_cold(self.pid, self.files)


def _execute_all(
    windows: Windows,
    cold: Cold | None,
    node: NodeSession,
    prepared: PreparedStatement,
    options: RunOptions,
    pages: Paging,
    executions: list[ClientExecution],
    own_connections: set[tuple[str, int]],
    leaf_shape: RowShape | None,
    generated: GeneratedValues | None = None,
) -> str | None:
    """Run warmups, measured executions and the tracing execution, each in its own window, adding
    each to `executions` as it starts. Returns why the run stopped early, or None. A failed
    execution is recorded and ends the run; on a signal the one under way is marked interrupted.
    The tracing execution also digests the result's leaf values (`leaf_shape`): no measured one
    spends the client's time on it. `generated`: a write's values, fresh for every execution."""
    plan = ["warmup"] * options.warmup + ["measured"] * options.repeat + ["tracing"]
    try:
        for number, kind in enumerate(plan, start=1):
            if windows.ended_early:
                return f"the capture ended early: {windows.ended_early}"
            if cold is not None:
                try:
                    cold.before_execution()
                except CasstraceError as error:
                    return f"execution {number} could not be made cold: {error}"
            # The node's count of its other clients' requests, read in the gaps either side (a measured
            # execution's only: what it is charged depends on whether the node was busy).
            before = node.other_clients_requests(own_connections) if kind == "measured" else None
            window_id = windows.begin_window(WINDOW_LABELS[kind], execution=number)
            execution = ClientExecution(number, kind, window_id)
            executions.append(execution)
            try:
                sent = time.monotonic_ns()
                # Traced: its session's events say which threads served it (a tracing window's, the node's story).
                execution.result = execute(
                    node.session,
                    prepared,
                    options.consistency,
                    pages.page_size,
                    trace=kind != "warmup",
                    shape=leaf_shape if kind == "tracing" else None,
                    values=generated.values(number) if generated is not None else None,
                )
                execution.client_span_ns = (sent, time.monotonic_ns())
            except Exception as error:
                execution.error = execution_failure(error)
            finally:
                windows.begin_window(GAP_WINDOW)
            after = node.other_clients_requests(own_connections) if before is not None else None
            if before is not None and after is not None:
                execution.other_requests = max(0, after - before)  # a connection closed meanwhile: its count gone
            if execution.error:
                return f"execution {number} failed: {execution.error}"
    except KeyboardInterrupt:
        if executions and executions[-1].result is None and executions[-1].error is None:
            executions[-1].error = "interrupted"
        raise
    if windows.ended_early:  # the process exited during the last execution
        return f"the capture ended early: {windows.ended_early}"
    return None


def _write_meta(query: str, bind_markers: int) -> WriteMeta:
    return {"kind": statement_kind(query), "statements": written_rows(query), "bind_markers": bind_markers}


def _write_executions(writer: TraceWriter, executions: list[ClientExecution], write: bool = False) -> None:
    """executions rows, as the client saw them; a write's request bytes too."""
    for execution in executions:
        result = execution.result
        writer.add_execution(
            execution=execution.execution,
            kind=execution.kind,
            window_id=execution.window_id,
            latency_s=result.latency_s if result else None,
            rows=result.rows if result else None,
            payload_bytes=result.payload_bytes if result else None,
            pages=result.pages if result else None,
            error=execution.error,
            coordinator=result.coordinator if result else None,
            other_requests=execution.other_requests,
        )
    # casstrace's own decoding, measured by the client: the client's per-window measure (node_id NULL)
    writer.add_window_measures(
        [
            {"window_id": execution.window_id, "measure": "client_decode_ns", "value": execution.result.decode_ns}
            for execution in executions
            if execution.result is not None
        ]
    )
    if write:
        writer.add_window_measures(
            [
                {
                    "window_id": execution.window_id,
                    "measure": "client_request_bytes",
                    "value": execution.result.request_bytes,
                }
                for execution in executions
                if execution.result is not None
            ]
        )


def _serving_sessions(
    node: NodeSession,
    executions: list[ClientExecution],
    query: str,
    node_spans: Mapping[int, tuple[int, int]],
) -> list[tuple[int, SampledSession]]:
    """Each measured execution's traced sessions (one a page), with the threads that served it, placed
    within the client's send and answer, or the node's own take and answer of it where this machine's
    node saw them (node_spans, by window: RequestSpans)."""
    ids: list[tuple[int, str]] = []
    client_spans: dict[str, tuple[int, int]] = {}
    offset = clock_offset_ns()  # the sessions' clock is the node's Unix time
    for execution in executions:
        if execution.kind == "measured" and execution.result is not None and execution.result.result_set is not None:
            future = execution.result.result_set.response_future
            keys = [str(trace_id) for trace_id in future.get_query_trace_ids()]
            ids += [(execution.execution, key) for key in keys]
            if execution.client_span_ns is not None:
                sent, answered = narrowed(execution.client_span_ns, node_spans.get(execution.window_id))
                client_spans.update(dict.fromkeys(keys, (sent + offset, answered + offset)))
    found = {
        s.session_id: s for s in traced_sessions(node.session, [key for _, key in ids], normalize(query), client_spans)
    }
    return [(execution, found[key]) for execution, key in ids if key in found]


def narrowed(client_span: tuple[int, int], node_span: tuple[int, int] | None) -> tuple[int, int]:
    """The span an execution's sessions lie in: the node's, from its read of the request to its last
    answering write, where it lies within the client's send and answer (the same clock: this
    machine's node); else the client's, which holds the loopback and the driver's own time either
    side (each a few hundred µs: a point read's session was placed up to 250 µs off within it)."""
    if node_span is not None and client_span[0] <= node_span[0] <= node_span[1] <= client_span[1]:
        return node_span
    return client_span


def _agents_threads(writer: TraceWriter, plan: Sequence[PlannedNode]) -> list[ThreadIds]:
    """Each captured node's threads, as its agent listed them (the JVM's own names: the threads rows
    of its partial trace, merged under its node_id), named by the addresses the driver knows it by."""
    listed = writer.thread_names()
    return [
        ThreadIds(planned.node.addresses(), planned.node_id).add(listed[planned.node_id])
        for planned in plan
        if planned.node_id in listed
    ]


def _write_serving(writer: TraceWriter, served: list[tuple[int, SampledSession]], nodes: list[ThreadIds]) -> None:
    """The executions' traced sessions, each linked to its execution, and where they ran on the
    captured nodes. A single node's full thread names go into the threads rows (each agent's did)."""
    sessions, spans = session_rows([session for _, session in served], nodes, clock_offset_ns())
    for row, (execution, _) in zip(sessions, served, strict=True):
        row["execution"] = execution
    writer.add_statement_sessions(sessions)
    writer.add_session_threads(spans)
    for ids in nodes:
        if ids.node_id is None:
            writer.add_threads(ids.names())
