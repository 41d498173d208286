"""What a write cost, per execution and per row: a run of a write on casstrace's own sandbox (meta 'write').

A read is judged against the bytes its result needs; a write has no such figure, so it is not judged
(its verdict says so: model.Verdict reason 'write') and measured instead: per execution, the bytes its
client sent (measure client_request_bytes: the request frames) and the node read from the client's
connections (the kernel's count: those frames in protocol v5's segments, 10 bytes more each), the
rows it wrote (meta 'write') and the cells (regular columns set, from its text and the table's key
columns: statement_writes.write_shape, watch's definition), and what the node wrote by file kind —
the commit log (written through a memory map: the pages its stores dirtied), SSTables (a flush or a
compaction in the window), other files — with its latency and the node's time split, which the run
analysis has for every execution.
Per row: each figure over the measured executions, divided by the rows they wrote (the latency: the
median execution's, by its rows), so a batch of many rows and many single-row writes compare
(analyses.compare).

The write-path columns (format 5) are None where not measured, never 0: a figure the trace does not
have stays None here and in the reports.
"""

import statistics
from collections.abc import Iterable
from dataclasses import dataclass

from casstrace.analyses.amplification import client_sockets
from casstrace.analyses.model import FileWrites, Verdict
from casstrace.analyses.statement_writes import write_shape
from casstrace.analyses.units import human_bytes
from casstrace.analyses.write_io import WRITE_MEASURES, is_commitlog_segment, write_io
from casstrace.traces import Trace, queries
from casstrace.traces.sstable_names import parse_sstable_path

COMMIT_LOG = "commit log"
SSTABLES = "SSTables"
OTHER_FILES = "other files"
FILE_KINDS = (COMMIT_LOG, SSTABLES, OTHER_FILES)


def file_kind(path: str) -> str | None:
    """The kind of a file a write may write (None: not a regular file of the node's: a socket, a pipe)."""
    if not path.startswith("/"):
        return None
    if is_commitlog_segment(path):
        return COMMIT_LOG
    return SSTABLES if parse_sstable_path(path) is not None else OTHER_FILES


# A write's per-row figures: key (WriteCost.per_row_figures, the JSON's), words, unit ('bytes' | 'seconds')
PER_ROW_FIGURES = (
    ("request_bytes", "Sent to the node per row (request frames)", "bytes"),
    ("received_bytes", "Read by the node from the client per row (kernel)", "bytes"),
    ("latency_s", "Latency per row (median execution)", "seconds"),
    ("commit_log_dirtied_bytes", "Commit log: pages dirtied per row", "bytes"),
    ("sstables_dirtied_bytes", "SSTables: pages dirtied per row", "bytes"),
    ("sstables_written_bytes", "SSTables: write syscalls per row", "bytes"),
    ("other_written_bytes", "Other files: write syscalls per row", "bytes"),
)


@dataclass(frozen=True)
class WrittenBytes:
    """What the node wrote to one kind of file (None: not measured)."""

    kind: str  # one of FILE_KINDS
    write_bytes: int | None  # by write syscalls
    dirtied_bytes: int | None  # page-cache pages dirtied (by write syscalls and stores into mappings) x 4 KiB
    mapped_dirtied_bytes: int | None  # of those, dirtied by stores into a mapping (the mapped commit log)
    written_back_bytes: int | None  # from the page cache to the device, by any thread
    sync_calls: int | None


@dataclass(frozen=True)
class WriteExecution:
    execution: int
    kind: str  # 'warmup' | 'measured' | 'tracing'
    latency_s: float | None
    request_bytes: float | None  # what the client sent: its request frames (None: not measured)
    received_bytes: int | None  # what the node read from the client's connections, as the kernel counted (None: none)
    rows: int
    cells: int | None  # regular columns set (None: the table's key columns not known)
    written: tuple[WrittenBytes, ...]  # one per FILE_KINDS, in that order
    error: str | None = None

    def of(self, kind: str) -> WrittenBytes:
        return next(written for written in self.written if written.kind == kind)


@dataclass(frozen=True)
class WriteCost:
    statement: str  # its kind: 'INSERT', 'BEGIN UNLOGGED BATCH', ...
    rows_per_execution: int
    cells_per_execution: int | None  # regular columns set (None: the table's key columns not known)
    bind_markers: int
    executions: tuple[WriteExecution, ...]  # every execution; the figures below are the measured ones'

    @property
    def measured(self) -> list[WriteExecution]:
        return [e for e in self.executions if e.kind == "measured" and e.error is None]

    @property
    def rows(self) -> int:
        """Rows the measured executions wrote."""
        return sum(e.rows for e in self.measured)

    @property
    def cells(self) -> int | None:
        """Cells the measured executions wrote (None: not known)."""
        return None if self.cells_per_execution is None else self.cells_per_execution * len(self.measured)

    def per_row(self, values: Iterable[float | None]) -> float | None:
        """The measured executions' sum of a figure per row written (None: a value not measured, or no row)."""
        figures = list(values)
        if not figures or any(value is None for value in figures) or not self.rows:
            return None
        return sum(value for value in figures if value is not None) / self.rows

    @property
    def request_bytes_per_row(self) -> float | None:
        return self.per_row(e.request_bytes for e in self.measured)

    @property
    def received_bytes_per_row(self) -> float | None:
        return self.per_row(e.received_bytes for e in self.measured)

    @property
    def median_latency_s(self) -> float | None:
        latencies = [e.latency_s for e in self.measured if e.latency_s is not None]
        return statistics.median(latencies) if latencies else None

    @property
    def latency_per_row_s(self) -> float | None:
        """The median execution's latency per row it wrote (the median: one slow execution, a GC pause,
        would move a mean)."""
        median = self.median_latency_s
        return None if median is None or not self.rows_per_execution else median / self.rows_per_execution

    def dirtied_per_row(self, kind: str) -> float | None:
        return self.per_row(e.of(kind).dirtied_bytes for e in self.measured)

    def written_per_row(self, kind: str) -> float | None:
        return self.per_row(e.of(kind).write_bytes for e in self.measured)

    def per_row_figures(self) -> dict[str, float | None]:
        """Every per-row figure by its key (PER_ROW_FIGURES)."""
        return {
            "request_bytes": self.request_bytes_per_row,
            "received_bytes": self.received_bytes_per_row,
            "latency_s": self.latency_per_row_s,
            "commit_log_dirtied_bytes": self.dirtied_per_row(COMMIT_LOG),
            "sstables_dirtied_bytes": self.dirtied_per_row(SSTABLES),
            "sstables_written_bytes": self.written_per_row(SSTABLES),
            "other_written_bytes": self.written_per_row(OTHER_FILES),
        }

    @property
    def flushed(self) -> bool:
        """Whether an SSTable was written during a measured execution (a flush or compaction landed in it)."""
        return any((e.of(SSTABLES).write_bytes or 0) + (e.of(SSTABLES).dirtied_bytes or 0) for e in self.measured)


def _written(trace: Trace, window_id: int) -> tuple[WrittenBytes, ...]:
    """What the node wrote to each kind of file in a window: analyses.write_io's files, by kind (a kind
    no file of which was written wrote 0, as far as the capture measured the figure at all)."""
    measured = {name: trace.measured(name) for name in WRITE_MEASURES}
    by_kind: dict[str, list[FileWrites]] = {kind: [] for kind in FILE_KINDS}
    for written in write_io(trace, [window_id]).files:
        kind = file_kind(written.path)
        if kind is not None:
            by_kind[kind].append(written)

    def total(values: Iterable[int | None], measure: str) -> int | None:
        """None when not measured, of the capture or of one of the files (written back off ext4)."""
        figures = list(values)
        if not measured[measure] or any(figure is None for figure in figures):
            return None
        return sum(figure or 0 for figure in figures)

    return tuple(
        WrittenBytes(
            kind,
            sum(f.written_bytes for f in files),
            total((f.dirtied_bytes for f in files), "dirtied"),
            total((f.mapped_dirtied_bytes for f in files), "dirtied"),
            total((f.written_back_bytes for f in files), "written_back"),
            total((f.sync_calls for f in files), "syncs"),
        )
        for kind, files in by_kind.items()
    )


def _written_nothing() -> tuple[WrittenBytes, ...]:
    """An execution without a window (cut short before it began): nothing measured."""
    return tuple(WrittenBytes(kind, 0, None, None, None, None) for kind in FILE_KINDS)


def write_cost(trace: Trace, request_bytes: dict[int, float | None]) -> WriteCost | None:
    """The write's cost, from a run trace of a write (None: the trace is a read's, or no run's).
    `request_bytes`: each execution's client_request_bytes, by execution number (the run analysis's)."""
    write = trace.meta.get("write")
    if write is None:
        return None
    sockets = set(client_sockets(trace))
    shape = write_shape(trace.meta.get("query") or "", trace.meta.get("cassandra"))
    cells = None if shape is None else shape.cells

    def execution(record: queries.ExecutionRecord) -> WriteExecution:
        windows = [record.window_id] if record.window_id is not None else []
        received = [total.read_bytes for total in queries.file_totals(trace, windows) if total.file_id in sockets]
        return WriteExecution(
            record.execution,
            record.kind,
            record.latency_s,
            request_bytes.get(record.execution),
            sum(received) if received else None,
            write["statements"] if record.error is None else 0,
            cells if record.error is None else 0,
            _written(trace, record.window_id) if record.window_id is not None else _written_nothing(),
            record.error,
        )

    executions = tuple(execution(record) for record in queries.executions(trace))
    return WriteCost(write["kind"], write["statements"], cells, write["bind_markers"], executions)


def write_verdict(cost: WriteCost, notes: list[str]) -> Verdict:
    """A write's verdict: none, and why (the run's figures are its cost, not a judgement of it)."""
    sent = cost.request_bytes_per_row
    return Verdict(
        "undetermined",
        f"A write ({cost.statement}, {cost.rows_per_execution} row(s) an execution): the verdict weighs a read "
        "against the necessary read of its result, which does not apply to a write; its cost is below"
        + (f" ({human_bytes(sent)} sent per row)." if sent is not None else "."),
        notes,
        reason="write",
    )
