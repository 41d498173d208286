"""casstrace agent (hidden): one node's capture, driven over stdin/stdout by a `casstrace run` of
several nodes (casstrace.orchestration.agents), on this machine or through ssh."""

import sys

import click

from casstrace.cli.options import PID, PORT
from casstrace.probes.backends import BACKENDS, DEFAULT_BACKEND


@click.command("agent", hidden=True)
@click.option("--address", required=True, help="The node's native address: its JVM listens there.")
@click.option("--port", type=PORT, required=True, help="The node's native port.")
@click.option("--pid", type=PID, help="The node's JVM (default: the Cassandra JVM serving --address:--port).")
@click.option(
    "--backend",
    type=click.Choice(list(BACKENDS)),
    default=DEFAULT_BACKEND,
    show_default=True,
    help="What captures the JVM's I/O.",
)
@click.option("--table", "tables", multiple=True, help="KEYSPACE.TABLE.ID of a queried table (its files are listed).")
def command(address: str, port: int, pid: int | None, backend: str, tables: tuple[str, ...]) -> None:
    """Capture this node's JVM on the windows a driver sends on stdin (protocol: casstrace.orchestration.agents)."""
    from casstrace.orchestration.agents import AgentOptions, TableRef, main_streams, serve

    commands, replies = main_streams()
    options = AgentOptions(address, port, pid, backend, tuple(TableRef.parse(table) for table in tables))
    sys.exit(serve(options, commands, replies))
