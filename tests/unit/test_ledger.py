"""The ledger of what casstrace changed on a node (casstrace.ledger), with real processes: a `sleep`
stands for the node's JVM, a Python child for the casstrace that owns a change, SIGKILLed as an OOM
kill would."""

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from casstrace.errors import CasstraceError
from casstrace.ledger import TRACE_PROBABILITY, Ledger, alive, process_start

RECORD = """
import sys, time
from pathlib import Path
from casstrace.ledger import Ledger
Ledger(int(sys.argv[1]), Path(sys.argv[2])).record("trace_probability", 0.002, 0.3)
print("recorded", flush=True)
time.sleep(600)
"""


@pytest.fixture
def node():
    """A process standing for the node's JVM."""
    jvm = subprocess.Popen(["sleep", "600"])
    yield jvm
    jvm.kill()
    jvm.wait()


def _owner(node_pid: int, directory: Path) -> subprocess.Popen:
    """A casstrace that wrote a change down and is still running."""
    owner = subprocess.Popen(
        [sys.executable, "-c", RECORD, str(node_pid), str(directory)], stdout=subprocess.PIPE, text=True
    )
    assert owner.stdout is not None and owner.stdout.readline() == "recorded\n"
    return owner


def test_a_change_whose_owner_was_killed_is_left_behind(node, tmp_path):
    owner = _owner(node.pid, tmp_path)
    ledger = Ledger(node.pid, tmp_path)
    assert ledger.left_behind() == []  # its owner still runs: it will put it back itself
    owner.send_signal(signal.SIGKILL)
    time.sleep(0.2)
    assert ledger.left_behind() != []  # dead, not yet reaped (a zombie): gone all the same
    owner.wait()
    (change,) = ledger.left_behind()
    assert (change.what, change.original, change.changed_to, change.owner_pid) == (
        TRACE_PROBABILITY,
        0.002,
        0.3,
        owner.pid,
    )
    ledger.forget(TRACE_PROBABILITY)
    assert ledger.left_behind() == []


def test_a_live_owner_holds_its_change_against_another_casstrace(node, tmp_path):
    owner = _owner(node.pid, tmp_path)
    try:
        with pytest.raises(CasstraceError, match=f"another casstrace \\(pid {owner.pid}\\) holds"):
            Ledger(node.pid, tmp_path).record(TRACE_PROBABILITY, 0.3, 0.5)  # would take 0.3 for the original
    finally:
        owner.kill()
        owner.wait()
    with pytest.raises(CasstraceError, match="watch --restore"):  # left behind: put back first
        Ledger(node.pid, tmp_path).record(TRACE_PROBABILITY, 0.3, 0.5)


def test_a_restarted_node_forgot_the_change(tmp_path):
    """A JVM that is gone took the changes with it (neither persists): its files are removed."""
    jvm = subprocess.Popen(["sleep", "600"])
    owner = _owner(jvm.pid, tmp_path)
    owner.kill()
    owner.wait()
    jvm.kill()
    jvm.wait()
    assert list(tmp_path.glob("*.json"))
    Ledger(os.getpid(), tmp_path).left_behind()
    assert not list(tmp_path.glob("*.json"))


def test_a_reused_pid_is_not_the_owner(node):
    start = process_start(node.pid)
    assert start is not None and alive(node.pid, start)
    assert not alive(node.pid, start + 1)  # same pid, another start: another process
