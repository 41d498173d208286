"""The many-columns study (cassandra-many-columns.md), run on a sandbox node: the same time series
stored in N text columns, in one frozen UDT of N fields, or as N clustering rows per time point, at a
constant row size, read `SELECT * ... WHERE pk = ? LIMIT 20` (LIMIT 20 x N for the rows layout: the
same 20 time points).

Everything goes into a keyspace of its own, `casstrace_layouts` (the user's tables are never touched):
a table `{layout}_{N}` per layout and N, with a type `fields_{N}` for the UDT, loaded with PARTITIONS
partitions of `rows` time points, each field `row_bytes / N` characters, and flushed. A table is dropped
as soon as it is traced, and the keyspace once the sweep ends however it ends (Ctrl-C included),
unless `keep`; a table a previous --keep sweep left loaded is reused and left alone.
"""

import random
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Literal, get_args

from cassandra.cluster import Session
from cassandra.concurrent import execute_concurrent, execute_concurrent_with_args
from cassandra.query import BatchStatement, BatchType

from casstrace.errors import CasstraceError
from casstrace.sandbox.control import Sandbox
from casstrace.sandbox.sweep import keyspace_of_its_own, run_options, sandbox_target

if TYPE_CHECKING:
    from casstrace.orchestration.experiment import Captures, Plan, Progress
    from casstrace.orchestration.runner import RunOptions
    from casstrace.orchestration.targets import Target

Layout = Literal["columns", "udt", "rows"]
LAYOUTS: tuple[Layout, ...] = get_args(Layout)
LAYOUT_KEYSPACE = "casstrace_layouts"
PARTITIONS = 3  # the query reads the first; the others make the SSTable a table's, not one partition's
LIMIT = 20  # time points a read returns (the study's LIMIT 20)
LOADED = "casstrace layouts v1 {rows} rows of {row_bytes} characters"  # the table's comment once loaded
IN_FLIGHT = 16


@dataclass(frozen=True)
class LayoutPlan:
    layouts: tuple[Layout, ...]
    columns: tuple[int, ...]  # the values of N
    rows: int  # time points per partition
    row_bytes: int  # characters of one time point's fields, together, at every N
    repeat: int = 5
    warmup: int = 1
    keep: bool = False
    keyspace: str = LAYOUT_KEYSPACE

    def check(self) -> None:
        if not self.layouts or not self.columns or min(self.columns) < 1:
            raise CasstraceError("the sweep needs a layout and a column count of 1 or more", "give --layout and N >= 1")
        if self.row_bytes < max(self.columns):
            raise CasstraceError(
                f"a row of {self.row_bytes} characters cannot be split into {max(self.columns)} fields",
                "give --row-bytes at least --max-columns",
            )
        if self.rows < LIMIT:
            raise CasstraceError(f"--rows {self.rows} is below the LIMIT {LIMIT} read", f"give --rows {LIMIT} or more")


def table(layout: Layout, columns: int) -> str:
    return f"{layout}_{columns}"


def query(plan: LayoutPlan, layout: Layout, columns: int) -> str:
    """The read of the first partition's LIMIT 20 time points."""
    limit = LIMIT * columns if layout == "rows" else LIMIT
    return f"SELECT * FROM {plan.keyspace}.{table(layout, columns)} WHERE pk = 0 LIMIT {limit}"


@dataclass
class LayoutRun:
    layout: Layout
    columns: int
    trace: Path


def trace_path(traces_dir: Path, layout: Layout, columns: int) -> Path:
    return traces_dir / f"{table(layout, columns)}.trace"


@dataclass
class LayoutPoint:
    """The variant of one layout at one N: its table loaded and flushed (unless a --keep sweep left it
    loaded), its read traced, the table dropped after unless `keep`."""

    sandbox: Sandbox
    target: "Target"  # the sandbox node's (sweep.sandbox_target)
    plan: LayoutPlan
    layout: Layout
    columns: int
    traces_dir: Path
    force: bool = False
    runs_queries: bool = True

    @property
    def label(self) -> str:
        return f"{self.layout}, N={self.columns}"

    def capture_options(self) -> "list[RunOptions]":
        statement, (out,) = query(self.plan, self.layout, self.columns), self.traces()
        return [run_options(self.target, statement, out, self.plan.repeat, self.plan.warmup, self.force)]

    def traces(self) -> list[Path]:
        return [trace_path(self.traces_dir, self.layout, self.columns)]

    @contextmanager
    def staged(self, progress: "Progress") -> Iterator[None]:
        progress(f"{self.label}: loading", 0)
        with self.sandbox.connect() as session:
            loaded_now = _ensure_loaded(session, self.plan, self.layout, self.columns)
        if loaded_now:
            self.sandbox.nodetool("flush", self.plan.keyspace, table(self.layout, self.columns))
        yield  # a capture cut short leaves the table to the keyspace's drop, once the sweep ends
        if loaded_now and not self.plan.keep:
            with self.sandbox.connect() as session:
                _drop(session, self.plan, self.layout, self.columns)

    def capture(self, captures: "Captures", progress: "Progress") -> "LayoutRun":
        progress(f"{self.label}: tracing", 0)
        (options,) = self.capture_options()
        return LayoutRun(self.layout, self.columns, captures.run(options))


def layouts_experiment(sandbox: Sandbox, plan: LayoutPlan, traces_dir: Path, force: bool = False) -> "Plan[LayoutRun]":
    """The study as a plan: each (N, layout) in turn, in a keyspace of its own (dropped once the sweep
    ends however it ends, unless `keep`)."""
    from casstrace.orchestration.experiment import Plan

    plan.check()
    target = sandbox_target(sandbox)
    return Plan(
        variants=tuple(
            LayoutPoint(sandbox, target, plan, layout, columns, traces_dir, force)
            for columns in plan.columns
            for layout in plan.layouts
        ),
        target=target,
        staged=lambda: keyspace_of_its_own(sandbox, plan.keyspace, plan.keep),
        force=force,
    )


def _ensure_loaded(session: Session, plan: LayoutPlan, layout: Layout, columns: int) -> bool:
    """Create and load the table unless a previous sweep left it loaded; whether it was loaded now."""
    name, marker = table(layout, columns), LOADED.format(rows=plan.rows, row_bytes=plan.row_bytes)
    found = session.execute(
        "SELECT comment FROM system_schema.tables WHERE keyspace_name = %s AND table_name = %s", (plan.keyspace, name)
    ).one()
    if found is not None and found.comment == marker:
        return False
    _drop(session, plan, layout, columns)
    fields = [f"c{i}" for i in range(columns)]
    where = f"{plan.keyspace}.{name}"
    if layout == "columns":
        session.execute(
            f"CREATE TABLE {where} (pk int, ts int, {', '.join(f'{f} text' for f in fields)}, PRIMARY KEY (pk, ts))"
        )
        insert = session.prepare(f"INSERT INTO {where} (pk, ts, {', '.join(fields)}) VALUES (?, ?{', ?' * columns})")
    elif layout == "udt":
        session.execute(f"CREATE TYPE {plan.keyspace}.fields_{columns} ({', '.join(f'{f} text' for f in fields)})")
        session.execute(f"CREATE TABLE {where} (pk int, ts int, v frozen<fields_{columns}>, PRIMARY KEY (pk, ts))")
        insert = session.prepare(
            f"INSERT INTO {where} (pk, ts, v) VALUES (?, ?, {{{', '.join(f'{f}: ?' for f in fields)}}})"
        )
    else:
        session.execute(f"CREATE TABLE {where} (pk int, ts int, field int, value text, PRIMARY KEY (pk, ts, field))")
        insert = session.prepare(f"INSERT INTO {where} (pk, ts, field, value) VALUES (?, ?, ?, ?)")
    text = random.Random(34)
    width = plan.row_bytes // columns
    points = [
        (pk, ts, ["".join(text.choices("abcdefghijklmnopqrstuvwxyz", k=width)) for _ in fields])
        for pk in range(PARTITIONS)
        for ts in range(plan.rows)
    ]
    if layout == "rows":  # a time point's N rows in one unlogged batch: one partition, one mutation
        batches = []
        for pk, ts, values in points:
            batch = BatchStatement(batch_type=BatchType.UNLOGGED)
            for number, value in enumerate(values):
                batch.add(insert, (pk, ts, number, value))
            batches.append((batch, None))
        execute_concurrent(session, batches, concurrency=IN_FLIGHT, raise_on_first_error=True)
    else:
        execute_concurrent_with_args(
            session,
            insert,
            [(pk, ts, *values) for pk, ts, values in points],
            concurrency=IN_FLIGHT,
            raise_on_first_error=True,
        )
    session.execute(f"ALTER TABLE {where} WITH comment = '{marker}'")
    return True


def _drop(session: Session, plan: LayoutPlan, layout: Layout, columns: int) -> None:
    session.execute(f"DROP TABLE IF EXISTS {plan.keyspace}.{table(layout, columns)}")
    if layout == "udt":
        session.execute(f"DROP TYPE IF EXISTS {plan.keyspace}.fields_{columns}")
