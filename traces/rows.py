"""The rows a capture hands to TraceWriter, one TypedDict per table declared in casstrace.traces.tables
(tests/unit/test_trace_tables.py holds each to its table's columns).

A capture backend (probes/) builds these and the writer inserts them: the keys are the table's
columns, so a misspelt column or a missing key is a type error at the seam instead of an SQL error
(or a silently empty column) at the end of a capture. Columns the schema gives a default or allows
NULL may be left out (NotRequired).
"""

from typing import NotRequired, TypedDict


class FileIORow(TypedDict):
    """file_io: exact totals of one file in one window."""

    window_id: int
    file_id: int
    read_calls: NotRequired[int]
    read_bytes: NotRequired[int]
    read_requested_bytes: NotRequired[int]
    read_ns: NotRequired[int | None]
    write_calls: NotRequired[int]
    write_bytes: NotRequired[int]
    lseek_calls: NotRequired[int]
    seek_jumps: NotRequired[int]
    longest_sequential_bytes: NotRequired[int]
    cache_miss_pages: NotRequired[int | None]
    cache_miss_bytes: NotRequired[int | None]
    mapped_touched_bytes: NotRequired[int | None]
    mapped_huge_bytes: NotRequired[int | None]
    dirtied_pages: NotRequired[int | None]
    mapped_dirtied_pages: NotRequired[int | None]
    written_back_bytes: NotRequired[int | None]
    sync_calls: NotRequired[int | None]
    sync_ns: NotRequired[int | None]


class MappingRow(TypedDict):
    """mappings: a file the process had mapped when the capture ended."""

    file_id: int
    mapped_bytes: int
    resident_bytes: int | None


class ReadSizeRow(TypedDict):
    """read_sizes: how many reads of one file in one window returned a size in one log2 bucket."""

    window_id: int
    file_id: int
    log2_bucket: int
    count: int


class CoverageRow(TypedDict):
    """coverage: a run of 4 KiB pages [first_page, first_page + page_count) touched in one window."""

    window_id: int
    file_id: int
    source: str  # 'syscall' | 'page_cache'
    first_page: int
    page_count: int


class HeatmapRow(TypedDict):
    """heatmap: reads of one file in one time slot and offset bucket."""

    file_id: int
    source: str  # 'syscall' | 'page_cache'
    slot: int
    offset_bucket: int
    calls: int
    bytes: int


class LatencyRow(TypedDict):
    """latency: calls of one syscall on one kind of target in one time slot and latency bucket."""

    slot: int
    syscall: str
    target: str  # 'file' | 'socket' | 'other' | 'none'
    bucket: int
    count: int


class SyncLatencyRow(TypedDict):
    """sync_latency (format 5): sync calls of one kind on one file in one window and latency bucket."""

    window_id: int
    file_id: int
    syscall: str  # 'fsync' | 'fdatasync' | 'msync' | 'sync_file_range'
    bucket: int
    count: int


class ExecutionRow(TypedDict):
    """executions: one execution of the query, as the client saw it."""

    execution: int
    kind: str  # 'warmup' | 'measured' | 'tracing'
    window_id: NotRequired[int | None]
    latency_s: NotRequired[float | None]
    rows: NotRequired[int | None]
    payload_bytes: NotRequired[int | None]
    wire_bytes: NotRequired[int | None]
    client_file_id: NotRequired[int | None]
    pages: NotRequired[int | None]
    error: NotRequired[str | None]
    coordinator: NotRequired[str | None]
    other_requests: NotRequired[int | None]


class WindowMeasureRow(TypedDict):
    """window_measures (format 4): one registered measure's value in one window (casstrace.traces.measures)."""

    window_id: int
    measure: str
    value: float


class NodeRow(TypedDict):
    """nodes (format 3): a node a run trace is about, captured or not."""

    node_id: int
    address: str
    host: NotRequired[str | None]
    datacenter: NotRequired[str | None]
    rack: NotRequired[str | None]
    replica: bool
    captured: bool
    not_captured: NotRequired[str | None]
    pid: NotRequired[int | None]
    clock_shift_ns: NotRequired[int | None]
    meta: NotRequired[str | None]  # JSON


# events: (ts_ns, tid, syscall, fd, file_id, offset, requested, returned, latency_ns, cache_miss_pages)
EventRow = tuple[int, int, str, int | None, int | None, int | None, int | None, int | None, int | None, int | None]


class PageCacheFillRow(TypedDict):
    """page_cache_fills: pages the page cache filled for one thread at one time, outside any logged read."""

    ts_ns: int
    tid: int
    file_id: int
    pages: int
    syscall: str | None  # the syscall in flight; None: a fault outside any syscall


class ProfileSampleRow(TypedDict):
    """profile_samples: wall-clock samples of one thread, on one stack, in one state, in one window."""

    window_id: int
    tid: int
    stack_id: int
    state: str | None
    samples: int


class ProfileReadRow(TypedDict):
    """profile_reads: read calls on one file in one window made from one Java stack, and their bytes."""

    window_id: int
    file_id: int
    stack_id: int
    calls: int
    bytes: int
    fill_bytes: NotRequired[int | None]
    fault_fill_bytes: NotRequired[int | None]


class ThreadCpuRow(TypedDict):
    """thread_cpu: one thread's on-CPU time within one time slot."""

    tid: int
    ts_ns: int
    slot_ns: int
    oncpu_ns: int
    node_id: NotRequired[int | None]  # the node in a trace of several (merged in; None: the one process)


class ThreadIORow(TypedDict):
    """thread_io: one thread's bytes from and to one file in one thread_slot_ns slot (watch, run)."""

    tid: int
    slot: int
    file_id: int
    read_calls: int
    read_bytes: int
    cache_miss_pages: int
    node_id: NotRequired[int | None]  # the node in a trace of several (merged in; None: the one process)
    write_calls: NotRequired[int | None]  # format 5 (None: not measured)
    write_bytes: NotRequired[int | None]
    dirtied_pages: NotRequired[int | None]
    mapped_dirtied_pages: NotRequired[int | None]


class StatementSessionRow(TypedDict):
    """statement_sessions: one request Cassandra traced during a watch; the statement normalized."""

    session: int
    session_id: str
    statement: str
    consistency: str | None
    client: str | None
    started_ns: int
    duration_ns: int | None
    live_rows: int | None
    tombstone_cells: int | None
    sstables_merged: int | None
    execution: NotRequired[int | None]  # a run's execution the session traced (None: a watch's)
    mutations: NotRequired[int | None]  # 'Appending to commitlog' events (None: none)
    commitlog_ns: NotRequired[int | None]  # from each to its thread's next event


class SessionThreadRow(TypedDict):
    """session_threads: a traced request's events on one thread, first to last."""

    session: int
    thread: str
    tid: int | None
    first_ns: int
    last_ns: int
    events: int
    source: NotRequired[str | None]  # the address of the node whose events these are (None: not recorded)
    node_id: NotRequired[int | None]  # that node's id in a trace of several captured ones (None: the one process)
