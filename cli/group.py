"""The casstrace click group: its subcommands live one per module in casstrace.cli, imported only
when invoked, so `casstrace report` on a laptop never imports bcc or the Cassandra driver.
cli/main.py runs it (and says what went wrong)."""

import importlib

import click

from casstrace import __version__

# command name -> (module in casstrace.cli that defines a click command named `command`, the first
# sentence of its help): the list in `casstrace --help` shows these, so that it does not import every
# command's module (the Cassandra driver, the analyses); test_cli_help holds them to the commands'.
COMMANDS = {
    "agent": ("agent", None),  # hidden: one node's capture, driven by a run of several nodes
    "sandbox": ("sandbox", "A local Apache Cassandra node, or cluster of nodes, identified by its data directory."),
    "demo": ("demo", "The CASSANDRA-6586 full-row read, traced on the sandbox node."),
    "capture": (
        "capture",
        "Capture one process's file reads, offsets, page-cache misses, socket bytes and syscall latency "
        "(a COMMAND's together with every process it starts).",
    ),
    "run": (
        "run",
        "Run QUERY (a CQL statement) on this node while probes watch the Cassandra JVM, and write a trace.",
    ),
    "report": (
        "report",
        "Analyse TRACE (written by `casstrace run`, `watch` or `import`) and report what its I/O says.",
    ),
    "traces": (
        "list_traces",
        "List stored traces: date, node, measured executions, amplification (data read ÷ payload), query.",
    ),
    "import": ("import_scap", "Read a sysdig capture (.scap) and write a trace of one process (no sysdig needed)."),
    "compare": ("compare", "Compare TRACE_A TRACE_B, or run --before CQL and --after CQL, side by side."),
    "sweep": (
        "sweep",
        "Reproduce the column-count study: SELECT one column of a table with N columns, N from "
        "--min-columns to --max-columns, against the narrow refactor.",
    ),
    "watch": ("watch", "Watch the node's JVM and rank the statements it serves by the storage bytes they move."),
}


class LazyGroup(click.Group):
    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(COMMANDS)

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        if name not in COMMANDS:
            return None
        module = importlib.import_module(f"casstrace.cli.{COMMANDS[name][0]}")
        return module.command

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        """The commands' list, shortened by click's own rule, from COMMANDS (hidden ones: None)."""
        shown = [(name, summary) for name, (_, summary) in sorted(COMMANDS.items()) if summary is not None]
        limit = formatter.width - 6 - max(len(name) for name, _ in shown)
        with formatter.section("Commands"):
            formatter.write_dl([(name, click.Command(name, help=s).get_short_help_str(limit)) for name, s in shown])


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="casstrace")
@click.option("--debug", is_flag=True, help="On an error, also print the Python traceback (for a bug report).")
def cli(debug: bool) -> None:
    """On-node I/O diagnosis for Apache Cassandra.

    Runs a CQL query while eBPF probes (or sysdig) watch the Cassandra JVM, and says, with
    evidence, when the query's I/O far exceeds the payload it returned.
    """
