"""The report of one trace (`casstrace run`, `casstrace report TRACE`): an Analysis as a Document every
format renders.

JSON schema (the document's data, what the json format writes: a stable, documented schema for scripts and
`casstrace compare`), version 2 (new fields may be added within a version; none is renamed or removed).
Version 2: mapped pages touched (files[].mapped_touched_bytes, amplification.mapped_touched_bytes and
.mapped_outside_syscall_bytes), data_read_bytes counts them (see casstrace.analyses.amplification),
data_read_least_bytes/read_least, carried_by, "fix", "warmup"; measures.mapped.
Later in version 2: "nodes", "consistency" and files[].node (traces of several nodes, format 3).
Later in version 2: the necessary read ("necessary", "min_excess", amplification.necessary_bytes and
.over_necessary: the verdict is against it), findings[].read_after_fix_bytes and .excess_share, "latency_notes".
Later in version 2: amplification.busy (BUSY, below): how busy the node was while the query ran.
Later in version 2: per-window measures (trace format 4): executions[].measures and "measures_per_execution";
MEASURE is a name of casstrace.traces.measures.MEASURES: "node_ns" (the node's time answering the execution's
requests: from the read that took each request to the last write of its answer, on its client connections),
"node_requests", "traced_ns" (the execution's sessions' durations in Cassandra's own trace: derived by the
analyses), "serving_cpu_ns" (on-CPU time of the threads that served the execution, while they served it: its
traced sessions' threads, from the scheduler's switches per 1 ms slot; derived by the analyses),
"request_cpu_ns" (on-CPU time of every thread of the node's request pools in the execution's window: on a busy
node, other clients' requests too), "jvm_cpu_ns" (of all its threads), "gc_pause_ns" and "safepoint_ns" (the
JVM's pauses overlapping the execution), "client_decode_ns" (casstrace's own decoding of the result, in the
client), "client_request_bytes" (a write's EXECUTE request frames, as the client sent them). executions[].latency_s
is the client's round trip.
Later in version 2: "write" (a run of a write: its cost per row and per execution; reports/write_cost.py).
Later in version 2: MEASUREs "serving_cpu_ns" and "traced_ns"; "cpu_per_result" (the node's CPU per row and
per cell returned).
Later in version 2: "index_read", the index part of the read by part of the table's index files.
Later in version 2: MEASUREs "running_ns", "cpu_wait_ns", "io_wait_ns" (the node's time of the execution during
which one of its request threads ran, none ran but one waited for a CPU, one slept uninterruptibly on the disk or
a mapped page: casstrace.probes.bcc.request_states); "time_split", the node's time split.
Later in version 2: executions[].undetermined and "undetermined_measures" (a node's time past the round trip).
Later in version 2: MEASURE "commitlog_ns" (a write's time from each commit-log append in its traced sessions
to its thread's next event: the append, and the wait for the sync; derived by the analyses, as for a watch).
A measure the backend did not take is null, never 0; `measures` says which were taken.

{
  "version": 2,
  "trace": str,                  path of the trace file
  "complete": bool,              false: the capture stopped part-way (see "warnings")
  "warnings": [str],             incomplete capture, lost/unstreamed events, unmeasured measures
  "measures": {"syscalls", "offsets", "page_cache", "mapped", "latency", "wire": bool},
  "query": str | null, "keyspace": str | null, "table": str | null,
  "scope": str,                  which windows the totals cover, in words
  "threshold": float,            data read ÷ necessary read at or above which (and min_excess past it) the verdict
                                 is "flagged"
  "verdict": "flagged" | "not flagged" | "undetermined",
  "summary": str,                the verdict in one sentence
  "notes": [str],                what the verdict's figure cannot see
  "fix": str | null,             how to get a verdict, when it is undetermined for a reason the user can act on
  "amplification": AMPLIFICATION (overall, over the measured executions),
  "warmup": AMPLIFICATION | null,  what the warmup executions read, kept apart (null: no warmup)
  "executions": [{"execution": int, "kind": "warmup" | "measured" | "tracing", "latency_s": float | null,
                  "rows": int | null, "payload_bytes": int | null, "wire_bytes": int | null,
                  "pages": int | null (pages fetched), "error": str | null, "amplification": AMPLIFICATION | null,
                  "measures": {MEASURE: float}   the per-window measures of its window, each in its unit
                                 (a measure not taken is absent, never 0),
                  "undetermined": {MEASURE: str}   measures its window took that are not the execution's own,
                                 absent from "measures", with why (the node's time and its split past the
                                 execution's round trip)}],
  "measures_per_execution": [{   each per-window measure the trace took, over the measured executions
    "name": MEASURE, "label": str, "unit": "ns" | "bytes" | "count",
    "whose": "node" | "client",  taken on the node, or by casstrace's client (its own decoding)
    "executions": int,           measured executions with a value
    "median": float, "p99": float, "total": float
  }],
  "undetermined_measures": [{    each measure undetermined in some measured executions (left out of the above)
    "name": MEASURE, "label": str, "unit": "ns" | "bytes" | "count", "executions": int,
    "of": int (measured executions), "why": str
  }],
  "cpu_per_result": {            the node's CPU over what the executions returned (null: no CPU measure, or no rows)
    "measure": "serving_cpu_ns" | "request_cpu_ns", "label": str, "executions": int,
    "per_execution_ns": float, "rows": float (per execution), "cells_per_row": int | null (null: columns unknown),
    "per_row_ns": float, "per_cell_ns": float | null   medians over the measured executions that returned rows
  } | null,
  "time_split": {                the node's time per execution, split (null: not measured); the means over the
                                 measured executions, so the parts add up to node_ns
    "executions": int, "node_ns": float,
    "parts_ns": {"I/O wait", "Running", "Waiting for a CPU", "GC pauses" (the execution's GC pauses within the
                 time the first three leave), "The rest" (all request threads asleep: waiting on each other or a
                 lock): float}
  } | null,
  "files": [{"path", "kind", "size_bytes", "keyspace", "table", "index", "generation" (int | str), "format",
             "version", "component" (null for non-SSTable files), "read_bytes", "read_requested_bytes",
             "read_calls", "write_bytes", "write_calls", "cache_miss_bytes" (null: not measured),
             "mapped_touched_bytes" (mapped pages accessed; null: not measured),
             "lseeks", "seeks" (reads not starting where the previous one ended), "longest_sequential_bytes",
             "coverage" (distinct bytes touched / file size; null when the size is unknown),
             "node" (address of the node whose JVM had the file; null in a trace without nodes)}],
  "writes": {"files": [{          (later in version 2; trace format 5) each file written, dirtied, written back or
              "file_id", "path", "node", synced; a figure not measured is null, and "unmeasured" says why
              "write_calls", "written_bytes" (write syscalls), "dirtied_bytes", "mapped_dirtied_bytes" (4 KiB
              pages the process dirtied in the page cache, of which by stores into a mapping), "written_back_bytes"
              (sent to the device, by any thread), "sync_calls", "sync_ns", "sync_p50_ns", "sync_p99_ns"
              (fsync, fdatasync, msync, sync_file_range: bucket upper edges)}],
             "unmeasured": {label: why}} | null,
  "consistency": str | null,     the run's consistency level
  "nodes": [{                    a run trace's nodes (format 3): the coordinator and the partition's replicas; [] otherwise
    "address": str, "host": str | null (ssh destination; null: this machine), "datacenter", "rack": str | null,
    "replica": bool,             holds a replica of the queried partition
    "captured": bool, "not_captured": str | null (why not), "pid": int | null,
    "roles": [str],              "coordinator", "data replica", "digest replica", "read repair", "speculative retry",
                                 from Cassandra's query trace and the executions' coordinators
    "role": str,                 the roles in one phrase ("coordinator + data replica")
    "executions": int,           measured executions the figures cover
    "data_read_bytes": int | null,   its Data files of the queried table (null: not captured, never 0 for unknown)
    "read_bytes": int | null,    bytes read syscalls returned from all its files
    "cache_miss_bytes", "mapped_touched_bytes": int | null,
    "wire_to_nodes_bytes", "wire_to_client_bytes": int | null,   bytes it wrote to other nodes / to clients
    "amplification": AMPLIFICATION | null   its own Data files against the query's payload
  }],
  "findings": [FINDING],          the causes of a flagged read, the largest share of the excess first, then
                                 those whose saving has no estimate ([] when not flagged)
  "latency_notes": [FINDING],    what was found in a read that is not flagged: SSTables per read, tombstones,
                                 cold cache, chunk overhead (costs of latency more than bytes)
  "necessary": null | {          the necessary read per execution (casstrace.analyses.necessary; null: no model)
    "bytes": int,                data_bytes + index_bytes
    "data_bytes": int,           units x unit_bytes
    "index_bytes": int,          the partition-index lookups (BIG Index.db entry; BTI Partitions.db and Rows.db tries)
    "result_bytes": int,         the cells the result is computed from (the payload; an aggregate's rows)
    "basis": str,                where result_bytes comes from, in words
    "units": int, "unit_bytes": int,   compressed chunks (as the SSTables store them) or 4 KiB pages
    "chunk_length": int | null,  chunk_length_in_kb in bytes (null: not compressed)
    "sstable_format": "big" | "bti" | null
  },
  "min_excess": int,             bytes per execution past the necessary read below which nothing is flagged
  "index_read": null | {         the index part of the read, measured (null: no index file of the table in the trace)
    "executions": int,           measured executions counted (those no other request overlapped)
    "parts": [{"part": str, "read_bytes": int, "file_bytes": int}]   each part of the table's index files
                                 ("Index", "Partitions", "SAI <index> TermsData", "SAI RowToPartition",
                                 "<index> Data" of a legacy index's table): bytes read over those executions
                                 (syscalls + the larger of fills and mapped pages touched outside them), and
                                 its files' size on disk
  },
  "latency": [{"syscall", "target", "count", "p50_ns", "p90_ns", "p99_ns", "max_ns"}],
  "query_trace": [...],          Cassandra's own trace, as recorded
  "context": {...},              Cassandra version, disk_access_mode, backend, node, table schema, ...
  "profile": null | {            run --profile: which code read the bytes (null: not profiled)
    "profiler": str, "read_method": str,   async-profiler's version; the JDK method whose calls were recorded
    "cpu_samples": int,          wall-clock samples of the serving threads while running
    "threads": [str],            the serving threads
    "stacks_cpu": [{"stack": [str] (root -> leaf frames), "samples": int}],   most samples first
    "bytes_measures": str,       what a stack's bytes add up: "bytes read syscalls returned + page-cache fill bytes"
                                 (traces from before fills were put on stacks: "bytes read syscalls returned")
    "stacks_bytes": [{"stack": [str], "bytes": int, "syscall_bytes": int, "fill_bytes": int}],   the Data files,
                                 most bytes first; bytes = syscall_bytes (read calls from the stack) + fill_bytes
                                 (page-cache fills inside those calls, and faults on mapped files put on the
                                 faulting thread's nearest wall-clock sample)
    "data_read_bytes": int,      bytes the logged reads returned from the Data files
    "joined_bytes": int,         of which with a known Java stack
    "cassandra_bytes": int,      of which on stacks with org.apache.cassandra frames
    "data_fill_bytes": int | null,   page-cache fill bytes of the Data files, the kernel's count (null: fills not
                                 put on stacks)
    "fill_call_bytes": int,      of which inside read calls with a known stack (exact)
    "fill_fault_bytes": int,     of which no read holds (faults), on the thread's wall-clock sample within fill_join_ns
    "fill_cassandra_bytes": int, of those on stacks with org.apache.cassandra frames
    "fill_join_ns": int | null,
    "fill_undetermined_bytes": int,   data_fill_bytes on no stack: fill_undetermined [{"why": str, "bytes": int}]
    "top_frames": [{"frame": str, "bytes": int, "share": float}],  the Cassandra frame that asked for the bytes
    "other_threads": null | {"samples": int, "read_calls": int, "read_bytes": int}   run --profile with its
                                 executions traced keeps only the threads that served them, while they did: what
                                 other threads had in the profiled windows, left out (null: every thread kept)
  }
}

FINDING = {
  "cause": "filtering_scan" | "full_row_read" | "whole_partition_scan" | "compression_chunk_overhead" |
           "readahead_inflation" | "many_sstables" | "tombstones" | "expired_cells" | "low_cardinality_index" |
           "cold_cache" |
           "replica_reads" | "many_cells_per_row" | "gc_pauses" | "large_batch" |
           "commitlog_sync",
  "title": str, "certainty": "measured" | "likely" | "possible",
  "evidence": [str], "suggestion": [str],
  "read_after_fix_bytes": float | null,   the Data bytes per execution estimated once its fix is made (null: none)
  "excess_share": float | null,  the share of the excess over the necessary read that fix removes (0..1)
  "saves_ns": float | null       a finding about time: the node's time per execution its fix would save
}

AMPLIFICATION = {
  "read": float | null,          data_read_bytes / basis_bytes: the verdict's figure
  "syscall": float | null,       syscall_bytes / basis_bytes
  "device": float | null,        cache_miss_bytes / basis_bytes (null: page cache not measured)
  "wire": float | null,          data_read_bytes / wire_bytes
  "basis": "payload" | "wire" | null,   what the figures divide by (wire when there is no payload)
  "basis_bytes", "payload_bytes", "wire_bytes": int | null,
  "syscall_bytes": int,          bytes read syscalls returned from the queried table's Data files
  "cache_miss_bytes": int | null,            page-cache fills of those files
  "cache_outside_syscall_bytes": int | null, of which outside the pages the syscalls returned
  "mapped_touched_bytes": int | null,        mapped pages of those files the JVM accessed (null: not measured)
  "mapped_outside_syscall_bytes": int | null, of which outside the pages the syscalls returned
  "data_read_bytes": int,        syscall_bytes + per window and file the larger of the two "outside" figures
  "data_read_least_bytes": int,  the same, where 2 MiB mappings make each touched entry count 4 KiB
  "read_least": float | null,    data_read_least_bytes / basis_bytes
  "carried_by": "read syscalls" | "page-cache fills" | "mapped pages touched" | null,  the measure that saw most
  "data_files": int, "sstables_read": int,
  "necessary_bytes": int | null, the necessary read over the same executions (null: no model)
  "over_necessary": float | null data_read_bytes / necessary_bytes: the verdict's figure,
  "busy": BUSY | null            what other requests read meanwhile (null: each window's reads were charged whole:
                                 a trace without per-thread counts or traced executions)
}

BUSY = {                         a run on a node that served other requests: each execution traced and charged only
                                 its own threads' reads (the figures above); what the rest of the node read meanwhile
  "executions": int,             executions charged by thread
  "busy_executions": int,        of which other requests touched the node in the window (its count, or other threads' reads)
  "other_requests": int | null,  requests of the node's other clients around the windows (system_views.clients; null:
                                 not measured)
  "table_bytes_by_others": int,  the queried table's Data bytes read by threads that did not serve the query: never in
                                 the figures above
  "other_tables_bytes": int,     other tables' SSTable bytes read in the windows
  "attributed_share": float | null, of the queried table's Data bytes read in the windows, the share the query's own
                                 threads read (1.0 on an idle node)
  "mapped_unattributed_bytes": int | null   mapped pages of the Data files touched in busy windows: per process, no
                                 thread to charge, in no figure; the verdict is undetermined when they could decide it
}
A ratio is null when its denominator is 0 or unknown.
"""

import dataclasses

from casstrace.analyses.model import Analysis, FileIO, NodeIO
from casstrace.reports import common, write_cost
from casstrace.reports.document import (
    FULL,
    NOT_BRIEF,
    Block,
    Document,
    ExecutionBars,
    Heatmap,
    Items,
    Notes,
    OffsetMap,
    Paragraph,
    Query,
    Section,
    Subheading,
    Table,
    VerdictLine,
)
from casstrace.reports.write_io import write_data, write_section

VERSION = 2
TITLE = "casstrace report"
TOP_FILES = 10  # the summary's files (md: a ticket comment)
NO_FINDINGS = "No cause named: the trace gives no evidence for one."


def document(analysis: Analysis) -> Document:
    """The report of one trace: its head (the query, the numbers, the findings: what `run` prints), then
    the nodes, executions, files, access patterns, latency, profile, Cassandra's trace and the context."""
    verdict = analysis.verdict
    return Document(
        TITLE,
        data(analysis),
        _head(analysis) + _body(analysis),
        subject=analysis.trace_path,
        verdict=VerdictLine(
            verdict.status, verdict.summary, common.verdict_notes(verdict), analysis.query or analysis.trace_path
        ),
        warnings=list(analysis.warnings),
    )


def _head(analysis: Analysis) -> list[Section]:
    per_execution = common.first_screen_row(analysis)
    return [
        Section(None, [Query(analysis.query, analysis.scope)]),
        *([write_cost.section(analysis.write_cost)] if analysis.write_cost is not None else []),
        Section(
            None,
            [
                ExecutionBars(common.bytes_per_execution(analysis), analysis.time_split),
                Table(common.FIRST_SCREEN_COLUMNS, [per_execution]),
            ],
            NOT_BRIEF,
        ),
        Section(None, [Items(common.amplification_items(analysis), ("Measure", "Value"))]),
        Section(
            None,
            [
                common.findings_block("Findings", analysis.findings, analysis.read_per_execution, NO_FINDINGS),
                common.findings_block(
                    common.LATENCY_NOTES_HEADING, analysis.latency_notes, analysis.read_per_execution
                ),
            ],
        ),
    ]


def _body(analysis: Analysis) -> list[Section]:
    sections: list[Section] = []
    if analysis.nodes:
        notes = common.node_notes(analysis)
        sections.append(
            Section(
                common.nodes_heading(analysis),
                [Table(common.NODE_COLUMNS, common.node_rows(analysis)), *([Notes(notes)] if notes else [])],
                NOT_BRIEF,
            )
        )
    if analysis.executions:
        sections.append(
            Section(
                "Executions", [Table(common.execution_columns(analysis), common.execution_rows(analysis))], NOT_BRIEF
            )
        )
    top: list[Block] = [Table(common.FILE_COLUMNS, common.file_rows(analysis, analysis.files[:TOP_FILES]))]
    if len(analysis.files) > TOP_FILES:
        top.append(Paragraph(f"{len(analysis.files) - TOP_FILES} more files in the full report.", "muted"))
    sections.append(Section(f"Top files ({analysis.scope})", top, ("summary",)))
    sstables: list[Block] = [Notes(["none read"])] if not analysis.sstables else []
    for label, rows in common.sstable_sections(analysis):
        sstables += [Subheading(label), Table(common.FILE_COLUMNS, rows)]
    sections.append(Section("SSTable files", sstables, FULL))
    sections.append(
        Section("Other files and sockets", [Table(common.FILE_COLUMNS, common.other_file_rows(analysis))], FULL)
    )
    writes = write_section(analysis.writes, len(analysis.nodes) > 1)
    if writes is not None:
        sections.append(writes)
    if analysis.access:
        sections.append(
            Section(
                "Access patterns",
                [
                    Table(common.ACCESS_COLUMNS, common.access_summary(analysis)),
                    *(OffsetMap(pattern) for pattern in analysis.access),
                ],
                FULL,
            )
        )
    latency = (
        Table(common.LATENCY_COLUMNS, common.latency_rows(analysis)) if analysis.latencies else Notes(["not measured"])
    )
    sections.append(Section("Syscall latency", [latency], FULL))
    if analysis.spectrograms:
        # the terminal draws the file I/O one; html all of them
        heatmaps = [Heatmap(spectrogram, index == 0) for index, spectrogram in enumerate(analysis.spectrograms)]
        sections.append(Section("Spectrograms", list(heatmaps), FULL))
    if analysis.profile is not None:
        sections.append(common.profile_section(analysis.profile, "run --profile"))
    if analysis.query_trace:
        sections.append(
            Section(
                "Cassandra query trace", [Table(common.QUERY_TRACE_COLUMNS, common.query_trace_rows(analysis))], FULL
            )
        )
    sections.append(Section("Context", [Items(common.context_items(analysis))], NOT_BRIEF, collapsed=True))
    return sections


def data(analysis: Analysis) -> dict:
    """The report as a JSON-ready dict (the schema above)."""
    return {
        "version": VERSION,
        "trace": analysis.trace_path,
        "complete": analysis.complete,
        "warnings": analysis.warnings,
        "measures": analysis.measures,
        "query": analysis.query,
        "keyspace": analysis.keyspace,
        "table": analysis.table,
        "scope": analysis.scope,
        "threshold": analysis.threshold,
        "verdict": analysis.verdict.status,
        "summary": analysis.verdict.summary,
        "notes": analysis.verdict.notes,
        "fix": analysis.verdict.fix,
        "amplification": dataclasses.asdict(analysis.overall),
        "warmup": dataclasses.asdict(analysis.warmup) if analysis.warmup else None,
        "executions": [
            {
                "execution": e.execution,
                "kind": e.kind,
                "latency_s": e.latency_s,
                "rows": e.rows,
                "payload_bytes": e.payload_bytes,
                "wire_bytes": e.wire_bytes,
                "pages": e.pages,
                "error": e.error,
                "amplification": dataclasses.asdict(e.amplification) if e.amplification else None,
                "measures": e.measures,
                "undetermined": e.undetermined,
            }
            for e in analysis.executions
        ],
        "files": [_file(f) for f in analysis.files],
        "findings": [dataclasses.asdict(finding) for finding in analysis.findings],
        "latency_notes": [dataclasses.asdict(finding) for finding in analysis.latency_notes],
        "necessary": dataclasses.asdict(analysis.necessary) if analysis.necessary else None,
        "min_excess": analysis.min_excess,
        "index_read": dataclasses.asdict(analysis.index_read) if analysis.index_read else None,
        "latency": [dataclasses.asdict(latency) for latency in analysis.latencies],
        "query_trace": analysis.query_trace,
        "context": analysis.context,
        "profile": common.profile_data(analysis.profile) if analysis.profile is not None else None,
        "consistency": analysis.consistency,
        "nodes": [_node(node) for node in analysis.nodes],
        "measures_per_execution": common.measures_data(analysis.measure_summaries),
        "undetermined_measures": [dataclasses.asdict(u) for u in analysis.undetermined_measures],
        "cpu_per_result": dataclasses.asdict(analysis.cpu_per_result) if analysis.cpu_per_result else None,
        "time_split": dataclasses.asdict(analysis.time_split) if analysis.time_split else None,
        "write": write_cost.data(analysis.write_cost),
        "writes": write_data(analysis.writes),
    }


def _node(node: NodeIO) -> dict:
    amp = node.amplification
    return {
        "address": node.address,
        "host": node.host,
        "datacenter": node.datacenter,
        "rack": node.rack,
        "replica": node.replica,
        "captured": node.captured,
        "not_captured": node.not_captured,
        "pid": node.pid,
        "roles": node.roles,
        "role": node.role,
        "executions": node.executions,
        "data_read_bytes": node.data_read_bytes,
        "read_bytes": node.read_bytes,
        "cache_miss_bytes": amp.cache_miss_bytes if amp else None,
        "mapped_touched_bytes": amp.mapped_touched_bytes if amp else None,
        "wire_to_nodes_bytes": node.wire_to_nodes_bytes,
        "wire_to_client_bytes": node.wire_to_client_bytes,
        "amplification": dataclasses.asdict(amp) if amp else None,
    }


def _file(f: FileIO) -> dict:
    name = f.sstable
    return {
        "path": f.path,
        "kind": f.kind,
        "size_bytes": f.size_bytes,
        "keyspace": name.keyspace if name else None,
        "table": name.table if name else None,
        "index": name.index if name else None,
        "generation": name.generation if name else None,
        "format": name.format if name else None,
        "version": name.version if name else None,
        "component": name.component if name else None,
        "read_bytes": f.read_bytes,
        "read_requested_bytes": f.read_requested_bytes,
        "read_calls": f.read_calls,
        "write_bytes": f.write_bytes,
        "write_calls": f.write_calls,
        "cache_miss_bytes": f.cache_miss_bytes,
        "mapped_touched_bytes": f.mapped_touched_bytes,
        "lseeks": f.lseek_calls,
        "seeks": f.seek_jumps,
        "longest_sequential_bytes": f.longest_sequential_bytes,
        "coverage": f.coverage,
        "node": f.node,
    }
