"""casstrace sandbox: a real local Apache Cassandra node to reproduce and trace on."""

import time
from pathlib import Path
from typing import TextIO

import click

from casstrace import paths
from casstrace.cli.options import JMX_PORT, PORT
from casstrace.sandbox import cql
from casstrace.sandbox.control import Sandbox, StartFailed, Status
from casstrace.sandbox.settings import DISK_ACCESS_MODES
from casstrace.sandbox.versions import SSTABLE_FORMATS

data_dir_option = click.option(
    "--data-dir", type=click.Path(file_okay=False, path_type=Path),
    default=paths.default_sandbox_dir, show_default="~/.local/share/casstrace/sandbox",
    help="The sandbox's directory: data, commit log, config, log and PID file all live here.")


@click.group("sandbox")
def command() -> None:
    """A local single-node Apache Cassandra, identified by its data directory."""


@command.command()
@data_dir_option
@click.option("--version", help="Cassandra version (cassandra-all on Maven Central): a release "
              "such as 4.1.10, or a series (4.0, 4.1, 5.0 or 4.1.x) for its newest release.  "
              "[default: newest 5.0.x, or what this sandbox ran last]")
@click.option("--native-port", type=PORT, help="CQL port.  [default: 9042, or last used]")
@click.option("--jmx-port", type=JMX_PORT, help="JMX port for nodetool; the gossip port is this minus "
              "199.  [default: 7199, or last used]")
@click.option("--disk-access-mode", type=click.Choice(DISK_ACCESS_MODES),
              help="How Cassandra reads SSTables.  [default: the version's own (auto, i.e. mmap, "
              "on 4.x; mmap_index_only on 5.0), or last used]")
@click.option("--sstable-format", type=click.Choice(SSTABLE_FORMATS),
              help="SSTable format to write; bti needs 5.0.  [default: big, or last used]")
@click.option("--heap", help="JVM heap, e.g. 512M or 2G.  [default: 1G, or last used]")
def start(data_dir: Path, version: str | None, native_port: int | None, jmx_port: int | None,
          disk_access_mode: str | None, sstable_format: str | None, heap: str | None) -> None:
    """Start the node; returns once it accepts CQL."""
    sandbox = Sandbox(data_dir)
    began = time.monotonic()
    try:
        status = sandbox.start(version=version, native_port=native_port, jmx_port=jmx_port,
                               disk_access_mode=disk_access_mode, sstable_format=sstable_format,
                               heap=heap,
                               progress=lambda message: click.echo(message, err=True))
    except StartFailed as failure:
        click.echo(f"--- last lines of {sandbox.log} ---", err=True)
        for line in failure.log_tail:
            click.echo(line, err=True)
        click.echo("---", err=True)
        raise
    settings = status.settings
    assert settings is not None     # a started node has its settings
    click.echo(f"Cassandra {settings.version} started in {time.monotonic() - began:.1f} s")
    _describe(status)


@command.command()
@data_dir_option
def stop(data_dir: Path) -> None:
    """Stop the node (by the PID file in its data directory)."""
    pid = Sandbox(data_dir).stop()
    click.echo(f"stopped pid {pid}" if pid else f"the sandbox in {data_dir} was not running")


@command.command()
@data_dir_option
def status(data_dir: Path) -> None:
    """Say whether the node runs, and how to reach it. Exit status 3 when it is stopped."""
    status = Sandbox(data_dir).status()
    if status.settings is None:
        click.echo(f"no sandbox in {data_dir}")
        raise SystemExit(3)
    click.echo(f"{'running' if status.running else 'stopped'}: Cassandra {status.settings.version}")
    _describe(status)
    if not status.running:
        raise SystemExit(3)


@command.command(context_settings={"ignore_unknown_options": True})
@data_dir_option
@click.argument("args", nargs=-1, type=click.UNPROCESSED, required=True)
def nodetool(data_dir: Path, args: tuple[str, ...]) -> None:
    """Run nodetool against the node, e.g. `casstrace sandbox nodetool flush`."""
    Sandbox(data_dir).nodetool(*args, capture=False)


@command.command("cql")
@data_dir_option
@click.argument("statement", required=False)
@click.option("--file", "cql_file", type=click.File(), help="Run the statements in this file.")
@click.option("--keyspace", "-k", help="Keyspace to USE first.")
def cql_command(data_dir: Path, statement: str | None, cql_file: TextIO | None, keyspace: str | None) -> None:
    """Run CQL statements (separated by ;) and print the rows they return."""
    if (statement is None) == (cql_file is None):
        raise click.UsageError("give either a STATEMENT or --file")
    text = statement if statement is not None else cql_file.read() if cql_file is not None else ""
    with Sandbox(data_dir).connect(keyspace) as session:
        for block in cql.run(session, text):
            click.echo(block)


def _describe(status: Status) -> None:
    settings = status.settings
    assert settings is not None     # only a sandbox that has settings is described
    click.echo(f"  host        {status.host}")
    click.echo(f"  native port {settings.native_port}")
    click.echo(f"  jmx port    {settings.jmx_port}")
    if status.pid:
        click.echo(f"  pid         {status.pid}")
    click.echo(f"  data dir    {status.data_dir}")
    click.echo(f"  log         {status.log}")
    click.echo(f"  disk access {status.disk_access}")
    click.echo(f"  sstables    {status.sstable_format}, heap {settings.heap}")
