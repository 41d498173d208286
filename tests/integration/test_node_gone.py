"""A node that goes away during a watch keeps what was captured: a node of these tests' own (its ports
from CASSTRACE_TEST_GONE_NATIVE_PORT and CASSTRACE_TEST_GONE_JMX_PORT), started for each test, read by a
client meanwhile, then killed (SIGKILL to its JVM) or stopped (`casstrace sandbox stop`) mid-watch.
The truths: the kernel's own record of the JVM's reads (the trace's rows, which `casstrace report`
reads back), the watch's span against the moment the node went, the trace's own completeness flag,
and the ledger (no record left for a JVM that is gone)."""

import json
import os
import signal
import sqlite3
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from casstrace.ledger import TRACE_PROBABILITY, Ledger
from casstrace.sandbox.control import Sandbox
from casstrace_cli import CASSTRACE, casstrace
from watching import start_watch, watch_command

pytestmark = pytest.mark.integration

GONE_NATIVE_PORT = int(os.environ.get("CASSTRACE_TEST_GONE_NATIVE_PORT", "18052"))
GONE_JMX_PORT = int(os.environ.get("CASSTRACE_TEST_GONE_JMX_PORT", "16252"))
KEYSPACE = "casstrace_gone"
ROWS = 200
GONE_AFTER_S = 8.0  # of watching, before the node goes
INTERVAL_S = 10
INTERVAL_GONE_AFTER_S = 15.0  # one interval complete, the second under way
RUN_GONE_AFTER_S = 8.0  # of executions (each 10 pages of 20 rows), before the node goes
READ_PAUSE_S = 0.005  # the client's reads: at most 200 a second, on a machine others share


@pytest.fixture
def node(sandbox, tmp_path_factory) -> Iterator[Sandbox]:
    """A node of this test's own, with a table of ROWS rows on disk (flushed: reads go to its Data file)."""
    own = Sandbox(tmp_path_factory.mktemp("gone-node"))
    own.start(
        version=sandbox.settings.version,  # in the cache: no download
        native_port=GONE_NATIVE_PORT,
        jmx_port=GONE_JMX_PORT,
        heap="512M",
        progress=lambda _: None,
    )
    try:
        with own.connect() as session:
            session.execute(
                f"CREATE KEYSPACE {KEYSPACE} WITH replication = {{'class': 'SimpleStrategy', 'replication_factor': 1}}"
            )
            session.execute(f"CREATE TABLE {KEYSPACE}.t (k int PRIMARY KEY, v blob)")
            insert = session.prepare(f"INSERT INTO {KEYSPACE}.t (k, v) VALUES (?, ?)")
            for k in range(ROWS):
                session.execute(insert, (k, os.urandom(4096)))
        own.nodetool("flush", KEYSPACE)
        yield own
    finally:
        if own.is_running():
            own.stop()


class Reader:
    """A client reading the table until the node stops answering."""

    def __init__(self, node: Sandbox):
        self.node = node
        self.reads = 0
        self._thread = threading.Thread(target=self._run, daemon=True)

    def start(self) -> "Reader":
        self._thread.start()
        return self

    def _run(self) -> None:
        try:
            with self.node.connect() as session:
                select = session.prepare(f"SELECT v FROM {KEYSPACE}.t WHERE k = ?")
                while True:
                    session.execute(select, (self.reads % ROWS,))
                    self.reads += 1
                    time.sleep(READ_PAUSE_S)
        except Exception:
            return  # the node went away

    def join(self) -> None:
        self._thread.join(timeout=120)


def _meta(trace: Path) -> dict:
    with sqlite3.connect(trace) as db:
        return {key: json.loads(value) for key, value in db.execute("SELECT key, value FROM meta")}


def _data_read_bytes(trace: Path) -> int:
    """What the probes saw the JVM read from the table's Data file, by thread and slot."""
    with sqlite3.connect(trace) as db:
        (read,) = db.execute(
            "SELECT COALESCE(SUM(t.read_bytes), 0) FROM thread_io t JOIN files USING (file_id) "
            f"WHERE path LIKE '%/{KEYSPACE}/%-Data.db'"
        ).fetchone()
    return int(read)


def _report(trace: Path) -> dict:
    shown = casstrace("report", trace, "--format", "json", timeout=300)
    assert shown.returncode == 0, shown.stderr
    return json.loads(shown.stdout)


def _assert_went_away(errors: str, status: int, pid: int) -> None:
    assert status == 2, errors
    assert f"the node went away: its JVM (pid {pid}) has exited" in errors, errors
    assert "settraceprobability" not in errors  # no command for a JVM that no longer exists
    assert "is gone, and the trace probability casstrace set with it" in errors
    assert Ledger(pid).read(TRACE_PROBABILITY) is None  # nothing left for the next casstrace to put back


def test_a_node_killed_during_a_watch_leaves_its_capture(node, tmp_path):
    pid = node.pid()
    assert pid is not None
    out = tmp_path / "killed.trace"
    watcher = start_watch(watch_command(node, out, "--duration", "120", "--format", "json"))
    reader = Reader(node).start()
    time.sleep(GONE_AFTER_S)
    reads_before = reader.reads
    os.kill(pid, signal.SIGKILL)
    report, errors = watcher.communicate(timeout=300)
    reader.join()
    _assert_went_away(errors, watcher.returncode, pid)
    assert f"marked incomplete: {out}" in errors
    assert reads_before > 0
    meta = _meta(out)
    assert meta["complete"] is False and "the node went away" in meta["incomplete_reason"]
    assert GONE_AFTER_S - 1 <= meta["watch"]["duration_s"] <= GONE_AFTER_S + 30  # the seconds captured
    assert _data_read_bytes(out) > 0
    shown = _report(out)
    assert shown["complete"] is False and shown["sstable_bytes"] > 0
    assert json.loads(report)["complete"] is False  # the watch's own report, written before the error


def test_a_node_stopped_during_an_interval_watch_keeps_the_complete_interval(node, tmp_path):
    pid = node.pid()
    assert pid is not None
    out = tmp_path / "shift.trace"
    command = watch_command(node, out, "--duration", "120", "--interval", str(INTERVAL_S), "--format", "json")
    watcher = start_watch(command)
    reader = Reader(node).start()
    time.sleep(INTERVAL_GONE_AFTER_S)
    stopped = casstrace("sandbox", "stop", "--data-dir", node.data_dir, timeout=300)
    assert stopped.returncode == 0, stopped.stderr
    summary, errors = watcher.communicate(timeout=300)
    reader.join()
    _assert_went_away(errors, watcher.returncode, pid)
    # The JVM ends some seconds after the stop (it drains first): intervals that ended before are whole.
    traces = sorted(tmp_path.glob("*.trace"))
    assert len(traces) >= 2 and traces == [tmp_path / f"shift-{n:04d}.trace" for n in range(1, len(traces) + 1)]
    *whole, rest = traces
    for trace in whole:
        meta = _meta(trace)
        assert meta["complete"] is True and round(meta["watch"]["duration_s"]) == INTERVAL_S
        assert _report(trace)["complete"] is True
    assert _data_read_bytes(whole[0]) > 0  # the reader read throughout the first interval
    meta = _meta(rest)
    assert meta["complete"] is False and "the node went away" in meta["incomplete_reason"]
    assert _report(rest)["complete"] is False
    assert all(trace.with_suffix(".json").exists() for trace in traces)  # each interval's report
    assert json.loads(summary)["complete"] is False  # the whole watch's summary


def _read_chars(pid: int) -> int:
    """What the JVM's read calls returned so far (/proc/PID/io rchar): a run's executions read its table."""
    for line in Path(f"/proc/{pid}/io").read_text().splitlines():
        if line.startswith("rchar:"):
            return int(line.split()[1])
    raise AssertionError(f"no rchar in /proc/{pid}/io")


def test_a_node_killed_during_a_run_leaves_its_capture(node, tmp_path):
    """Killed seconds into the run's executions (the JVM has read the table's rows since the run
    started): the executions done are kept, and the error names the node's end, not the query or its
    consistency."""
    pid = node.pid()
    assert pid is not None
    out = tmp_path / "killed.trace"
    query = f"SELECT * FROM {KEYSPACE}.t"
    options = f"--host {node.host} --port {node.native_port} --pid {pid} --repeat 1000 --page-size 20 --warmup 0"
    runner = subprocess.Popen(
        [*CASSTRACE, "run", query, *options.split(), "--no-html", "--out", str(out)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    baseline = _read_chars(pid)
    deadline = time.monotonic() + 300
    while _read_chars(pid) - baseline < ROWS * 4096 and runner.poll() is None:  # an execution's rows read
        assert time.monotonic() < deadline, "the run's executions never started"
        time.sleep(0.2)
    time.sleep(RUN_GONE_AFTER_S)
    assert runner.poll() is None, runner.communicate()
    os.kill(pid, signal.SIGKILL)
    verdict, errors = runner.communicate(timeout=300)
    _assert_went_away_from_a_run(errors, runner.returncode, pid)
    meta = _meta(out)
    assert meta["complete"] is False and "the node went away" in meta["incomplete_reason"]
    with sqlite3.connect(out) as db:
        executions = db.execute("SELECT kind, rows, error FROM executions").fetchall()
        done = sum(kind == "measured" and error is None for kind, _, error in executions)
        (read,) = db.execute(
            "SELECT COALESCE(SUM(f.read_bytes), 0) FROM file_io f JOIN files USING (file_id) "
            f"WHERE path LIKE '%/{KEYSPACE}/%-Data.db'"
        ).fetchone()
    assert done >= 1 and read > 0, (executions, read, errors)
    assert f"trace: {out}" in verdict  # the verdict of what was captured, before the error
    assert _report(out)["complete"] is False


def _assert_went_away_from_a_run(errors: str, status: int, pid: int) -> None:
    assert status == 2, errors
    assert f"the node went away: its JVM (pid {pid}) has exited" in errors, errors
    assert "consistency" not in errors, errors
