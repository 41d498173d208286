"""The column-count study of the reference write-up, run on a sandbox node.

For each N, a wide table of N blob columns (every cell `cell_bytes` of random bytes) and its narrow
refactor (one row per column) are created in their own tables, `wide_N` and `narrow_N` of the
keyspace casstrace_sweep (the demo tables are never touched), loaded, flushed and compacted to one
SSTable each (casstrace.sandbox.demo.ensure_loaded), and one column is read under the probes from
each: the last one, c{N-1}, so the narrow table's read has to skip over the whole rest of the
partition to find it. What the sweep created is dropped as soon as it is traced, unless `keep`;
tables a previous --keep sweep left in place are reused and left alone.
"""

from collections.abc import Callable, Generator, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from cassandra.cluster import Session

from casstrace.errors import CasstraceError
from casstrace.sandbox.control import Sandbox
from casstrace.sandbox.demo import WideTable, ensure_loaded

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


def trace_path(traces_dir: Path, kind: str, columns: int) -> Path:
    """Where the sweep writes the trace of one query ('wide' or 'narrow') at N columns."""
    return traces_dir / f"{kind}-{columns:03d}.trace"


def run_sweep(
    sandbox: Sandbox,
    plan: SweepPlan,
    traces_dir: Path,
    progress: Callable[[str, int], None] = lambda label, units: None,
    force: bool = False,
) -> Generator[SweepRun, None, None]:
    """Measure each N in turn, yielding as each is done. progress(label, units done since the last
    call) follows the plan's cost. Closing the generator early (Ctrl-C) still drops what it created.
    force: replace the traces of an earlier sweep into the same directory."""
    from casstrace.node.connection import ConnectionSettings
    from casstrace.orchestration.kept_capture import KeptCapture
    from casstrace.orchestration.runner import RunOptions

    plan.check(heap_bytes(sandbox.settings.heap))
    connection = ConnectionSettings(host=sandbox.host, port=sandbox.native_port)
    with sandbox.connect() as session:
        keyspace_existed = _keyspace_exists(session, plan.keyspace)
    created: list[WideTable] = []
    capture = KeptCapture()  # attached once for every point's runs (idle while tables load)
    try:
        for n in plan.columns:
            spec = plan.spec(n)
            label = f"N={n}"
            progress(f"{label}: loading", 0)
            row_bytes = n * plan.cell_bytes
            created.append(spec)  # from the start: a load cut short leaves tables behind too
            data = ensure_loaded(
                sandbox,
                spec,  # the progress lambda runs inside this call, in this iteration
                progress=lambda rows: progress(f"{label}: loading", rows * row_bytes),  # noqa: B023
            )
            if not data.loaded_now:
                created.remove(spec)
            sizes = data.wide.data_bytes, data.narrow.data_bytes  # before the files go with the tables
            progress(f"{label}: tracing", plan.rows * row_bytes if data.loaded_now else 2 * plan.rows * row_bytes)
            traces: list[Path] = []
            for kind, query in zip(("wide", "narrow"), queries(spec)):
                traces.append(
                    capture.run(
                        RunOptions(
                            query=query,
                            connection=connection,
                            pid=sandbox.pid(),
                            repeat=plan.repeat,
                            warmup=plan.warmup,
                            cold=plan.cold,
                            out=trace_path(traces_dir, kind, n),
                            force=force,
                        )
                    )
                )
                progress(f"{label}: traced {kind}", TRACE_COST_BYTES)
            if not plan.keep and data.loaded_now:
                _drop(sandbox, [spec])
                created.remove(spec)
            wide_trace, narrow_trace = traces
            yield SweepRun(n, wide_trace, narrow_trace, *sizes)
    finally:
        capture.close()
        if not plan.keep:
            _drop(sandbox, created)
            if not keyspace_existed:
                _drop_keyspace_if_empty(sandbox, plan.keyspace)


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
