"""The casstrace command: a click group whose subcommands live one per module in casstrace.cli.

Subcommands are imported only when invoked, so `casstrace report` on a laptop never imports
bcc or the Cassandra driver.

Whatever goes wrong reaches the user as one line, `casstrace: error: WHAT (fix: HOW)`, and a
non-zero exit: a CasstraceError as it is, a usage error with the command's --help as the fix, an
OSError with its reason, anything else as an internal error. `casstrace --debug ...` also prints
the traceback.
"""

import importlib
import sys
import traceback

import click

from casstrace import __version__
from casstrace.errors import CasstraceError
from casstrace.interrupts import INTERRUPTS, interrupted_by

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


def _usage_fix(error: click.ClickException) -> str:
    context = getattr(error, "ctx", None)
    return f"see {context.command_path if context else 'casstrace'} --help"


def _fail(message: str, exit_code: int, debug: bool) -> None:
    if debug:
        traceback.print_exc()
    click.echo(f"casstrace: error: {message}", err=True)
    sys.exit(exit_code)


def main(argv: list[str] | None = None) -> None:
    INTERRUPTS.install()   # SIGTERM and SIGHUP unwind like Ctrl-C: every command cleans up on all three
    args = sys.argv[1:] if argv is None else argv
    # Read before parsing, so that a failure to parse the rest still honours it.
    debug = "--debug" in args[: args.index("--") if "--" in args else len(args)]
    try:
        # Without standalone mode click returns (rather than raises) a command's ctx.exit(code).
        code = cli.main(args=args, prog_name="casstrace", standalone_mode=False)
    except CasstraceError as error:
        _fail(str(error), error.exit_code, debug)
    except (click.exceptions.Abort, KeyboardInterrupt) as error:   # Abort: click's word for a KeyboardInterrupt
        interrupted = interrupted_by(error)
        click.echo(f"casstrace: {interrupted or 'interrupted'}", err=True)
        sys.exit(interrupted.exit_code if interrupted else 130)
    except click.ClickException as error:
        message = " ".join(error.format_message().split())
        _fail(f"{message} (fix: {_usage_fix(error)})", error.exit_code, debug)
    except click.exceptions.Exit as done:
        sys.exit(done.exit_code)
    except OSError as error:
        where = f" ({error.filename})" if error.filename else ""
        _fail(f"{error.strerror or error}{where} (fix: check the path and its permissions; --debug shows where)",
              CasstraceError.exit_code, debug)
    except Exception as error:  # a bug: still one line, and the way to the traceback
        _fail(f"internal error: {type(error).__name__}: {error} (fix: run again with casstrace --debug ... and "
              "report the traceback)", CasstraceError.exit_code, debug)
    sys.exit(code if isinstance(code, int) else 0)
