"""The verdict, and the causes the trace gives evidence for. A cause is named only with its evidence,
and said no more surely than that evidence allows ('measured', 'likely', 'possible')."""

from casstrace.analyses.amplification import MMAP_DATA_MODES
from casstrace.analyses.findings import BatchFigures, Finder, FindingContext, Found, find
from casstrace.analyses.measures import cpu_measure
from casstrace.analyses.model import (
    Amplification,
    Cause,
    Certainty,
    Execution,
    Finding,
    NecessaryRead,
    NodeIO,
    Unseen,
    Verdict,
)
from casstrace.analyses.necessary import describe, filtering_scan, stored_data_bytes, stored_rows, table_units
from casstrace.analyses.nodes import DATA, DIGEST, READ_REPAIR, SPECULATIVE, readers_per_execution
from casstrace.analyses.percentiles import percentile
from casstrace.analyses.query import indexed_column
from casstrace.analyses.units import KIB, human_bytes, human_ns, ratio
from casstrace.analyses.verdict_rule import VerdictRule, judge
from casstrace.traces.measures import MEASURES

MANY_SSTABLES = 4
TOMBSTONE_WARN = 1000  # Cassandra's default tombstone_warn_threshold


def verdict(
    overall: Amplification,
    rule: VerdictRule,
    *,
    executions: int,
    necessary: NecessaryRead | None,
    data_label: str,
    backend: str | None,
    page_cache_measured: bool,
    disk_access_mode: str | None,
    unseen: Unseen | None,
    lower_bound: bool = False,
) -> Verdict:
    """The verdict: flagged when the Data bytes read are at least `rule.threshold` x the necessary read
    (analyses.necessary) and exceed it by at least `rule.min_excess` per execution, so a query that reads
    what its result needs is never flagged, however small its payload. Without a necessary read (no
    query or table known) the payload, or the wire bytes, stand in for it.
    `unseen`: why some reads of the table's Data files may be in no measure (mapped files nothing
    could see), which stops a figure below the threshold from clearing the query: no verdict from
    absence of evidence. `lower_bound`: a node of the query was not captured, so the figure is the
    least that was read. `executions`: how many executions the figures cover (at least 1)."""
    notes = _measurement_notes(page_cache_measured, backend, disk_access_mode)
    read = ("at least " if lower_bound else "") + human_bytes(overall.data_read_bytes)
    nothing = _nothing_to_judge(overall, data_label, read, notes)
    if nothing is not None:
        return nothing
    base = overall.necessary_bytes if overall.necessary_bytes is not None else overall.basis_bytes or 0
    summary = _summary(overall, rule, executions, necessary, data_label, read, base)
    status = judge(
        rule,
        overall.data_read_bytes,
        base,
        executions,
        data_read_least=overall.data_read_least_bytes,
        unseen=unseen is not None,
    )
    if status != "undetermined":
        return Verdict(status, summary, notes)
    if rule.exceeds(overall.data_read_bytes, base, executions):  # flagged on the upper bound only
        return Verdict(
            "undetermined",
            summary + " But the JVM maps parts of these files with 2 MiB entries, "
            "whose one accessed bit marks 2 MiB however little was read: the query read between "
            f"{human_bytes(overall.data_read_least_bytes or 0)} and {read}.",
            notes,
            fix=HUGE_MAPPINGS_FIX,
            reason="upper_bound_only",
        )
    assert unseen is not None  # judge's one other reason
    return Verdict(
        "undetermined",
        f"{summary} {unseen.reason}, so the figure cannot clear the query.",
        notes,
        fix=unseen.fix,
        reason="unseen_reads",
    )


def _basis(overall: Amplification) -> str | None:
    """What the read is compared with when no necessary read is known: the payload, else the wire bytes."""
    if overall.basis is None:
        return None
    if overall.basis == "payload":
        return f"{human_bytes(overall.basis_bytes)} of payload"
    return f"{human_bytes(overall.basis_bytes)} sent to the client (wire bytes: the trace has no driver payload)"


def _nothing_to_judge(overall: Amplification, data_label: str, read: str, notes: list[str]) -> Verdict | None:
    """The verdict of a capture with nothing to compare its read with, or of no query at all; None otherwise."""
    if overall.necessary_bytes is None and overall.basis is None:
        if not overall.data_read_bytes:
            return Verdict(
                "undetermined",
                f"Nothing was read from {data_label}, and the trace records neither the"
                " payload nor the bytes sent to the client: there is no query to judge"
                " in this capture.",
                notes,
                reason="no_query",
            )
        return Verdict(
            "undetermined",
            f"Read {read} from {data_label}, but the trace records "
            "neither the payload nor the bytes sent to the client to compare it with.",
            notes,
            reason="no_basis",
        )
    if not overall.data_read_bytes and not overall.basis_bytes and overall.necessary_bytes is None:
        # Typically a capture of something other than a Cassandra query: saying "not flagged"
        # would vouch for a query that never ran. (A query of a known table that found nothing,
        # and read nothing, is judged: a point read of a missing key.)
        return Verdict(
            "undetermined",
            f"Nothing was read from {data_label} and nothing was returned "
            f"({_basis(overall)}): there is no query to judge in this capture.",
            notes,
            reason="no_query",
        )
    return None


def _summary(
    overall: Amplification,
    rule: VerdictRule,
    executions: int,
    necessary: NecessaryRead | None,
    data_label: str,
    read: str,
    base: float,
) -> str:
    """The verdict's sentence: what was read, against what the result needed (or returned), and the rule."""
    payload = _basis(overall)
    carried = f"; most of it seen by {overall.carried_by}" if overall.carried_by else ""
    per = f" ({human_bytes(overall.data_read_bytes / executions)} per execution)" if executions > 1 else ""
    stated = rule.describe()
    against_payload = (
        ""
        if payload is None
        else ", nothing returned"
        if overall.read is None
        else f", {ratio(overall.read)} the {payload}"
    )
    if necessary is not None and overall.necessary_bytes is not None:
        return (
            f"Read {read}{per} from {data_label}; the necessary read of its result is "
            f"{human_bytes(necessary.bytes)} per execution ({describe(necessary)}): "
            f"{ratio(overall.over_necessary)} the necessary read ({stated})" + against_payload + f"{carried}."
        )
    if base == 0:
        return f"Read {read}{per} from {data_label} to return nothing ({payload}; {stated}){carried}."
    return f"Read {read}{per} from {data_label} for {payload}: {ratio(overall.read)} ({stated}){carried}."


def failed_run(executions: list[Execution], notes: list[str]) -> Verdict | None:
    """The verdict of a run none of whose measured executions succeeded (the node refused them all,
    e.g. a consistency level it cannot reach): undetermined, never a figure of what little was seen."""
    failed = next((execution for execution in executions if execution.error), None)
    if failed is None or any(e.kind == "measured" and e.error is None for e in executions):
        return None
    return Verdict(
        "undetermined",
        f"No measured execution of the query succeeded ({failed.kind} execution "
        f"{failed.execution} failed: {failed.error}): there is no query to judge.",
        notes,
        fix="check the node and the query's --consistency: the node's error says why",
        reason="failed_run",
    )


HUGE_MAPPINGS_FIX = (
    "run it with --cold: the pages come back from the device and are counted as page-cache misses, page by page"
)


def _measurement_notes(page_cache_measured: bool, backend: str | None, disk_access_mode: str | None) -> list[str]:
    mode = (disk_access_mode or "unknown").lower()
    notes = []
    if not page_cache_measured:
        notes.append(
            f"Page-cache misses were not measured (the {backend or 'capture'} backend cannot see them): "
            "device reads and reads through memory-mapped files are not in the figure."
        )
        if mode in MMAP_DATA_MODES:
            notes.append(
                f"disk_access_mode is '{mode}': Cassandra reads Data files through memory maps, which make "
                "no read syscalls, so the figure is a lower bound and may miss nearly all of the I/O. "
                "Capture with the bcc backend, which counts page-cache fills."
            )
        elif mode == "mmap_index_only":
            notes.append(
                "disk_access_mode is 'mmap_index_only': Data files are read with syscalls and are counted; "
                "index files are memory-mapped and their reads are not."
            )
        elif mode == "unknown":
            notes.append("disk_access_mode is unknown: if Data files are memory-mapped, their reads are not counted.")
    return notes


# -- the causes: one finder each (analyses.findings.Finder) -------------------------------------------
# A finder that names a cost in bytes answers only for a flagged read and estimates the Data bytes
# per execution once its fix is made (Finding.read_after_fix_bytes); the seam weighs them.


def _full_row_read(context: FindingContext) -> Finding | None:
    select, schema, rows = context.select, context.schema, context.rows
    if not context.flagged or select is None or select.select_all or schema is None or not rows:
        return None
    regular = schema.regular_columns
    selected = [c for c in select.columns if c in regular]
    unselected = [c for c in regular if c not in select.columns]
    if not unselected:
        return None
    after = _read_with_selected_cells_only(context)
    excess = context.excess_per_execution
    # The advice is for rows whose unselected cells are most of the excess, not for a scan of rows
    # the result does not need, whose fix is another.
    if after is not None and excess and context.read_per_execution - after < excess / 2:
        return None
    per_row_read = context.data_read_bytes / rows
    evidence = [
        f"The query selects {len(selected)} of the table's {len(regular)} regular columns "
        f"({_names(selected) or 'none'}); {len(unselected)} others ({_names(unselected)}) live in the same rows.",
        f"{rows:,} rows returned; {human_bytes(context.data_read_bytes)} read from the Data files: "
        f"{human_bytes(per_row_read)} per row.",
    ]
    if context.payload_bytes:
        evidence.append(
            f"The selected values came to {human_bytes(context.payload_bytes)} "
            f"({human_bytes(context.payload_bytes / rows)} per row)."
        )
    certainty: Certainty = "likely" if after and context.read_per_execution >= context.threshold * after else "possible"
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
        read_after_fix_bytes=after,
    )


def _read_with_selected_cells_only(context: FindingContext) -> float | None:
    """Per execution, once the selected cells are stored apart from the others: the rows Cassandra
    read that the result needs, with only the selected values, plus whatever else was read (rows the
    result does not need)."""
    necessary, rows, payload = context.necessary, context.rows_per_execution, context.payload_per_execution
    if necessary is None or not rows or payload is None:
        return None
    read_rows = max(rows, context.live_rows_read or 0)
    returned = rows / read_rows
    # An element or field selected needs its whole cell: the necessary read's cells, not the payload.
    needed = necessary.result_bytes if context.select and context.select.elements else payload
    return (1 - returned) * context.read_per_execution + returned * necessary.reading(needed)


def _rows_not_returned(context: FindingContext) -> float | None:
    """Per execution, had Cassandra read only the rows returned: the read in proportion (None: how
    many rows it read is not known). Rows read: Cassandra's trace of a single-partition read counts
    them before filtering; of a range read, after it, so a scan of the whole table counts the
    table's rows (its SSTables' statistics)."""
    rows, read_rows = context.rows_per_execution, context.live_rows_read
    if (
        rows is not None
        and (not read_rows or read_rows <= rows)
        and context.schema is not None
        and context.select is not None
        and not context.schema.reads_partitions(context.select)
    ):
        read_rows = stored_rows(context.schema)
    if rows is None or not read_rows or read_rows <= rows:
        return None
    return context.read_per_execution * rows / read_rows


def _filtering_scan(context: FindingContext) -> Finding | None:
    """A filter without the partition key: the read grows with the table, the result does not."""
    select, schema = context.select, context.schema
    if not context.flagged or select is None or schema is None or not filtering_scan(select, schema):
        return None
    filtered = [c for c in select.restrictions if c not in schema.partition_key] or list(select.restrictions)
    read, rows, stored = context.read_per_execution, context.rows_per_execution, stored_data_bytes(schema)
    scope = "every partition of the token range" if select.token_restricted else "every partition of the table"
    returned = f" to return {rows:,.0f} row{'s' * (rows != 1)}" if rows is not None else ""
    growth = (
        f"The read grows with the table, the result does not: about {human_bytes(read * 10)} per execution "
        f"at 10x the table, {human_bytes(read * 100)} at 100x"
        + (f" (its Data files hold {human_bytes(stored)} now)." if stored else ".")
    )
    key = filtered[0]
    return Finding(
        cause="filtering_scan",
        title="A filtering scan: every partition is read for a result that does not grow with the table",
        certainty="measured",
        evidence=[
            f"WHERE filters on {_names(filtered)} (ALLOW FILTERING), not on the whole partition key "
            f"({_names(schema.partition_key)}): Cassandra reads {scope}{returned}"
            + (" and stops at the LIMIT." if select.has_limit else "."),
            growth,
        ],
        suggestion=[
            f"A table keyed by {key} (PRIMARY KEY ({key}, ...)), written beside this one, reads only the "
            "partition that matches.",
            f"Or an index on {key} (5.0: CREATE INDEX ON {schema.keyspace}.{schema.table} ({key}) USING 'sai'), "
            "which reads the index, then the rows it names.",
        ],
        read_after_fix_bytes=context.necessary.bytes if context.necessary is not None else None,
    )


def _whole_partition_scan(context: FindingContext) -> Finding | None:
    select, schema = context.select, context.schema
    if not context.flagged or select is None or schema is None or select.token_restricted:
        return None
    if filtering_scan(select, schema):  # the filtering scan's own finding
        return None
    restricted = set(select.restrictions)
    read_rows = context.live_rows_read
    counted = (
        f" Cassandra read {read_rows:,.0f} live rows to return {context.rows_per_execution:,.0f}."
        if read_rows is not None and context.rows_per_execution is not None
        else ""
    )
    if not set(schema.partition_key) <= restricted:
        return Finding(
            cause="whole_partition_scan",
            title="No partition key restriction: the query scans the table",
            certainty="measured",
            evidence=[
                f"WHERE does not restrict the partition key ({_names(schema.partition_key)})"
                + (" and ALLOW FILTERING discards the rows that do not match." if select.allow_filtering else ".")
                + counted
            ],
            suggestion=[
                "Query by partition key (a table whose partition key is what you filter on); a table scan "
                "reads every SSTable whatever the selection."
            ],
            read_after_fix_bytes=_rows_not_returned(context),
        )
    if not schema.clustering or restricted & set(schema.clustering) or select.has_limit:
        return None
    rows = context.rows
    return Finding(
        cause="whole_partition_scan",
        title="Whole-partition read: no clustering restriction, every row of the partition is read",
        certainty="measured",
        evidence=[
            f"WHERE restricts only the partition key; clustering columns ({_names(schema.clustering)}) "
            f"are not restricted" + (f", and {rows:,} rows came back." if rows else ".") + counted
        ],
        suggestion=[
            f"Restrict the clustering columns (e.g. {schema.clustering[0]} >= ? AND {schema.clustering[0]} < ?) "
            "or add LIMIT; after the clustering-row refactor the column to read becomes a clustering key "
            "you can restrict."
        ],
        read_after_fix_bytes=_rows_not_returned(context),
    )


SMALL_CHUNK_BYTES = 4096  # the chunk length the chunk-overhead fix suggests


def _chunk_overhead(context: FindingContext) -> Finding | None:
    """One compressed chunk read per row for small rows of a read by partition key: a cost of
    latency (decompression) on a point-read table, and of bytes when it explains the read."""
    schema, select, rows, payload = context.schema, context.select, context.rows, context.payload_bytes
    if (
        schema is None
        or select is None
        or not schema.chunk_bytes
        or not rows
        or not payload
        or not schema.reads_partitions(select)
    ):
        return None
    necessary = context.necessary
    chunk = (necessary.chunk_length if necessary else None) or schema.chunk_bytes
    if chunk <= SMALL_CHUNK_BYTES:
        return None
    per_row_payload = payload / rows
    chunk_cost = rows * chunk
    stored = necessary.unit_bytes if necessary else chunk
    # Only small rows, each read as about a chunk of its own: a chunk per row explains the read (a
    # full-row read reads far more), and the read is not far less (rows that share their chunks).
    if (
        per_row_payload * context.threshold > chunk
        or not rows * stored / 2 <= context.data_read_bytes <= rows * stored * 2
    ):
        return None
    # With small chunks each row costs one small chunk (the stored size in proportion).
    after = (context.rows_per_execution or 0) * stored * SMALL_CHUNK_BYTES / chunk if context.flagged else None
    return Finding(
        cause="compression_chunk_overhead",
        title="Compression chunk overhead: small values, each read as a whole compressed chunk",
        certainty="possible",
        evidence=[
            f"{human_bytes(per_row_payload)} returned per row, while Cassandra reads and decompresses whole "
            f"{human_bytes(chunk)} chunks ({schema.compressor}, {human_bytes(stored)} each as stored); one "
            f"chunk per row is {human_bytes(chunk_cost)}, against {human_bytes(context.data_read_bytes)} read."
        ],
        suggestion=[
            f"If the table is mostly read by key, try a smaller chunk: ALTER TABLE "
            f"{schema.keyspace}.{schema.table} WITH compression = "
            f"{{'class': '{schema.compressor}', 'chunk_length_in_kb': 4}}, then "
            "`nodetool upgradesstables -a` to rewrite the SSTables (costs some compression ratio and "
            "CompressionInfo memory)."
        ],
        read_after_fix_bytes=after,
    )


def _readahead_or_mmap(context: FindingContext) -> Finding | None:
    outside = context.cache_outside_syscall_bytes
    if not context.flagged or not outside or outside <= context.syscall_bytes:
        return None
    after = context.read_per_execution - outside / context.executions
    mode = (context.disk_access_mode or "unknown").lower()
    if mode in MMAP_DATA_MODES or context.syscall_bytes == 0:
        return Finding(
            cause="readahead_inflation",
            title="Reads through memory-mapped Data files, inflated by readahead",
            certainty="measured" if context.syscall_bytes == 0 else "likely",
            evidence=[
                f"Read syscalls returned {human_bytes(context.syscall_bytes)} from the Data files, yet the page "
                f"cache filled {human_bytes(outside)} more for them (disk_access_mode: {mode}): page faults "
                "on memory maps, each bringing in a readahead window."
            ],
            suggestion=[
                "Set disk_access_mode: mmap_index_only (the 5.0 default) or standard in cassandra.yaml so "
                "Data files are read with syscalls of the size Cassandra asks for.",
                "Or lower the device readahead (blockdev --setra) for random-read workloads.",
            ],
            read_after_fix_bytes=after,
        )
    return Finding(
        cause="readahead_inflation",
        title="Readahead inflation: the page cache filled far more than the reads asked for",
        certainty="measured",
        evidence=[
            f"The page cache filled {human_bytes(outside)} of the Data files outside the pages read syscalls "
            f"returned ({human_bytes(context.syscall_bytes)})."
        ],
        suggestion=[
            f"Lower the device readahead (blockdev --setra) for random reads, and check disk_access_mode (now {mode})."
        ],
        read_after_fix_bytes=after,
    )


def _many_sstables(context: FindingContext) -> Finding | None:
    """SSTables read per execution (Data files the probes saw read), and merged per read as Cassandra's
    trace says ('Merged data from memtables and N sstables')."""
    merged = [c.sstables_merged for c in context.cassandra if c.sstables_merged is not None]
    most = max(context.sstables_read + merged, default=0)
    if most < MANY_SSTABLES:
        return None
    evidence = []
    if context.sstables_read:
        evidence.append(f"Up to {max(context.sstables_read)} SSTables' Data files read in one execution.")
    if merged:
        evidence.append(f"Cassandra's query trace: merged data from up to {max(merged)} SSTables.")
    histograms = _sstable_histograms(context)
    if histograms:
        evidence.append(histograms)
    return Finding(
        cause="many_sstables",
        title="Many SSTables per read",
        certainty="measured",
        evidence=evidence,
        suggestion=[
            "Check `nodetool tablehistograms` (SSTables per read) and the compaction strategy; a partition "
            "spread over many SSTables is read from each of them (`nodetool compact` merges them once)."
        ],
        # Compacted into one, the partition is read from one SSTable.
        read_after_fix_bytes=context.read_per_execution / most if context.flagged else None,
    )


def _sstable_histograms(context: FindingContext) -> str | None:
    """The table's SSTables as `nodetool tablehistograms` sums them (their Statistics.db)."""
    stats = [s["stats"] for s in (context.schema.storage if context.schema else []) if s.get("stats")]
    if not stats:
        return None
    partitions = sum(s.get("partitions", 0) for s in stats)
    largest = max(s.get("partition_bytes_max", 0) for s in stats)
    return (
        f"The table's {len(stats)} SSTables (their Statistics.db, as `nodetool tablehistograms` reads them): "
        f"{partitions:,} partition entries, the largest partition up to {human_bytes(largest)}."
    )


def _dead_cells(context: FindingContext) -> tuple[int, int] | None:
    """(live rows, tombstone cells) of the read, as Cassandra's trace counts them, when the dead cells
    are many: past its tombstone warning, or more than the live rows. Its count holds deleted and
    expired cells alike (a cell past its TTL reads as a tombstone until compaction purges it)."""
    counts = [(c.live_rows or 0, c.tombstone_cells) for c in context.cassandra if c.tombstone_cells is not None]
    if not counts:
        return None
    live = max(c[0] for c in counts)
    tombstones = max(c[1] for c in counts)
    if tombstones < TOMBSTONE_WARN and tombstones <= live:
        return None
    return live, tombstones


def _longest_ttl(context: FindingContext) -> int:
    """The longest TTL of the table's cells, in seconds, as its SSTables' Statistics.db record it (0: none)."""
    storage = context.schema.storage if context.schema else []
    return max((s.get("stats", {}).get("ttl_max", 0) for s in storage), default=0)


def _read_without_dead_cells(context: FindingContext, live: int, dead: int) -> float | None:
    """Purged, the read keeps the live part (cells and rows counted alike: an estimate)."""
    return context.read_per_execution * live / (live + dead) if context.flagged and live + dead else None


def _tombstones(context: FindingContext) -> Finding | None:
    """Deleted cells read: Cassandra's count of tombstone cells, where the table's cells have no TTL
    (with one, they are taken to be expired cells: _expired_cells)."""
    dead = _dead_cells(context)
    if dead is None or _longest_ttl(context):
        return None
    live, tombstones = dead
    return Finding(
        cause="tombstones",
        title="Tombstones read",
        certainty="measured",
        evidence=[f"Cassandra's query trace: read {live:,} live rows and {tombstones:,} tombstone cells."],
        suggestion=[
            "Find what deletes these cells; after gc_grace_seconds compaction drops them. "
            "Avoid reading ranges that are mostly deleted (e.g. queue-like models)."
        ],
        read_after_fix_bytes=_read_without_dead_cells(context, live, tombstones),
    )


def _expired_cells(context: FindingContext) -> Finding | None:
    """Cells past their TTL read: Cassandra's count of tombstone cells, where the table's SSTables
    hold cells with a TTL (their Statistics.db's longest TTL). A table with TTLs and deletions both
    has its dead cells named as expired: the trace does not tell them apart."""
    dead, ttl = _dead_cells(context), _longest_ttl(context)
    if dead is None or not ttl:
        return None
    live, expired = dead
    return Finding(
        cause="expired_cells",
        title="Expired cells read: rows past their TTL are still read until compaction purges them",
        certainty="likely",
        evidence=[
            f"Cassandra's query trace: read {live:,} live rows and {expired:,} tombstone cells.",
            f"The table's SSTables hold cells written with a TTL (up to {ttl:,} s, their Statistics.db): "
            "a cell past its TTL reads as a tombstone until a compaction after gc_grace_seconds drops it.",
        ],
        suggestion=[
            "Restrict the read to the rows still alive (e.g. a clustering range on the write time), so "
            "the expired ones are not read.",
            "For data that only ever expires: TimeWindowCompactionStrategy with windows aligned to the TTL "
            "drops whole expired SSTables; a lower gc_grace_seconds lets compaction purge them sooner.",
        ],
        read_after_fix_bytes=_read_without_dead_cells(context, live, expired),
    )


def _cold_cache(context: FindingContext) -> Finding | None:
    if not context.page_cache_measured:
        return None
    missed = sum(f.cache_miss_bytes or 0 for f in context.data_files)
    if not missed or missed * 2 < context.syscall_bytes:
        return None
    return Finding(
        cause="cold_cache",
        title="Cold page cache: the Data files were read from the device",
        certainty="measured",
        evidence=[
            f"{human_bytes(missed)} of the Data files were not in the page cache when the query ran "
            f"(read syscalls returned {human_bytes(context.syscall_bytes)})."
        ],
        suggestion=[
            "Expected for a first read or a --cold run; compare with a warm run (--warmup 1) to separate "
            "device time from the query's own cost."
        ],
    )


def _names(columns: list[str], limit: int = 6) -> str:
    shown = ", ".join(columns[:limit])
    return shown + (f", ... ({len(columns) - limit} more)" if len(columns) > limit else "")


# -- several nodes (format 3): what the consistency level made the replicas read ---------------------


def _plural(count: int, word: str) -> str:
    return f"{count} {word}{'s' * (count != 1)}"


def _reads_by_role(nodes: list[NodeIO]) -> str:
    """'1 data read, 1 digest read' from the roles Cassandra's query trace gives the nodes."""
    counts = [
        (sum(role in node.roles for node in nodes), label)
        for role, label in (
            (DATA, "data read"),
            (DIGEST, "digest read"),
            (READ_REPAIR, "read repair"),
            (SPECULATIVE, "speculative retry"),
        )
    ]
    return ", ".join(_plural(count, label) for count, label in counts if count) or "no read in Cassandra's query trace"


def cluster_verdict(verdict: Verdict, nodes: list[NodeIO], consistency: str | None, *, full_row: bool) -> Verdict:
    """The verdict of a multi-node trace: which replicas read, at what consistency level, and, when a
    node of the query was not captured, that every figure is a lower bound (named, never a silent 0)."""
    level = consistency or "consistency level unknown"
    readers = [node for node in nodes if node.read_data]
    executions = max((node.executions for node in nodes), default=0)
    per_node = ", ".join(
        f"{node.address} {human_bytes(node.data_read_bytes)}"
        + (f" in {len(node.reads_in)} of {executions}" if len(node.reads_in) < executions else "")
        for node in readers
    )
    what = "the whole rows" if full_row else "the queried table's Data files"
    counts = sorted(set(readers_per_execution(nodes).values()))
    if not readers or not counts:
        sentence = f"{level}: no captured node read the queried table's Data files."
    else:
        many = f"{counts[0]} to {counts[-1]} replicas" if len(counts) > 1 else _plural(counts[0], "replica")
        each = " each" if counts[0] > 1 else ""
        per = (" per execution" if len(counts) > 1 else " in each execution") if executions > 1 else ""
        sentence = f"{level}: {many}{each} read {what}{per} ({_reads_by_role(nodes)} in Cassandra's trace): {per_node}."
    missing = [node for node in nodes if not node.captured]
    summary = f"{verdict.summary} {sentence}"
    notes = verdict.notes + _speculative_reads_note(nodes)
    if not missing:
        return Verdict(verdict.status, summary, notes, verdict.fix, verdict.reason)
    named = "; ".join(f"{node.address} ({node.role}): {node.not_captured or 'not captured'}" for node in missing)
    summary += (
        f" Not captured: {named}. Every figure over the cluster is therefore a lower bound: the query "
        "read at least this much."
    )
    # Below the threshold, a lower bound clears nothing when a missing node had a part in the read, or
    # when Cassandra's query trace cannot say whether it had one.
    had_part = any(node.roles for node in missing) or not any(node.roles for node in nodes)
    if verdict.status == "not flagged" and had_part:
        return Verdict(
            "undetermined",
            summary,
            notes,
            fix="start the missing node, or capture it (--ssh or --hosts when it runs elsewhere)",
            reason="node_not_captured",
        )
    return Verdict(verdict.status, summary, notes, verdict.fix, verdict.reason)


def _speculative_reads_note(nodes: list[NodeIO]) -> list[str]:
    """What the figures of a node that read speculatively miss. The coordinator answers the client
    without waiting for such a read, so it may begin after the execution's window closed (and a call
    is counted in the window it began in), or still run when the capture stops."""
    speculating = [node.address for node in nodes if SPECULATIVE in node.roles and node.captured]
    if not speculating:
        return []
    return [
        f"{', '.join(speculating)} read speculatively in Cassandra's trace (the table's speculative_retry): "
        "the client does not wait for such a read, so only what of it began inside an execution's window and "
        "ended before the capture stopped is counted. Those figures are at least what the node read."
    ]


def _replica_reads(context: FindingContext) -> Finding | None:
    """When more than one replica read the Data files in an execution: what the consistency level
    cost, node by node."""
    nodes = context.nodes
    readers = [node for node in nodes if node.read_data]
    most = max(readers_per_execution(nodes).values(), default=0)
    if most < 2:
        return None
    level = context.consistency or "this consistency level"
    evidence = [
        f"{node.address} ({node.role}) read {human_bytes(node.data_read_bytes)} of the Data files"
        + (
            f", {human_bytes((node.data_read_bytes or 0) / node.executions)} per execution"
            if node.executions > 1
            else ""
        )
        for node in readers
    ]
    evidence.append(
        f"Cassandra's query trace: {_reads_by_role(nodes)}. A digest read reads the rows as fully as "
        "the data read; only its reply is a hash."
    )
    return Finding(
        cause="replica_reads",
        title=f"{level}: {len(readers)} replicas read the rows, each in full, for one read",
        certainty="measured",
        evidence=evidence,
        suggestion=[
            f"Each replica a read at {level} waits for reads the rows itself: at ONE (LOCAL_ONE) one "
            "replica does; compare both with `casstrace compare --before ... --after ...`.",
            "Fix the read's own cost first (the findings above): every replica pays it.",
        ],
        # At ONE, one replica reads.
        read_after_fix_bytes=context.read_per_execution / most if context.flagged else None,
    )


MANY_CELLS = 20  # cells per row from which their count, more than their bytes, drives a read's CPU
# The JVM reads a frozen UDT's fields as one cell: a row of N plain columns costs about N cells' work.
FROZEN_CELLS = 1


def _many_cells_per_row(context: FindingContext) -> Finding | None:
    """Node CPU grows with the cells a read returns, not with their bytes (the many-columns study):
    a row of many small plain columns costs a cell's work each, where one frozen UDT (or a blob, for
    rows written once) of the same fields is one cell."""
    select, schema, rows = context.select, context.schema, context.rows_per_execution
    name = cpu_measure(context.measures)
    if select is None or schema is None or not rows or name is None:
        return None
    cpu = percentile([m[name] for m in context.measures], 0.5) or 0.0
    returned = schema.returned_cells(select)
    plain = [c for c in returned if not str(schema.columns[c].get("type") or "").startswith("frozen")]
    if len(plain) < MANY_CELLS:
        return None
    cells = rows * len(returned)
    per_cell = cpu / cells
    saves = per_cell * rows * (len(plain) - FROZEN_CELLS)
    return Finding(
        cause="many_cells_per_row",
        title=f"Many cells per row: {len(plain)} plain columns returned per row, and the node's CPU grows with cells",
        certainty="likely",
        evidence=[
            f"{rows:,.0f} rows x {len(returned)} columns = {cells:,.0f} cells per execution "
            f"({_names(plain)} are plain columns of {schema.keyspace}.{schema.table}).",
            f"{MEASURES[name].label}: {human_ns(cpu)} per execution (median), {human_ns(cpu / rows)} per row, "
            f"{human_ns(per_cell)} per cell.",
        ],
        suggestion=[
            f"Columns written together and read together can share one frozen UDT: a row of {len(plain)} cells "
            f"becomes {FROZEN_CELLS}; about {human_ns(saves)} of node CPU per execution less at this CPU per cell.",
            "Rows written once and read whole can be one blob (serialized by the client).",
            "Select only the columns the caller uses.",
        ],
        saves_ns=saves,
    )


def _gc_pauses(context: FindingContext) -> Finding | None:
    """The JVM's GC pauses overlapped the executions: time the node stood still whatever the query read."""
    paused = [m["gc_pause_ns"] for m in context.measures if m.get("gc_pause_ns")]
    if not paused:
        return None
    executions = len(context.measures)
    nodes = [m["node_ns"] for m in context.measures if "node_ns" in m]
    calm = [m["node_ns"] for m in context.measures if "node_ns" in m and not m.get("gc_pause_ns")]
    evidence = [
        f"{len(paused)} of {executions} executions overlapped a GC pause: {human_ns(sum(paused))} paused in all, "
        f"up to {human_ns(max(paused))} in one."
    ]
    if nodes and calm:
        evidence.append(
            f"The node's time, p99: {human_ns(percentile(nodes, 0.99))} over every execution, "
            f"{human_ns(percentile(calm, 0.99))} over those no pause overlapped."
        )
    return Finding(
        cause="gc_pauses",
        title="GC pauses during the executions",
        certainty="measured",
        evidence=evidence,
        suggestion=[
            "Look at what fills the heap (large partitions, many tables' memtables, big batches) before tuning "
            "the collector; the JVM's GC log (jcmd PID VM.log) shows each pause's cause.",
        ],
        saves_ns=sum(paused) / executions,
    )


def _low_cardinality_index(context: FindingContext) -> Finding | None:
    """Rows found through an index in more partitions than the table has chunks: each is read by its
    key, its chunk decompressed again for every row it holds, where reading the rows together reads
    each chunk once (the necessary read is capped at the table's chunks: analyses.necessary)."""
    select, schema, necessary, rows = context.select, context.schema, context.necessary, context.rows_per_execution
    if not context.flagged or select is None or schema is None or necessary is None or not rows:
        return None
    index, chunks = schema.index_used(select), table_units(schema)
    if index is None or chunks is None or rows <= chunks:
        return None
    column = indexed_column(index["target"])
    read = context.read_per_execution
    return Finding(
        cause="low_cardinality_index",
        title=f"The index {index['name']} matches rows in more partitions than the table has chunks: "
        "each is read by its own key",
        certainty="measured",
        evidence=[
            f"{rows:,.0f} rows per execution through the {index['kind']} index {index['name']} on {column}, each "
            f"in its own partition, read by its key: {human_bytes(read)} read, "
            f"about {read / necessary.unit_bytes:,.0f} chunks of {human_bytes(necessary.unit_bytes)}, "
            f"for a table of {chunks:,} chunks "
            f"({human_bytes(stored_data_bytes(schema))} of Data files): each chunk read again for each row it holds.",
            f"An index on a column of few values ({column}) grows a value's rows with the table: the read grows "
            "with it, a chunk a row.",
        ],
        suggestion=[
            f"A table keyed by {column} (PRIMARY KEY (({column}, bucket), ...)), written beside this one, keeps "
            "a value's rows together: each chunk read once.",
            "Or, when most rows match, read the table in token ranges and filter on the client (each chunk once).",
        ],
        read_after_fix_bytes=necessary.bytes,
    )


# Every cause, by the name it is known by (model.Cause): the seam asks each in turn.
# Cassandra's own limits (cassandra.yaml): a batch larger than batch_size_warn_threshold (5 KiB) is
# logged as a warning (50 KiB refused), and an unlogged one over more partitions than
# unlogged_batch_across_partitions_warn_threshold (10) too.
BATCH_WARN_BYTES = 5 * KIB
BATCH_WARN_PARTITIONS = 10


def _large_batch(context: FindingContext) -> Finding | None:
    """A batch past Cassandra's own warning size or partition count: one request the coordinator holds
    whole on its heap, writes partition by partition and answers only when the last is written; a
    multi-partition batch buys no speed (only, logged, atomicity) and its bytes are heap churn."""
    batch = context.batch
    if batch is None:
        return None
    large = batch.wire_bytes is not None and batch.wire_bytes > BATCH_WARN_BYTES
    spread = batch.partitions is not None and batch.partitions > BATCH_WARN_PARTITIONS
    if not (large or spread):
        return None
    evidence = []
    if batch.wire_bytes is not None:
        evidence.append(
            f"{human_bytes(batch.wire_bytes)} per batch on the wire"
            + (f" ({ratio(batch.wire_bytes / BATCH_WARN_BYTES)} Cassandra's warning size, 5 KiB)" if large else "")
            + (f", {batch.statements:,} statements" if batch.statements else "")
            + "."
        )
    if batch.partitions is not None:
        per = (
            f"; {human_ns(batch.node_ns / batch.partitions)} a partition" if batch.node_ns and batch.partitions else ""
        )
        evidence.append(
            f"{batch.partitions:,.1f} partitions per batch (Cassandra warns over {BATCH_WARN_PARTITIONS} in an "
            f"unlogged one); the node took {human_ns(batch.node_ns)} per batch{per}."
        )
    saves = _split_batch_saves_ns(batch)
    if saves is not None and batch.node_ns is not None and batch.partitions is not None:
        evidence.append(
            f"Split by partition and sent at once, each request would hold the node about "
            f"{human_ns(batch.node_ns / max(batch.partitions, 1.0))}: about {human_ns(saves)} of each batch's "
            f"{human_ns(batch.node_ns)} saved."
        )
    return Finding(
        cause="large_batch",
        title="Large batches: each request carries many partitions' writes",
        certainty="measured",
        evidence=evidence,
        suggestion=[
            "Send the writes of different partitions as separate (asynchronous) requests, or batch only "
            "rows of one partition: the coordinator then neither holds the whole batch on its heap nor "
            "waits for its slowest partition"
            + (", and a logged batch's batchlog write goes too." if batch.logged else "."),
        ],
        saves_ns=saves,
    )


def _split_batch_saves_ns(batch: BatchFigures) -> float | None:
    """The node's time per batch that splitting it by partition would save: the coordinator writes a
    batch partition by partition and answers after the last, so its time is about the partitions'
    sum; sent as separate requests at once, they would take about one partition's (None: the node's
    time or the partitions not known; 0: one partition, nothing to split)."""
    if batch.node_ns is None or batch.partitions is None:
        return None
    return batch.node_ns * (1.0 - 1.0 / max(batch.partitions, 1.0))


# A commit-log sync slower than this is a device that is busy or slow: an msync/fsync of a few MB on a
# device of its own takes a few ms. A write whose commit-log time is at least SYNC_BOUND_SHARE of its
# node time is waiting for it (commitlog_sync batch or group; periodic when the syncer falls behind).
SLOW_COMMITLOG_SYNC_NS = 10_000_000
SYNC_BOUND_SHARE = 0.25


def _commitlog_sync(context: FindingContext) -> Finding | None:
    """Writes that wait for commit-log syncs, which are slow: the node answers a write once its
    commit-log segment is synced (batch and group modes), so a slow device's sync is every write's."""
    wait = context.commitlog
    if wait is None or wait.commitlog_ns is None or not wait.node_ns or wait.sync_p99_ns is None:
        return None
    if wait.sync_p99_ns < SLOW_COMMITLOG_SYNC_NS or wait.commitlog_ns < SYNC_BOUND_SHARE * wait.node_ns:
        return None
    shared = {
        True: "Its segments lie on the device the data files are on: flushes and compactions write there too.",
        False: "Its segments lie on a device of their own.",
        None: "Whether its segments share the data files' device is not known.",
    }[wait.shares_data_device]
    return Finding(
        cause="commitlog_sync",
        title="Writes wait for slow commit-log syncs",
        certainty="likely",
        evidence=[
            f"{human_ns(wait.commitlog_ns)} of each write's {human_ns(wait.node_ns)} on the node is in the "
            "commit log (from the append to the thread's next step).",
            f"The commit log's {wait.syncs:,} syncs in the watch took up to {human_ns(wait.sync_p99_ns)} "
            f"(p99; {human_ns(SLOW_COMMITLOG_SYNC_NS)} is slow). {shared}",
        ],
        suggestion=[
            "Put the commit log on a device of its own (commitlog_directory in cassandra.yaml)"
            + (", away from the data files' flushes and compactions" if wait.shares_data_device else "")
            + "; under commitlog_sync: batch, group (a window of a few ms) lets writes share a sync."
        ],
        saves_ns=wait.commitlog_ns,
    )


CAUSE_FINDERS: dict[Cause, Finder] = {
    "filtering_scan": _filtering_scan,  # first: it names the scan before what else the rows cost
    "full_row_read": _full_row_read,
    "whole_partition_scan": _whole_partition_scan,
    "compression_chunk_overhead": _chunk_overhead,
    "readahead_inflation": _readahead_or_mmap,
    "many_sstables": _many_sstables,
    "tombstones": _tombstones,
    "expired_cells": _expired_cells,
    "low_cardinality_index": _low_cardinality_index,
    "cold_cache": _cold_cache,
    "replica_reads": _replica_reads,
    "many_cells_per_row": _many_cells_per_row,
    "gc_pauses": _gc_pauses,
    "large_batch": _large_batch,
    "commitlog_sync": _commitlog_sync,
}
# What a write statement's executions are weighed for (a watch; its read finders have nothing to read)
WRITE_CAUSES: tuple[Cause, ...] = ("large_batch", "gc_pauses", "commitlog_sync")


def findings(context: FindingContext) -> Found:
    """What every cause's finder finds, weighed (analyses.findings.find)."""
    return find(context, tuple(CAUSE_FINDERS.values()))


def write_findings(context: FindingContext) -> Found:
    """What the write causes' finders find in a write statement, weighed."""
    return find(context, tuple(CAUSE_FINDERS[cause] for cause in WRITE_CAUSES))
