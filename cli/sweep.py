"""casstrace sweep: the reference write-ups' studies, reproduced on the sandbox: one column of N
(CASSANDRA-6586); with --layout the many-columns study (a time series in N columns, a frozen UDT of
N fields or N rows); with --tables the many-tables study (the same writes spread over N tables)."""

import contextlib
import sys
import time
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

import click

from casstrace import paths
from casstrace.cli.options import CELL_BYTES, COLUMNS, EXECUTIONS, ROWS, TABLES, WARMUPS, WRITES, verdict_options
from casstrace.cli.output import deliver, report_options
from casstrace.errors import CasstraceError
from casstrace.outputs import check_output

Point = TypeVar("Point")

if TYPE_CHECKING:
    from casstrace.analyses.verdict_rule import VerdictRule
    from casstrace.orchestration.experiment import Plan
    from casstrace.sandbox.control import Sandbox
    from casstrace.sandbox.sweep import SweepPlan, SweepRun

# Sized for a 2-core, 24 GiB machine and a sandbox with a 1G heap (see the command's help): the
# write-up's ~100 rows of 100 KB cells (1 GB at N = 100) become 100 rows of 10 KB (100 MB at N = 100).
DEFAULT_ROWS = 100
DEFAULT_CELL_BYTES = 10_000
# The many-columns study's rows: 10 columns of 100-200 characters, 50 of 20-40, 100 of 10-20.
DEFAULT_ROW_BYTES = 1_500
# The many-tables study's load, per point: about 100 MiB of mutations, enough for the 1G sandbox's
# memtable space (a quarter of its heap) to force flushes of one table; 1-2 minutes a point on the
# 2-core machine (the load, and about 40 s of capture and nodetool around it).
DEFAULT_WRITES = 100_000
DEFAULT_VALUE_BYTES = 1_000


@click.command("sweep")
@click.option(
    "--data-dir",
    type=click.Path(file_okay=False, path_type=Path),
    default=paths.default_sandbox_dir,
    show_default="~/.local/share/casstrace/sandbox",
    help="The sandbox to run on (it must be running: casstrace sandbox start).",
)
@click.option("--min-columns", type=COLUMNS, default=10, show_default=True, help="Smallest N.")
@click.option("--max-columns", type=COLUMNS, default=100, show_default=True, help="Largest N.")
@click.option("--step", type=COLUMNS, default=10, show_default=True, help="N goes up by this much.")
@click.option(
    "--cell-bytes",
    type=CELL_BYTES,
    default=DEFAULT_CELL_BYTES,
    show_default=True,
    help="Size of every cell (random bytes, so LZ4 cannot shrink them); the write-up used 100 KB.",
)
@click.option(
    "--rows",
    type=ROWS,
    default=DEFAULT_ROWS,
    show_default=True,
    help="Rows of the partition read (the write-up had about 100).",
)
@click.option(
    "--layout",
    "layouts",
    type=click.Choice(["columns", "udt", "rows"]),
    multiple=True,
    help="The many-columns study instead: the same time series in N text columns (columns), one frozen UDT of "
    "N fields (udt) or N clustering rows per point (rows), read LIMIT 20 points; repeat to compare layouts.",
)
@click.option(
    "--row-bytes",
    type=CELL_BYTES,
    default=DEFAULT_ROW_BYTES,
    show_default=True,
    help="With --layout: characters of one time point's fields together, at every N (the row size kept constant).",
)
@click.option(
    "--tables",
    "table_counts",
    type=TABLES,
    multiple=True,
    help="The many-tables study instead: the same writes spread over N tables, for each N given (repeat: "
    "--tables 1 --tables 10 --tables 100); throughput, flushes, compaction bytes, heap and write amplification.",
)
@click.option(
    "--writes",
    type=WRITES,
    default=DEFAULT_WRITES,
    show_default=True,
    help="With --tables: writes per point, spread over its N tables (as fast as the node takes them).",
)
@click.option(
    "--value-bytes",
    type=CELL_BYTES,
    default=DEFAULT_VALUE_BYTES,
    show_default=True,
    help="With --tables: bytes of each write's value (random, so LZ4 cannot shrink them).",
)
@click.option("--repeat", type=EXECUTIONS, default=5, show_default=True, help="Measured executions of each query.")
@click.option("--warmup", type=WARMUPS, default=1, show_default=True, help="Executions before the measured ones.")
@click.option("--cold", is_flag=True, help="Drop the page cache before each execution (root).")
@click.option("--keep", is_flag=True, help="Keep the tables the sweep creates (default: dropped once traced).")
@click.option(
    "--traces-dir",
    type=click.Path(file_okay=False, path_type=Path),
    help="Where the traces go (default: a sweep-DATE directory under the casstrace data directory).",
)
@verdict_options
@report_options(html_default="sweep.html in the traces directory")
def command(
    data_dir: Path,
    min_columns: int,
    max_columns: int,
    step: int,
    cell_bytes: int,
    rows: int,
    layouts: tuple[str, ...],
    row_bytes: int,
    table_counts: tuple[int, ...],
    writes: int,
    value_bytes: int,
    repeat: int,
    warmup: int,
    cold: bool,
    keep: bool,
    traces_dir: Path | None,
    threshold: float,
    min_excess: int,
    format_: str,
    output: Path | None,
    force: bool,
    color: bool | None,
) -> None:
    """Reproduce the column-count study: SELECT one column of a table with N columns, N from
    --min-columns to --max-columns, against the narrow refactor.

    For each N: create wide_N (N blob columns) and narrow_N (one row per column) in the keyspace
    casstrace_sweep, load --rows rows of --cell-bytes cells, flush and compact, then trace the read
    of the last column from each, and drop both tables (unless --keep). Reports the latency, the
    Data.db bytes read and the amplification per N, as a table (and as charts in html).
    Expected: the wide table's I/O and latency grow linearly with N for the same payload; the
    narrow table's stay flat.

    With --tables N (repeated), the many-tables study instead, on a node casstrace started: per N,
    tables n{N}_t0000... in the keyspace casstrace_tables receive --writes writes between them under
    a watch-style capture, are flushed at the load's end and dropped (the keyspace after, unless
    --keep). Expected: more tables, more and smaller flushes (they share the memtable space), more
    heap, and throughput falling at hundreds of tables.

    \b
    Scaled to a 2-core, 24 GiB machine and the sandbox's 1G heap, where the
    full default sweep takes about 2 minutes: 100 rows of 10 KB cells, a tenth
    of the write-up's data (~100 rows of 100 KB: 1 GB at N = 100), in cells
    smaller than a 16 KiB compression chunk. Cassandra 5 skips the chunks
    lying wholly inside a cell it does not return, so with the write-up's
    100 KB cells (--cell-bytes 100000) the wide read grows by about one chunk
    per cell and row rather than by the whole cell: still linear in N, about
    6x less steep. Both tables of the largest N must fit in a quarter of the
    node's heap (its memtables): a larger sweep needs a larger --heap.
    """
    from casstrace.analyses.verdict_rule import VerdictRule
    from casstrace.sandbox.sweep import SweepPlan

    rule = VerdictRule(threshold, min_excess)

    if max_columns < min_columns:
        raise CasstraceError(
            f"--max-columns {max_columns} is below --min-columns {min_columns}", "give --max-columns >= --min-columns"
        )
    delivery = (format_, output, force, color)
    if table_counts:
        sweep_tables(data_dir, table_counts, writes, value_bytes, keep, traces_dir, delivery)
        return
    columns = tuple(range(min_columns, max_columns + 1, step))
    if layouts:
        sweep_layouts(data_dir, columns, layouts, rows, row_bytes, (repeat, warmup, keep), traces_dir, delivery, rule)
        return
    plan = SweepPlan(
        columns=columns, rows=rows, cell_bytes=cell_bytes, repeat=repeat, warmup=warmup, cold=cold, keep=keep
    )
    sweep_columns(data_dir, plan, traces_dir, delivery, rule)


def sweep_columns(
    data_dir: Path,
    plan: "SweepPlan",
    traces_dir: Path | None,
    delivery: tuple[str, Path | None, bool, bool | None],
    rule: "VerdictRule",
) -> None:
    """The column-count study: each N in turn, wide_N against narrow_N; an interrupted sweep reports
    the column counts it has."""
    from casstrace.sandbox.sweep import columns_experiment, queries

    _, output, force, _ = delivery
    plan.check()
    sandbox, traces_dir = prepared(data_dir, traces_dir, output, force)
    experiment = columns_experiment(sandbox, plan, traces_dir, force)
    ready(experiment, traces_dir, output, force)
    started = time.monotonic()
    runs, stopped = each_point(experiment, "column counts", units=plan.total_cost)
    report(
        runs,
        plan,
        sandbox,
        traces_dir,
        time.monotonic() - started,
        stopped,
        queries(plan.spec(plan.columns[-1])),
        delivery,
        rule,
    )


def report(
    runs: "list[SweepRun]",
    plan: "SweepPlan",
    sandbox: "Sandbox",
    traces_dir: Path,
    elapsed: float,
    stopped: str | None,
    example_queries: tuple[str, str],
    delivery: tuple[str, Path | None, bool, bool | None],
    rule: "VerdictRule",
) -> None:
    from casstrace.analyses import analyse
    from casstrace.analyses.sweep import summarise_sweep
    from casstrace.reports import default_output, report_format
    from casstrace.reports.sweep import document

    measured = [
        (
            run.columns,
            analyse(run.wide_trace, rule),
            analyse(run.narrow_trace, rule),
            run.wide_data_file_bytes,
            run.narrow_data_file_bytes,
        )
        for run in runs
    ]
    context = {
        "Node": f"{sandbox.host}:{sandbox.native_port} ({sandbox.data_dir})",
        "Keyspace": f"{plan.keyspace}: wide_N and narrow_N, " + ("kept" if plan.keep else "dropped once traced"),
        "Queries (at the largest N)": " / ".join(example_queries),
        "Executions per query": f"{plan.warmup} warmup + {plan.repeat} measured"
        + (", cold cache" if plan.cold else ""),
        "Duration": f"{elapsed:,.0f} s for {len(runs)} column counts",
        "Traces": str(traces_dir),
    }
    sweep = summarise_sweep(measured, plan.rows, plan.cell_bytes, context)
    incomplete = [f"INCOMPLETE SWEEP: {stopped}."] if stopped else []
    sweep.warnings[:0] = incomplete
    format_, output, force, color = delivery
    if output is None:
        output = default_output(format_, traces_dir / f"sweep{report_format(format_).suffix}")
    deliver(
        document(sweep),
        format_,
        output,
        color,
        incomplete + sweep.findings,
        force,
        inputs=[trace for run in runs for trace in (run.wide_trace, run.narrow_trace)],
    )


def sweep_tables(
    data_dir: Path,
    table_counts: tuple[int, ...],
    writes: int,
    value_bytes: int,
    keep: bool,
    traces_dir: Path | None,
    delivery: tuple[str, Path | None, bool, bool | None],
) -> None:
    """`sweep --tables`: the many-tables study, each N in turn, in a keyspace of its own."""
    from casstrace.analyses.sweep import summarise_tables, tables_point
    from casstrace.analyses.watch import analyse_watch
    from casstrace.reports import default_output, report_format
    from casstrace.reports.sweep import tables_document
    from casstrace.sandbox.tables import IN_FLIGHT, TablesPlan, tables_experiment

    format_, output, force, color = delivery
    plan = TablesPlan(tables=tuple(sorted(set(table_counts))), writes=writes, value_bytes=value_bytes, keep=keep)
    plan.check()
    sandbox, traces_dir = prepared(data_dir, traces_dir, output, force)
    experiment = tables_experiment(sandbox, plan, traces_dir, force)
    traces = ready(experiment, traces_dir, output, force)
    announce(sandbox, plan.keyspace, keep)
    started = time.monotonic()
    done, stopped = each_point(experiment, "table counts")
    measured = []
    for run in done:
        watched = analyse_watch(run.trace)
        prefix = f"{plan.keyspace}.n{run.tables}_t"
        measured.append(
            tables_point(
                run.tables,
                (run.writes, run.failed_writes, run.load_s, run.heap_used_bytes),
                [t for t in watched.table_writes if t.table.startswith(prefix)],
                None
                if watched.table_costs is None
                else [(c.table, c.flushes) for c in watched.table_costs if c.table.startswith(prefix)],
                run.compaction_history,
                str(run.trace),
            )
        )
    context = {
        "Node": f"{sandbox.host}:{sandbox.native_port} ({sandbox.data_dir}, heap {sandbox.settings.heap})",
        "Keyspace": f"{plan.keyspace}: "
        + ("kept" if keep else "each point's tables dropped once traced, the keyspace after"),
        "Load per point": f"{writes:,} writes of {value_bytes:,} bytes, {IN_FLIGHT} in flight",
        "Duration": f"{time.monotonic() - started:,.0f} s for {len(done)} table counts",
        "Traces": str(traces_dir),
    }
    sweep = summarise_tables(measured, writes, value_bytes, context)
    incomplete = [f"INCOMPLETE SWEEP: {stopped}."] if stopped else []
    sweep.warnings[:0] = incomplete
    if output is None:
        output = default_output(format_, traces_dir / f"sweep{report_format(format_).suffix}")
    deliver(tables_document(sweep), format_, output, color, incomplete + sweep.findings, force, inputs=traces)


def announce(sandbox: "Sandbox", keyspace: str, keep: bool) -> None:
    """Say where a sweep creates its tables, before it does."""
    click.echo(
        f"casstrace: the sweep creates its tables in the keyspace {keyspace} of {sandbox.host}:"
        f"{sandbox.native_port}" + (" and keeps them (--keep)" if keep else ", dropped once traced"),
        err=True,
    )


def each_point(experiment: "Plan[Point]", what: str, units: int | None = None) -> "tuple[list[Point], str | None]":
    """Carry out a sweep's plan under a progress bar, of its points or of `units` (the variants say how
    many each step took): the points done, and why it stopped early (Ctrl-C: the plan's executor
    closed, so it takes down what it set up), None if it did not. None done: the sweep is aborted."""
    from casstrace.orchestration.experiment import execute

    done: list[Point] = []
    stopped = None
    total = len(experiment.variants)
    with click.progressbar(
        length=units or total,
        label="Sweep",
        file=sys.stderr,
        show_pos=units is None,
        item_show_func=lambda label: label,
    ) as bar:
        with contextlib.closing(execute(experiment, lambda label, step: bar.update(step, label))) as running:
            try:
                for point in running:
                    done.append(point)
                    if units is None:
                        bar.update(1)
            except KeyboardInterrupt:
                stopped = f"interrupted after {len(done)} of {total} {what}"
    if not done:
        raise click.exceptions.Abort()
    return done, stopped


def prepared(data_dir: Path, traces_dir: Path | None, output: Path | None, force: bool) -> tuple["Sandbox", Path]:
    """The running sandbox in `data_dir` and the traces directory, --output refused now rather than after
    the sweep's minutes of work."""
    from casstrace.sandbox.control import Sandbox

    if output is not None:
        check_output(output, force)
    sandbox = Sandbox(data_dir)
    if not sandbox.is_running():
        raise CasstraceError(
            f"the sandbox in {sandbox.data_dir} is not running",
            f"start it: casstrace sandbox start --data-dir {sandbox.data_dir}",
        )
    return sandbox, traces_dir or paths.default_traces_dir() / f"sweep-{datetime.now():%Y%m%d-%H%M%S}"


def ready(experiment: "Plan[Point]", traces_dir: Path, output: Path | None, force: bool) -> list[Path]:
    """The traces the sweep will write, each refused now (an earlier sweep's: Plan.check), the report
    too when it would write over one; the traces directory made."""
    experiment.check()
    traces = experiment.traces()
    if output is not None:  # the report is made from the traces
        check_output(output, force, traces)
    traces_dir.mkdir(parents=True, exist_ok=True)
    return traces


def sweep_layouts(
    data_dir: Path,
    columns: tuple[int, ...],
    layouts: tuple[str, ...],
    rows: int,
    row_bytes: int,
    runs_asked: tuple[int, int, bool],
    traces_dir: Path | None,
    delivery: tuple[str, Path | None, bool, bool | None],
    rule: "VerdictRule",
) -> None:
    """`sweep --layout`: the many-columns study, each layout at each N, in a keyspace of its own."""
    from casstrace.analyses import analyse
    from casstrace.analyses.sweep import summarise_layouts
    from casstrace.reports import default_output, report_format
    from casstrace.reports.sweep import layout_document
    from casstrace.sandbox.layouts import LAYOUTS, LayoutPlan, layouts_experiment

    repeat, warmup, keep = runs_asked
    format_, output, force, color = delivery
    plan = LayoutPlan(
        layouts=tuple(layout for layout in LAYOUTS if layout in layouts),
        columns=columns,
        rows=rows,
        row_bytes=row_bytes,
        repeat=repeat,
        warmup=warmup,
        keep=keep,
    )
    plan.check()
    sandbox, traces_dir = prepared(data_dir, traces_dir, output, force)
    experiment = layouts_experiment(sandbox, plan, traces_dir, force)
    traces = ready(experiment, traces_dir, output, force)
    announce(sandbox, plan.keyspace, keep)
    started = time.monotonic()
    done, stopped = each_point(experiment, "traces")
    context = {
        "Node": f"{sandbox.host}:{sandbox.native_port} ({sandbox.data_dir})",
        "Keyspace": f"{plan.keyspace}: " + ("kept" if keep else "each table dropped once traced, the keyspace after"),
        "Executions per query": f"{warmup} warmup + {repeat} measured",
        "Duration": f"{time.monotonic() - started:,.0f} s for {len(done)} traces",
        "Traces": str(traces_dir),
    }
    sweep = summarise_layouts([(r.layout, r.columns, analyse(r.trace, rule)) for r in done], rows, row_bytes, context)
    incomplete = [f"INCOMPLETE SWEEP: {stopped}."] if stopped else []
    sweep.warnings[:0] = incomplete
    if output is None:
        output = default_output(format_, traces_dir / f"sweep{report_format(format_).suffix}")
    deliver(layout_document(sweep), format_, output, color, incomplete + sweep.findings, force, inputs=traces)
