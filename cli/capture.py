"""`casstrace capture`: record what any process does with its files into a trace, without a query.

    casstrace capture --pid PID --duration S --out TRACE
    casstrace capture --out TRACE [--keep-command-line] -- COMMAND [ARGS...]

A command is started held at a gate, so the probes are attached before it runs its first
instruction; the capture ends when it exits (or after --duration). A command's capture follows
everything it starts (children, grandchildren, their threads), since that is usually where its
work happens (`sh -c 'cat FILE'`); --pid watches that one process only, as `casstrace run` does.

casstrace passes a command's exit status on, as `time` and `strace` do (128 + N when signal N
killed it). The command runs in a process group of its own, given the terminal when casstrace has
it (as a shell does with a job): Ctrl-C at the terminal reaches the command alone, and the capture
ends with it. A SIGINT, SIGTERM or SIGHUP sent to casstrace is forwarded to the command's group;
what is still running FORWARD_GRACE_S later is killed: casstrace leaves nothing behind it.

The trace holds the command's line redacted (casstrace.redaction: every value that may be a secret),
or, with --keep-command-line, whole: as the user gave it, and says which.
"""

import contextlib
import os
import shlex
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from casstrace.cli.options import (
    PID,
    SPECTROGRAMS,
    Seconds,
    container_option,
    spectrogram_option,
    stream_limit_option,
    watched_jvm,
)
from casstrace.cli.output import force_option
from casstrace.errors import CasstraceError
from casstrace.interrupts import Interrupted
from casstrace.redaction import redact_command
from casstrace.terminal import printable

if TYPE_CHECKING:
    from casstrace.probes.protocol import Windows

# Waits for the tracer's go (one byte on the given fd), then becomes the command (same pid).
GATE = "import os, sys; fd = int(sys.argv[1]); os.read(fd, 1); os.close(fd); os.execvp(sys.argv[2], sys.argv[2:])"
# Seconds a command has to exit after a forwarded signal before its process group is killed.
FORWARD_GRACE_S = 10.0


@click.command(context_settings={"ignore_unknown_options": True})
@click.option("--pid", type=PID, help="Process to capture (all its threads).")
@container_option
@click.option("--duration", type=Seconds(), help="Seconds to capture (required with --pid or --container).")
@click.option("--out", required=True, type=click.Path(dir_okay=False, path_type=Path), help="Trace file to write.")
@force_option
@stream_limit_option()
@spectrogram_option()
@click.option(
    "--keep-command-line",
    is_flag=True,
    help="Store the COMMAND's words whole in the trace, secrets and all (default: every option's value "
    "that may be a secret is redacted).",
)
@click.argument("command", nargs=-1, type=click.UNPROCESSED)
def command(
    pid: int | None,
    container: str | None,
    duration: float | None,
    out: Path,
    force: bool,
    stream_limit: int | None,
    spectrogram: str,
    keep_command_line: bool,
    command: tuple[str, ...],
) -> None:
    """Capture one process's file reads, offsets, page-cache misses, socket bytes and syscall latency
    (a COMMAND's together with every process it starts)."""
    pid = watched_jvm(pid, container)
    _check_options(pid, container, duration, keep_command_line, command)

    from casstrace.probes.backends import DEFAULT_BACKEND, backend
    from casstrace.probes.proc.mapped_pages import MappedPagesCapture
    from casstrace.probes.protocol import CaptureOptions
    from casstrace.probes.recording import record
    from casstrace.traces import TraceWriter

    program = _program(command)
    held = HeldCommand(command) if command else None
    if held is not None:
        pid = held.process.pid
    assert pid is not None  # --pid, or the command's

    meta: dict[str, Any] = {}  # the trace's, as written

    try:
        # A command's capture follows what it starts, and ends when it exits: not an early end.
        capture = backend(DEFAULT_BACKEND)(
            pid,
            stream_limit=stream_limit,
            options=CaptureOptions(
                command=_command_line(command, keep_command_line) if command else None,
                command_kept_whole=keep_command_line,
                all_syscalls=spectrogram != SPECTROGRAMS[0],
            ),
        )
        # A process's reads through memory maps (a Cassandra 4.x node's Data files) make no syscall:
        # --pid measures them over the whole capture. A command's processes have exited by the end,
        # when the measure reads their smaps: its trace says they were not measured.
        sources = [] if command else [MappedPagesCapture(pid, whole_capture=True)]
        # The writer checks `out` before a probe attaches (after the privilege check, which says more).
        writer = TraceWriter(out, force=force, inputs=_named_files(command, program))
        path = record(
            capture,
            writer,
            lambda windows: _until_done(windows, held, duration, pid),
            sources=sources,
            annotate=lambda written: meta.update(written.meta()),
        )
    except BaseException as error:
        # A command never runs unobserved (one still held at its gate would run once we exit), nor
        # outlives casstrace: a signal is passed on to it, any other failure kills it.
        if held is not None:
            held.stop(error.signum if isinstance(error, Interrupted) else None)
        if isinstance(error, Interrupted) and error.trace is not None:
            _summarise(error.trace, meta, held, error)
        raise
    if held is not None:
        held.wait()
    _summarise(path, meta, held, None)
    if held is not None:
        click.get_current_context().exit(held.status)


def _check_options(
    pid: int | None, container: str | None, duration: float | None, keep_command_line: bool, command: tuple[str, ...]
) -> None:
    """Refuses what the options cannot do together, before anything starts."""
    if (pid is None) == (not command):
        raise CasstraceError(
            "give either --pid PID or -- COMMAND ... (or --container ID|NAME for a container's JVM)",
            "casstrace capture --pid 1234 --duration 10 --out t.trace",
        )
    if pid is not None and duration is None:
        raise CasstraceError(f"{'--container' if container else '--pid'} needs --duration", "add --duration SECONDS")
    if pid is not None and keep_command_line:
        raise CasstraceError(
            "--keep-command-line keeps the words of a command casstrace starts, not a running process's",
            "capture -- COMMAND ..., or drop --keep-command-line",
        )


def _program(command: tuple[str, ...]) -> str | None:
    """The program the command runs, found as a shell would (None: no command); refused when none can run."""
    program = shutil.which(command[0]) if command else None
    if command and program is None:
        if os.sep in command[0] and os.path.exists(command[0]):  # a path shutil.which refused: not runnable
            if os.path.isdir(command[0]):
                raise CasstraceError(f"cannot run {command[0]}: it is a directory", "give the program to run")
            raise CasstraceError(
                f"cannot run {command[0]}: it is not executable",
                f"chmod +x {command[0]}, or give the program that runs it",
            )
        raise CasstraceError(f"command not found: {command[0]}", "give a program on PATH or its full path")
    return program


def _until_done(windows: "Windows", held: "HeldCommand | None", duration: float | None, pid: int) -> None:
    """The capture's body: until the command exits, the process ends, or --duration is up."""
    if held is not None:
        held.release()
    else:  # a running process: say that what it does from now on is captured
        click.echo(
            f"casstrace: capturing PID {pid} for {duration:g} s: probes attached (Ctrl-C ends it early)", err=True
        )
    deadline = time.monotonic() + duration if duration else None
    try:
        while windows.ended_early is None and (deadline is None or time.monotonic() < deadline):
            if held is not None and held.process.poll() is not None:
                break
            time.sleep(0.05)
    except Interrupted as interrupted:  # the command hears of it now, not once the trace is written
        if held is not None:
            held.forward(interrupted.signum)
        raise


def _command_line(command: tuple[str, ...], whole: bool) -> str:
    """The command's line as the trace stores it: whole (quoted as a shell would take it), or redacted."""
    return shlex.join(command) if whole else redact_command(command)


def _named_files(command: tuple[str, ...], program: str | None) -> list[str]:
    """What a command may read, as far as its words say: its program, and each argument (or the
    VALUE of one such as --input=VALUE or if=VALUE) that names an existing file. The trace is never
    written over one of them."""
    words = [part for word in command[1:] for part in (word, word.partition("=")[2])]
    return [word for word in ([program] if program else []) + words if word and os.path.isfile(word)]


class HeldCommand:
    """A command started held at a gate, in a process group of its own (see the module's docstring)."""

    def __init__(self, command: tuple[str, ...]):
        read_end, self._gate = os.pipe()
        self.process = subprocess.Popen(
            [sys.executable, "-c", GATE, str(read_end), *command], pass_fds=(read_end,), process_group=0
        )
        os.close(read_end)
        self.released = False
        self.forwarded = False
        self._terminal = _take_terminal(self.process.pid)

    def release(self) -> None:
        """Let it run (the probes are attached)."""
        os.write(self._gate, b"g")
        os.close(self._gate)
        self.released = True

    def forward(self, signum: int) -> None:
        """Pass a signal casstrace received on to the command's group, once."""
        if self.released and not self.forwarded:
            self.forwarded = True
            self._signal_group(signum)

    def wait(self) -> None:
        """Until it exits (a --duration capture may end before it)."""
        try:
            self.process.wait()
        finally:
            _give_back_terminal(self._terminal)

    def stop(self, signum: int | None) -> None:
        """After casstrace received `signum`: pass it on, and give the group FORWARD_GRACE_S to exit.
        After any other failure, or while still held: at once. Then kill whatever is left of it."""
        try:
            if self.released and signum is not None:
                self.forward(signum)
                deadline = time.monotonic() + FORWARD_GRACE_S
                while self._group_alive() and time.monotonic() < deadline:
                    time.sleep(0.05)
            self._signal_group(signal.SIGKILL)
            if not self.released:  # after the kill: a gate that reads end of file runs the command
                os.close(self._gate)
            self.process.wait()
        finally:
            _give_back_terminal(self._terminal)

    @property
    def status(self) -> int:
        """Its exit status as a shell gives it: 128 + N when signal N ended it."""
        code = self.process.returncode
        return 128 - code if code < 0 else code

    def describe(self) -> str:
        code = self.process.returncode
        return f"killed by signal {-code} (status {self.status})" if code < 0 else f"exited with status {code}"

    def _group_alive(self) -> bool:
        self.process.poll()  # reap the leader: a zombie still counts as a member
        try:
            os.killpg(self.process.pid, 0)
        except ProcessLookupError:
            return False
        return True

    def _signal_group(self, signum: int) -> None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.process.pid, signum)


def _take_terminal(group: int) -> int | None:
    """Give the terminal to the command's process group when casstrace's has it, as a shell does
    with a foreground job (so the command may read it, and Ctrl-C goes to it). Returns the group
    that had it, for _give_back_terminal."""
    try:
        if not os.isatty(0) or os.tcgetpgrp(0) != os.getpgrp():
            return None
        os.tcsetpgrp(0, group)
    except OSError:
        return None
    return os.getpgrp()


def _give_back_terminal(group: int | None) -> None:
    if group is None:
        return
    # From the background, taking the terminal back raises SIGTTOU, which would stop casstrace.
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTTOU})
    try:
        with contextlib.suppress(OSError):
            os.tcsetpgrp(0, group)
    finally:
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGTTOU})


def _summarise(path: Path, meta: dict[str, Any], held: HeldCommand | None, interrupted: Interrupted | None) -> None:
    """What was captured, from the trace's meta (the same words for every backend)."""
    click.echo(printable(f"casstrace: wrote {path}"))
    if interrupted is not None and not interrupted.trace_complete:
        click.echo(printable(f"casstrace: {interrupted.reason}: the trace is marked incomplete"))
    elif held is not None:
        click.echo(printable(f"casstrace: command {held.describe()}"))
    elif meta.get("ended_early"):
        click.echo(printable(f"casstrace: capture ended early: {meta['ended_early']}"))
    click.echo(
        f"casstrace: per-call records: {meta.get('unstreamed_events', 0):,} not kept (over --stream-limit), "
        f"{meta.get('lost_events', 0):,} lost; aggregates: {meta.get('aggregate_overflows', 0):,} updates "
        "lost to full maps"
    )
