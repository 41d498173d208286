"""The structured values of a trace's meta table that one layer writes and another reads.

meta 'query_trace' is Cassandra's own trace of the tracing execution (casstrace.node.query.query_traces),
one QueryTraceSession per page; an import has none.

META_TYPES is the type of every meta value traces/schema.py documents: a trace is readable only
when its meta holds values of those types (traces/reader.py checks it when it opens one), so that no
analysis meets a string where its number should be.

meta 'cassandra' is written by casstrace.node.context.gather (a run) or by an import that knows
less (a sysdig capture knows at most the disk access mode), and read by the analyses: every key may
be missing from a trace, and a missing key means "not recorded", never an empty value.
"""

import types
import typing
from collections.abc import Mapping
from typing import Any, Literal, NotRequired, TypedDict, Union

from casstrace.traces.storage import SSTableStorage


class WriteMeta(TypedDict):
    """A run of a write (on casstrace's own sandbox): what each execution wrote. Counts only: the
    values casstrace generated for its markers are never stored."""

    kind: str  # 'INSERT' | 'UPDATE' | 'DELETE' | 'BEGIN BATCH' | 'BEGIN UNLOGGED BATCH' | 'BEGIN COUNTER BATCH'
    statements: int  # the rows each execution writes (INSERT, UPDATE or DELETE statements: a batch's count)
    bind_markers: int  # values generated per execution


class ColumnMeta(TypedDict):
    name: str
    type: str  # CQL type, as system_schema.columns writes it
    kind: str  # 'partition_key' | 'clustering' | 'static' | 'regular'


class SSTableFileMeta(TypedDict):
    path: str
    size: int  # bytes on disk when the run started


class IndexMeta(TypedDict):
    """A secondary index of the table (system_schema.indexes)."""

    name: str
    target: str  # the indexed column (as the index's options name it: 'values(tags)' for a collection's)
    kind: str  # 'sai' (5.0's storage-attached index), 'legacy' (a hidden table per index), or the class


class WholeCellsMeta(TypedDict, total=False):
    """The first rows of a query that selects an element of a collection or a field of a UDT, with those
    columns whole (casstrace.node.cells): what the node reads for them. Sizes only, never a value."""

    rows: int  # rows sampled (0: none came back, or the sample failed)
    payload_bytes: int  # their bytes as the node sent them (the whole cells, and any other column selected)
    failed: str  # why the sample failed, when it did


class TableMeta(TypedDict, total=False):
    keyspace: str
    table: str
    id: str  # the table id (a UUID), which names its directory
    columns: list[ColumnMeta]
    partition_key: list[str]
    clustering: list[str]
    compression: dict[str, str]  # system_schema.tables compression options
    sstables: list[SSTableFileMeta]
    storage: list[SSTableStorage]  # per live SSTable: chunks and statistics (traces.storage)
    indexes: list[IndexMeta]  # its secondary indexes
    base_table: str  # a materialized view's: the table it is a view of (its own SSTables are read)


class CassandraMeta(TypedDict, total=False):
    release_version: str
    disk_access_mode: str  # as the node reports it ('standard' for mmap_index_only), or 'unknown'
    data_file_directories: list[str]
    tables: list[TableMeta]
    compressed_read_ahead_bytes: int  # 5.0+: what a range read of compressed SSTables reads at a time
    commitlog_sync: str  # 'periodic', 'batch' or 'group': when a write's commit-log append is synced
    commitlog_disk_access_mode: str  # 5.0+: 'legacy' (mapped segments), 'direct', 'auto', ...


class QueryTraceEvent(TypedDict):
    activity: str  # what the node did, in its words (work, never values)
    source_elapsed_us: int | None
    thread: str
    source: NotRequired[str | None]  # format 3: the address of the node that recorded it


class QueryTraceSession(TypedDict):
    session_id: str
    duration_us: int | None
    events: list[QueryTraceEvent]


class NodeMeta(TypedDict, total=False):
    host: str
    address: str  # an agent's own capture meta (casstrace.orchestration.agents)
    port: int
    pid: int | None


class ReplicasMeta(TypedDict, total=False):
    keyspace: str | None
    consistency: str
    routing: str
    partitions: int
    ssh: bool


class WatchMeta(TypedDict, total=False):
    sample_probability: float
    previous_probability: float | None
    probability_restored: bool | None
    duration_s: float
    start_ns: int
    end_ns: int
    thread_map: str
    casstrace_addresses: list[str]  # casstrace's own connections to the node, 'ip:port'
    own_sandbox: bool  # a node casstrace started (node.own_sandbox): `run` may write to it


class ProfileMeta(TypedDict, total=False):
    profiler: str
    read_method: str
    wall_interval_ns: int
    window_ids: list[int]
    samples: int
    read_calls: int
    read_bytes: int
    joined_calls: int
    joined_bytes: int
    fill_join_ns: int
    fill_pages: int
    joined_fill_pages: int
    sampled_fill_pages: int
    other_threads: "OtherThreadsMeta"  # a profile of the serving threads: what it left out


class OtherThreadsMeta(TypedDict):
    """Other threads' wall-clock samples and read calls in the profiled windows, left out of a profile
    of the threads that served the executions."""

    samples: int
    read_calls: int
    read_bytes: int


class GcPauseMeta(TypedDict):
    """A GC pause that overlapped an execution's window (casstrace.node.gc_pauses)."""

    window_id: int
    collector: str
    pause_ns: int
    overlap_ns: int
    end_ns: int
    heap_before_bytes: int | None
    heap_after_bytes: int | None
    heap_bytes: int | None


class JvmPause(TypedDict):
    """A pause of the JVM (casstrace.node.gc_pauses): a GC's or a safepoint's, on the trace's clock."""

    kind: Literal["gc", "safepoint"]
    what: str  # the collector's pause ('Pause Young (Normal) (G1 Evacuation Pause)') or the VM operation
    start_ns: int
    end_ns: int


class TableActivity(TypedDict):
    """A table's memtable flushes, local reads and writes over a watch, and its memtable's size at the end
    (casstrace.node.tablestats)."""

    table: str  # 'ks.table'
    flushes: int
    reads: int
    writes: int
    memtable_bytes: int


class TableActivityMeta(TypedDict):
    tables: int  # the schema's table count
    active: list[TableActivity]  # the tables that flushed or served a request during the watch


class TableBackgroundMeta(TypedDict, total=False):
    """The node's side of its tables' background work over a watch (node.tablestats.background), 'ks.table'
    -> figure; a key absent: not measured."""

    pending_compactions_start: dict[str, int]  # nodetool compactionstats, the tables with any
    pending_compactions_end: dict[str, int]
    pending_compactions_max: dict[str, int]  # the most of the readings taken
    received_bytes: dict[str, int]  # mutation bytes of the memtables it flushed (the node's log)


class TraceMeta(TypedDict, total=False):
    """A trace's meta table, key by key (traces/schema.py documents each): what Trace.meta is, so that
    mypy checks every read of it. Every key may be missing (a trace of another kind, an older format)."""

    format_version: int
    casstrace_version: str
    complete: bool
    incomplete_reason: str
    backend: str
    capabilities: list[str]
    source: str
    measures: dict[str, bool]
    unlogged_fill_pages: int
    mapped_unmeasured: dict[str, str]
    cold: dict[str, int | bool]
    hostname: str | None
    kernel: str | None
    pid: int | None
    process: str | None
    capture_start_ns: int
    capture_end_ns: int
    clock_offset_ns: int
    slot_ns: int
    heatmap_offset_bytes: int
    lost_events: int
    unstreamed_events: int
    aggregate_overflows: int
    ended_early: str
    notes: list[str]
    sysdig_version: str
    query: str
    leaf_digest: str
    keyspace: str | None
    consistency: str
    page_size: int | None
    paging: dict[str, int | bool | str | None]
    whole_cells: WholeCellsMeta
    write: WriteMeta
    node: NodeMeta
    client_addresses: list[str]
    cassandra: CassandraMeta
    query_trace: list[QueryTraceSession]
    replicas: ReplicasMeta
    thread_slot_ns: int
    watch: WatchMeta
    profile: ProfileMeta
    clock: dict[str, int]
    gc_pauses: list[GcPauseMeta]
    jvm_pauses: list[JvmPause]
    table_activity: TableActivityMeta
    table_background: TableBackgroundMeta


# The type of every meta value, checked when a trace is opened (traces/reader.py)
META_TYPES: dict[str, Any] = dict(TraceMeta.__annotations__)


def meta_type_error(meta: Mapping[str, object]) -> str | None:
    """Where `meta` holds a value not of its META_TYPES type ('measures.offsets: "yes" is not a bool'),
    or None. Keys it does not know, and keys a TypedDict says may be missing, are left alone."""
    for key, value in meta.items():
        if key in META_TYPES:
            wrong = _mismatch(value, META_TYPES[key], key)
            if wrong:
                return wrong
    return None


def _mismatch(value: Any, kind: Any, where: str) -> str | None:
    origin, args = typing.get_origin(kind), typing.get_args(kind)
    if origin in (Union, types.UnionType):
        found = [_mismatch(value, option, where) for option in args]
        return None if None in found else next(wrong for wrong in found if wrong)
    if kind is type(None) or kind is None:
        return None if value is None else f"{where}: {value!r:.40} is not null"
    if origin is Literal:
        return None if value in args else f"{where}: {value!r:.40} is none of {', '.join(map(repr, args))}"
    if typing.is_typeddict(kind):
        if not isinstance(value, dict):
            return f"{where}: {value!r:.40} is not an object"
        missing = sorted(kind.__required_keys__ - value.keys())
        if missing:
            return f"{where}: {missing[0]} is missing"
        hints = typing.get_type_hints(kind)
        return next(
            (
                wrong
                for key, item in value.items()
                if key in hints
                for wrong in [_mismatch(item, hints[key], f"{where}.{key}")]
                if wrong
            ),
            None,
        )
    if origin is list:
        if not isinstance(value, list):
            return f"{where}: {value!r:.40} is not a list"
        return next(
            (wrong for at, item in enumerate(value) for wrong in [_mismatch(item, args[0], f"{where}[{at}]")] if wrong),
            None,
        )
    if origin is dict:
        if not isinstance(value, dict):
            return f"{where}: {value!r:.40} is not an object"
        return next(
            (wrong for key, item in value.items() for wrong in [_mismatch(item, args[1], f"{where}.{key}")] if wrong),
            None,
        )
    # JSON has one number type: an int is a float; a bool is no int (json.loads reads true as True)
    if kind is float and isinstance(value, int) and not isinstance(value, bool):
        return None
    if isinstance(value, kind) and not (kind is int and isinstance(value, bool)):
        return None
    return f"{where}: {value!r:.40} is not {'an' if kind is int else 'a'} {kind.__name__}"
