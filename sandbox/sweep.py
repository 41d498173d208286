"""The column-count study of the reference write-up, run on a sandbox node.

For each N, a wide table of N blob columns (every cell `cell_bytes` of random bytes) and its narrow
refactor (one row per column) are created in their own tables, `wide_N` and `narrow_N` of the
keyspace casstrace_sweep (the demo tables are never touched), loaded, flushed and compacted to one
SSTable each (casstrace.sandbox.demo.ensure_loaded), and one column is read under the probes from
each: the last one, c{N-1}, so the narrow table's read has to skip over the whole rest of the
partition to find it. What the sweep created is dropped as soon as it is traced, unless `keep`;
tables a previous --keep sweep left in place are reused and left alone.
"""

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from cassandra.cluster import Session

from casstrace.errors import CasstraceError
from casstrace.sandbox.control import Sandbox
from casstrace.sandbox.demo import DemoData, WideTable, ensure_loaded

if TYPE_CHECKING:
    from casstrace.orchestration.experiment import Captures, Plan, Progress
    from casstrace.orchestration.runner import RunOptions
    from casstrace.orchestration.targets import Target

SWEEP_KEYSPACE = "casstrace_sweep"
# A wide row is written as one mutation, and Cassandra refuses mutations over half a commit-log
# segment (32 MiB by default); the driver's frames stop at 16 MiB too.
MAX_ROW_BYTES = 15 * 2**20
# Progress is counted in bytes of cells: loading a table and compacting it cost about the same per
# byte on the 2-core reference machine, and one traced query (probe attach, executions, trace
# write) about as much as loading this many.
TRACE_COST_BYTES = 100 * 10**6


@dataclass(frozen=True)
class SweepPlan:
    columns: tuple[int, ...]  # the values of N
    rows: int
    cell_bytes: int
    repeat: int = 3
    warmup: int = 1
    cold: bool = False
    keep: bool = False
    keyspace: str = SWEEP_KEYSPACE

    def spec(self, columns: int) -> WideTable:
        return WideTable(
            keyspace=self.keyspace,
            table=f"wide_{columns}",
            narrow_table=f"narrow_{columns}",
            rows=self.rows,
            columns=columns,
            first_column_bytes=self.cell_bytes,
            other_column_bytes=self.cell_bytes,
        )

    def check(self, node_heap_bytes: int | None = None) -> None:
        """Refuse what the node cannot take: a row over one write, or tables that would overflow its memtables."""
        if not self.columns or min(self.columns) < 1:
            raise CasstraceError(
                "the sweep needs at least one column count of 1 or more",
                "give --min-columns 1 or more and --max-columns >= --min-columns",
            )
        widest = max(self.columns) * self.cell_bytes
        if widest > MAX_ROW_BYTES:
            raise CasstraceError(
                f"a row of {max(self.columns)} columns of {self.cell_bytes:,} bytes is {widest / 2**20:.1f} MiB, "
                f"more than Cassandra takes in one write ({MAX_ROW_BYTES / 2**20:.0f} MiB here)",
                "lower --max-columns or --cell-bytes",
            )
        # Both tables load together into memtables that get a quarter of the heap (memtable_heap_space's
        # default); past that, a 1G node ran out of heap while loading two tables of 190 MiB.
        table_bytes = self.rows * widest
        if node_heap_bytes is not None and 2 * table_bytes > node_heap_bytes / 4:
            raise CasstraceError(
                f"the two tables at N={max(self.columns)} hold {2 * table_bytes / 2**20:,.0f} MiB, more than the "
                f"quarter of the node's {node_heap_bytes / 2**30:g} GiB heap Cassandra gives its memtables: loading "
                "them could run the node out of memory",
                "lower --rows, --cell-bytes or --max-columns, or start the sandbox with a larger --heap",
            )

    def cost(self, columns: int) -> int:
        """Progress units of one N: load and compaction of both tables, two traced queries."""
        return 2 * self.rows * columns * self.cell_bytes + 2 * TRACE_COST_BYTES

    @property
    def total_cost(self) -> int:
        return sum(self.cost(n) for n in self.columns)


def heap_bytes(heap: str) -> int:
    """'1G' -> 1073741824, '512M' -> 536870912 (the sandbox's --heap)."""
    return int(heap[:-1]) * {"M": 2**20, "G": 2**30}[heap[-1].upper()]


def queries(spec: WideTable) -> tuple[str, str]:
    """The wide query and its narrow counterpart: they return the same values."""
    last = spec.columns - 1
    return (
        f"SELECT c{last} FROM {spec.keyspace}.{spec.table} WHERE stream_id = {spec.stream_id}",
        f"SELECT value FROM {spec.keyspace}.{spec.narrow_table} WHERE stream_id = {spec.stream_id} "
        f"AND column_no = {last}",
    )


@dataclass
class SweepRun:
    columns: int
    wide_trace: Path
    narrow_trace: Path
    wide_data_file_bytes: int  # Data.db size on disk
    narrow_data_file_bytes: int


KINDS = ("wide", "narrow")  # the two tables of a point, read in this order


def trace_path(traces_dir: Path, kind: str, columns: int) -> Path:
    """Where the sweep writes the trace of one query ('wide' or 'narrow') at N columns."""
    return traces_dir / f"{kind}-{columns:03d}.trace"


def sandbox_target(sandbox: Sandbox, pid: int | None = None) -> "Target":
    """The sandbox node a sweep measures: its native port here, its JVM (`pid`, else its PID file's)."""
    from casstrace.node.connection import ConnectionSettings
    from casstrace.orchestration.targets import Target

    return Target(ConnectionSettings(host=sandbox.host, port=sandbox.native_port), pid or sandbox.pid())


def run_options(
    target: "Target", query: str, out: Path, repeat: int, warmup: int, force: bool, cold: bool = False
) -> "RunOptions":
    """A sweep's run of `query` on its node, its trace at `out`."""
    from casstrace.orchestration.runner import RunOptions

    return RunOptions.aimed_at(target, query, repeat=repeat, warmup=warmup, cold=cold, out=out, force=force)


@dataclass
class ColumnsPoint:
    """The variant of one N: wide_N and narrow_N loaded (unless a --keep sweep left them), the read of
    each traced, both dropped after unless `keep`."""

    sandbox: Sandbox
    target: "Target"  # the sandbox node's (sandbox_target)
    plan: SweepPlan
    columns: int
    traces_dir: Path
    force: bool = False
    runs_queries: bool = True
    loaded: DemoData | None = None  # once staged

    @property
    def label(self) -> str:
        return f"N={self.columns}"

    def capture_options(self) -> "list[RunOptions]":
        """The wide query's run, then the narrow one's."""
        plan = self.plan
        return [
            run_options(self.target, query, out, plan.repeat, plan.warmup, self.force, plan.cold)
            for query, out in zip(queries(plan.spec(self.columns)), self.traces())
        ]

    def traces(self) -> list[Path]:
        return [trace_path(self.traces_dir, kind, self.columns) for kind in KINDS]

    @contextmanager
    def staged(self, progress: "Progress") -> Iterator[None]:
        spec, row_bytes = self.plan.spec(self.columns), self.columns * self.plan.cell_bytes
        progress(f"{self.label}: loading", 0)
        loaded_now = True  # from the start: a load cut short leaves tables behind too
        try:
            self.loaded = ensure_loaded(
                self.sandbox, spec, progress=lambda rows: progress(f"{self.label}: loading", rows * row_bytes)
            )
            loaded_now = self.loaded.loaded_now
            table_bytes = self.plan.rows * row_bytes
            progress(f"{self.label}: tracing", table_bytes if loaded_now else 2 * table_bytes)
            yield
        finally:
            if not self.plan.keep and loaded_now:
                _drop(self.sandbox, [spec])

    def capture(self, captures: "Captures", progress: "Progress") -> "SweepRun":
        assert self.loaded is not None  # staged
        traces = []
        for kind, options in zip(KINDS, self.capture_options()):
            traces.append(captures.run(options))
            progress(f"{self.label}: traced {kind}", TRACE_COST_BYTES)
        wide, narrow = traces
        # the sizes read before the files go with the tables
        return SweepRun(self.columns, wide, narrow, self.loaded.wide.data_bytes, self.loaded.narrow.data_bytes)


def columns_experiment(sandbox: Sandbox, plan: SweepPlan, traces_dir: Path, force: bool = False) -> "Plan[SweepRun]":
    """The study as a plan: each N in turn, in the plan's keyspace (dropped at the end if it was not
    there before and the sweep left it empty). force: replace the traces of an earlier sweep into
    the same directory."""
    from casstrace.orchestration.experiment import Plan

    plan.check(heap_bytes(sandbox.settings.heap))
    target = sandbox_target(sandbox)
    return Plan(
        variants=tuple(ColumnsPoint(sandbox, target, plan, n, traces_dir, force) for n in plan.columns),
        target=target,
        staged=lambda: keyspace_left_as_found(sandbox, plan.keyspace, plan.keep),
        force=force,
    )


@contextmanager
def keyspace_left_as_found(sandbox: Sandbox, keyspace: str, keep: bool) -> Iterator[None]:
    """A keyspace the sweep may create (its tables' load does): dropped at its end, however it ends,
    when it was not there before and nothing is left in it, unless `keep`."""
    with sandbox.connect() as session:
        existed = _keyspace_exists(session, keyspace)
    try:
        yield
    finally:
        if not keep and not existed:
            _drop_keyspace_if_empty(sandbox, keyspace)


def _keyspace_exists(session: Session, keyspace: str) -> bool:
    return (
        session.execute("SELECT keyspace_name FROM system_schema.keyspaces WHERE keyspace_name = %s", (keyspace,)).one()
        is not None
    )


def _drop(sandbox: Sandbox, specs: list[WideTable]) -> None:
    if not specs:
        return
    with sandbox.connect() as session:
        for spec in specs:
            for table in (spec.table, spec.narrow_table):
                session.execute(f"DROP TABLE IF EXISTS {spec.keyspace}.{table}")


def _drop_keyspace_if_empty(sandbox: Sandbox, keyspace: str) -> None:
    with sandbox.connect() as session:
        tables = session.execute("SELECT table_name FROM system_schema.tables WHERE keyspace_name = %s", (keyspace,))
        if _keyspace_exists(session, keyspace) and tables.one() is None:
            session.execute(f"DROP KEYSPACE IF EXISTS {keyspace}")


@contextmanager
def keyspace_of_its_own(sandbox: Sandbox, keyspace: str, keep: bool) -> Iterator[None]:
    """A sweep's keyspace: created when absent, and dropped when the sweep ends however it ends (Ctrl-C
    included) unless `keep`, or it was there before."""
    with sandbox.connect() as session:
        existed = _keyspace_exists(session, keyspace)
        session.execute(
            f"CREATE KEYSPACE IF NOT EXISTS {keyspace} WITH replication = "
            "{'class': 'SimpleStrategy', 'replication_factor': 1}"
        )
    try:
        yield
    finally:
        if not keep and not existed:
            with sandbox.connect() as session:
                session.execute(f"DROP KEYSPACE IF EXISTS {keyspace}")
