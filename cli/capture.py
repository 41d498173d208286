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

from casstrace.cli.options import PID, Seconds, stream_limit_option
from casstrace.cli.output import force_option
from casstrace.errors import CasstraceError
from casstrace.interrupts import Interrupted
from casstrace.redaction import redact_command

if TYPE_CHECKING:
    from casstrace.probes.bcc_trace import BccCaptured

# Waits for the tracer's go (one byte on the given fd), then becomes the command (same pid).
GATE = "import os, sys; fd = int(sys.argv[1]); os.read(fd, 1); os.close(fd); os.execvp(sys.argv[2], sys.argv[2:])"


@click.command(context_settings={"ignore_unknown_options": True})
@click.option("--pid", type=PID, help="Process to capture (all its threads).")
@click.option("--duration", type=Seconds(), help="Seconds to capture (required with --pid).")
@click.option("--out", required=True, type=click.Path(dir_okay=False, path_type=Path), help="Trace file to write.")
@force_option
@stream_limit_option()
@click.argument("command", nargs=-1, type=click.UNPROCESSED)
def command(pid: int | None, duration: float | None, out: Path, force: bool, stream_limit: int | None,
            command: tuple[str, ...]) -> None:
    """Capture one process's file reads, offsets, page-cache misses, socket bytes and syscall latency
    (a COMMAND's together with every process it starts)."""
    if (pid is None) == (not command):
        raise CasstraceError("give either --pid PID or -- COMMAND ...",
                             "casstrace capture --pid 1234 --duration 10 --out t.trace")
    if pid is not None and duration is None:
        raise CasstraceError("--pid needs --duration", "add --duration SECONDS")

    from casstrace.probes.bcc_capture import BccCapture
    from casstrace.probes.mapped_pages import MappedPagesCapture
    from casstrace.probes.protocol import Windows
    from casstrace.probes.recording import record
    from casstrace.traces import TraceWriter

    child: subprocess.Popen[bytes] | None = None
    gate: int | None = None
    if command:
        if shutil.which(command[0]) is None:
            raise CasstraceError(f"command not found: {command[0]}", "give a program on PATH or its full path")
        child, gate = _start_held(command)
        pid = child.pid
    assert pid is not None      # --pid, or the command's

    released = False   # whether the command was let go past its gate

    def body(windows: Windows) -> None:
        """Until the command exits, the process ends, or --duration is up."""
        nonlocal released
        if gate is not None:
            os.write(gate, b"g")
            os.close(gate)
            released = True
        deadline = time.monotonic() + duration if duration else None
        while windows.ended_early is None and (deadline is None or time.monotonic() < deadline):
            if child is not None and child.poll() is not None:
                break
            time.sleep(0.05)

    capture: BccCapture | None = None
    try:
        # A command's capture follows what it starts, and ends when it exits: not an early end.
        capture = BccCapture(pid, stream_limit=stream_limit, follow_children=bool(command), until_exit=bool(command),
                             source=f"command {redact_command(command)} and its descendants" if command else None,
                             process=redact_command(command) if command else None)
        # A process's reads through memory maps (a Cassandra 4.x node's Data files) make no syscall:
        # --pid measures them over the whole capture. A command's processes have exited by the end,
        # when the measure reads their smaps: its trace says they were not measured.
        sources = [] if command else [MappedPagesCapture(pid, whole_capture=True)]
        # The writer checks `out` before a probe attaches (after the privilege check, which says more).
        path = record(capture, TraceWriter(out, force=force), body, sources=sources)
    except BaseException as error:
        # A command never runs unobserved: one still held at its gate would run once we exit.
        # One already running is the user's to stop (Ctrl-C reaches it too).
        if child is not None and child.poll() is None and not (released and isinstance(error, Interrupted)):
            child.kill()
            child.wait()
        if isinstance(error, Interrupted) and error.trace is not None and capture and capture.result:
            _summarise(error.trace, capture.result, child, error)
        raise
    if child is not None:
        child.wait()
    assert capture.result is not None
    _summarise(path, capture.result, child, None)


def _start_held(command: tuple[str, ...]) -> tuple[subprocess.Popen[bytes], int]:
    read_end, write_end = os.pipe()
    child = subprocess.Popen([sys.executable, "-c", GATE, str(read_end), *command], pass_fds=(read_end,))
    os.close(read_end)
    return child, write_end


def _summarise(path: Path, captured: "BccCaptured", child: subprocess.Popen[bytes] | None,
               interrupted: Interrupted | None) -> None:
    counters = captured.counters
    click.echo(f"casstrace: wrote {path}")
    if interrupted is not None and not interrupted.trace_complete:
        click.echo(f"casstrace: {interrupted.reason}: the trace is marked incomplete")
    elif child is not None:
        click.echo(f"casstrace: command exited with status {child.returncode}")
    elif captured.ended_early:
        click.echo(f"casstrace: capture ended early: {captured.ended_early}")
    click.echo(f"casstrace: per-call records: {captured.streamed_events} kept, "
               f"{captured.unstreamed_events} not streamed (over --stream-limit), {counters['notices_lost']} lost; "
               f"aggregates: {counters['aggregate_overflow']} updates lost to full maps")
