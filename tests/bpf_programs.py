"""Which BPF programs a process holds, and whether the kernel still has them: how the tests check
that a capture leaves no probe behind, whatever ended it, and wait until a command has attached."""

import ctypes
import os
import subprocess
import time
from pathlib import Path

SYS_BPF, BPF_PROG_GET_FD_BY_ID = 321, 13  # x86_64


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


def wait_until_attached(command: subprocess.Popen[str], timeout_s: float = 120) -> None:
    """Until a casstrace command has its probes attached, however long a loaded machine takes: it
    holds its programs once bcc has loaded them (a fixed 4 s wait fired before that at load 12)."""
    deadline = time.monotonic() + timeout_s
    while not program_ids(command.pid) and command.poll() is None and time.monotonic() < deadline:
        time.sleep(0.1)
    assert program_ids(command.pid), "the capture never loaded its programs"
    time.sleep(0.5)  # the tracepoints attach right after the load
