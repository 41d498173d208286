"""The casstrace command: a click group whose subcommands live one per module in casstrace.cli.

Subcommands are imported only when invoked, so `casstrace report` on a laptop never imports
bcc or the Cassandra driver.
"""

import importlib
import sys

import click

from casstrace import __version__
from casstrace.errors import CasstraceError

# command name -> module in casstrace.cli that defines a click command named `command`
COMMANDS = {
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
    def list_commands(self, ctx):
        return sorted(COMMANDS)

    def get_command(self, ctx, name):
        module_name = COMMANDS.get(name)
        if module_name is None:
            return None
        module = importlib.import_module(f"casstrace.cli.{module_name}")
        return module.command


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="casstrace")
def cli():
    """On-node I/O diagnosis for Apache Cassandra.

    Runs a CQL query while eBPF probes (or sysdig) watch the Cassandra JVM, and says, with
    evidence, when the query's I/O far exceeds the payload it returned.
    """


def main(argv=None):
    try:
        # Without standalone mode click returns (rather than raises) a command's ctx.exit(code).
        code = cli.main(args=argv, prog_name="casstrace", standalone_mode=False)
    except CasstraceError as error:
        click.echo(f"casstrace: error: {error}", err=True)
        sys.exit(error.exit_code)
    except click.exceptions.Abort:
        click.echo("casstrace: interrupted", err=True)
        sys.exit(130)
    except click.ClickException as error:
        error.show()
        sys.exit(error.exit_code)
    except click.exceptions.Exit as done:
        sys.exit(done.exit_code)
    except KeyboardInterrupt:
        click.echo("casstrace: interrupted", err=True)
        sys.exit(130)
    sys.exit(code if isinstance(code, int) else 0)
