"""The ledger of what casstrace changed on a node (casstrace.ledger), with real processes: a `sleep`
stands for the node's JVM, a Python child for the casstrace that owns a change, SIGKILLed as an OOM
kill would."""

import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from casstrace.errors import CasstraceError
from casstrace.ledger import TRACE_PROBABILITY, Change, Ledger, Record, Unreadable, alive, process_start
from casstrace.node.jvm import CassandraProcess
from casstrace.node.leftovers import restore_left_behind, unchanged_evidence
from casstrace.node.tracing import TraceProbability
from test_watch_units import FakeNodetool

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


# A record of the node this test process stands for, and each way its file can be unreadable: truncated
# by a crash of the machine or a full disk (the writer's rename makes it whole or absent otherwise), the
# wrong shape by hand or by another version, not a regular file at all.
WHOLE = {
    "version": 1,
    "what": TRACE_PROBABILITY,
    "node_pid": os.getpid(),
    "node_start": process_start(os.getpid()),
    "original": 0.0,
    "changed_to": 0.25,
    "owner_pid": 1,  # init: alive, never a casstrace
    "owner_start": 0,
    "recorded_at": "2026-11-27T18:00:00Z",
}
BAD_SHAPES = {
    "null": "null",
    "a list": json.dumps([WHOLE]),
    "a number": "0.25",
    "original a string": json.dumps({**WHOLE, "original": "0"}),
    "original a list": json.dumps({**WHOLE, "original": [0]}),
    "original null": json.dumps({**WHOLE, "original": None}),
    "original a boolean": json.dumps({**WHOLE, "original": False}),
    "original above 1": json.dumps({**WHOLE, "original": 25}),
    "owner_pid a string": json.dumps({**WHOLE, "owner_pid": "1"}),
    "no owner": json.dumps({key: value for key, value in WHOLE.items() if key != "owner_pid"}),
    "another version": json.dumps({**WHOLE, "version": 2}),
    "truncated": json.dumps(WHOLE)[:57],
    "empty": "",
    "not UTF-8": '{"version": 1, "what": "\xff"}',
}


def _record_path(directory: Path) -> Path:
    return directory / f"{os.getpid()}-{process_start(os.getpid())}-{TRACE_PROBABILITY}.json"


def test_a_whole_record_reads_back(tmp_path):
    _record_path(tmp_path).write_text(json.dumps(WHOLE))
    change = Ledger(os.getpid(), tmp_path).read(TRACE_PROBABILITY)
    assert isinstance(change, Change) and (change.original, change.changed_to) == (0.0, 0.25)


@pytest.mark.parametrize("shape", sorted(BAD_SHAPES))
def test_a_record_of_the_wrong_shape_is_named_never_a_crash(tmp_path, shape):
    path = _record_path(tmp_path)
    path.write_bytes(BAD_SHAPES[shape].encode("latin-1"))
    ledger = Ledger(os.getpid(), tmp_path)
    record = ledger.read(TRACE_PROBABILITY)
    assert isinstance(record, Unreadable) and record.path == path and record.reason, record
    assert ledger.left_behind() == [record]  # its owner unknown: left behind, for the evidence to decide
    with pytest.raises(CasstraceError, match="cannot be read") as refused:  # never taken for "no record"
        ledger.record(TRACE_PROBABILITY, 0.25, 0.3)
    assert str(path) in str(refused.value) and "watch --restore" in str(refused.value)


@pytest.mark.parametrize("kind", ["fifo", "directory", "symlink", "socket"])
def test_only_a_regular_file_is_opened(tmp_path, kind, monkeypatch):
    """A FIFO at the record's path would block the open (no writer) and the read: it is not opened."""
    path = _record_path(tmp_path)
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "directory":
        path.mkdir()
    elif kind == "symlink":
        (tmp_path / "elsewhere").write_text(json.dumps(WHOLE))
        path.symlink_to(tmp_path / "elsewhere")
    else:
        monkeypatch.chdir(path.parent)  # a socket's path is bound to 108 bytes: a worker's tmp_path can be longer
        with socket.socket(socket.AF_UNIX) as listening:
            listening.bind(path.name)
    found: list[list[Record]] = []
    reader = threading.Thread(target=lambda: found.append(Ledger(os.getpid(), tmp_path).left_behind()), daemon=True)
    reader.start()
    reader.join(timeout=20)
    assert not reader.is_alive(), "reading the ledger hung"
    ((record,),) = found
    assert isinstance(record, Unreadable) and "not a regular file" in record.reason


def test_a_fifo_at_the_partial_path_does_not_hang_the_record(tmp_path):
    partial = _record_path(tmp_path).with_suffix(".partial")
    os.mkfifo(partial)
    recorder = threading.Thread(
        target=lambda: Ledger(os.getpid(), tmp_path).record(TRACE_PROBABILITY, 0.0, 0.3), daemon=True
    )
    recorder.start()
    recorder.join(timeout=20)
    assert not recorder.is_alive(), "writing the record hung"
    change = Ledger(os.getpid(), tmp_path).read(TRACE_PROBABILITY)
    assert isinstance(change, Change) and change.changed_to == 0.3 and not partial.exists()


def test_an_unreadable_record_on_a_node_at_0_is_removed_with_a_warning(tmp_path, monkeypatch):
    """0 is Cassandra's default and a value casstrace never sets: nothing of casstrace's is in effect."""
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path))
    ledger = Ledger(os.getpid())
    ledger.directory.mkdir(parents=True)
    _record_path(ledger.directory).write_text("null")
    told = restore_left_behind(_this_process(), lambda: FakeNodetool(0.0), tell=lambda line: None)  # type: ignore[arg-type,return-value]  # a FakeNodetool for the Nodetool
    assert len(told) == 1 and told[0].startswith("warning: removed") and "0 of its requests" in told[0]
    assert ledger.read(TRACE_PROBABILITY) is None


def test_an_unreadable_record_on_a_node_that_traces_cannot_tell(tmp_path, monkeypatch):
    """The node at 0.25 (what a killed watch may have left): never taken for the node's own value, nor
    "nothing left changed"; the command that checks and the one that fixes."""
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path))
    ledger = Ledger(os.getpid())
    ledger.directory.mkdir(parents=True)
    path = _record_path(ledger.directory)
    path.write_text(BAD_SHAPES["truncated"])
    node = FakeNodetool(0.25)
    with pytest.raises(CasstraceError, match="cannot tell") as strict:
        restore_left_behind(_this_process(), lambda: node, tell=print)  # type: ignore[arg-type,return-value]  # a FakeNodetool for the Nodetool
    assert "nodetool gettraceprobability" in (strict.value.fix or "")
    assert "nodetool settraceprobability 0" in (strict.value.fix or "")
    assert str(path) in str(strict.value)
    (warned,) = restore_left_behind(_this_process(), lambda: node, tell=print, strict=False)  # type: ignore[arg-type,return-value]  # a FakeNodetool for the Nodetool
    assert warned.startswith("warning: cannot tell")
    assert isinstance(ledger.read(TRACE_PROBABILITY), Unreadable) and node.probability == 0.25  # kept, untouched
    with pytest.raises(CasstraceError, match="cannot be read"):  # and no watch takes 0.25 for the original
        TraceProbability(node, 0.3, print, ledger).__enter__()  # type: ignore[arg-type]  # a FakeNodetool for the Nodetool
    assert node.probability == 0.25


def test_the_evidence_that_nothing_was_left_changed_is_the_nodes_value(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path))
    assert unchanged_evidence(_this_process(), FakeNodetool(0.0)).startswith("nothing was left changed")  # type: ignore[arg-type]  # a FakeNodetool for the Nodetool
    at_quarter = unchanged_evidence(_this_process(), FakeNodetool(0.25))  # type: ignore[arg-type]  # a FakeNodetool for the Nodetool
    assert "nothing was left changed" not in at_quarter and "0.25" in at_quarter
    assert "nodetool settraceprobability 0" in at_quarter


def _this_process() -> CassandraProcess:
    return CassandraProcess(os.getpid(), ())
