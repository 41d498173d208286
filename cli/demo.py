"""casstrace demo: the CASSANDRA-6586 full-row read, on the sandbox node."""

import contextlib
from pathlib import Path

import click

from casstrace import paths
from casstrace.cli.options import COLUMNS, ROWS, VALUE_BYTES, IntRange
from casstrace.sandbox.cluster import SandboxCluster
from casstrace.sandbox.control import Sandbox
from casstrace.sandbox.demo import WideTable, ensure_loaded, is_loaded
from casstrace.sandbox.settings import MAX_NODES

DEFAULTS = WideTable()


@click.command("demo")
@click.option(
    "--data-dir",
    type=click.Path(file_okay=False, path_type=Path),
    default=paths.default_sandbox_dir,
    show_default="~/.local/share/casstrace/sandbox",
    help="The sandbox to use; started when it is not running (with --rf nodes when it is new).",
)
@click.option("--rows", type=ROWS, default=DEFAULTS.rows, show_default=True, help="Rows in stream 1.")
@click.option(
    "--columns",
    type=COLUMNS,
    default=DEFAULTS.columns,
    show_default=True,
    help="Blob columns c0, c1, ... of the wide table.",
)
@click.option(
    "--c0-bytes",
    type=VALUE_BYTES,
    default=DEFAULTS.first_column_bytes,
    show_default=True,
    help="Size of each c0 value (the column the query selects).",
)
@click.option(
    "--other-bytes",
    type=VALUE_BYTES,
    default=DEFAULTS.other_column_bytes,
    show_default=True,
    help="Size of each value of the other columns.",
)
@click.option(
    "--rf",
    type=IntRange(1, MAX_NODES),
    default=DEFAULTS.replication_factor,
    show_default=True,
    help="Replication factor of the demo keyspace: at most the sandbox's nodes (casstrace sandbox start --nodes N).",
)
@click.option("--reload", is_flag=True, help="Load the data again even when it is in place.")
@click.option("--load-only", is_flag=True, help="Stop once the data is in place; trace nothing.")
def command(
    data_dir: Path, rows: int, columns: int, c0_bytes: int, other_bytes: int, rf: int, reload: bool, load_only: bool
) -> None:
    """The CASSANDRA-6586 full-row read, traced on the sandbox node.

    Loads the wide table of the reference write-up (one row per (stream_id, ts) with blobs c0..c19)
    and its narrow refactor (the same values, one per clustering row), each flushed and compacted
    to one SSTable; then traces `SELECT c0` on the wide table and the equivalent query on the
    narrow one, and shows both verdicts.
    """
    spec = WideTable(
        rows=rows, columns=columns, first_column_bytes=c0_bytes, other_column_bytes=other_bytes, replication_factor=rf
    )
    cluster = SandboxCluster(data_dir)
    sandbox = cluster.first
    if not cluster.is_running():
        click.echo(f"Starting the sandbox in {sandbox.data_dir} ...")
        new = sandbox.layout.load_settings() is None
        for status in cluster.start(nodes=rf if new else None, progress=click.echo):
            assert status.settings is not None  # a started node has its settings
            click.echo(
                f"Cassandra {status.settings.version} is up on "
                f"{status.host}:{status.settings.native_port} (pid {status.pid})"
            )
    with sandbox.connect() as session:
        in_place = is_loaded(session, spec) and not reload
    if in_place:
        data = ensure_loaded(cluster, spec)
        click.echo("The demo data was already in place; nothing loaded (--reload to redo it).")
    else:
        with click.progressbar(
            length=spec.rows, label=f"Loading {spec.keyspace}.{spec.table} and {spec.narrow_table}", show_pos=True
        ) as bar:
            data = ensure_loaded(cluster, spec, progress=bar.update, force=True)
    click.echo(
        f"Keyspace {spec.keyspace} on {sandbox.host}:{sandbox.native_port}, stream_id "
        f"{spec.stream_id}, {spec.rows} rows: c0 = {spec.first_column_bytes} B, "
        f"c1..c{spec.columns - 1} = {spec.other_column_bytes} B each "
        f"({spec.total_bytes / 1e6:.1f} MB of values per table), replication factor {rf}"
    )
    for node in data.nodes:
        on = f" on {node.address}" if len(data.nodes) > 1 else ""
        for table in (node.wide, node.narrow):
            files = ", ".join(str(path) for path in table.data_files)
            click.echo(
                f"  {table.name}{on}: {len(table.data_files)} SSTable, "
                f"{table.data_bytes / 1e6:.1f} MB Data.db ({files})"
            )
    if not load_only:
        trace_and_compare(sandbox, spec)


def trace_and_compare(sandbox: Sandbox, spec: WideTable) -> None:
    """Each query's verdict, then both side by side, as `casstrace compare` shows them."""
    import sys

    from casstrace.analyses import analyse
    from casstrace.analyses.compare import compare
    from casstrace.cli.run import report, reporting_interruptions
    from casstrace.node.connection import resolve_settings
    from casstrace.orchestration.experiment import KeptCaptures, Plan, QueryRun, execute
    from casstrace.orchestration.kept_capture import KeptCapture
    from casstrace.orchestration.runner import RunOptions
    from casstrace.orchestration.targets import Target
    from casstrace.reports import ReportOptions, render
    from casstrace.reports.comparison import document

    target = Target(resolve_settings(sandbox.host, sandbox.native_port))
    queries = (("the wide table", spec.wide_query), ("the narrow refactor", spec.narrow_query))
    plan = Plan(tuple(QueryRun(title, RunOptions.aimed_at(target, query)) for title, query in queries), target)
    traces = []
    # The probes compile while the first run connects, and stay attached from one run to the next (and
    # through a report of a run a signal cut short).
    with KeptCapture() as kept, contextlib.closing(execute(plan, captures=KeptCaptures(kept))) as runs:
        for title, query in queries:
            click.echo(f"\n=== Tracing {title}: {query}")
            with reporting_interruptions(html=True):
                traces.append(next(runs).trace)
            report(traces[-1], html=True)
    click.echo("\n=== Side by side")
    wide, narrow = traces
    comparison = compare(analyse(wide), analyse(narrow), labels=("wide", "narrow"))
    click.echo(render(document(comparison), "text", ReportOptions(color=sys.stdout.isatty())), nl=False)
