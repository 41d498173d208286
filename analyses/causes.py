"""The verdict, and the causes the trace gives evidence for. A cause is named only with its evidence,
and said no more surely than that evidence allows ('measured', 'likely', 'possible')."""

import math
from collections.abc import Iterator

from casstrace.analyses.amplification import MMAP_DATA_MODES
from casstrace.analyses.model import Amplification, Execution, FileIO, Finding, NodeIO, Unseen, Verdict
from casstrace.analyses.nodes import DATA, DIGEST, READ_REPAIR, SPECULATIVE, readers_per_execution
from casstrace.analyses.query import Select, TableSchema
from casstrace.analyses.units import human_bytes, ratio
from casstrace.traces.activities import LIVE_AND_TOMBSTONES, MERGED_SSTABLES
from casstrace.traces.meta import QueryTraceEvent, QueryTraceSession

MANY_SSTABLES = 4
TOMBSTONE_WARN = 1000                          # Cassandra's default tombstone_warn_threshold


def verdict(overall: Amplification, threshold: float, *, data_label: str, backend: str | None,
            page_cache_measured: bool, disk_access_mode: str | None, unseen: Unseen | None,
            lower_bound: bool = False) -> Verdict:
    """The verdict on the figure. `unseen`: why some reads of the table's Data files may be in no
    measure (mapped files nothing could see), which stops a figure below the threshold from clearing
    the query: no verdict from absence of evidence. `lower_bound`: a node of the query was not
    captured, so the figure is the least that was read."""
    notes = _measurement_notes(page_cache_measured, backend, disk_access_mode)
    read = ("at least " if lower_bound else "") + human_bytes(overall.data_read_bytes)
    if overall.basis is None:
        if not overall.data_read_bytes:
            return Verdict("undetermined", f"Nothing was read from {data_label}, and the trace records neither the"
                                           " payload nor the bytes sent to the client: there is no query to judge"
                                           " in this capture.", notes)
        return Verdict("undetermined", f"Read {read} from {data_label}, but the trace records "
                                       "neither the payload nor the bytes sent to the client to compare it with.", notes)
    against = (f"{human_bytes(overall.basis_bytes)} of payload" if overall.basis == "payload" else
               f"{human_bytes(overall.basis_bytes)} sent to the client (wire bytes: the trace has no driver payload)")
    carried = f"; most of it seen by {overall.carried_by}" if overall.carried_by else ""
    if overall.basis_bytes == 0:
        if not overall.data_read_bytes:
            # Typically a capture of something other than a Cassandra query: saying "not flagged"
            # would vouch for a query that never ran.
            return Verdict("undetermined", f"Nothing was read from {data_label} and nothing was returned "
                                           f"({against}): there is no query to judge in this capture.", notes)
        return Verdict("flagged", f"Read {read} from {data_label} to return nothing ({against}){carried}.", notes)
    summary = (f"Read {read} from {data_label} for {against}: "
               f"{ratio(overall.read)} (threshold {threshold:g}x){carried}.")
    assert overall.read is not None     # a basis of more than 0 bytes gives a ratio
    if overall.read >= threshold:
        if overall.read_least is not None and overall.data_read_least_bytes is not None \
                and overall.read_least < threshold:
            return Verdict("undetermined", summary + " But the JVM maps parts of these files with 2 MiB entries, "
                           "whose one accessed bit marks 2 MiB however little was read: the query read between "
                           f"{human_bytes(overall.data_read_least_bytes)} ({ratio(overall.read_least)}) and {read}.",
                           notes, fix=HUGE_MAPPINGS_FIX)
        return Verdict("flagged", summary, notes)
    if unseen is not None:
        return Verdict("undetermined", f"{summary} {unseen.reason}, so the figure cannot clear the query.", notes,
                       fix=unseen.fix)
    return Verdict("not flagged", summary, notes)


def failed_run(executions: list[Execution], notes: list[str]) -> Verdict | None:
    """The verdict of a run none of whose measured executions succeeded (the node refused them all,
    e.g. a consistency level it cannot reach): undetermined, never a figure of what little was seen."""
    failed = next((execution for execution in executions if execution.error), None)
    if failed is None or any(e.kind == "measured" and e.error is None for e in executions):
        return None
    return Verdict("undetermined", f"No measured execution of the query succeeded ({failed.kind} execution "
                                   f"{failed.execution} failed: {failed.error}): there is no query to judge.",
                   notes, fix="check the node and the query's --consistency: the node's error says why")


HUGE_MAPPINGS_FIX = ("run it with --cold: the pages come back from the device and are counted as page-cache "
                     "misses, page by page")


def _measurement_notes(page_cache_measured: bool, backend: str | None, disk_access_mode: str | None) -> list[str]:
    mode = (disk_access_mode or "unknown").lower()
    notes = []
    if not page_cache_measured:
        notes.append(f"Page-cache misses were not measured (the {backend or 'capture'} backend cannot see them): "
                     "device reads and reads through memory-mapped files are not in the figure.")
        if mode in MMAP_DATA_MODES:
            notes.append(f"disk_access_mode is '{mode}': Cassandra reads Data files through memory maps, which make "
                         "no read syscalls, so the figure is a lower bound and may miss nearly all of the I/O. "
                         "Capture with the bcc backend, which counts page-cache fills.")
        elif mode == "mmap_index_only":
            notes.append("disk_access_mode is 'mmap_index_only': Data files are read with syscalls and are counted; "
                         "index files are memory-mapped and their reads are not.")
        elif mode == "unknown":
            notes.append("disk_access_mode is unknown: if Data files are memory-mapped, their reads are not counted.")
    return notes


def findings(*, overall: Amplification, flagged: bool, threshold: float, select: Select | None,
             schema: TableSchema | None, measured: list[Execution], data_files: list[FileIO],
             query_trace: list[QueryTraceSession], page_cache_measured: bool, disk_access_mode: str | None) -> list[Finding]:
    known_rows = [e.rows for e in measured if e.rows is not None]
    rows = sum(known_rows) if measured and len(known_rows) == len(measured) else None
    found: list[Finding] = []
    if flagged:
        for finder in (_full_row_read, _whole_partition_scan, _chunk_overhead):
            finding = finder(overall, threshold, select, schema, rows)
            if finding:
                found.append(finding)
        if finding := _readahead_or_mmap(overall, disk_access_mode):
            found.append(finding)
        merged = [int(m.group(1)) for event in _trace_events(query_trace)
                  if (m := MERGED_SSTABLES.search(event.get("activity", "")))]
        if finding := many_sstables(measured, merged):
            found.append(finding)
    if finding := _tombstones(query_trace):
        found.append(finding)
    if page_cache_measured and (finding := _cold_cache(overall, data_files)):
        found.append(finding)
    return found


def _full_row_read(overall: Amplification, threshold: float, select: Select | None, schema: TableSchema | None,
                   rows: int | None) -> Finding | None:
    if select is None or select.select_all or schema is None:
        return None
    regular = schema.regular_columns
    selected = [c for c in select.columns if c in regular]
    unselected = [c for c in regular if c not in select.columns]
    if not unselected or not rows:
        return None
    per_row_read = overall.data_read_bytes / rows
    evidence = [
        f"The query selects {len(selected)} of the table's {len(regular)} regular columns "
        f"({_names(selected) or 'none'}); {len(unselected)} others ({_names(unselected)}) live in the same rows.",
        f"{rows:,} rows returned; {human_bytes(overall.data_read_bytes)} read from the Data files: "
        f"{human_bytes(per_row_read)} per row.",
    ]
    selection_bytes = None
    if overall.basis == "payload" and overall.payload_bytes:
        per_row_payload = overall.payload_bytes / rows
        chunk = schema.chunk_bytes
        # Stored apart, the selected values would be read whole compression chunks at a time at worst.
        selection_bytes = math.ceil(overall.payload_bytes / chunk) * chunk if chunk else overall.payload_bytes
        evidence.append(
            f"The selected values came to {human_bytes(overall.payload_bytes)} ({human_bytes(per_row_payload)} per row); "
            f"read alone they would need about {human_bytes(selection_bytes)}"
            + (f" (whole {human_bytes(chunk)} compression chunks)" if chunk else "")
            + f", {ratio(overall.data_read_bytes / selection_bytes)} less than was read.")
    certainty = "likely" if selection_bytes and overall.data_read_bytes >= threshold * selection_bytes else "possible"
    pk = ", ".join(schema.partition_key) or "pk"
    clustering = ", ".join(schema.clustering)
    return Finding(
        cause="full_row_read",
        title="Full-row read: Cassandra reads every cell of each row to return a few columns (CASSANDRA-6586)",
        certainty=certainty,
        evidence=evidence,
        suggestion=[
            "Move the columns that are read on their own into clustering rows, as in the reference write-up: "
            f"PRIMARY KEY (({pk}), column_no{', ' + clustering if clustering else ''}) with one value column, then "
            f"`SELECT value ... WHERE {pk.split(',')[0]} = ? AND column_no = ?` reads only those rows.",
            "Or keep the large, rarely read columns in a separate table.",
            "Columns always written together and never updated alone can share a frozen UDT (one cell instead "
            "of many, less per-cell cost); it does not make reading one of them cheaper.",
        ],
    )


def _whole_partition_scan(overall: Amplification, threshold: float, select: Select | None,
                          schema: TableSchema | None, rows: int | None) -> Finding | None:
    if select is None or schema is None or select.token_restricted:
        return None
    restricted = set(select.restrictions)
    if not set(schema.partition_key) <= restricted:
        return Finding(
            cause="whole_partition_scan", title="No partition key restriction: the query scans the table",
            certainty="measured",
            evidence=[f"WHERE does not restrict the partition key ({_names(schema.partition_key)})."],
            suggestion=["Query by partition key; a table scan reads every SSTable whatever the selection."],
        )
    if not schema.clustering or restricted & set(schema.clustering) or select.has_limit:
        return None
    return Finding(
        cause="whole_partition_scan",
        title="Whole-partition read: no clustering restriction, every row of the partition is read",
        certainty="measured",
        evidence=[f"WHERE restricts only the partition key; clustering columns ({_names(schema.clustering)}) "
                  f"are not restricted" + (f", and {rows:,} rows came back." if rows else ".")],
        suggestion=[f"Restrict the clustering columns (e.g. {schema.clustering[0]} >= ? AND {schema.clustering[0]} < ?) "
                    "or add LIMIT; after the clustering-row refactor the column to read becomes a clustering key "
                    "you can restrict."],
    )


def _chunk_overhead(overall: Amplification, threshold: float, select: Select | None, schema: TableSchema | None,
                    rows: int | None) -> Finding | None:
    if schema is None or not schema.chunk_bytes or not rows or overall.basis != "payload" or not overall.payload_bytes:
        return None
    chunk = schema.chunk_bytes
    per_row_payload = overall.payload_bytes / rows
    chunk_cost = rows * chunk
    # Only when one chunk per row explains a good part of what was read.
    if per_row_payload * threshold > chunk or chunk_cost * 2 < overall.data_read_bytes:
        return None
    return Finding(
        cause="compression_chunk_overhead",
        title="Compression chunk overhead: small values, each read as a whole compressed chunk",
        certainty="possible",
        evidence=[f"{human_bytes(per_row_payload)} returned per row, while Cassandra reads and decompresses whole "
                  f"{human_bytes(chunk)} chunks ({schema.compressor}); one chunk per row is {human_bytes(chunk_cost)}, "
                  f"against {human_bytes(overall.data_read_bytes)} read."],
        suggestion=[f"Try a smaller chunk: ALTER TABLE {schema.keyspace}.{schema.table} WITH compression = "
                    f"{{'class': '{schema.compressor}', 'chunk_length_in_kb': 4}}, then `nodetool upgradesstables -a` "
                    "to rewrite the SSTables (costs some compression ratio and CompressionInfo memory)."],
    )


def _readahead_or_mmap(overall: Amplification, disk_access_mode: str | None) -> Finding | None:
    outside = overall.cache_outside_syscall_bytes
    if not outside or outside <= overall.syscall_bytes:
        return None
    mode = (disk_access_mode or "unknown").lower()
    if mode in MMAP_DATA_MODES or overall.syscall_bytes == 0:
        return Finding(
            cause="readahead_inflation",
            title="Reads through memory-mapped Data files, inflated by readahead",
            certainty="measured" if overall.syscall_bytes == 0 else "likely",
            evidence=[f"Read syscalls returned {human_bytes(overall.syscall_bytes)} from the Data files, yet the page "
                      f"cache filled {human_bytes(outside)} more for them (disk_access_mode: {mode}): page faults "
                      "on memory maps, each bringing in a readahead window."],
            suggestion=["Set disk_access_mode: mmap_index_only (the 5.0 default) or standard in cassandra.yaml so "
                        "Data files are read with syscalls of the size Cassandra asks for.",
                        "Or lower the device readahead (blockdev --setra) for random-read workloads."],
        )
    return Finding(
        cause="readahead_inflation",
        title="Readahead inflation: the page cache filled far more than the reads asked for",
        certainty="measured",
        evidence=[f"The page cache filled {human_bytes(outside)} of the Data files outside the pages read syscalls "
                  f"returned ({human_bytes(overall.syscall_bytes)})."],
        suggestion=["Lower the device readahead (blockdev --setra) for random reads, and check disk_access_mode "
                    f"(now {mode})."],
    )


def many_sstables(measured: list[Execution], merged: list[int]) -> Finding | None:
    """SSTables read per execution (Data files the probes saw read), and merged per read as Cassandra's
    trace says ('Merged data from memtables and N sstables')."""
    per_execution = [e.amplification.sstables_read for e in measured if e.amplification]
    most = max(per_execution + merged, default=0)
    if most < MANY_SSTABLES:
        return None
    evidence = []
    if per_execution:
        evidence.append(f"Up to {max(per_execution)} SSTables' Data files read in one execution.")
    if merged:
        evidence.append(f"Cassandra's query trace: merged data from up to {max(merged)} SSTables.")
    return Finding(
        cause="many_sstables", title="Many SSTables per read", certainty="measured", evidence=evidence,
        suggestion=["Check `nodetool tablehistograms` (SSTables per read) and the compaction strategy; a partition "
                    "spread over many SSTables is read from each of them."],
    )


def _tombstones(query_trace: list[QueryTraceSession]) -> Finding | None:
    return tombstones([(int(m.group(1)), int(m.group(2))) for event in _trace_events(query_trace)
                       if (m := LIVE_AND_TOMBSTONES.search(event.get("activity", "")))])


def tombstones(counts: list[tuple[int, int]]) -> Finding | None:
    """(live rows, tombstone cells) of each read, as Cassandra's trace counts them."""
    if not counts:
        return None
    live = max(c[0] for c in counts)
    tombstones = max(c[1] for c in counts)
    if tombstones < TOMBSTONE_WARN and tombstones <= live:
        return None
    return Finding(
        cause="tombstones", title="Tombstones read", certainty="measured",
        evidence=[f"Cassandra's query trace: read {live:,} live rows and {tombstones:,} tombstone cells."],
        suggestion=["Find what deletes or expires these cells; after gc_grace_seconds compaction drops them. "
                    "Avoid reading ranges that are mostly deleted (e.g. queue-like models)."],
    )


def _cold_cache(overall: Amplification, data_files: list[FileIO]) -> Finding | None:
    missed = sum(f.cache_miss_bytes or 0 for f in data_files)
    if not missed or missed * 2 < overall.syscall_bytes:
        return None
    return Finding(
        cause="cold_cache", title="Cold page cache: the Data files were read from the device", certainty="measured",
        evidence=[f"{human_bytes(missed)} of the Data files were not in the page cache when the query ran "
                  f"(read syscalls returned {human_bytes(overall.syscall_bytes)})."],
        suggestion=["Expected for a first read or a --cold run; compare with a warm run (--warmup 1) to separate "
                    "device time from the query's own cost."],
    )


def _trace_events(query_trace: list[QueryTraceSession]) -> Iterator[QueryTraceEvent]:
    for session in query_trace or []:
        yield from session.get("events") or []


def _names(columns: list[str], limit: int = 6) -> str:
    shown = ", ".join(columns[:limit])
    return shown + (f", ... ({len(columns) - limit} more)" if len(columns) > limit else "")


# -- several nodes (format 3): what the consistency level made the replicas read ---------------------

def _plural(count: int, word: str) -> str:
    return f"{count} {word}{'s' * (count != 1)}"


def _reads_by_role(nodes: list[NodeIO]) -> str:
    """'1 data read, 1 digest read' from the roles Cassandra's query trace gives the nodes."""
    counts = [(sum(role in node.roles for node in nodes), label) for role, label in (
        (DATA, "data read"), (DIGEST, "digest read"), (READ_REPAIR, "read repair"), (SPECULATIVE, "speculative retry"))]
    return ", ".join(_plural(count, label) for count, label in counts if count) or "no read in Cassandra's query trace"


def cluster_verdict(verdict: Verdict, nodes: list[NodeIO], consistency: str | None, *, full_row: bool) -> Verdict:
    """The verdict of a multi-node trace: which replicas read, at what consistency level, and, when a
    node of the query was not captured, that every figure is a lower bound (named, never a silent 0)."""
    level = consistency or "consistency level unknown"
    readers = [node for node in nodes if node.read_data]
    executions = max((node.executions for node in nodes), default=0)
    per_node = ", ".join(f"{node.address} {human_bytes(node.data_read_bytes)}"
                         + (f" in {len(node.reads_in)} of {executions}" if len(node.reads_in) < executions else "")
                         for node in readers)
    what = "the whole rows" if full_row else "the queried table's Data files"
    counts = sorted(set(readers_per_execution(nodes).values()))
    if not readers or not counts:
        sentence = f"{level}: no captured node read the queried table's Data files."
    else:
        many = (f"{counts[0]} to {counts[-1]} replicas" if len(counts) > 1 else _plural(counts[0], "replica"))
        each = " each" if counts[0] > 1 else ""
        per = (" per execution" if len(counts) > 1 else " in each execution") if executions > 1 else ""
        sentence = f"{level}: {many}{each} read {what}{per} ({_reads_by_role(nodes)} in Cassandra's trace): {per_node}."
    missing = [node for node in nodes if not node.captured]
    summary = f"{verdict.summary} {sentence}"
    notes = verdict.notes + _speculative_reads_note(nodes)
    if not missing:
        return Verdict(verdict.status, summary, notes, verdict.fix)
    named = "; ".join(f"{node.address} ({node.role}): {node.not_captured or 'not captured'}" for node in missing)
    summary += (f" Not captured: {named}. Every figure over the cluster is therefore a lower bound: the query "
                "read at least this much.")
    # Below the threshold, a lower bound clears nothing when a missing node had a part in the read, or
    # when Cassandra's query trace cannot say whether it had one.
    had_part = any(node.roles for node in missing) or not any(node.roles for node in nodes)
    if verdict.status == "not flagged" and had_part:
        return Verdict("undetermined", summary, notes,
                       fix="start the missing node, or capture it (--ssh or --hosts when it runs elsewhere)")
    return Verdict(verdict.status, summary, notes, verdict.fix)


def _speculative_reads_note(nodes: list[NodeIO]) -> list[str]:
    """What the figures of a node that read speculatively miss. The coordinator answers the client
    without waiting for such a read, so it may begin after the execution's window closed (and a call
    is counted in the window it began in), or still run when the capture stops."""
    speculating = [node.address for node in nodes if SPECULATIVE in node.roles and node.captured]
    if not speculating:
        return []
    return [f"{', '.join(speculating)} read speculatively in Cassandra's trace (the table's speculative_retry): "
            "the client does not wait for such a read, so only what of it began inside an execution's window and "
            "ended before the capture stopped is counted. Those figures are at least what the node read."]


def replica_reads(nodes: list[NodeIO], consistency: str | None) -> Finding | None:
    """When more than one replica read the Data files in an execution: what the consistency level
    cost, node by node."""
    readers = [node for node in nodes if node.read_data]
    if max(readers_per_execution(nodes).values(), default=0) < 2:
        return None
    level = consistency or "this consistency level"
    evidence = [f"{node.address} ({node.role}) read {human_bytes(node.data_read_bytes)} of the Data files"
                + (f", {human_bytes((node.data_read_bytes or 0) / node.executions)} per execution"
                   if node.executions > 1 else "") for node in readers]
    evidence.append(f"Cassandra's query trace: {_reads_by_role(nodes)}. A digest read reads the rows as fully as "
                    "the data read; only its reply is a hash.")
    return Finding(
        cause="replica_reads", title=f"{level}: {len(readers)} replicas read the rows, each in full, for one read",
        certainty="measured", evidence=evidence,
        suggestion=[f"Each replica a read at {level} waits for reads the rows itself: at ONE (LOCAL_ONE) one "
                    "replica does; compare both with `casstrace compare --before ... --after ...`.",
                    "Fix the read's own cost first (the findings above): every replica pays it."],
    )
