"""A node's JVM that went away while casstrace held it by pid: what this machine can still tell.

casstrace is not the JVM's parent, so its exit status cannot be read; what can is that its pid is
gone (or a zombie), and the last words of its log: the last line of the tail naming an
OutOfMemoryError or a fatal error, else the last ERROR line, else the last line
(-Dcassandra.logdir/system.log on this machine's file system; a container's is gone with it).
"""

import os
import stat
import time
from pathlib import Path

from casstrace.errors import CasstraceError
from casstrace.ledger import alive
from casstrace.node.jvm import CassandraProcess, listening_ports
from casstrace.terminal import printable

LOG_TAIL_BYTES = 64 * 1024
MAX_LINE_CHARS = 240
EXIT_WAIT_S = 5.0  # a node asked to stop (SIGTERM) closes its connections some seconds before its JVM ends
# What a JVM's end says before its stack traces and shutdown hooks (the exception's own name: the
# node's logged JVM arguments hold -XX:+HeapDumpOnOutOfMemoryError).
FATAL = "java.lang.OutOfMemoryError"
SEVERE = ("ERROR", "FATAL")  # logback's levels, at the start of a line


def node_gone(pid: int, start: int | None) -> bool:
    """The JVM `pid` (that started at `start`, /proc/PID/stat's clock ticks) has ended."""
    return start is None or not alive(pid, start)


def wait_gone(pid: int, start: int | None, timeout_s: float = EXIT_WAIT_S) -> bool:
    """Whether the JVM ends within `timeout_s`: one whose connections closed may be on its way out."""
    deadline = time.monotonic() + timeout_s
    while not node_gone(pid, start):
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.1)
    return True


def going_away(pid: int, start: int | None, native_port: int) -> bool:
    """After a request failed: whether the JVM has ended, or ends within EXIT_WAIT_S having closed its
    native port (a node asked to stop). One that still serves CQL failed the request for other reasons."""
    if node_gone(pid, start):
        return True
    return native_port not in listening_ports(pid) and wait_gone(pid, start)


def gone_message(process: CassandraProcess) -> str:
    """'the node went away: its JVM (pid N) has exited; its log's last word (PATH): LINE'."""
    said = f"the node went away: its JVM (pid {process.pid}) has exited"
    log = log_file(process)
    line = last_word(log) if log is not None else None
    return f"{said}; its log's last word ({log}): {line}" if line else said


def log_file(process: CassandraProcess) -> Path | None:
    directory = process.system_property("cassandra.logdir")
    return Path(directory) / "system.log" if directory else None


def last_word(log: Path) -> str | None:
    """The line of the log's tail that says most about an end (see the module's docstring)."""
    try:
        if not stat.S_ISREG(os.stat(log).st_mode):
            return None
        with open(log, "rb") as file:
            start = max(0, file.seek(0, os.SEEK_END) - LOG_TAIL_BYTES)
            file.seek(start)
            tail = file.read().decode(errors="replace").splitlines()[1 if start else 0 :]  # from a whole line
    except OSError:
        return None
    lines = [line.strip() for line in tail if line.strip()]
    if not lines:
        return None
    chosen = next(
        (line for line in reversed(lines) if FATAL in line),
        next((line for line in reversed(lines) if line.startswith(SEVERE)), lines[-1]),
    )
    shown = printable(chosen)  # the log's text, shown, never obeyed
    return shown if len(shown) <= MAX_LINE_CHARS else shown[: MAX_LINE_CHARS - 1] + "…"


class NodeWentAway(CasstraceError):
    """The node's JVM ended during a capture; what was captured is kept at `trace`, marked incomplete."""

    def __init__(self, reason: str, trace: Path):
        super().__init__(
            f"{reason}; what was captured until then is kept, marked incomplete: {trace}",
            f"`casstrace report {trace}` reads it; start the node again before the next capture",
        )
        self.trace = trace
