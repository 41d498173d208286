"""A full GC forced in a HotSpot JVM through its attach socket, without starting a JVM for it.

`jcmd PID GC.run` starts a JVM of its own: on two cores its start-up takes the CPU from the test's
client just before the pause, so the client sends nothing then and no request is inside the node when
the pause begins. Speaking the attach protocol (the one jcmd speaks) from the test costs nothing.
"""

import os
import signal
import socket
import time
from pathlib import Path

ATTACH_WAIT_S = 10.0


def _socket_path(pid: int) -> Path:
    return Path(f"/proc/{pid}/root/tmp/.java_pid{pid}")


def _start_listener(pid: int) -> None:
    """The JVM opens its attach socket on SIGQUIT when it finds a trigger file in its working directory."""
    trigger = Path(f"/proc/{pid}/cwd/.attach_pid{pid}")
    trigger.touch()
    try:
        os.kill(pid, signal.SIGQUIT)
        deadline = time.monotonic() + ATTACH_WAIT_S
        while not _socket_path(pid).exists():
            if time.monotonic() > deadline:
                raise AssertionError(f"JVM {pid} opened no attach socket in {ATTACH_WAIT_S} s")
            time.sleep(0.05)
    finally:
        trigger.unlink(missing_ok=True)


def jcmd(pid: int, command: str) -> str:
    """What `jcmd PID command` prints; raises when the JVM answers with an error."""
    if not _socket_path(pid).exists():
        _start_listener(pid)
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as attach:
        attach.settimeout(120)
        attach.connect(str(_socket_path(pid)))
        # protocol 1: the version, the operation and three arguments, each ending in a NUL
        attach.sendall(b"1\0jcmd\0" + command.encode() + b"\0\0\0")
        answer = b""
        while chunk := attach.recv(65536):
            answer += chunk
    code, _, output = answer.decode(errors="replace").partition("\n")
    if code.strip() != "0":
        raise AssertionError(f"JVM {pid} refused {command!r}: {answer!r}")
    return output


def force_full_gc(pid: int) -> tuple[int, int]:
    """A full GC (`GC.run`); the call's span in monotonic ns, which holds the pause."""
    before = time.monotonic_ns()
    jcmd(pid, "GC.run")
    return before, time.monotonic_ns()
