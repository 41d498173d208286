"""Nodes the tests start outside the sandbox's own control (in namespaces of their own): how they end."""

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from casstrace.node.jvm import read_argv
from casstrace.sandbox.demo import WideTable

STOP_GRACE_S = 60


def stop_jvm(pid: int) -> None:
    """SIGTERM, then SIGKILL if the JVM is still there STOP_GRACE_S later; nothing if it is gone."""
    if read_argv(pid) is None:
        return
    os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + STOP_GRACE_S
    while read_argv(pid) is not None and time.monotonic() < deadline:
        time.sleep(0.2)
    if read_argv(pid) is not None:
        os.kill(pid, signal.SIGKILL)


def load_demo(pid: int, data_dir: Path, spec: WideTable, *namespaces: str) -> None:
    """The demo tables loaded into the sandbox node at `data_dir` as the node names it, from inside its
    `namespaces` (nsenter's --mount, --net, --pid ...)."""
    code = ("import sys; from casstrace.sandbox.control import Sandbox; "
            "from casstrace.sandbox.demo import WideTable, ensure_loaded; "
            f"ensure_loaded(Sandbox(sys.argv[1]), WideTable(rows={spec.rows}))")
    loaded = subprocess.run(["nsenter", f"--target={pid}", *namespaces, "--", sys.executable, "-c", code,
                             str(data_dir)], capture_output=True, text=True, timeout=600)
    assert loaded.returncode == 0, loaded.stderr
