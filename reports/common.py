"""Pieces every report format shares: the same tables, in the same words, whatever the markup."""

import dataclasses
from collections.abc import Sequence
from typing import Any

from casstrace.analyses.measures import SPLIT_LABELS
from casstrace.analyses.model import (
    Amplification,
    Analysis,
    Execution,
    FileIO,
    Finding,
    MeasureSummary,
    NodeIO,
    Profile,
    StackBytes,
    UndeterminedMeasure,
    Verdict,
    WeightedStack,
)
from casstrace.analyses.necessary import describe
from casstrace.analyses.profile import bytes_measures, reading_frame
from casstrace.analyses.units import human_bytes, human_measure, human_ms, human_ns, ns_to_ms, ratio
from casstrace.reports.document import (
    NOT_BRIEF,
    FindingItem,
    Findings,
    FlameGraph,
    Paragraph,
    Section,
    Subheading,
    Table,
)

NOT_MEASURED = "not measured"

# The three measures of what was read from a file side by side: read syscalls ("Read"), page-cache
# misses, mapped pages touched (see casstrace.analyses.amplification for how they add up).
FILE_COLUMNS = (
    "File",
    "Component",
    "Read",
    "Requested",
    "Reads",
    "Cache misses",
    "Mapped touched",
    "lseeks",
    "Seeks",
    "Longest run",
    "Coverage",
    "Written",
)
EXECUTION_COLUMNS = (
    "#",
    "Kind",
    "Round trip (client)",
    "Rows",
    "Pages",
    "Payload",
    "Wire",
    "Data read",
    "Amplification",
    "Others read",  # the table's Data bytes other requests read in its window (not in Data read)
    "Other requests",
)
LATENCY_COLUMNS = ("Syscall", "On", "Calls", "p50 ≤", "p90 ≤", "p99 ≤", "max ≤")


def percent(fraction: float | None) -> str:
    return "unknown" if fraction is None else f"{fraction * 100:.1f}%"


def file_row(f: FileIO, name: str | None = None) -> tuple[str, ...]:
    return (
        name or f.path,
        f.sstable.part if f.sstable else f.kind,  # 'Data', 'SAI people_team TermsData', 'people_city Index'
        human_bytes(f.read_bytes),
        human_bytes(f.read_requested_bytes),
        f"{f.read_calls:,}",
        human_bytes(f.cache_miss_bytes),
        human_bytes(f.mapped_touched_bytes),
        f"{f.lseek_calls:,}",
        f"{f.seek_jumps:,}",
        human_bytes(f.longest_sequential_bytes),
        percent(f.coverage),
        human_bytes(f.write_bytes),
    )


def sstable_sections(analysis: Analysis) -> list[tuple[str, list[tuple[str, ...]]]]:
    """(SSTable label, rows of its component files), most bytes first."""
    return [
        (
            group.label,
            [
                file_row(f, f.on_node(f.sstable.component_file if f.sstable else f.path, len(analysis.nodes) > 1))
                for f in group.files
            ],
        )
        for group in analysis.sstables
    ]


def other_file_rows(analysis: Analysis) -> list[tuple[str, ...]]:
    return file_rows(analysis, analysis.other_files)


def file_rows(analysis: Analysis, files: Sequence[FileIO]) -> list[tuple[str, ...]]:
    """Rows of `files` by path, each with its node in a trace of several."""
    return [file_row(f, f.on_node(f.path, len(analysis.nodes) > 1)) for f in files]


NODE_COLUMNS = (
    "Node",
    "Role",
    "Replica",
    "Data read",
    "Per execution",
    "Read (all files)",
    "Cache misses",
    "Mapped touched",
    "To nodes",
    "To client",
)


def node_rows(analysis: Analysis) -> list[tuple[str, ...]]:
    """One row per node of a multi-node trace; a node not captured has none of the figures (why: node_notes)."""
    return [_node_row(node) for node in analysis.nodes]


def node_notes(analysis: Analysis) -> list[str]:
    """Why each node not captured was not, for a line under the nodes table (a reason in a cell would
    widen its column for every node)."""
    return [
        f"{node.address} not captured: {node.not_captured or 'unknown why'}"
        for node in analysis.nodes
        if not node.captured
    ]


def _node_row(node: NodeIO) -> tuple[str, ...]:
    where = node.address + (f" (ssh {node.host})" if node.host else "")
    replica = "yes" if node.replica else "no"
    if not node.captured:
        return (where, node.role, replica, "not captured", "", "", "", "", "", "")
    amp = node.amplification
    per_execution = human_bytes(amp.data_read_bytes / node.executions) if amp and node.executions else "—"
    return (
        where,
        node.role,
        replica,
        data_read(amp) if amp else "—",
        per_execution,
        human_bytes(node.read_bytes),
        human_bytes(amp.cache_miss_bytes) if amp else "—",
        human_bytes(amp.mapped_touched_bytes) if amp else "—",
        human_bytes(node.wire_to_nodes_bytes),
        human_bytes(node.wire_to_client_bytes),
    )


def nodes_heading(analysis: Analysis) -> str:
    level = f" at {analysis.consistency}" if analysis.consistency else ""
    return f"Nodes{level} ({analysis.scope})"


def _measure_columns(analysis: Analysis) -> list[tuple[str, str, str]]:
    """(name, unit, heading) of each per-window measure the trace took: those summarized, then those
    undetermined in every execution."""
    summarized = [(summary.name, summary.unit, summary.heading) for summary in analysis.measure_summaries]
    names = {name for name, _, _ in summarized}
    return summarized + [(u.name, u.unit, u.label) for u in analysis.undetermined_measures if u.name not in names]


def execution_columns(analysis: Analysis) -> tuple[str, ...]:
    """The executions table's headings: the fixed ones, then a column per per-window measure the trace took."""
    return EXECUTION_COLUMNS + tuple(heading for _, _, heading in _measure_columns(analysis))


def execution_rows(analysis: Analysis) -> list[tuple[str, ...]]:
    columns = _measure_columns(analysis)
    return [
        execution_row(e)
        + tuple(
            "undetermined" if name in e.undetermined else human_measure(e.measures.get(name), unit)
            for name, unit, _ in columns
        )
        for e in analysis.executions
    ]


def measure_items(analysis: Analysis) -> list[tuple[str, str]]:
    """(label, value) of each per-window measure the trace took, over the measured executions, and the
    node's CPU per row and per cell returned."""
    items = summary_items(analysis.measure_summaries, analysis.undetermined_measures)
    cpu = analysis.cpu_per_result
    if cpu is not None:
        per_cell = (
            f", {human_ns(cpu.per_cell_ns)} per cell ({cpu.cells_per_row} a row)" if cpu.per_cell_ns is not None else ""
        )
        items.append((f"{cpu.label} per row returned", f"median {human_ns(cpu.per_row_ns)} per row{per_cell}"))
    return items


def summary_items(
    summaries: list[MeasureSummary], undetermined: tuple[UndeterminedMeasure, ...] | list[UndeterminedMeasure] = ()
) -> list[tuple[str, str]]:
    """(label, value) of each per-execution measure summarised (a run's executions, a watch statement's
    sampled ones), and of those undetermined in some of them."""
    why = {u.name: u for u in undetermined}
    items = [
        (
            f"{summary.heading} per execution",
            f"median {human_measure(summary.median, summary.unit)}, p99 {human_measure(summary.p99, summary.unit)}"
            f" ({summary.executions} execution{'s' * (summary.executions != 1)})"
            + (f"; {why[summary.name].text}" if summary.name in why else ""),
        )
        for summary in summaries
    ]
    summarized = {summary.name for summary in summaries}
    return items + [(f"{u.label} per execution", u.text) for u in undetermined if u.name not in summarized]


FIRST_SCREEN_COLUMNS = ("Data read", "Necessary read", "Payload", "Node time", *SPLIT_LABELS)


def measured_executions(analysis: Analysis) -> int:
    """The measured executions the per-execution figures divide by (at least 1)."""
    return max(1, sum(e.kind == "measured" for e in analysis.executions))


def bytes_per_execution(analysis: Analysis) -> dict[str, float]:
    """The data read, the necessary read and the payload per execution, those known."""
    payload = analysis.overall.payload_bytes
    sizes = {
        "data read": analysis.read_per_execution,
        "necessary read": analysis.necessary.bytes if analysis.necessary is not None else None,
        "payload": payload / measured_executions(analysis) if payload is not None else None,
    }
    return {name: value for name, value in sizes.items() if value is not None}


def first_screen_row(analysis: Analysis) -> tuple[str, ...]:
    """Per execution: the data read against the necessary read and the payload, and the node's time split."""
    split = analysis.time_split
    payload = analysis.overall.payload_bytes
    necessary = analysis.necessary.bytes if analysis.necessary is not None else None
    undetermined = any(u.name == "node_ns" for u in analysis.undetermined_measures)
    unknown = "undetermined" if undetermined else NOT_MEASURED  # its reason: the headline numbers and warnings
    return (
        human_bytes(analysis.read_per_execution),
        human_bytes(necessary) if necessary is not None else "no model",
        human_bytes(payload / measured_executions(analysis)) if payload is not None else "—",
        human_ns(split.node_ns) if split is not None else unknown,
        *(human_ns(split.parts_ns[label]) if split is not None else unknown for label in SPLIT_LABELS),
    )


def measures_data(summaries: list[MeasureSummary]) -> list[dict[str, object]]:
    """Per-execution measures' summaries as the JSON reports give them (schema in casstrace.reports.run)."""
    return [dataclasses.asdict(summary) for summary in summaries]


def execution_row(e: Execution) -> tuple[str, ...]:
    amp = e.amplification
    return (
        str(e.execution),
        e.kind,
        "—" if e.latency_s is None else human_ms(e.latency_s),
        "—" if e.rows is None else f"{e.rows:,}",
        "—" if e.pages is None else f"{e.pages:,}",
        human_bytes(e.payload_bytes) if e.payload_bytes is not None else "—",
        human_bytes(e.wire_bytes) if e.wire_bytes is not None else "—",
        human_bytes(amp.data_read_bytes) if amp else "—",
        ratio(amp.read, "—") if amp else "—",
        human_bytes(amp.busy.table_bytes_by_others) if amp and amp.busy else "—",
        f"{amp.busy.other_requests:,}" if amp and amp.busy and amp.busy.other_requests is not None else "—",
    )


def latency_rows(analysis: Analysis) -> list[tuple[str, ...]]:
    return [
        (
            row.syscall,
            row.target,
            f"{row.count:,}",
            human_ns(row.p50_ns),
            human_ns(row.p90_ns),
            human_ns(row.p99_ns),
            human_ns(row.max_ns),
        )
        for row in analysis.latencies
    ]


def verdict_notes(verdict: Verdict) -> list[str]:
    """What every format prints under the verdict: its notes, then how to get a verdict when there is a fix."""
    return verdict.notes + ([f"Fix: {verdict.fix}"] if verdict.fix else [])


def data_read(o: Amplification) -> str:
    """Data read, with the least it may be where 2 MiB mappings blur the mapped pages touched."""
    if o.data_read_least_bytes is not None and o.data_read_least_bytes < o.data_read_bytes:
        return f"{human_bytes(o.data_read_bytes)} (at least {human_bytes(o.data_read_least_bytes)}: 2 MiB mappings)"
    return human_bytes(o.data_read_bytes)


def amplification_items(analysis: Analysis) -> list[tuple[str, str]]:
    """(label, value) of the headline numbers."""
    o = analysis.overall
    basis = {"payload": "payload", "wire": "wire bytes (no driver payload in this trace)", None: "nothing"}[o.basis]
    items = [
        ("Data read ÷ necessary read (the verdict's figure)", ratio(o.over_necessary, "undetermined")),
        ("Necessary read", necessary_read(analysis)),
        ("Amplification (data read ÷ basis)", ratio(o.read, "undetermined")),
        ("Basis", f"{basis}: {human_bytes(o.basis_bytes)}" if o.basis else basis),
        ("Data read from the table's Data files", data_read(o)),
        ("  by read syscalls", human_bytes(o.syscall_bytes)),
        ("  mapped pages touched outside those reads", human_bytes(o.mapped_outside_syscall_bytes)),
        ("  page-cache fills outside those reads", human_bytes(o.cache_outside_syscall_bytes)),
        ("  measure that saw most", o.carried_by or "—"),
        ("Mapped pages touched (reads through memory maps)", human_bytes(o.mapped_touched_bytes)),
        ("Page-cache misses (device reads)", human_bytes(o.cache_miss_bytes)),
        ("Syscall amplification", ratio(o.syscall, "undetermined")),
        # left out when the node read nothing from its device (a warm node): a ratio of 0 says nothing
        *([("Device amplification", ratio(o.device))] if o.cache_miss_bytes != 0 else []),
        ("Data read ÷ wire bytes", ratio(o.wire)),
        ("Payload", human_bytes(o.payload_bytes) if o.payload_bytes is not None else "none recorded"),
        ("Wire bytes to the client", human_bytes(o.wire_bytes)),
        ("SSTables read", f"{o.sstables_read} ({o.data_files} Data files)"),
        *index_read_items(analysis),
        *measure_items(analysis),
    ]
    items += busy_items(o)
    if analysis.warmup is not None:
        w = analysis.warmup
        items.append(
            (
                "Warmup (kept apart, not in the figures above)",
                f"read {data_read(w)}: syscalls {human_bytes(w.syscall_bytes)}, mapped pages touched "
                f"{human_bytes(w.mapped_touched_bytes)}, page-cache misses {human_bytes(w.cache_miss_bytes)}",
            )
        )
    return items


def index_read_items(analysis: Analysis) -> list[tuple[str, str]]:
    """The index part of the read per execution, by part (none: the table has no index file read)."""
    index = analysis.index_read
    if index is None:
        return []
    counted = sum(e.kind == "measured" for e in analysis.executions)
    over = (
        f" (over the {index.executions} executions no other request overlapped)" if index.executions < counted else ""
    )
    return [
        ("Index read (the table's index files, not in the data read)", human_bytes(index.per_execution()) + over),
        *(
            (f"  {part.part}", f"{human_bytes(index.per_execution(part))} ({human_bytes(part.file_bytes)} on disk)")
            for part in sorted(index.parts, key=lambda part: -part.read_bytes)
            if part.read_bytes
        ),
    ]


def busy_items(o: Amplification) -> list[tuple[str, str]]:
    """How busy the node was (a run whose executions were charged by thread): none otherwise."""
    busy = o.busy
    if busy is None:
        return []
    share = f"{busy.attributed_share:.0%}" if busy.attributed_share is not None else "— (nothing read)"
    return [
        ("Executions charged by thread", f"{busy.executions} ({busy.busy_executions} while other requests ran)"),
        (
            "  requests of other clients meanwhile",
            f"{busy.other_requests:,}" if busy.other_requests is not None else "not measured",
        ),
        ("  read by other requests meanwhile (not in the figures)", human_bytes(busy.table_bytes_by_others)),
        ("  other tables read meanwhile", human_bytes(busy.other_tables_bytes)),
        ("  share of the table's reads charged to the query", share),
        ("  mapped pages touched then (no thread to charge)", human_bytes(busy.mapped_unattributed_bytes)),
    ]


def necessary_read(analysis: Analysis) -> str:
    """The necessary read in words, with the verdict's rule (no model: why there is none)."""
    necessary = analysis.necessary
    if necessary is None or analysis.overall.necessary_bytes is None:
        return "no model (no query, table or payload recorded): the verdict is against the basis"
    excess = analysis.read_per_execution - necessary.bytes
    return (
        f"{human_bytes(necessary.bytes)} per execution ({describe(necessary)}); read "
        f"{human_bytes(analysis.read_per_execution)} per execution, {human_bytes(max(0.0, excess))} past it "
        f"(flagged from {human_bytes(analysis.min_excess)} past it)"
    )


def fix_estimate(finding: Finding, analysis_read_per_execution: float) -> str | None:
    """What the finding's fix would save, in words (None: it carries no estimate)."""
    if finding.saves_ns is not None:
        return f"once fixed: about {human_ns(finding.saves_ns)} of the node's time per execution saved"
    if finding.read_after_fix_bytes is None:
        return None
    share = f" ({percent(finding.excess_share)} of the excess)" if finding.excess_share is not None else ""
    return (
        f"once fixed: about {human_bytes(finding.read_after_fix_bytes)} read per execution instead of "
        f"{human_bytes(analysis_read_per_execution)}{share}"
    )


def findings_block(
    heading: str | None, findings: Sequence[Finding], read_per_execution: float, empty: str | None = None
) -> Findings:
    """Findings as every report shows them: each with what its fix would save (fix_estimate)."""
    return Findings(
        heading,
        [
            FindingItem(
                finding.title,
                finding.certainty,
                fix_estimate(finding, read_per_execution),
                list(finding.evidence),
                list(finding.suggestion),
            )
            for finding in findings
        ],
        empty,
    )


LATENCY_NOTES_HEADING = "Notes (costs of latency more than bytes; reported flagged or not)"


def access_summary(analysis: Analysis) -> list[tuple[str, ...]]:
    return [
        (
            p.file.path,
            p.source,
            f"{p.file.seek_jumps:,}",
            f"{p.file.lseek_calls:,}",
            human_bytes(p.file.longest_sequential_bytes),
            percent(p.file.coverage),
            human_bytes(p.read_size_median) if p.read_size_median is not None else "—",
            p.source_note,
        )
        for p in analysis.access
    ]


ACCESS_COLUMNS = ("File", "Map from", "Seeks", "lseeks", "Longest run", "Coverage", "Median read", "Note")


def page_size(context: dict[str, Any]) -> str:
    """The page size and why: 'chosen: 8 rows: the largest of the first 10 rows is ...', '--page-size 64'."""
    paging = context.get("paging")
    if paging:
        return f"chosen: {paging['reason']}" if paging.get("chosen") else str(paging["reason"])
    size = context.get("page_size")
    return "—" if size is None else "one page" if size == 0 else f"{size:,} rows"


def commit_log(context: dict) -> str:
    """The commit log's sync mode and its segments' access mode, as the node said them."""
    sync, access = context.get("commitlog_sync"), context.get("commitlog_disk_access_mode")
    if sync is None and access is None:
        return "not known (the node says it from 4.0)"
    return ", ".join(part for part in (sync and f"{sync} sync", access and f"segments {access}") if part)


def context_items(analysis: Analysis) -> list[tuple[str, str]]:
    c = analysis.context
    node = c.get("node") or {}
    items = [
        ("Cassandra", c.get("cassandra_version") or "unknown"),
        ("disk_access_mode", c.get("disk_access_mode") or "unknown"),
        ("Commit log", commit_log(c)),
        ("Backend", f"{c.get('backend')} ({c.get('source')})"),
        ("Node", f"{node.get('host')}:{node.get('port')}" if node else "—"),
        ("Process", f"pid {c.get('pid')}: {c.get('process')}"),
        ("Host / kernel", f"{c.get('hostname')} / {c.get('kernel')}"),
        ("Capture", "—" if c.get("capture_seconds") is None else f"{c['capture_seconds']:.3f} s"),
        ("Consistency / page size", f"{c.get('consistency') or '—'} / {page_size(c)}"),
        ("Data directories", ", ".join(c.get("data_file_directories") or []) or "—"),
        ("Measured", ", ".join(f"{k}: {'yes' if v else 'NOT MEASURED'}" for k, v in analysis.measures.items())),
        ("Lost / unstreamed events", f"{c.get('lost_events') or 0:,} / {c.get('unstreamed_events') or 0:,}"),
        ("casstrace", str(c.get("casstrace_version"))),
    ]
    schema = c.get("table_schema")
    if schema:
        columns = ", ".join(f"{col['name']} {col['type']}" for col in schema["columns"])
        key = f"(({', '.join(schema['partition_key'])}){''.join(', ' + k for k in schema['clustering'])})"
        items.append((f"Table {schema['keyspace']}.{schema['table']}", f"{columns}; PRIMARY KEY {key}"))
        items.append(("Compression", ", ".join(f"{k}={v}" for k, v in schema["compression"].items()) or "none"))
        items.append(
            ("SSTables", ", ".join(f"{s['path']} ({human_bytes(s.get('size'))})" for s in schema["sstables"]) or "—")
        )
    return items


def _elapsed(microseconds: int | None) -> str:
    return "—" if microseconds is None else f"{microseconds:,} µs"


def query_trace_rows(analysis: Analysis) -> list[tuple[str, ...]]:
    return [
        (session["session_id"], _elapsed(event["source_elapsed_us"]), event["thread"], event["activity"])
        for session in analysis.query_trace
        for event in session.get("events") or []
    ]


QUERY_TRACE_COLUMNS = ("Session", "Elapsed", "Thread", "Activity")


# -- the Java profile (run --profile) --------------------------------------------------------------
PROFILE_FRAME_COLUMNS = ("read by (Cassandra frame)", "bytes", "share")
PROFILE_STACK_COLUMNS = ("value", "stack (leaf first)")
PROFILE_TOP_STACKS = 5
PROFILE_STACK_DEPTH = 6


def profile_summary(profile: Profile) -> list[str]:
    """What the profile covers, in sentences."""
    lines = [
        f"{profile.profiler}: the Java stack of every call of {profile.read_method}, joined with the probes' "
        "log of each read; wall-clock samples of the serving threads.",
        f"Data bytes read syscalls returned with a known Java stack: {human_bytes(profile.joined_bytes)} of "
        f"{human_bytes(profile.data_read_bytes)} ({percent(profile.joined_share)}); on stacks with "
        f"org.apache.cassandra frames: {percent(profile.cassandra_share)}.",
        f"CPU: {profile.cpu_samples:,} wall-clock samples of the serving threads while running "
        f"({', '.join(profile.threads) or 'none sampled'}).",
    ]
    if profile.data_fill_bytes is not None:
        lines.append(
            f"Page-cache fills of the Data files: {human_bytes(profile.fill_on_stacks_bytes)} of "
            f"{human_bytes(profile.data_fill_bytes)} on a Java stack ({human_bytes(profile.fill_call_bytes)} inside "
            f"read calls, with the call's stack; {human_bytes(profile.fill_fault_bytes)} by faults on mapped files, "
            "with the faulting thread's nearest wall-clock sample within "
            f"{ns_to_ms(profile.fill_join_ns or 0):g} ms: approximate, a sample near the fault, right for a long scan, "
            "often not for a short read); on stacks with org.apache.cassandra frames: "
            f"{percent(profile.fill_cassandra_share)}; undetermined: {human_bytes(profile.fill_undetermined_bytes)}"
            + "".join(f"; {human_bytes(size)} {why}" for why, size in profile.fill_undetermined.items())
            + "."
        )
        lines.append(f"A stack's bytes: {bytes_measures(profile)} (a cold read counts in both).")
    if profile.other_threads is not None:
        other = profile.other_threads
        lines.append(
            f"Only the threads that served the executions, while they did (their traced sessions): left out, "
            f"{other.samples:,} wall-clock samples and {other.read_calls:,} read calls "
            f"({human_bytes(other.read_bytes)}) of other threads in the profiled windows."
        )
    if not profile.data_read_bytes and not profile.fill_on_stacks_bytes:
        lines.append(
            "No read syscall and no page-cache fill on the Data files while the profiler was active: no "
            "stack to show. A node that maps its Data files (mmap) reads cached pages with no call or fill "
            "to record, so which code touched them is undetermined (async-profiler cannot sample page "
            "faults on this kernel); run with --cold: the pages then come by faults, each put on the "
            "faulting thread's nearest wall-clock sample."
        )
    return lines


def profile_frame_rows(profile: Profile) -> list[tuple[str, ...]]:
    return [(top.frame, human_bytes(top.bytes), percent(top.share)) for top in profile.top_frames[:10]]


def profile_stack_rows(stacks: Sequence[WeightedStack], unit: str) -> list[tuple[str, ...]]:
    """The heaviest stacks, each as its frames nearest the leaf (bytes: from the frame that asked
    for them, since every read ends in the same I/O plumbing)."""
    rows: list[tuple[str, ...]] = []
    for weighted in stacks[:PROFILE_TOP_STACKS]:
        frames = list(weighted.stack)
        if unit == "bytes":
            asking = reading_frame(weighted.stack)
            if asking in frames:
                frames = frames[: frames.index(asking) + 1]
            value = human_bytes(weighted.value)
            if isinstance(weighted, StackBytes) and weighted.fill_bytes:
                value += f" ({human_bytes(weighted.syscall_bytes)} read + {human_bytes(weighted.fill_bytes)} filled)"
        else:
            value = f"{weighted.value:,} samples"
        rows.append((value, " <- ".join(reversed(frames[-PROFILE_STACK_DEPTH:]))))
    return rows


def profile_data(profile: Profile) -> dict[str, object]:
    """The profile as the JSON reports give it (schema in casstrace.reports.run)."""
    return {
        "profiler": profile.profiler,
        "read_method": profile.read_method,
        "cpu_samples": profile.cpu_samples,
        "threads": profile.threads,
        "stacks_cpu": [{"stack": list(w.stack), "samples": w.value} for w in profile.stacks_cpu],
        "bytes_measures": bytes_measures(profile),
        "stacks_bytes": [
            {"stack": list(w.stack), "bytes": w.value, "syscall_bytes": w.syscall_bytes, "fill_bytes": w.fill_bytes}
            for w in profile.stacks_bytes
        ],
        "data_read_bytes": profile.data_read_bytes,
        "joined_bytes": profile.joined_bytes,
        "cassandra_bytes": profile.cassandra_bytes,
        "data_fill_bytes": profile.data_fill_bytes,
        "fill_call_bytes": profile.fill_call_bytes,
        "fill_fault_bytes": profile.fill_fault_bytes,
        "fill_cassandra_bytes": profile.fill_cassandra_bytes,
        "fill_join_ns": profile.fill_join_ns,
        "fill_undetermined_bytes": profile.fill_undetermined_bytes,
        "fill_undetermined": [{"why": why, "bytes": size} for why, size in profile.fill_undetermined.items()],
        "top_frames": [{"frame": top.frame, "bytes": top.bytes, "share": top.share} for top in profile.top_frames],
        "other_threads": dataclasses.asdict(profile.other_threads) if profile.other_threads is not None else None,
    }


def bytes_flame_title(profile: Profile) -> str:
    return f"Data bytes by Java stack: {bytes_measures(profile)}"


def profile_section(profile: Profile, option: str) -> Section:
    """The profile (`option`: run --profile, watch --profile): what it covers, the frames that asked for the
    bytes, and the heaviest stacks by bytes and by CPU samples, each beside its flame graph."""
    return Section(
        f"Java stacks of the reads, and CPU ({option})",
        [
            *(Paragraph(line) for line in profile_summary(profile)),
            Table(PROFILE_FRAME_COLUMNS, profile_frame_rows(profile)),
            Subheading("Stacks that read most bytes:"),
            Table(PROFILE_STACK_COLUMNS, profile_stack_rows(profile.stacks_bytes, "bytes")),
            FlameGraph(bytes_flame_title(profile), list(profile.stacks_bytes), "bytes"),
            Subheading("Stacks with most CPU samples:"),
            Table(PROFILE_STACK_COLUMNS, profile_stack_rows(profile.stacks_cpu, "samples")),
            FlameGraph("CPU: running samples of the serving threads", profile.stacks_cpu, "samples"),
        ],
        NOT_BRIEF,
    )
