"""Which BPF programs a process holds, and whether the kernel still has them: how the tests check
that a capture leaves no probe behind, whatever ended it, and wait until a command has attached.
And an idle capture program holding `run`'s tracepoints, for the runs whose point is not the detach."""

import ctypes
import os
import subprocess
import sys
from pathlib import Path

SYS_BPF, BPF_PROG_GET_FD_BY_ID = 321, 13  # x86_64
HOLDER = Path(__file__).resolve().parent / "helpers" / "tracepoint_holder.py"
CAPTURING = "casstrace: capturing PID "  # what `casstrace capture --pid` says once its probes are attached


def program_ids(pid: int | str = "self") -> set[int]:
    """The ids of the BPF programs the process holds an fd of (none once it has exited)."""
    ids: set[int] = set()
    fdinfo = Path(f"/proc/{pid}/fdinfo")
    try:
        names = os.listdir(fdinfo)
    except OSError:
        return ids
    for name in names:
        try:
            text = (fdinfo / name).read_text()
        except OSError:
            continue
        ids.update(int(line.split()[1]) for line in text.splitlines() if line.startswith("prog_id:"))
    return ids


def program_exists(prog_id: int) -> bool:
    """bpf(BPF_PROG_GET_FD_BY_ID): the kernel's own word on whether a program is still loaded."""
    libc = ctypes.CDLL(None, use_errno=True)
    attr = (ctypes.c_uint32 * 4)(prog_id, 0, 0, 0)
    fd = libc.syscall(SYS_BPF, BPF_PROG_GET_FD_BY_ID, ctypes.byref(attr), ctypes.sizeof(attr))
    if fd >= 0:
        os.close(fd)
        return True
    assert ctypes.get_errno() == 2, os.strerror(ctypes.get_errno())
    return False


def wait_until_attached(command: subprocess.Popen[str]) -> None:
    """Until `casstrace capture --pid` has its probes attached (its stderr says so), however long a
    loaded machine takes (waiting for its programs to load, then 0.5 s, missed a query at load 30)."""
    assert command.stderr is not None
    lines = []
    for line in command.stderr:
        lines.append(line)
        if line.startswith(CAPTURING):
            return
    command.wait()
    raise AssertionError(f"the capture never attached (exit {command.returncode}): {''.join(lines)}")


class TracepointHolder:
    """An idle program (what `run` compiles, capturing no process) attached to the tracepoints of every
    `run`'s capture while held, from when it has compiled (seconds, in a process of its own, whose
    programs no test counts): a detach beside it is quick, since the kernel waits for grace periods only
    when a tracepoint's last user closes it (docs/performance.md: ~0.5 s instead of ~6 s). Its own
    detach, at release, is the one slow one. hold() and release() do nothing when already so."""

    def __init__(self) -> None:
        self._holder: subprocess.Popen[str] | None = None

    def hold(self) -> None:
        if self._holder is None:
            self._holder = subprocess.Popen(
                [sys.executable, str(HOLDER)],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )

    def release(self) -> None:
        holder, self._holder = self._holder, None
        if holder is not None:
            said, errors = holder.communicate(timeout=120)
            assert holder.returncode == 0 and said == "held\n", errors
