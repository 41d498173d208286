"""What the analyses find, as plain data the reports render. None always means "not measured", never 0."""

import math
from dataclasses import dataclass, field, fields
from typing import TYPE_CHECKING, Literal, get_args

from casstrace.traces.meta import QueryTraceSession
from casstrace.traces.queries import ExecutionRecord
from casstrace.traces.schema import PAGE_BYTES
from casstrace.traces.sstable_names import SSTableName

if TYPE_CHECKING:
    from casstrace.analyses.write_cost import WriteCost


@dataclass
class FileIO:
    """One file's I/O over the analysed windows."""

    file_id: int
    path: str
    kind: str  # 'file' | 'socket' | 'pipe' | 'other' | 'unknown'
    size_bytes: int | None
    sstable: SSTableName | None
    read_calls: int = 0
    read_bytes: int = 0
    read_requested_bytes: int = 0
    read_ns: int | None = None
    write_calls: int = 0
    write_bytes: int = 0
    lseek_calls: int = 0
    seek_jumps: int = 0
    longest_sequential_bytes: int = 0
    cache_miss_bytes: int | None = None  # None: the backend did not measure the page cache
    mapped_touched_bytes: int | None = None  # mapped pages accessed (None: not measured)
    touched_bytes: int | None = None  # distinct bytes read by syscalls or filled into the page cache
    coverage: float | None = None  # touched_bytes / size_bytes
    read_sizes: dict[int, int] = field(default_factory=dict)  # log2 bucket (-1: 0 bytes) -> reads
    node: str | None = None  # address of the node whose JVM had the file (None: a one-node trace)

    @property
    def component(self) -> str | None:
        return self.sstable.component if self.sstable else None

    def on_node(self, name: str, several_nodes: bool) -> str:
        """`name` (the file's, as a report spells it), with its node's address in a trace of several
        nodes, where the nodes' paths may be alike."""
        return f"[{self.node}] {name}" if several_nodes and self.node else name


@dataclass
class FileWrites:
    """One file's writes; None: not measured."""

    file_id: int
    path: str
    node: str | None  # the node whose JVM had the file (None: a one-node trace)
    write_calls: int
    written_bytes: int  # by write syscalls
    dirtied_bytes: int | None  # 4 KiB pages dirtied, in bytes
    mapped_dirtied_bytes: int | None  # of which by stores into a mapping (no syscall)
    written_back_bytes: int | None
    sync_calls: int | None
    sync_ns: int | None
    sync_p50_ns: float | None  # upper edge of the latency bucket holding the percentile
    sync_p99_ns: float | None


@dataclass
class WriteIO:
    """Each file's writes (analyses.write_io)."""

    files: list[FileWrites]  # files written, dirtied, written back or synced, most bytes first
    unmeasured: dict[str, str] = field(default_factory=dict)  # WRITE_MEASURES label -> why it is not measured


@dataclass
class SSTableIO:
    """The files of one SSTable (keyspace, table, index, generation), one per component."""

    keyspace: str
    table: str
    index: str | None
    generation: int | str
    format: str
    version: str
    files: list[FileIO]

    @property
    def label(self) -> str:
        owner = f"{self.keyspace}.{self.table}" + (f".{self.index}" if self.index else "")
        return f"{owner} {self.version}-{self.generation}-{self.format}"

    def total(self, attribute: str) -> int | None:
        values = [getattr(f, attribute) for f in self.files]
        known = [v for v in values if v is not None]
        return sum(known) if known else None


@dataclass
class OffsetPoint:
    time_s: float  # since the capture started
    offset: int
    length: int  # bytes (reads), 0 for lseeks
    calls: int
    kind: str  # 'read' | 'lseek' | 'page_cache'


@dataclass
class AccessPattern:
    """How one file was read: the offset map and its summary."""

    file: FileIO
    source: str  # 'events' (one point per call) | 'heatmap' (calls per time slot x offset bucket) | 'none'
    source_note: str  # why this source, in words
    points: list[OffsetPoint]
    bucket_bytes: int | None  # heat-map offset bucket height
    slot_s: float | None  # heat-map time slot width
    read_size_median: int | None  # lower bound of the median read-size bucket


@dataclass
class Spectrogram:
    """Syscall counts by time slot (rows) and latency bucket (10 a decade, bucket 0 = 1 ns, 100 = 10 s)."""

    title: str
    slot_s: float
    counts: dict[tuple[int, int], int]  # (slot, bucket) -> syscalls
    slots: int  # number of slots in the capture
    total: int

    def time_rows(self, max_rows: int) -> tuple[int, int, int]:
        """(first slot, slots per row, rows): the slots from the first to the last with calls, merged
        into at most max_rows rows. Only for a spectrogram with calls."""
        slots = [slot for slot, _ in self.counts]
        first, last = min(slots), max(slots)
        per_row = max(1, math.ceil((last - first + 1) / max_rows))
        return first, per_row, (last - first) // per_row + 1


@dataclass
class SyscallLatency:
    syscall: str
    target: str
    count: int
    p50_ns: float  # upper edge of the latency bucket holding the percentile
    p90_ns: float
    p99_ns: float
    max_ns: float


@dataclass
class Busy:
    """What else the node read while the executions an amplification covers ran, for a run whose
    executions were charged by thread (analyses.attribution): never part of the query's figures."""

    executions: int  # executions charged by thread
    busy_executions: int  # of which other requests touched the node in the window
    other_requests: int | None  # requests of the node's other clients around the windows (None: not measured)
    table_bytes_by_others: int  # the queried table's Data bytes other threads read in the windows
    other_tables_bytes: int  # other tables' SSTable bytes read in the windows
    attributed_share: float | None  # of the queried table's Data bytes read in the windows, the query's threads' share
    # mapped pages of the Data files touched in busy windows: per process, no thread to charge, so in no
    # figure (None: mapped pages not measured)
    mapped_unattributed_bytes: int | None


@dataclass
class Amplification:
    """Bytes read from the queried table's data files against the bytes the query returned."""

    basis: str | None  # 'payload' | 'wire' | None (nothing to compare against)
    basis_bytes: int | None
    payload_bytes: int | None
    wire_bytes: int | None
    syscall_bytes: int  # bytes read syscalls returned from the Data files
    cache_miss_bytes: int | None  # page-cache fills of the Data files (None: not measured)
    cache_outside_syscall_bytes: int | None  # of those, pages no read syscall returned (mmap, readahead)
    data_read_bytes: int  # syscall_bytes + per window and file the larger of the two "outside" figures
    read: float | None  # data_read_bytes / basis_bytes: the verdict's figure
    syscall: float | None  # syscall_bytes / basis_bytes
    device: float | None  # cache_miss_bytes / basis_bytes
    wire: float | None  # data_read_bytes / wire_bytes
    carried_by: str | None = (
        None  # the measure that saw most: 'read syscalls' | 'page-cache fills' | 'mapped pages touched'
    )
    mapped_touched_bytes: int | None = None  # mapped pages of the Data files the JVM accessed (None: not measured)
    mapped_outside_syscall_bytes: int | None = None  # of those, pages no read syscall returned
    data_read_least_bytes: int | None = (
        None  # data_read_bytes where 2 MiB mappings count a touch 4 KiB (None: not measured)
    )
    read_least: float | None = None  # data_read_least_bytes / basis_bytes
    data_files: int = 0  # Data files read
    sstables_read: int = 0  # SSTables whose Data file was read
    # The necessary read (analyses.necessary) over the same executions, and data_read_bytes against it
    # (None: no model of the result's read: no query or table, no payload or rows)
    necessary_bytes: int | None = None
    over_necessary: float | None = None  # data_read_bytes / necessary_bytes: the verdict's figure
    busy: Busy | None = None  # what other requests read meanwhile (None: the windows' reads were charged whole)


@dataclass(frozen=True)
class IndexPart:
    """One part of a table's index files (SSTableName.part: 'Index', 'SAI people_team TermsData',
    'people_city Data' of a legacy index's hidden table), as the executions read it."""

    part: str
    read_bytes: int  # over the executions counted, by the one data_read formula
    file_bytes: int  # its files' size on disk, as the trace recorded them


@dataclass(frozen=True)
class IndexRead:
    """The index part of the read, measured: what the executions read from the queried table's index
    files (analyses.amplification.index_read), beside the Data read the verdict counts."""

    executions: int  # measured executions counted (those no other request overlapped)
    parts: list[IndexPart]  # every index part of the table, by name

    @property
    def read_bytes(self) -> int:
        return sum(part.read_bytes for part in self.parts)

    def per_execution(self, part: IndexPart | None = None) -> float:
        return (part.read_bytes if part is not None else self.read_bytes) / max(1, self.executions)


@dataclass(frozen=True)
class NecessaryRead:
    """The least the storage engine must read, per execution, to return the result with the table's
    settings (casstrace.analyses.necessary has the model and its limits)."""

    bytes: int  # data_bytes + index_bytes
    data_bytes: int  # units x unit_bytes
    index_bytes: int  # the partition-index lookups the format needs
    result_bytes: int  # the cells the result is computed from, as stored (uncompressed)
    basis: str  # where result_bytes comes from, in words
    units: int  # compressed chunks (or 4 KiB pages, uncompressed) those cells span at least
    unit_bytes: int  # what one of them costs to read: a compressed chunk as stored, or a page
    chunk_length: int | None  # the table's chunk_length_in_kb in bytes (None: not compressed)
    sstable_format: str | None  # 'big' | 'bti' (None: unknown)

    def reading(self, result_bytes: float) -> float:
        """The same read for a result of `result_bytes` (a fix's estimate): whole chunks or pages, and the index."""
        span = self.chunk_length or PAGE_BYTES
        units = math.ceil(result_bytes / span) if result_bytes > 0 else 0
        return units * self.unit_bytes + self.index_bytes


@dataclass(frozen=True)
class Execution(ExecutionRecord):
    """One execution of the query: its record in the trace (traces.queries.ExecutionRecord, the one
    declaration of its fields, from the trace API to the reports) and what the analyses found of it."""

    amplification: Amplification | None = None
    # per-window measures of its window (casstrace.analyses.measures): name -> value in its unit
    measures: dict[str, float] = field(default_factory=dict)
    # measures its window took that are not its own (analyses.measures.bounded_by_round_trip): name -> why
    undetermined: dict[str, str] = field(default_factory=dict)

    @classmethod
    def of(
        cls, record: ExecutionRecord, amplification: Amplification | None, measures: dict[str, float]
    ) -> "Execution":
        return cls(
            **{f.name: getattr(record, f.name) for f in fields(ExecutionRecord)},
            amplification=amplification,
            measures=measures,
        )


@dataclass(frozen=True)
class MeasureSummary:
    """A registered per-window measure (casstrace.traces.measures) over the measured executions."""

    name: str
    label: str
    unit: str  # 'ns' | 'bytes' | 'count'
    whose: str  # 'node' | 'client'
    executions: int  # measured executions with a value
    median: float
    p99: float
    total: float

    @property
    def heading(self) -> str:
        """Its label, saying whose it is when it is not the node's."""
        return self.label if self.whose == "node" else f"{self.label} ({self.whose})"


@dataclass(frozen=True)
class UndeterminedMeasure:
    """A registered per-window measure that some measured executions' windows took but that is not
    theirs alone (casstrace.analyses.measures.bounded_by_round_trip): left out of its summary."""

    name: str
    label: str
    unit: str  # 'ns' | 'bytes' | 'count'
    executions: int  # measured executions whose figure is undetermined
    of: int  # measured executions
    why: str  # the first of them's reason

    @property
    def text(self) -> str:
        return f"undetermined in {self.executions} of {self.of} executions: {self.why}"


@dataclass(frozen=True)
class TimeSplit:
    """The node's time per measured execution (the mean: its parts add up) split by what its request
    threads were doing (casstrace.probes.bcc.request_states): the parts, in order, and their sum."""

    executions: int  # measured executions with the node's time and its split
    parts_ns: dict[str, float]  # label -> mean ns: I/O wait, Running, Waiting for a CPU, GC pauses, The rest
    node_ns: float  # the mean node's time: the parts' sum (the measured parts never pass an execution's)

    @property
    def measured_share(self) -> float:
        """The share of the node's time the parts other than the rest explain."""
        return 1 - self.parts_ns[REST] / self.node_ns if self.node_ns else 0.0


REST = "The rest"  # the node's time none of the split's measures explains


@dataclass(frozen=True)
class CpuPerResult:
    """The node's CPU time of an execution over what it returned: medians over the measured executions
    that returned rows."""

    measure: str  # the CPU figure divided: 'serving_cpu_ns' (the threads that served it), else 'request_cpu_ns'
    label: str  # that measure's label
    executions: int
    per_execution_ns: float
    rows: float  # rows returned per execution
    cells_per_row: int | None  # cells each row returned (None: the table's columns are not known)
    per_row_ns: float
    per_cell_ns: float | None


# The causes a finding can name (casstrace.analyses.causes has a finder for each): stable identifiers,
# listed in the JSON schema (reports/run.py) and the README, which a test holds to this list.
Cause = Literal[
    "filtering_scan",
    "full_row_read",
    "whole_partition_scan",
    "compression_chunk_overhead",
    "readahead_inflation",
    "many_sstables",
    "tombstones",
    "expired_cells",
    "low_cardinality_index",
    "cold_cache",
    "replica_reads",
    "many_cells_per_row",
    "gc_pauses",
    "large_batch",
    "commitlog_sync",
]
CAUSES: tuple[Cause, ...] = get_args(Cause)
Certainty = Literal["measured", "likely", "possible"]


@dataclass
class Finding:
    cause: Cause
    title: str
    certainty: Certainty
    evidence: list[str]
    suggestion: list[str]
    # The Data bytes per execution the finder estimates would be read once its fix is made (None: its
    # fix saves no bytes it can estimate: a cost of latency), and the share of the excess over the
    # necessary read that this removes (None: not weighed).
    read_after_fix_bytes: float | None = None
    excess_share: float | None = None
    # The node's time per execution its fix would save (None: not a finding about time); findings about
    # time are weighed by it, the most first.
    saves_ns: float | None = None


@dataclass
class Verdict:
    status: str  # 'flagged' | 'not flagged' | 'undetermined'
    summary: str  # one sentence with the figure and what it is against
    notes: list[str] = field(default_factory=list)  # what the figure cannot see
    fix: str | None = None  # how to get a verdict, when it is undetermined for a reason the user can act on
    # why it is undetermined, as a code (None: it is not): the summary says it in words
    reason: "UndeterminedReason | None" = None


UndeterminedReason = Literal[
    "no_basis",  # no necessary read, payload or wire bytes to judge the read against
    "no_query",  # nothing read and nothing returned: no query in the capture
    "upper_bound_only",  # flagged only on an upper bound (2 MiB mappings)
    "unseen_reads",  # below the rule, but reads no measure saw could lift it (mapped files)
    "failed_run",  # no measured execution succeeded
    "node_not_captured",  # below the rule, but a node of the query was not captured
    "write",  # a write: the verdict weighs a read against its necessary read, which a write has not
]


@dataclass(frozen=True)
class Unseen:
    """Why reads of the queried table's Data files may be in no measure of a trace."""

    reason: str
    fix: str


@dataclass(frozen=True)
class WeightedStack:
    stack: tuple[str, ...]  # frame names, root first
    value: int  # samples (CPU) or bytes (reads)


@dataclass(frozen=True)
class StackBytes(WeightedStack):
    """A stack's Data bytes: value = syscall_bytes + fill_bytes (a cold read counts once as the bytes
    its call returned and once as the pages the page cache filled for it; a fault on a mapped file
    only as the latter)."""

    syscall_bytes: int = 0  # bytes read syscalls made from this stack returned
    fill_bytes: int = 0  # page-cache fill bytes put on it: in those calls, and faults (nearest sample)


@dataclass(frozen=True)
class FrameShare:
    frame: str
    bytes: int  # syscall + fill bytes on stacks that frame asked for
    share: float  # of the bytes on known stacks


@dataclass(frozen=True)
class OtherThreads:
    """What a profile of the serving threads left out: other threads' samples and reads in its windows."""

    samples: int  # wall-clock samples
    read_calls: int  # logged read calls (any file)
    read_bytes: int


@dataclass
class Profile:
    profiler: str
    read_method: str
    cpu_samples: int  # running samples of the serving threads
    threads: list[str]  # the serving threads, by name
    stacks_cpu: list[WeightedStack]  # most samples first
    stacks_bytes: list[StackBytes]  # most bytes (syscall + fill) first
    data_read_bytes: int  # bytes the logged reads returned from the Data files
    joined_bytes: int  # of which joined with a Java stack
    cassandra_bytes: int  # of which on stacks holding an org.apache.cassandra frame
    top_frames: list[FrameShare]  # the Cassandra frame that asked for the bytes (reading_frame), by bytes
    # Page-cache fills of the Data files (None: fills not put on stacks, a trace from before they were)
    data_fill_bytes: int | None = None  # the kernel's count (file_io.cache_miss_bytes)
    fill_call_bytes: int = 0  # of which inside read calls joined with a stack (exact)
    fill_fault_bytes: int = 0  # of which no read holds, on the faulting thread's nearest wall sample
    fill_cassandra_bytes: int = 0  # of those two, on stacks holding an org.apache.cassandra frame
    fill_join_ns: int | None = None  # how near that sample had to be
    # The fill bytes on no stack, by why: reads with no Java stack, faults with no sample that near,
    # fills neither log held (the kernel counted them, nothing says who)
    fill_undetermined: dict[str, int] = field(default_factory=dict)
    # run --profile with each execution traced: only the threads serving them were kept; what of
    # other threads' was left out in the profiled windows (None: every thread's kept)
    other_threads: OtherThreads | None = None

    @property
    def cassandra_share(self) -> float | None:
        """Share of the Data bytes read on stacks with Cassandra frames (None: nothing read)."""
        return self.cassandra_bytes / self.data_read_bytes if self.data_read_bytes else None

    @property
    def joined_share(self) -> float | None:
        return self.joined_bytes / self.data_read_bytes if self.data_read_bytes else None

    @property
    def fill_on_stacks_bytes(self) -> int:
        return self.fill_call_bytes + self.fill_fault_bytes

    @property
    def fill_undetermined_bytes(self) -> int:
        return sum(self.fill_undetermined.values())

    @property
    def fill_cassandra_share(self) -> float | None:
        """Share of the Data files' page-cache fills on stacks with Cassandra frames (None: no fill)."""
        return self.fill_cassandra_bytes / self.data_fill_bytes if self.data_fill_bytes else None


@dataclass
class NodeIO:
    """One node of a multi-node trace: its part in the read (analyses.nodes) and what it read over
    the measured executions. Every figure is None when the node was not captured."""

    node_id: int
    address: str
    host: str | None  # ssh destination; None: this machine
    datacenter: str | None
    rack: str | None
    replica: bool  # holds a replica of the queried partition
    captured: bool
    not_captured: str | None  # why not, when not captured
    pid: int | None
    roles: list[str]  # from Cassandra's query trace and the coordinators, in ROLE_ORDER
    executions: int  # measured executions the figures cover
    read_bytes: int | None  # bytes read syscalls returned from all its files (not sockets)
    amplification: Amplification | None  # its own Data files of the queried table
    wire_to_nodes_bytes: int | None  # bytes it wrote to other nodes (storage port)
    wire_to_client_bytes: int | None  # bytes it wrote to clients (native port)
    reads_in: list[int] = field(default_factory=list)  # the measured executions in which it read the Data files

    @property
    def role(self) -> str:
        """Its roles in one phrase: 'coordinator + data replica'; for a node Cassandra's trace (of one
        execution) gives no part, what it did in the measured ones: 'replica, read in 1 of 2 executions'."""
        if self.roles:
            return " + ".join(self.roles)
        what = "replica" if self.replica else "node"
        if self.reads_in:
            return f"{what}, read in {len(self.reads_in)} of {self.executions} executions"
        return f"{what}, no part in the traced read"

    @property
    def data_read_bytes(self) -> int | None:
        return self.amplification.data_read_bytes if self.amplification else None

    @property
    def read_data(self) -> bool:
        """Whether it read the queried table's Data files (None-safe: a node not captured did not, as far as known)."""
        return bool(self.data_read_bytes)


@dataclass
class Analysis:
    trace_path: str
    complete: bool
    warnings: list[str]  # incomplete capture, lost or unstreamed events, unmeasured measures
    measures: dict[str, bool]
    query: str | None
    keyspace: str | None
    table: str | None
    scope: str  # which windows the totals cover, in words
    threshold: float
    executions: list[Execution]
    overall: Amplification
    warmup: Amplification | None  # the warmup executions' reads, kept apart from the verdict (None: no warmup)
    verdict: Verdict
    findings: list[Finding]  # the causes of a flagged read, the largest share of the excess first
    files: list[FileIO]  # every file with I/O in scope, most bytes first
    sstables: list[SSTableIO]
    access: list[AccessPattern]
    spectrograms: list[Spectrogram]
    latencies: list[SyscallLatency]
    query_trace: list[QueryTraceSession]
    context: dict  # backend, source, node, Cassandra version, disk_access_mode, kernel, ...
    profile: Profile | None = None  # Java stacks of the reads and CPU samples (run --profile)
    nodes: list[NodeIO] = field(default_factory=list)  # a multi-node (format 3) run trace's nodes; [] otherwise
    consistency: str | None = None  # the run's consistency level (meta replicas/consistency)
    necessary: NecessaryRead | None = None  # per execution (None: no model of the result's read)
    index_read: IndexRead | None = None  # the index part of the read, measured (None: no index file)
    min_excess: int = 0  # bytes per execution past the necessary read below which nothing is flagged
    # What costs latency more than bytes (SSTables per read, tombstones, cold cache, chunk overhead),
    # and what was found below the threshold: reported whether the read is flagged or not
    latency_notes: list[Finding] = field(default_factory=list)
    # the per-window measures the trace took, over the measured executions (each execution's: .measures)
    measure_summaries: list[MeasureSummary] = field(default_factory=list)
    undetermined_measures: list[UndeterminedMeasure] = field(default_factory=list)  # left out of those summaries
    cpu_per_result: CpuPerResult | None = None  # the node's CPU per row and per cell returned
    time_split: TimeSplit | None = None  # None: the node's time or its split was not measured
    leaf_digest: str | None = None  # of the result's leaf values per row key (meta leaf_digest; None: not stored)
    write_cost: "WriteCost | None" = None  # a run of a write: its cost per execution and per row (analyses.write_cost)
    writes: WriteIO | None = None  # each file's writes (analyses.write_io; None: not analysed)

    @property
    def read_per_execution(self) -> float:
        """Data bytes read per measured execution (the whole capture's when none was recorded)."""
        return self.overall.data_read_bytes / max(1, sum(e.kind == "measured" for e in self.executions))

    @property
    def other_files(self) -> list[FileIO]:
        """Files that are not SSTable components (sockets, commit log, JVM and cgroup files)."""
        return [f for f in self.files if f.sstable is None]
