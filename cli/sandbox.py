"""casstrace sandbox: a real local Apache Cassandra node, or cluster of nodes, to reproduce and trace on."""

import time
from pathlib import Path

import click

from casstrace import paths
from casstrace.cli.options import JMX_PORT, PORT, IntRange, read_statements
from casstrace.sandbox import cql
from casstrace.sandbox.cluster import SandboxCluster
from casstrace.sandbox.control import StartFailed, Status
from casstrace.sandbox.settings import COMMITLOG_SYNC_MODES, DISK_ACCESS_MODES, MAX_NODES
from casstrace.sandbox.versions import SSTABLE_FORMATS

data_dir_option = click.option(
    "--data-dir",
    type=click.Path(file_okay=False, path_type=Path),
    default=paths.default_sandbox_dir,
    show_default="~/.local/share/casstrace/sandbox",
    help="The sandbox's directory: data, commit log, config, log and PID file all live here "
    "(node K of a cluster in its subdirectory nodeK).",
)
NODE = IntRange(1, MAX_NODES)
node_option = click.option(
    "--node", type=NODE, default=1, show_default=True, help="Which node of the sandbox (node K listens on 127.0.0.K)."
)


@click.group("sandbox")
def command() -> None:
    """A local Apache Cassandra node, or cluster of nodes, identified by its data directory."""


@command.command()
@data_dir_option
@click.option(
    "--version",
    help="Cassandra version (cassandra-all on Maven Central): a release "
    "such as 4.1.10, or a series (4.0, 4.1, 5.0 or 4.1.x) for its newest release.  "
    "[default: newest 5.0.x, or what this sandbox ran last]",
)
@click.option("--native-port", type=PORT, help="CQL port.  [default: 9042, or last used]")
@click.option(
    "--jmx-port",
    type=JMX_PORT,
    help="JMX port for nodetool; the gossip port is this minus 199.  [default: 7199, or last used]",
)
@click.option(
    "--disk-access-mode",
    type=click.Choice(DISK_ACCESS_MODES),
    help="How Cassandra reads SSTables.  [default: the version's own (auto, i.e. mmap, "
    "on 4.x; mmap_index_only on 5.0), or last used]",
)
@click.option(
    "--commitlog-sync",
    type=click.Choice(COMMITLOG_SYNC_MODES),
    help="When a write is acknowledged: periodic, once in the commit log's memory (synced every 10 s); "
    "batch, once its commit-log segment is synced to disk.  [default: periodic, or last used]",
)
@click.option(
    "--sstable-format",
    type=click.Choice(SSTABLE_FORMATS),
    help="SSTable format to write; bti needs 5.0.  [default: big, or last used]",
)
@click.option("--heap", help="JVM heap of each node, e.g. 512M or 2G.  [default: 1G, or last used]")
@click.option(
    "--nodes",
    type=NODE,
    help="Nodes of one cluster, on 127.0.0.1 ... 127.0.0.N, all on "
    "the same native port, node K on JMX port --jmx-port + K - 1.  [default: 1, or what "
    "this sandbox has]",
)
@click.option(
    "--node",
    "only",
    type=NODE,
    help="Start only this node of the sandbox (one that was stopped), with the settings it has.",
)
def start(
    data_dir: Path,
    version: str | None,
    native_port: int | None,
    jmx_port: int | None,
    disk_access_mode: str | None,
    commitlog_sync: str | None,
    sstable_format: str | None,
    heap: str | None,
    nodes: int | None,
    only: int | None,
) -> None:
    """Start the node(s), one after another; returns once each accepts CQL and is Up/Normal."""
    cluster = SandboxCluster(data_dir)
    began = time.monotonic()
    try:
        statuses = cluster.start(
            nodes=nodes,
            only=only,
            version=version,
            native_port=native_port,
            jmx_port=jmx_port,
            disk_access_mode=disk_access_mode,
            commitlog_sync=commitlog_sync,
            sstable_format=sstable_format,
            heap=heap,
            progress=lambda message: click.echo(message, err=True),
        )
    except StartFailed as failure:
        click.echo(f"--- last lines of {failure.log} ---", err=True)
        for line in failure.log_tail:
            click.echo(line, err=True)
        click.echo("---", err=True)
        raise
    settings = statuses[0].settings
    assert settings is not None  # a started sandbox has its settings
    what = f" (node {only})" if only is not None else f" ({len(statuses)} nodes)" if len(statuses) > 1 else ""
    click.echo(f"Cassandra {settings.version}{what} started in {time.monotonic() - began:.1f} s")
    _describe(statuses)


@command.command()
@data_dir_option
@click.option("--node", "only", type=NODE, help="Stop only this node.  [default: every node]")
def stop(data_dir: Path, only: int | None) -> None:
    """Stop the node(s) (by the PID file in each data directory), each down to its JVM's last thread."""
    cluster = SandboxCluster(data_dir)
    stopped = cluster.stop(only)
    if len(stopped) == 1 and only is None:
        pid = stopped[0][1]
        click.echo(f"stopped pid {pid}" if pid else f"the sandbox in {data_dir} was not running")
        return
    for number, pid in stopped:
        click.echo(f"node {number}: stopped pid {pid}" if pid else f"node {number}: was not running")


@command.command()
@data_dir_option
def status(data_dir: Path) -> None:
    """Say whether the node(s) run, and how to reach them. Exit status 3 when any is stopped."""
    cluster = SandboxCluster(data_dir)
    statuses = cluster.statuses()
    settings = statuses[0].settings
    if settings is None:
        click.echo(f"no sandbox in {data_dir}")
        raise SystemExit(3)
    running = sum(status.running for status in statuses)
    state = (
        "running"
        if running == len(statuses)
        else "stopped"
        if running == 0
        else f"partly running ({running} of {len(statuses)} nodes)"
    )
    click.echo(f"{state}: Cassandra {settings.version}")
    _describe(statuses)
    if running < len(statuses):
        raise SystemExit(3)


@command.command(context_settings={"ignore_unknown_options": True})
@data_dir_option
@node_option
@click.argument("args", nargs=-1, type=click.UNPROCESSED, required=True)
def nodetool(data_dir: Path, node: int, args: tuple[str, ...]) -> None:
    """Run nodetool against a node, e.g. `casstrace sandbox nodetool flush` or `... --node 2 status`."""
    SandboxCluster(data_dir).node(node).nodetool(*args, capture=False)


@command.command("cql")
@data_dir_option
@node_option
@click.argument("statement", required=False)
@click.option(
    "--file",
    "cql_file",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="Run the statements in this file.",
)
@click.option("--keyspace", "-k", help="Keyspace to USE first.")
def cql_command(data_dir: Path, node: int, statement: str | None, cql_file: Path | None, keyspace: str | None) -> None:
    """Run CQL statements (separated by ;) on a node, the coordinator, and print the rows they return."""
    if (statement is None) == (cql_file is None):
        raise click.UsageError("give either a STATEMENT or --file")
    text = statement if statement is not None else read_statements(cql_file) if cql_file is not None else ""
    with SandboxCluster(data_dir).node(node).connect(keyspace) as session:
        for block in cql.run(session, text):
            click.echo(block)


def _describe(statuses: list[Status]) -> None:
    if len(statuses) == 1:
        _describe_node(statuses[0])
        return
    first = statuses[0].settings
    assert first is not None  # only a sandbox that has settings is described
    click.echo(f"  cluster     {first.cluster_name!r}, {len(statuses)} nodes, seed {first.seed}")
    click.echo(f"  native port {first.native_port} and storage port {first.storage_port} on each address")
    click.echo(f"  data dir    {statuses[0].data_dir}")
    click.echo(f"  disk access {statuses[0].disk_access}")
    click.echo(f"  commit log  {first.commitlog_sync} sync")
    click.echo(f"  sstables    {statuses[0].sstable_format}, heap {first.heap} per node")
    rows = [("node", "address", "state", "pid", "jmx port", "log")]
    for status in statuses:
        settings = status.settings
        assert settings is not None
        rows.append(
            (
                str(settings.node),
                settings.address,
                "running" if status.running else "stopped",
                str(status.pid or "-"),
                str(settings.jmx_port),
                str(status.log),
            )
        )
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    for row in rows:
        click.echo("  " + "  ".join(cell.ljust(width) for cell, width in zip(row, widths)).rstrip())


def _describe_node(status: Status) -> None:
    settings = status.settings
    assert settings is not None  # only a sandbox that has settings is described
    click.echo(f"  host        {status.host}")
    click.echo(f"  native port {settings.native_port}")
    click.echo(f"  jmx port    {settings.jmx_port}")
    if status.pid:
        click.echo(f"  pid         {status.pid}")
    click.echo(f"  data dir    {status.data_dir}")
    click.echo(f"  log         {status.log}")
    click.echo(f"  disk access {status.disk_access}")
    click.echo(f"  commit log  {settings.commitlog_sync} sync")
    click.echo(f"  sstables    {status.sstable_format}, heap {settings.heap}")
