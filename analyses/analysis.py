"""analyse(trace): every analysis of one trace, as one Analysis the reports render."""

import dataclasses
import os
from typing import Any

from casstrace.analyses import amplification as amp
from casstrace.analyses import causes
from casstrace.analyses import measures as window_measures
from casstrace.analyses import nodes as cluster_nodes
from casstrace.analyses.access import access_patterns
from casstrace.analyses.attribution import run_attribution, serving_cpu_ns
from casstrace.analyses.file_io import file_io, group_by_sstable
from casstrace.analyses.findings import CassandraCounts, FindingContext, Found, live_rows, trace_counts
from casstrace.analyses.model import (
    Amplification,
    Analysis,
    Execution,
    FileIO,
    IndexRead,
    NecessaryRead,
    NodeIO,
    Unseen,
    Verdict,
)
from casstrace.analyses.necessary import against_necessary, filtering_scan, necessary_read
from casstrace.analyses.profile import evidence as profile_evidence
from casstrace.analyses.profile import profile as java_profile
from casstrace.analyses.query import Select, TableSchema, find_table, parse_select
from casstrace.analyses.spectrogram import latency_percentiles, spectrograms
from casstrace.analyses.units import human_bytes, ns_to_s
from casstrace.analyses.verdict_rule import DEFAULT_RULE, VerdictRule
from casstrace.analyses.write_cost import WriteCost, write_cost, write_verdict
from casstrace.analyses.write_io import write_io
from casstrace.traces import Trace, queries
from casstrace.traces.capabilities import Capability
from casstrace.traces.meta import CassandraMeta, TraceMeta
from casstrace.traces.sstable_names import SSTableName

MEASURE_NAMES = {
    "syscalls": "read/write/lseek syscalls",
    "offsets": "file offsets",
    "page_cache": "page-cache misses",
    "mapped": "mapped pages touched",
    "latency": "syscall latency",
    "wire": "bytes sent to the client",
}


def analyse(trace: Trace | str | os.PathLike[str], rule: VerdictRule = DEFAULT_RULE) -> Analysis:
    """Analyse an open Trace, or the trace file at a path (CasstraceError when it is not a whole trace).
    The verdict: `rule` (--threshold and --min-excess)."""
    if not isinstance(trace, Trace):
        with Trace(trace) as opened:
            return analyse(opened, rule)
    return _analyse(trace, rule)


@dataclasses.dataclass(frozen=True)
class _Subject:
    """What the query read, as the trace's meta tells it: the statement, its table and that table's schema."""

    select: Select | None
    keyspace: str | None
    table: str | None
    cassandra: CassandraMeta
    schema: TableSchema | None

    @property
    def data_label(self) -> str:
        owner = f"{self.keyspace}.{self.table}" if self.keyspace and self.table else self.table
        return f"{owner}'s Data files" if owner else "all user tables' Data files"


@dataclasses.dataclass(frozen=True)
class _Reads:
    """What the trace measured of the query's executions, and the read they needed: the figures the
    verdict judges."""

    window_ids: list[int]
    scope: str
    files: list[FileIO]
    data: dict[int, SSTableName]
    index_read: IndexRead | None
    executions: list[Execution]
    warmup: Amplification | None
    payload: int | None
    overall: Amplification
    unseen: Unseen | None
    nodes: list[NodeIO]
    counts: list[CassandraCounts]
    consistency: str | None
    rows: int | None = None
    necessary: NecessaryRead | None = None

    @property
    def measured(self) -> list[Execution]:
        return [e for e in self.executions if e.kind == "measured"]

    @property
    def runs(self) -> int:
        return max(1, len(self.measured))


def _analyse(trace: Trace, rule: VerdictRule) -> Analysis:
    meta = trace.meta
    subject = _subject(meta)
    reads = _with_necessary(meta, subject, _reads(trace, subject))
    verdict, found, write = _judge(trace, subject, reads, rule)
    profiled = java_profile(trace, reads.window_ids, sorted(reads.data))
    if profiled is not None and found.causes:
        found.causes[0].evidence.extend(profile_evidence(profiled))
    select, schema, measured = subject.select, subject.schema, reads.measured
    return Analysis(
        trace_path=str(trace.path),
        complete=trace.complete,
        warnings=_warnings(trace, reads.executions)
        + busy_warning(reads.overall, subject.data_label)
        + window_measures.undetermined_warnings(window_measures.undetermined(measured)),
        measures={name: trace.measured(name) for name in MEASURE_NAMES},
        query=meta.get("query"),
        keyspace=subject.keyspace,
        table=subject.table,
        scope=reads.scope,
        threshold=rule.threshold,
        executions=reads.executions,
        overall=reads.overall,
        warmup=reads.warmup,
        verdict=verdict,
        findings=found.causes,
        files=reads.files,
        sstables=group_by_sstable(reads.files),
        access=access_patterns(trace, reads.files),
        spectrograms=spectrograms(trace),
        latencies=latency_percentiles(trace),
        query_trace=meta.get("query_trace") or [],
        context=_context(meta, schema),
        profile=profiled,
        nodes=reads.nodes,
        consistency=reads.consistency,
        necessary=reads.necessary,
        index_read=reads.index_read,
        min_excess=rule.min_excess,
        latency_notes=found.notes,
        measure_summaries=window_measures.summaries([e.measures for e in measured]),
        undetermined_measures=window_measures.undetermined(measured),
        cpu_per_result=window_measures.cpu_per_result(
            measured, len(schema.returned_cells(select)) if schema is not None and select is not None else None
        ),
        time_split=window_measures.time_split(measured),
        leaf_digest=meta.get("leaf_digest"),
        write_cost=write,
        writes=write_io(trace, reads.window_ids),
    )


def _subject(meta: TraceMeta) -> _Subject:
    select = parse_select(meta.get("query"))
    keyspace = (select.keyspace if select and select.keyspace else None) or meta.get("keyspace")
    table = select.table if select else None
    cassandra: CassandraMeta = meta.get("cassandra") or CassandraMeta()
    return _Subject(select, keyspace, table, cassandra, find_table(cassandra, keyspace, table) if table else None)


def _reads(trace: Trace, subject: _Subject) -> _Reads:
    """What the trace's windows read: each execution's amplification, the whole run's, each node's."""
    meta = trace.meta
    execution_rows = amp.with_client_wire(trace, queries.executions(trace))
    window_ids, scope = amp.scope(trace, execution_rows)
    files = file_io(trace, window_ids)
    data = amp.data_files(trace, subject.keyspace, subject.table)
    # The coverage of every window any amplification below looks at, read once.
    read = amp.read_pages(
        trace,
        sorted(set(window_ids) | {row.window_id for row in execution_rows if row.window_id is not None}),
        data,
    )
    attributed = run_attribution(trace)  # each traced execution's own threads' reads
    shares = attributed.shares(data) if attributed is not None else {}
    index_part = amp.index_read(trace, window_ids, amp.index_files(trace, subject.keyspace, subject.table), shares)
    per_window = window_measures.with_derived(trace, execution_rows, serving_cpu_ns)
    executions = [
        window_measures.bounded_by_round_trip(execution)
        for execution in amp.execution_results(trace, execution_rows, data, read, shares, per_window)
    ]
    measured = [e for e in executions if e.kind == "measured"]
    payload = _sum_or_none([e.payload_bytes for e in measured]) if measured else None
    wire = _sum_or_none([e.wire_bytes for e in measured]) if measured else None
    if wire is None:
        wire = amp.client_wire_bytes(trace, window_ids)
    overall = amp.amplification(
        trace, window_ids, data, payload_bytes=payload, wire_bytes=wire, read=read, shares=shares
    )
    nodes = cluster_nodes.nodes(
        trace,
        window_ids,
        data,
        files,
        executions=len(measured),
        payload_bytes=payload,
        read=read,
        query_trace=meta.get("query_trace") or [],
        coordinators=sorted({row.coordinator for row in execution_rows if row.coordinator}),
        attributed=attributed,
    )
    return _Reads(
        window_ids=window_ids,
        scope=scope,
        files=files,
        data=data,
        index_read=index_part,
        executions=executions,
        warmup=amp.warmup(trace, execution_rows, data, read),
        payload=payload,
        overall=overall,
        unseen=amp.unseen_reads(trace, data, overall, subject.data_label, subject.cassandra.get("disk_access_mode")),
        nodes=nodes,
        counts=trace_counts(meta.get("query_trace") or []),
        consistency=(meta.get("replicas") or {}).get("consistency") or meta.get("consistency"),
    )


def _with_necessary(meta: TraceMeta, subject: _Subject, reads: _Reads) -> _Reads:
    """The reads with the read the query needed beside each execution's amplification and the whole run's."""

    def necessary_of(payload_bytes: float | None, rows: float | None) -> NecessaryRead | None:
        return necessary_read(
            subject.select,
            subject.schema,
            payload_bytes=payload_bytes,
            rows=rows,
            rows_aggregated=live_rows(reads.counts),
            read_ahead=subject.cassandra.get("compressed_read_ahead_bytes"),
            whole_cells=meta.get("whole_cells"),
        )

    executions = [
        e
        if e.amplification is None
        else dataclasses.replace(
            e, amplification=against_necessary(e.amplification, necessary_of(e.payload_bytes, e.rows), 1)
        )
        for e in reads.executions
    ]
    measured = [e for e in executions if e.kind == "measured"]
    runs = max(1, len(measured))
    rows = _sum_or_none([e.rows for e in measured]) if measured else None
    payload = reads.payload
    necessary = necessary_of(payload / runs if payload is not None else None, rows / runs if rows is not None else None)
    return dataclasses.replace(
        reads,
        executions=executions,
        rows=rows,
        necessary=necessary,
        overall=against_necessary(reads.overall, necessary, runs),
    )


def _judge(
    trace: Trace, subject: _Subject, reads: _Reads, rule: VerdictRule
) -> tuple[Verdict, Found, WriteCost | None]:
    """The verdict, the causes found and, for a write, its cost (a write is not judged: its causes are a read's)."""
    select, schema, executions, measured, runs = (
        subject.select,
        subject.schema,
        reads.executions,
        reads.measured,
        reads.runs,
    )
    disk_access_mode = subject.cassandra.get("disk_access_mode")
    verdict = causes.verdict(
        reads.overall,
        rule.for_read(select is not None and schema is not None and filtering_scan(select, schema)),
        executions=runs,
        necessary=reads.necessary,
        data_label=subject.data_label,
        backend=trace.meta.get("backend"),
        page_cache_measured=trace.measured("page_cache"),
        disk_access_mode=disk_access_mode,
        unseen=reads.unseen,
        lower_bound=any(not node.captured for node in reads.nodes),
    )
    verdict = causes.failed_run(executions, verdict.notes) or verdict
    write = write_cost(trace, {e.execution: e.measures.get("client_request_bytes") for e in executions})
    if subject.table is None and write is None:
        verdict.notes.append("The query is not recorded (or not a SELECT): every user table's Data files were counted.")
    found = causes.findings(
        FindingContext(
            flagged=verdict.status == "flagged",
            threshold=rule.threshold,
            executions=runs,
            data_read_bytes=reads.overall.data_read_bytes,
            syscall_bytes=reads.overall.syscall_bytes,
            cache_outside_syscall_bytes=reads.overall.cache_outside_syscall_bytes,
            payload_bytes=reads.payload,
            rows=reads.rows,
            necessary=reads.necessary,
            select=select,
            schema=schema,
            sstables_read=[e.amplification.sstables_read for e in measured if e.amplification],
            cassandra=reads.counts,
            data_files=[f for f in reads.files if f.file_id in reads.data],
            page_cache_measured=trace.measured("page_cache"),
            disk_access_mode=disk_access_mode,
            nodes=reads.nodes,
            consistency=reads.consistency,
            measures=[e.measures for e in measured],
        )
    )
    if reads.nodes:
        full_row = any(finding.cause == "full_row_read" for finding in found.causes)
        verdict = causes.cluster_verdict(verdict, reads.nodes, reads.consistency, full_row=full_row)
    if write is not None:  # no read to judge against a necessary read: said, never flagged
        verdict = causes.failed_run(executions, verdict.notes) or write_verdict(write, verdict.notes)
        found.causes.clear()  # a read's causes: nothing of a write's
    return verdict, found, write


def busy_warning(overall: Amplification, data_label: str) -> list[str]:
    """One line when other requests touched the node while the query ran."""
    busy = overall.busy
    if busy is None or not busy.busy_executions:
        return []
    requests = f"{busy.other_requests:,} requests of other clients, " if busy.other_requests else ""
    return [
        f"BUSY NODE: other requests touched the node during {busy.busy_executions} of {busy.executions} "
        f"executions ({requests}{human_bytes(busy.table_bytes_by_others)} of {data_label} read by other "
        f"requests meanwhile, {human_bytes(busy.other_tables_bytes)} of other tables): each execution is "
        "charged only its own threads' reads."
    ]


def _sum_or_none(values: list[int | None]) -> int | None:
    known = [v for v in values if v is not None]
    return sum(known) if len(known) == len(values) else None


def _warnings(trace: Trace, executions: list[Execution]) -> list[str]:
    meta = trace.meta
    warnings = []
    if not trace.complete:
        warnings.append(
            f"INCOMPLETE TRACE: {meta.get('incomplete_reason', 'interrupted')}. "
            "Everything below covers only what was captured before it stopped."
        )
    lost = meta.get("lost_events") or 0
    if lost:
        exact = (
            "totals are exact (kept in the kernel); offset maps may miss calls"
            if trace.captured_with(Capability.EXACT_TOTALS)
            else "totals may be short by these events"
        )
        warnings.append(f"{lost:,} events were lost (buffer full): {exact}.")
    unstreamed = meta.get("unstreamed_events") or 0
    if unstreamed:
        warnings.append(
            f"{unstreamed:,} per-call records were not streamed (rate cap): totals count them; offset "
            "maps fall back to the heat map for the files concerned."
        )
    missing = [label for name, label in MEASURE_NAMES.items() if not trace.measured(name)]
    if missing:
        warnings.append(
            f"Not measured by the {meta.get('backend', 'capture')} backend: {', '.join(missing)} "
            "(shown as 'not measured', never as 0)."
        )
    for execution in executions:
        if execution.error:
            warnings.append(f"Execution {execution.execution} failed: {execution.error}")
    return warnings


def _context(meta: TraceMeta, schema: TableSchema | None) -> dict[str, Any]:
    cassandra: CassandraMeta = meta.get("cassandra") or CassandraMeta()
    start, end = meta.get("capture_start_ns"), meta.get("capture_end_ns")
    context: dict[str, Any] = {
        "backend": meta.get("backend"),
        "source": meta.get("source"),
        "hostname": meta.get("hostname"),
        "kernel": meta.get("kernel"),
        "casstrace_version": meta.get("casstrace_version"),
        "node": meta.get("node"),
        "pid": meta.get("pid"),
        "process": meta.get("process"),
        "consistency": meta.get("consistency"),
        "page_size": meta.get("page_size"),
        "paging": meta.get("paging"),
        "capture_seconds": ns_to_s(end - start) if start is not None and end is not None else None,
        "cassandra_version": cassandra.get("release_version"),
        "disk_access_mode": cassandra.get("disk_access_mode"),
        "commitlog_sync": cassandra.get("commitlog_sync"),
        "commitlog_disk_access_mode": cassandra.get("commitlog_disk_access_mode"),
        "data_file_directories": cassandra.get("data_file_directories"),
        "lost_events": meta.get("lost_events"),
        "unstreamed_events": meta.get("unstreamed_events"),
    }
    if schema is not None:
        context["table_schema"] = {
            "keyspace": schema.keyspace,
            "table": schema.table,
            "columns": [
                {"name": c["name"], "type": c.get("type"), "kind": c.get("kind")} for c in schema.columns.values()
            ],
            "partition_key": schema.partition_key,
            "clustering": schema.clustering,
            "compression": schema.compression,
            "sstables": schema.sstables,
            "storage": schema.storage,
        }
    return context
