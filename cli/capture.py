"""`casstrace capture`: record what any process does with its files into a trace, without a query.

    casstrace capture --pid PID --duration S --out TRACE
    casstrace capture --out TRACE -- COMMAND [ARGS...]

A command is started held at a gate, so the probes are attached before it runs its first
instruction; the capture ends when it exits (or after --duration). A command's capture follows
everything it starts (children, grandchildren, their threads), since that is usually where its
work happens (`sh -c 'cat FILE'`); --pid watches that one process only, as `casstrace run` does.
"""

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING

import click

from casstrace.cli.options import PID, STREAM_LIMIT, Seconds
from casstrace.cli.output import force_option
from casstrace.errors import CasstraceError
from casstrace.outputs import check_output
from casstrace.redaction import redact_command

if TYPE_CHECKING:
    from casstrace.probes.bcc_capture import BccCapture

# Waits for the tracer's go (one byte on the given fd), then becomes the command (same pid).
GATE = "import os, sys; fd = int(sys.argv[1]); os.read(fd, 1); os.close(fd); os.execvp(sys.argv[2], sys.argv[2:])"


@click.command(context_settings={"ignore_unknown_options": True})
@click.option("--pid", type=PID, help="Process to capture (all its threads).")
@click.option("--duration", type=Seconds(), help="Seconds to capture (required with --pid).")
@click.option("--out", required=True, type=click.Path(dir_okay=False), help="Trace file to write.")
@force_option
@click.option("--stream-limit", type=STREAM_LIMIT, default=None,
              help="Per-call read/lseek records to keep (aggregates are always complete).")
@click.argument("command", nargs=-1, type=click.UNPROCESSED)
def command(pid: int | None, duration: float | None, out: str, force: bool, stream_limit: int | None,
            command: tuple[str, ...]) -> None:
    """Capture one process's file reads, offsets, page-cache misses, socket bytes and syscall latency
    (a COMMAND's together with every process it starts)."""
    if (pid is None) == (not command):
        raise CasstraceError("give either --pid PID or -- COMMAND ...",
                             "casstrace capture --pid 1234 --duration 10 --out t.trace")
    if pid is not None and duration is None:
        raise CasstraceError("--pid needs --duration", "add --duration SECONDS")

    from casstrace.probes.bcc_capture import DEFAULT_STREAM_LIMIT, BccCapture
    from casstrace.traces import TraceWriter

    limit = stream_limit or DEFAULT_STREAM_LIMIT
    child = gate = None
    if command:
        if shutil.which(command[0]) is None:
            raise CasstraceError(f"command not found: {command[0]}", "give a program on PATH or its full path")
        child, gate = _start_held(command)
        pid = child.pid
    assert pid is not None      # --pid, or the command's
    try:
        capture = BccCapture(pid, stream_limit=limit, follow_children=bool(command),
                             source=f"command {redact_command(command)} and its descendants" if command else None)
        check_output(out, force)   # before a probe attaches (after the privilege check, which says more)
    except BaseException:
        if child is not None:
            child.kill()
            child.wait()
        raise

    writer = TraceWriter(out, force=force)
    interrupted = False
    try:
        with capture:
            if gate is not None:
                os.write(gate, b"g")
                os.close(gate)
            deadline = time.monotonic() + duration if duration else None
            while capture.ended_early is None and (deadline is None or time.monotonic() < deadline):
                if child is not None and child.poll() is not None:
                    break
                time.sleep(0.05)
    except KeyboardInterrupt:
        if not capture.captured:   # interrupted before the probes were attached: nothing to keep
            writer.discard()
            raise
        interrupted = True
    except BaseException:
        writer.discard()
        raise
    if child is not None:
        capture.ended_early = None   # a command exiting is how its capture is meant to end
        capture.process = redact_command(command)   # the gate's description was taken before exec
    capture.write(writer)
    path = writer.finish(complete=not interrupted,
                         reason="interrupted by Ctrl-C: probes detached, what was captured is kept")
    if child is not None and not interrupted:
        child.wait()
    _summarise(path, capture, child, interrupted)
    if interrupted:
        sys.exit(130)


def _start_held(command: tuple[str, ...]) -> tuple[subprocess.Popen[bytes], int]:
    read_end, write_end = os.pipe()
    child = subprocess.Popen([sys.executable, "-c", GATE, str(read_end), *command], pass_fds=(read_end,))
    os.close(read_end)
    return child, write_end


def _summarise(path: Path, capture: "BccCapture", child: subprocess.Popen[bytes] | None, interrupted: bool) -> None:
    counters = capture.counters
    click.echo(f"casstrace: wrote {path}")
    if interrupted:
        click.echo("casstrace: interrupted: the trace is marked incomplete")
    elif child is not None:
        click.echo(f"casstrace: command exited with status {child.returncode}")
    elif capture.ended_early:
        click.echo(f"casstrace: capture ended early: {capture.ended_early}")
    click.echo(f"casstrace: per-call records: {capture.streamed_events} kept, "
               f"{capture.unstreamed_events} not streamed (over --stream-limit), {counters['notices_lost']} lost; "
               f"aggregates: {counters['aggregate_overflow']} updates lost to full maps")
