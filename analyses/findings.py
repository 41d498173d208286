"""The findings seam: every cause is a `Finder` over one `FindingContext`, and `find` weighs what they find.

A finder is a function from the context to a Finding or None (casstrace.analyses.causes holds them
all, in CAUSE_FINDERS). The context is everything a finder may use, built once per analysis: by
`analyse` from a run trace (payload, the necessary read, Cassandra's query trace, the nodes), or by
`casstrace watch` from a statement's sampled sessions (no payload, rows and counts from Cassandra's
trace events). A finder reads only the context, so both commands name causes the same way.

Weighing (`find`): a finding that carries `read_after_fix_bytes` (the estimated Data bytes per
execution once its fix is made) is given the share of the excess over the necessary read that the
fix removes. When the verdict flags the read, what the finders find are its causes, the largest
share first, then those with no estimate: a fix whose saving in bytes cannot be told (such as a
clustering restriction that would change the result), then the findings about time (GC pauses, CPU per
cell), which are not why the read is flagged, by the time their fix saves; a cause whose fix removes less than
SMALL_SHARE of the excess is said no more surely than "possible", and comes after the larger ones.
When the read is not flagged, what they find are notes (SSTables per read, tombstones, cold cache,
chunk overhead: what costs latency more than bytes), reported all the same.
"""

from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from typing import Protocol

from casstrace.analyses.model import FileIO, Finding, NecessaryRead, NodeIO
from casstrace.analyses.query import Select, TableSchema
from casstrace.traces.activities import LIVE_AND_TOMBSTONES, MERGED_SSTABLES
from casstrace.traces.meta import QueryTraceEvent, QueryTraceSession

SMALL_SHARE = 0.25  # a fix that removes less of the excess than this saves little


@dataclass(frozen=True)
class CassandraCounts:
    """What Cassandra's own trace says of one read (None: not in the trace)."""

    live_rows: int | None = None
    tombstone_cells: int | None = None
    sstables_merged: int | None = None


@dataclass(frozen=True)
class FindingContext:
    """Everything a finder may use. Byte figures are over `executions` measured executions;
    `necessary` is per execution."""

    flagged: bool  # the verdict flagged the read
    threshold: float
    executions: int  # measured executions the byte figures cover (at least 1)
    data_read_bytes: int  # the queried table's Data files, as the amplification counts them
    syscall_bytes: int  # of which read syscalls returned
    cache_outside_syscall_bytes: int | None  # page-cache fills outside those (None: not measured)
    payload_bytes: int | None  # None: not measured (watch, imports)
    rows: int | None  # rows returned over the executions (None: unknown)
    necessary: NecessaryRead | None  # the least the storage engine must read per execution
    select: Select | None
    schema: TableSchema | None
    sstables_read: list[int] = field(default_factory=list)  # per execution, SSTables whose Data file was read
    cassandra: list[CassandraCounts] = field(default_factory=list)  # per read Cassandra traced
    cassandra_executions: int = 1  # the executions those reads belong to (a run traces one)
    data_files: list[FileIO] = field(default_factory=list)  # the queried table's Data files' I/O
    page_cache_measured: bool = False
    disk_access_mode: str | None = None
    nodes: list[NodeIO] = field(default_factory=list)  # a multi-node run trace's nodes
    consistency: str | None = None
    # the per-window measures of each measured execution (name -> value: casstrace.analyses.measures)
    measures: list[dict[str, float]] = field(default_factory=list)
    batch: "BatchFigures | None" = None  # a batch statement's, per execution (watch); None: not a batch
    commitlog: "CommitLogWait | None" = None  # a write's time in the commit log (watch); None: not measured

    @property
    def read_per_execution(self) -> float:
        return self.data_read_bytes / self.executions

    @property
    def rows_per_execution(self) -> float | None:
        return self.rows / self.executions if self.rows is not None else None

    @property
    def payload_per_execution(self) -> float | None:
        return self.payload_bytes / self.executions if self.payload_bytes is not None else None

    @property
    def excess_per_execution(self) -> float | None:
        """Data bytes read per execution beyond the necessary read (None: no necessary read)."""
        if self.necessary is None:
            return None
        return max(0.0, self.read_per_execution - self.necessary.bytes)

    @property
    def live_rows_read(self) -> float | None:
        """Rows Cassandra read per execution it traced (its trace: 'Read N live rows', summed over
        its reads: pages, ranges, and every replica that read)."""
        rows = live_rows(self.cassandra)
        return rows / self.cassandra_executions if rows is not None else None


@dataclass(frozen=True)
class BatchFigures:
    """A batch statement per execution, as a watch saw it (None: not known)."""

    statements: int | None  # in its text (None: a driver's batch names none)
    partitions: float | None  # mutations its trace events applied
    wire_bytes: float | None  # its request on the wire
    node_ns: float | None  # the node's time on it (the session's duration)
    logged: bool | None


@dataclass(frozen=True)
class CommitLogWait:
    """A write statement's time in the commit log per execution, and the commit log's syncs over the
    watch (None: not known)."""

    commitlog_ns: float | None  # from each append to its thread's next event: the append, and any wait for the sync
    node_ns: float | None  # the session's duration
    syncs: int  # sync calls of the commit log's segments
    sync_p99_ns: float | None  # the upper edge of its latency bucket
    shares_data_device: bool | None  # its segments on a device the data files are on too


class Finder(Protocol):
    """One cause: its finding when the context gives evidence for it, else None."""

    def __call__(self, context: FindingContext) -> Finding | None: ...


@dataclass
class Found:
    causes: list[Finding]  # what a flagged read is flagged for, the largest share of the excess first
    notes: list[Finding]  # what was found in a read that is not flagged


def find(context: FindingContext, finders: tuple[Finder, ...]) -> Found:
    found = [finding for finder in finders if (finding := finder(context)) is not None]
    weighed = [_weigh(finding, context) for finding in found]
    if not context.flagged:
        # Notes about time by the time their fix saves, the most first; the others as found.
        weighed.sort(key=lambda f: -(f.saves_ns or 0.0))
        return Found([], weighed)
    # The largest share first; those the seam could not weigh (no estimate) after every weighed one:
    # first those about bytes, since they are what the read is flagged for, then those about time (a
    # GC pause during a huge read is not why it read too much), by the time their fix saves.
    weighed.sort(
        key=lambda f: (
            f.excess_share is None,
            -(f.excess_share or 0.0),
            f.saves_ns is not None,
            -(f.saves_ns or 0.0),
        )
    )
    return Found(weighed, [])


def _weigh(finding: Finding, context: FindingContext) -> Finding:
    excess = context.excess_per_execution
    if finding.read_after_fix_bytes is None or not excess:
        return finding
    saved = max(0.0, context.read_per_execution - finding.read_after_fix_bytes)
    share = min(1.0, saved / excess)
    certainty = "possible" if share < SMALL_SHARE else finding.certainty
    return replace(finding, excess_share=share, certainty=certainty)


def live_rows(counts: list[CassandraCounts]) -> int | None:
    known = [c.live_rows for c in counts if c.live_rows is not None]
    return sum(known) if known else None


def trace_counts(query_trace: list[QueryTraceSession]) -> list[CassandraCounts]:
    """Cassandra's counts per read, from its query trace: each 'Read N live rows and M tombstone
    cells' with the 'Merged data from memtables and K sstables' before it (one per replica read)."""
    counts: list[CassandraCounts] = []
    merged: int | None = None
    for event in trace_events(query_trace):
        activity = event.get("activity", "")
        if match := MERGED_SSTABLES.search(activity):
            merged = int(match.group(1))
        elif match := LIVE_AND_TOMBSTONES.search(activity):
            counts.append(CassandraCounts(int(match.group(1)), int(match.group(2)), merged))
            merged = None
    if merged is not None:
        counts.append(CassandraCounts(sstables_merged=merged))
    return counts


def trace_events(query_trace: list[QueryTraceSession]) -> Iterator[QueryTraceEvent]:
    for session in query_trace or []:
        yield from session.get("events") or []
