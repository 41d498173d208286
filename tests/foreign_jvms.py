"""Nodes the tests start outside the sandbox's own control (in namespaces of their own): how they end."""

import os
import secrets
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from casstrace.ledger import process_start
from casstrace.node.jvm import read_argv
from casstrace.sandbox.demo import WideTable

STOP_GRACE_S = 60


def stop_jvm(pid: int) -> None:
    """SIGTERM, then SIGKILL if the JVM is still there STOP_GRACE_S later; nothing if it is gone.
    An ended JVM whose parent never reaps it (a PID namespace's init that is `sleep`) stays a zombie
    until its namespace ends: ended all the same, not a JVM to wait STOP_GRACE_S for."""
    if process_start(pid) is None:
        return
    os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + STOP_GRACE_S
    while process_start(pid) is not None and time.monotonic() < deadline:
        time.sleep(0.2)
    if process_start(pid) is not None:
        os.kill(pid, signal.SIGKILL)


def load_demo(pid: int, data_dir: Path, spec: WideTable, *namespaces: str) -> None:
    """The demo tables loaded into the sandbox node at `data_dir` as the node names it, from inside its
    `namespaces` (nsenter's --mount, --net, --pid ...)."""
    code = (
        "import sys; from casstrace.sandbox.control import Sandbox; "
        "from casstrace.sandbox.demo import WideTable, ensure_loaded; "
        f"ensure_loaded(Sandbox(sys.argv[1]), WideTable(rows={spec.rows}))"
    )
    loaded = subprocess.run(
        ["nsenter", f"--target={pid}", *namespaces, "--", sys.executable, "-c", code, str(data_dir)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert loaded.returncode == 0, loaded.stderr


# The name=systemd cgroup v1 hierarchy of this machine's hybrid layout, where the tests name cgroups
# as container runtimes do.
SYSTEMD_CGROUPS = Path("/sys/fs/cgroup/systemd")


@contextmanager
def in_container_cgroup(pid: int, parent: str, prefix: str) -> Iterator[str]:
    """The process moved into a cgroup named as a container runtime names a container's
    (PARENT/PREFIXID.scope, e.g. system.slice/docker-ID.scope), and back to the root after. Yields the id."""
    container_id = secrets.token_hex(32)
    cgroup = SYSTEMD_CGROUPS / parent / f"{prefix}{container_id}.scope"
    made_parent = not cgroup.parent.exists()
    cgroup.mkdir(parents=True)
    try:
        (cgroup / "cgroup.procs").write_text(str(pid))
        yield container_id
    finally:
        if read_argv(pid) is not None:
            (SYSTEMD_CGROUPS / "cgroup.procs").write_text(str(pid))
        cgroup.rmdir()
        if made_parent:
            cgroup.parent.rmdir()
