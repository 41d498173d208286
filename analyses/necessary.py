"""The necessary read: the least the storage engine must read, per execution, to return this result
with this table's settings. The verdict judges the bytes read against it (causes.verdict).

The model
  result     the cells the result is computed from, as if they lay contiguously in one SSTable:
             - the payload the client received (the serialized values; on disk each cell also has a
               header, so this is the least they take);
             - for an aggregate (count, sum, avg, min, max), the rows it aggregates: Cassandra's own
               count of the live rows it read ('Read N live rows', its trace of one execution) times
               a stored row (the SSTables' uncompressed bytes per cell, from Statistics.db's cell
               histogram, times the table's regular columns);
             - without a payload (`watch`), the rows returned times the selected cells per row times
               the stored bytes per cell, as above; and, since a mean over the table's cells says
               nothing of one column's, at the least the selected cells' types take (a text or blob
               cell 1 B): a read flagged against that one only is undetermined.
  chunks     those bytes read in whole compressed chunks: ceil(result / chunk length) chunks of the
             table's chunk_length_in_kb, each costing what a chunk of the table's SSTables really
             takes on disk (their CompressionInfo.db: compressed bytes ÷ chunks, checksums included);
             uncompressed, in whole 4 KiB pages. At least one when the result is not empty, and one
             for each partition found of those an IN list on the partition key names (they lie
             apart, in token order). A range read (no partition key, or a token range) of a
             5.0 node's compressed SSTables reads compressed_read_ahead_buffer_size at a time
             (256 KiB by default; the node's setting, recorded at run time): at least that much, or
             the table's Data files if smaller; but only where the result itself needs a range (a
             LIMIT N scan without a filter). A filtering scan (ALLOW FILTERING, not every partition
             key column restricted: every partition of the table or token range read to keep the
             rows that match) gets no such floor: its result does not grow with the table, and what
             it needs is the rows it returns.
  index      the partition-index lookups the SSTable format needs, one SSTable: BIG reads its
             Index.db entry (one page; the Summary is held in memory, and no read is counted for
             it); BTI walks the Partitions.db trie (one page at least) and, for a partition with a
             row index, the Rows.db trie (one page); one lookup per partition found.

Shapes (docs/verdicts.md has each with its limits)
  index      through a secondary index (legacy or SAI): a chunk and a partition lookup per partition
             found (a row returned each, up to the table's partitions), no read-ahead (rows are read by
             key), and the index's own lookup in the index part (_secondary_index_bytes).
  DISTINCT   without partition key: the head of each partition returned, a chunk at least, and on 5.0
             the partition whole when smaller than the read-ahead buffer (the mean stored partition).
  IN         on a clustering column: a chunk per row named (they lie apart), up to the rows returned.
  element    one element of a collection or field of a frozen UDT: the whole cell is read. Its size is
             sampled at run time (node.cells: the query's first rows with those columns whole, as the
             node sent them), the mean sampled standing for every row; without the sample (a watch, a
             failed sample, an older trace) the rows' stored size (Statistics.db); at least the payload.

Its inputs are recorded at run time (meta cassandra.tables[].storage: casstrace.node.storage); a
trace without them (older traces, a node whose files casstrace could not read) takes a compressed
chunk at its full length: a chunk compresses to no less than 0 B, but data that would shrink much
is rare in tables that are read for their bytes, and this keeps the estimate on the side of clearing.

Limits: one SSTable (a partition spread over several is read from each: the many_sstables cause),
no tombstones, no other versions of the cells, the payload standing for the stored cells; a result
that spans a chunk boundary needs one chunk more than the model gives; index reads through memory
maps (5.0's mmap_index_only) are in no measure of the Data files, so the model errs towards
clearing by that part (a page or two). The data read it is compared with counts the Data files only.
"""

import dataclasses
import math

from casstrace.analyses.model import Amplification, NecessaryRead
from casstrace.analyses.query import Select, TableSchema
from casstrace.analyses.units import KIB, human_bytes
from casstrace.traces.meta import IndexMeta, WholeCellsMeta
from casstrace.traces.schema import PAGE_BYTES
from casstrace.traces.sstable_names import parse_sstable_path

# The value bytes of CQL's fixed-size types; any other type's cell may be as small as 1 B.
LEAST_CELL_BYTES = {
    "boolean": 1,
    "tinyint": 1,
    "smallint": 2,
    "int": 4,
    "float": 4,
    "date": 4,
    "inet": 4,
    "bigint": 8,
    "double": 8,
    "timestamp": 8,
    "time": 8,
    "counter": 8,
    "uuid": 16,
    "timeuuid": 16,
}


def necessary_read(
    select: Select | None,
    schema: TableSchema | None,
    *,
    payload_bytes: float | None,
    rows: float | None,
    rows_aggregated: int | None,
    read_ahead: int | None = None,
    least: bool = False,
    whole_cells: WholeCellsMeta | None = None,
) -> NecessaryRead | None:
    """Per execution: `payload_bytes` and `rows` returned by one execution (None: not known),
    `rows_aggregated` the live rows Cassandra read for it. None when the result cannot be modelled.
    `read_ahead`: the node's compressed_read_ahead_bytes (meta cassandra), what a range read of
    compressed SSTables reads at a time. `least`, without a payload: the selected cells at the least
    their types take (a text or blob cell 1 B), instead of the table's mean cell. `whole_cells`: the
    sample of the query's first rows with its elements and fields whole (meta whole_cells)."""
    if schema is None or select is None:
        return None
    result = _result_bytes(select, schema, payload_bytes, rows, rows_aggregated, least, whole_cells)
    if result is None:
        return None
    result_bytes, basis = result
    chunk_length, unit = _unit(schema)
    index_used = schema.index_used(select)
    found = _partitions_found(select, schema, rows, index_used is not None)
    # Rows an IN list on a clustering column names lie apart in their partition: a chunk each.
    apart = found * math.prod(select.in_values.get(column, 1) for column in schema.clustering)
    if rows is not None:
        apart = max(found, min(apart, math.ceil(rows)))
    stored = stored_data_bytes(schema)
    if select.distinct and not schema.reads_partitions(select) and stored and schema.stored_partitions:
        # DISTINCT's partitions follow one another in token order: small ones share their chunks.
        apart = min(apart, max(1, math.ceil(found * stored / schema.stored_partitions / unit)))
    units = max(apart, math.ceil(result_bytes / (chunk_length or PAGE_BYTES))) if result_bytes > 0 else 0
    data_bytes = units * unit
    if (
        read_ahead
        and chunk_length
        and stored
        and not schema.reads_partitions(select)
        and not filtering_scan(select, schema)
        and index_used is None
    ):
        # A range read reads compressed SSTables a read-ahead buffer at a time (5.0+); through an
        # index, each row found is read by its key.
        data_bytes = max(data_bytes, min(read_ahead, stored))
        basis += f", a range read ({read_ahead // KIB:,} KiB read-ahead)"
        if select.distinct and rows:
            # The head of each partition returned, in token order: a partition smaller than the buffer
            # is read whole (small ones share their chunks), a larger one a buffer.
            heads = found * min(read_ahead, math.ceil(stored / (schema.stored_partitions or found)))
            data_bytes = max(data_bytes, min(heads, stored))
            basis += ", the head of each partition"
    sstable_format = _format(schema)
    index = _index_bytes(schema, sstable_format) * found
    if index_used is not None:
        chunks = table_units(schema)
        if chunks is not None and units > chunks:
            # Rows found through an index lie in the table's chunks: read together (by a table keyed by
            # the indexed column, or a scan), each chunk once, however many rows it holds.
            units, data_bytes = chunks, chunks * unit
            index = min(index, _partition_index_size(schema) or index)
            basis += f", at most the table's {chunks:,} chunks"
        index += _secondary_index_bytes(index_used, schema, unit)
        basis += f", through the {index_used['kind']} index {index_used['name']}"
    return NecessaryRead(
        bytes=data_bytes + index,
        data_bytes=data_bytes,
        index_bytes=index,
        result_bytes=round(result_bytes),
        basis=basis,
        units=units,
        unit_bytes=unit,
        chunk_length=chunk_length,
        sstable_format=sstable_format,
    )


def filtering_scan(select: Select, schema: TableSchema) -> bool:
    """A scan whose result does not grow with the table: every partition (of the table, or of a token
    range) read to keep the rows a filter matches, where a table keyed by the filtered column would
    read those rows alone."""
    return (
        select.allow_filtering
        and bool(select.restrictions)
        and not schema.reads_partitions(select)
        and schema.index_used(select) is None
    )


def stored_data_bytes(schema: TableSchema) -> int:
    """The table's Data files on disk (its SSTables' as recorded), what a scan of it reads at most."""
    return sum(sstable.get("data_bytes", 0) for sstable in schema.storage)


def _partitions_found(select: Select, schema: TableSchema, rows: float | None, indexed: bool) -> int:
    """Partitions the result's rows lie in, each costing a chunk and a partition-index lookup: those
    an IN list on the partition key names (they lie apart, in token order) that were found; through a
    secondary index, or for DISTINCT without partition key, one a row returned (up to the table's)."""
    if indexed or (select.distinct and not schema.reads_partitions(select)):
        returned = math.ceil(rows) if rows else 1
        return max(1, min(returned, schema.stored_partitions or returned))
    partitions = schema.partitions_read(select)
    return max(1, min(partitions, math.ceil(rows))) if rows is not None else partitions


def _secondary_index_bytes(index: IndexMeta, schema: TableSchema, unit: int) -> int:
    """The lookup of the secondary index itself: a legacy index reads the value's partition of its
    hidden table (an index page and a chunk), each SSTable of it; SAI, each SSTable of the table,
    walks its terms trie and reads the postings (a page each of its TermsData and PostingLists), then
    maps row ids to keys (a page of the SSTable's own SAI components). Each at most its files' size
    on disk as recorded at run time (the SSTables' listing), else a page."""
    files = [(name, f.get("size", 0)) for f in schema.sstables if (name := parse_sstable_path(f["path"]))]
    if index["kind"] == "legacy":
        own: dict[tuple, int] = {}
        for name, size in files:
            if name.index == index["name"] and name.component in ("Data", "Index", "Partitions", "Rows"):
                own[name.sstable] = own.get(name.sstable, 0) + size
        return sum(min(PAGE_BYTES + unit, size) for size in own.values()) if own else PAGE_BYTES + unit
    sstables: dict[tuple, dict[str, int]] = {}
    for name, size in files:
        if name.component == "SAI" and name.attached_index in (index["name"], None):
            parts = sstables.setdefault(name.sstable, {})
            key = name.part.rsplit(" ", 1)[-1] if name.attached_index else "keys"
            parts[key] = parts.get(key, 0) + size
    if not sstables:
        return max(1, len(schema.storage)) * 3 * PAGE_BYTES
    return sum(
        min(PAGE_BYTES, parts.get(part, PAGE_BYTES))
        for parts in sstables.values()
        for part in ("TermsData", "PostingLists", "keys")
    )


def table_units(schema: TableSchema) -> int | None:
    """The chunks of the table's SSTables (4 KiB pages uncompressed), None when not recorded."""
    layouts = [s["compression"] for s in schema.storage if s.get("compression")]
    if layouts:
        return sum(layout["chunks"] for layout in layouts)
    stored = stored_data_bytes(schema)
    return math.ceil(stored / PAGE_BYTES) if stored else None


def _partition_index_size(schema: TableSchema) -> int:
    """The table's partition index files on disk (Index.db, or Partitions.db and Rows.db): what
    partition lookups read at most, however many (0: not recorded)."""
    return sum(s.get("index_bytes", 0) + s.get("row_index_bytes", 0) for s in schema.storage)


def stored_cell_bytes(schema: TableSchema) -> float | None:
    """Uncompressed bytes per cell over the table's SSTables (Statistics.db), None when not recorded."""
    data = cells = 0
    for sstable in schema.storage:
        stats = sstable.get("stats") or {}
        layout = sstable.get("compression")
        size = layout["data_length"] if layout else sstable.get("data_bytes")
        if stats.get("cells") and size:
            data += size
            cells += stats["cells"]
    return data / cells if cells else None


def stored_row_bytes(schema: TableSchema) -> float | None:
    """Uncompressed bytes per row over the table's SSTables, None when not recorded: a partition
    each without clustering columns, else their cells ÷ the regular columns (stored_rows)."""
    length = sum(
        layout["data_length"] if (layout := sstable.get("compression")) else sstable.get("data_bytes", 0)
        for sstable in schema.storage
    )
    rows = stored_rows(schema) if schema.clustering else schema.stored_partitions
    return length / rows if rows and length else None


def stored_rows(schema: TableSchema) -> int | None:
    """Rows in the table's SSTables (their cells ÷ the regular columns: every column set), None when
    not recorded: what a scan of the whole table reads."""
    cells = [sstable["stats"]["cells"] for sstable in schema.storage if "cells" in (sstable.get("stats") or {})]
    return sum(cells) // max(1, len(schema.regular_columns)) if cells else None


def _result_bytes(
    select: Select,
    schema: TableSchema,
    payload_bytes: float | None,
    rows: float | None,
    rows_aggregated: int | None,
    least: bool,
    whole_cells: WholeCellsMeta | None = None,
) -> tuple[float, str] | None:
    cell = stored_cell_bytes(schema)
    regular = max(1, len(schema.regular_columns))
    if select.aggregate:
        if rows_aggregated is None or cell is None:
            return None
        return (
            rows_aggregated * cell * regular,
            f"the {rows_aggregated:,} rows aggregated (Cassandra's count) x {cell * regular:,.0f} B stored per row",
        )
    if payload_bytes is not None:
        if select.elements and rows and (element := _whole_cell_bytes(schema, whole_cells)) is not None:
            whole, source = element
            if rows * whole > payload_bytes:  # one element or field is returned, the whole cell is read
                return rows * whole, f"{rows:,.0f} rows of {whole:,.0f} B {source}"
        return payload_bytes, "the payload returned"
    if rows is None:
        return None
    regular_columns = schema.regular_columns
    columns = regular_columns if select.select_all else [c for c in select.columns if c in regular_columns]
    if least:
        per_row = sum(LEAST_CELL_BYTES.get(schema.columns[c].get("type", ""), 1) for c in columns) or 1
        return rows * per_row, f"{rows:,.0f} rows x at least {per_row:,} B of the selected cells (their types)"
    if cell is None:
        return None
    selected = max(1, len(columns))
    return rows * selected * cell, f"{rows:,.0f} rows x {selected} cells x {cell:,.0f} B stored per cell"


def _whole_cell_bytes(schema: TableSchema, whole_cells: WholeCellsMeta | None) -> tuple[float, str] | None:
    """(bytes a row's selected cells take whole, where that comes from): the sample of the query's
    first rows with its elements and fields whole, else the table's stored row (Statistics.db)."""
    if whole_cells and whole_cells.get("rows"):
        sampled = whole_cells["rows"]
        return whole_cells.get("payload_bytes", 0) / sampled, (
            f"with the whole cells (their size sampled on the first {sampled:,} row{'s' * (sampled != 1)})"
        )
    stored = stored_row_bytes(schema)
    return (stored, "stored, whole rows (the cells' own size not sampled)") if stored is not None else None


def _unit(schema: TableSchema) -> tuple[int | None, int]:
    """(chunk length or None, what one chunk or page costs to read)."""
    layouts = [s["compression"] for s in schema.storage if s.get("compression")]
    if layouts:
        chunks = sum(layout["chunks"] for layout in layouts)
        stored = sum(layout["compressed_bytes"] for layout in layouts)
        length = layouts[0]["chunk_length"]
        return length, math.ceil(stored / chunks) if chunks else length
    # Without a recorded layout: the table's chunk length, when its SSTables are compressed (they
    # have CompressionInfo.db files; no SSTable listed: what the table says).
    components = {name.component for f in schema.sstables if (name := parse_sstable_path(f["path"]))}
    listed = bool(components & {"TOC", "Statistics"})  # every component listed, not just some
    compressed = "CompressionInfo" in components if listed else schema.chunk_bytes is not None
    if compressed and schema.chunk_bytes:
        return schema.chunk_bytes, schema.chunk_bytes
    return None, PAGE_BYTES


def _format(schema: TableSchema) -> str | None:
    formats = {s["format"] for s in schema.storage if s.get("format")}
    formats |= {name.format for f in schema.sstables if (name := parse_sstable_path(f["path"]))}
    return formats.pop() if len(formats) == 1 else None


def _index_bytes(schema: TableSchema, sstable_format: str | None) -> int:
    index = [s["index_bytes"] for s in schema.storage if "index_bytes" in s]
    first_page = min([PAGE_BYTES, *index])
    if sstable_format == "bti" and any(s.get("row_index_bytes") for s in schema.storage):
        return first_page + PAGE_BYTES
    return first_page


def against_necessary(amplification: Amplification, necessary: NecessaryRead | None, executions: int) -> Amplification:
    """The amplification with the necessary read of its `executions` executions beside the payload."""
    if necessary is None:
        return amplification
    total = necessary.bytes * executions
    return dataclasses.replace(
        amplification, necessary_bytes=total, over_necessary=amplification.data_read_bytes / total if total else None
    )


def describe(necessary: NecessaryRead) -> str:
    """'2 compressed chunks of 15.2 KiB for 19.5 KiB of the payload returned + 4.0 KiB of partition index'."""
    unit = "compressed chunk" if necessary.chunk_length else "4 KiB page"
    stored = f" of {human_bytes(necessary.unit_bytes)}" if necessary.chunk_length else ""
    return (
        f"{necessary.units:,} {unit}{'s' * (necessary.units != 1)}{stored} for "
        f"{human_bytes(necessary.result_bytes)} of {necessary.basis} + "
        f"{human_bytes(necessary.index_bytes)} of partition index"
    )
