"""The structured values of a trace's meta table that one layer writes and another reads.

meta 'query_trace' is Cassandra's own trace of the tracing execution (casstrace.node.query.query_traces),
one QueryTraceSession per page; an import has none.

meta 'cassandra' is written by casstrace.node.context.gather (a run) or by an import that knows
less (a sysdig capture knows at most the disk access mode), and read by the analyses: every key may
be missing from a trace, and a missing key means "not recorded", never an empty value.
"""

from typing import NotRequired, TypedDict

from casstrace.traces.storage import SSTableStorage


class ColumnMeta(TypedDict):
    name: str
    type: str               # CQL type, as system_schema.columns writes it
    kind: str               # 'partition_key' | 'clustering' | 'static' | 'regular'


class SSTableFileMeta(TypedDict):
    path: str
    size: int               # bytes on disk when the run started


class TableMeta(TypedDict, total=False):
    keyspace: str
    table: str
    id: str                 # the table id (a UUID), which names its directory
    columns: list[ColumnMeta]
    partition_key: list[str]
    clustering: list[str]
    compression: dict[str, str]     # system_schema.tables compression options
    sstables: list[SSTableFileMeta]
    storage: list[SSTableStorage]   # per live SSTable: chunks and statistics (traces.storage)


class CassandraMeta(TypedDict, total=False):
    release_version: str
    disk_access_mode: str   # as the node reports it ('standard' for mmap_index_only), or 'unknown'
    data_file_directories: list[str]
    tables: list[TableMeta]
    compressed_read_ahead_bytes: int   # 5.0+: what a range read of compressed SSTables reads at a time


class QueryTraceEvent(TypedDict):
    activity: str               # what the node did, in its words (work, never values)
    source_elapsed_us: int | None
    thread: str
    source: NotRequired[str | None]   # format 3: the address of the node that recorded it


class QueryTraceSession(TypedDict):
    session_id: str
    duration_us: int | None
    events: list[QueryTraceEvent]
