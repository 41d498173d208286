"""The casstrace click group: its subcommands live one per module in casstrace.cli, imported only
when invoked, so `casstrace report` on a laptop never imports bcc or the Cassandra driver.
cli/main.py runs it (and says what went wrong)."""

import importlib

import click

from casstrace import __version__

# command name -> module in casstrace.cli that defines a click command named `command`
COMMANDS = {
    "agent": "agent",  # hidden: one node's capture, driven by a run of several nodes
    "sandbox": "sandbox",
    "demo": "demo",
    "capture": "capture",
    "run": "run",
    "report": "report",
    "traces": "list_traces",
    "import": "import_scap",
    "compare": "compare",
    "sweep": "sweep",
    "watch": "watch",
}


class LazyGroup(click.Group):
    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(COMMANDS)

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        module_name = COMMANDS.get(name)
        if module_name is None:
            return None
        module = importlib.import_module(f"casstrace.cli.{module_name}")
        return module.command


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="casstrace")
@click.option("--debug", is_flag=True, help="On an error, also print the Python traceback (for a bug report).")
def cli(debug: bool) -> None:
    """On-node I/O diagnosis for Apache Cassandra.

    Runs a CQL query while eBPF probes (or sysdig) watch the Cassandra JVM, and says, with
    evidence, when the query's I/O far exceeds the payload it returned.
    """
