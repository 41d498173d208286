"""The casstrace command: runs the click group of cli/group.py, and says what went wrong.

Whatever goes wrong reaches the user as one line, `casstrace: error: WHAT (fix: HOW)`, and a
non-zero exit: a CasstraceError as it is, a usage error with the command's --help as the fix, an
OSError with its reason, anything else as an internal error. `casstrace --debug ...` also prints
the traceback.

`casstrace import FILE ...` with plain arguments runs without click: starting click costs about
what sysdig's whole run on a capture does, and import is measured against sysdig
(cli/import_scap.py: fast_call). Anything else about it (--help, a bad value) goes through click.
"""

import os
import sys
from collections.abc import Callable

from casstrace.errors import CasstraceError
from casstrace.interrupts import INTERRUPTS, interrupted_by
from casstrace.terminal import printable


def _fail(message: str, exit_code: int, debug: bool) -> None:
    if debug:
        import traceback  # here: only --debug prints one

        traceback.print_exc()
    print(f"casstrace: error: {printable(message)}", file=sys.stderr)
    sys.exit(exit_code)


def _fast_call(args: list[str]) -> Callable[[], None] | None:
    """The command to run without click, for the commands that have such a path."""
    if args[:1] != ["import"]:
        return None
    from casstrace.cli.import_scap import fast_call

    return fast_call(args[1:])


def _run(args: list[str]) -> object:
    fast = _fast_call(args)
    if fast is not None:
        fast()
        return 0
    from casstrace.cli.group import cli

    # Without standalone mode click returns (rather than raises) a command's ctx.exit(code).
    return cli.main(args=args, prog_name="casstrace", standalone_mode=False)


# Commands that leave nothing for the interpreter's teardown to do (no thread, nothing registered
# with atexit, every file closed, a trace moved into place before they return). Run as the program
# (main() with no argv) they exit without it: tearing down casstrace import's modules took a twentieth
# of its whole run, which is measured against sysdig's.
WITHOUT_TEARDOWN = ("import",)


def main(argv: list[str] | None = None) -> None:
    try:
        _main(argv)
    except SystemExit as done:
        command = sys.argv[1] if argv is None and len(sys.argv) > 1 else None
        _leave(done, teardown=command not in WITHOUT_TEARDOWN)


def _leave(done: SystemExit, teardown: bool) -> None:
    """Exit; without the interpreter's teardown where `teardown` is False, and while bcc still compiles
    in its thread: a command that failed early (bad input, no node) leaves LLVM mid-compile, and the C++
    destructors that exit() runs under it abort the process ("terminate called without an active
    exception", exit 134) after the error line. Nothing of the build needs an orderly end: the kernel
    frees its programs with the process."""
    bcc = sys.modules.get("casstrace.probes.bcc.bcc_capture")
    if teardown and (bcc is None or not bcc.compile_running()):
        raise done
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(done.code if isinstance(done.code, int) else 0 if done.code is None else 1)


def _closed_standard_streams() -> list[int]:
    """Standard streams closed by the caller (`>&-`) now open /dev/null, so that no file casstrace opens
    takes their number (a trace opened as fd 1 would receive the report); returns those closed."""
    closed = []
    for descriptor in (0, 1, 2):
        try:
            os.fstat(descriptor)
        except OSError:
            closed.append(descriptor)
    for descriptor in closed:  # the lowest free number: each in turn
        if os.open(os.devnull, os.O_RDWR) != descriptor:
            raise RuntimeError("standard streams reopened out of order")
    if 1 in closed:
        sys.stdout = open(1, "w", encoding="utf-8", closefd=False)
    if 2 in closed:
        sys.stderr = open(2, "w", encoding="utf-8", closefd=False)
    return closed


def _main(argv: list[str] | None) -> None:
    if 1 in _closed_standard_streams():
        _fail(
            "standard output is closed: what casstrace prints would be lost "
            "(fix: run it with standard output open, e.g. > FILE, or 2>&1 | less)",
            CasstraceError.exit_code,
            debug=False,
        )
    INTERRUPTS.install()  # SIGTERM and SIGHUP unwind like Ctrl-C: every command cleans up on all three
    args = sys.argv[1:] if argv is None else argv
    # Read before parsing, so that a failure to parse the rest still honours it.
    debug = "--debug" in args[: args.index("--") if "--" in args else len(args)]
    try:
        code = _run(args)
    except CasstraceError as error:
        _fail(str(error), error.exit_code, debug)
    except KeyboardInterrupt as error:
        _interrupted(error)
    except Exception as error:  # every error becomes one line
        _other_error(error, debug)
    if INTERRUPTS.received is not None:  # the command stopped on a signal and said so itself (sweep's report)
        _interrupted(INTERRUPTS.received)
    sys.exit(code if isinstance(code, int) else 0)


def _interrupted(error: BaseException) -> None:
    """Exit 128 + the signal that stopped the command, once what it changed is put back (a command
    that went on to report what it did before the signal exits so too); a KeyboardInterrupt that
    came through no handler of ours is Ctrl-C's."""
    interrupted = interrupted_by(error) or INTERRUPTS.received
    print(f"casstrace: {printable(str(interrupted or 'interrupted'))}", file=sys.stderr)
    sys.exit(interrupted.exit_code if interrupted else 130)


def _other_error(error: Exception, debug: bool) -> None:
    if "click" in sys.modules:  # loaded when the command ran through click
        import click

        if isinstance(error, click.exceptions.Abort):  # click's word for a KeyboardInterrupt
            _interrupted(error)
        if isinstance(error, click.ClickException):
            message = " ".join(error.format_message().split())
            context = getattr(error, "ctx", None)
            fix = f"see {context.command_path if context else 'casstrace'} --help"
            _fail(f"{message} (fix: {fix})", error.exit_code, debug)
        if isinstance(error, click.exceptions.Exit):
            sys.exit(error.exit_code)
    if isinstance(error, OSError):
        where = f" ({error.filename})" if error.filename else ""
        _fail(
            f"{error.strerror or error}{where} (fix: check the path and its permissions; --debug shows where)",
            CasstraceError.exit_code,
            debug,
        )
    # a bug: still one line, and the way to the traceback
    _fail(
        f"internal error: {type(error).__name__}: {error} (fix: run again with casstrace --debug ... and "
        "report the traceback)",
        CasstraceError.exit_code,
        debug,
    )
