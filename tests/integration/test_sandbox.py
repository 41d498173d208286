"""`casstrace sandbox` against real Cassandra JVMs, through the real CLI.

The node these tests start and stop is their own (its own data dir and ports), so the shared test
sandbox from conftest keeps running for everyone else; it is used only as proof that the artifact
cache holds a resolved version. Their node's commit log syncs in batch mode (each write waits for
its own sync): the few writes of the other tests do not notice, and the capture of its syncs needs
no node of its own.
"""

import os
import re
import shutil
import socket
import subprocess
import uuid
from pathlib import Path

import pytest

from casstrace.analyses.write_io import is_commitlog_segment, write_io
from casstrace.probes.bcc.bcc_capture import BccCapture
from casstrace.sandbox import artifacts
from casstrace.sandbox.control import Sandbox
from casstrace.traces import Trace, TraceWriter, queries
from casstrace.traces.schema import THREAD_SLOT_NS
from casstrace_cli import casstrace
from node_jit import QUICK_JIT

pytestmark = pytest.mark.integration

SCRATCH_HEAP = "512M"
BATCH_WRITES = 200  # one after another, each acknowledged once synced
# The node's commit-log timers (CommitLogMetrics), read over JMX by nodetool's sjk: WaitingOnCommit
# times each write's wait for its sync (under batch, every write's), WaitingOnFlush each segment sync.
COMMITLOG_TIMERS = "org.apache.cassandra.metrics:type=CommitLog,name=WaitingOn*"


def assert_one_line_error(result: subprocess.CompletedProcess, *fragments: str) -> str:
    """The CLI's contract for bad input: non-zero exit and a last stderr line that says what is
    wrong and the fix."""
    assert result.returncode != 0, result.stdout
    last = result.stderr.strip().splitlines()[-1]
    assert last.startswith("casstrace: error: ") and "(fix: " in last, result.stderr
    for fragment in fragments:
        assert fragment in last, last
    return last


def _free(port: int) -> bool:
    with socket.socket() as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind(("127.0.0.1", port))
            return True
        except OSError:
            return False


def free_ports(first_jmx: int = 27199) -> tuple[int, int]:
    """A native and a JMX port that are free, with the gossip port that follows (JMX - 199).
    Modules that start nodes at the same time search from different `first_jmx`."""
    for jmx in range(first_jmx, first_jmx + 1800, 17):
        native = jmx + 2000
        if all(_free(port) for port in (native, jmx, jmx - 199)):
            return native, jmx
    pytest.fail("no free ports for a scratch sandbox")


def create_keyspace(session, name: str) -> None:
    replication = "{'class': 'SimpleStrategy', 'replication_factor': 1}"
    session.execute(f"CREATE KEYSPACE IF NOT EXISTS {name} WITH replication = {replication}")


@pytest.fixture(scope="module")
def cached_version(sandbox) -> str:
    """A Cassandra version whose jars are in the cache (the test sandbox runs on it); passing it
    explicitly keeps these tests off the network."""
    return sandbox.settings.version


@pytest.fixture(scope="module")
def scratch(tmp_path_factory, cached_version):
    """A node of these tests' own, started through the CLI; yields (Sandbox, start output)."""
    data_dir = tmp_path_factory.mktemp("scratch-sandbox")
    native, jmx = free_ports()
    result = casstrace(
        "sandbox",
        "start",
        "--data-dir",
        data_dir,
        "--native-port",
        native,
        "--jmx-port",
        jmx,
        "--heap",
        SCRATCH_HEAP,
        "--version",
        cached_version,
        "--commitlog-sync",
        "batch",
    )
    assert result.returncode == 0, result.stderr
    node = Sandbox(data_dir)
    yield node, result.stdout
    node.stop()


def test_start_reports_where_the_node_is(scratch):
    node, output = scratch
    pid = node.pid()
    assert pid is not None
    assert f"pid         {pid}" in output
    assert f"native port {node.native_port}" in output
    assert "host        127.0.0.1" in output
    assert str(node.log) in output
    cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    assert b"org.apache.cassandra.service.CassandraDaemon" in cmdline
    assert f"-Xmx{SCRATCH_HEAP}".encode() in cmdline
    # JVM_EXTRA_OPTS (the suite's C1-only flag, node_jit) right before the main class, as bin/cassandra puts them.
    assert cmdline[cmdline.index(b"org.apache.cassandra.service.CassandraDaemon") - 1] == QUICK_JIT.encode()
    assert "commit log  batch sync" in output and "commitlog_sync=batch;" in node.log.read_text()
    # Everything the node writes lives under its data directory.
    for name in ("conf/cassandra.yaml", "data/system", "commitlog", "logs/system.log", "cassandra.pid"):
        assert (node.data_dir / name).exists(), name


def test_cql_round_trip(scratch):
    node, _ = scratch
    payload = os.urandom(1000)
    with node.connect() as session:
        create_keyspace(session, "roundtrip")
        session.execute("CREATE TABLE IF NOT EXISTS roundtrip.t (k int PRIMARY KEY, v blob)")
        session.execute("INSERT INTO roundtrip.t (k, v) VALUES (%s, %s)", (1, payload))
        assert session.execute("SELECT v FROM roundtrip.t WHERE k = 1").one().v == payload
    # The cql verb shows the same row, blob abbreviated with its length.
    shown = casstrace("sandbox", "cql", "--data-dir", node.data_dir, "SELECT k, v FROM roundtrip.t")
    assert shown.returncode == 0, shown.stderr
    assert "0x" + payload[:8].hex() in shown.stdout and "(1000 bytes)" in shown.stdout
    assert shown.stdout.rstrip().endswith("(1 row)")


def test_second_start_is_refused(scratch):
    node, _ = scratch
    pid = node.pid()
    result = casstrace("sandbox", "start", "--data-dir", node.data_dir)
    assert_one_line_error(result, "already running", f"pid {pid}", "sandbox stop")
    assert node.pid() == pid


def test_nodetool_flush_writes_data_db_under_the_data_dir(scratch):
    node, _ = scratch
    with node.connect() as session:
        create_keyspace(session, "flushing")
        session.execute("CREATE TABLE flushing.t (k int PRIMARY KEY, v text)")
        session.execute("INSERT INTO flushing.t (k, v) VALUES (1, 'in the memtable')")
        table_id = (
            session.execute("SELECT id FROM system_schema.tables WHERE keyspace_name = 'flushing' AND table_name = 't'")
            .one()
            .id
        )
    table_dir = node.data_dir / "data" / "flushing" / f"t-{table_id.hex}"
    assert list(table_dir.glob("*-Data.db")) == []
    result = casstrace("sandbox", "nodetool", "--data-dir", node.data_dir, "flush", "flushing", "t")
    assert result.returncode == 0, result.stderr
    assert len(list(table_dir.glob("*-Data.db"))) == 1


def commitlog_timer_counts(node: Sandbox) -> dict[str, int]:
    """Each commit-log timer's count, by its name ('WaitingOnFlush': ...)."""
    listing = node.nodetool("sjk", "mx", "-all", "-b", COMMITLOG_TIMERS, "-mg", "-f", "Count").stdout
    return {name: int(count) for name, count in re.findall(r"name=(\w+)\s+(\d+)", listing)}


@pytest.mark.skipif(os.geteuid() != 0, reason="BPF capture needs root")
def test_under_batch_each_acknowledged_write_is_one_sync_of_its_segment(scratch, tmp_path):
    """Under `--commitlog-sync batch` a write is acknowledged once its commit-log segment is synced:
    one msync of the mapped segment (MemoryMappedSegment.flush, Cassandra 4.0-5.0) by the syncer
    thread. Writes one after another cannot share a sync, so N writes are N syncs: the capture's
    count of them on the segments, per file and in the sync spectrogram, equals N, and equals the
    node's own count of segment syncs (WaitingOnFlush) read around the writes. The node's own
    mutations (its size estimates, every 5 minutes) may add one sync each: WaitingOnCommit counts
    them, and the counts are equal when there were none."""
    node, _ = scratch
    with node.connect() as session:
        create_keyspace(session, "batchsync")
        session.execute("CREATE TABLE IF NOT EXISTS batchsync.t (k int PRIMARY KEY, v blob)")
        insert = session.prepare("INSERT INTO batchsync.t (k, v) VALUES (?, ?)")
        with BccCapture(node.pid(), thread_slot_ns=THREAD_SLOT_NS) as capture:
            before = commitlog_timer_counts(node)
            capture.begin_window("writes")
            for k in range(BATCH_WRITES):
                session.execute(insert, (k, os.urandom(100)))
            capture.begin_window("after")
            after = commitlog_timer_counts(node)
    writer = TraceWriter(tmp_path / "batch.trace")
    capture.stop().write(writer)
    with Trace(writer.finish()) as trace:
        ((window,),) = trace.rows("SELECT window_id FROM windows WHERE label = 'writes'")
        segments = {f.file_id: f for f in write_io(trace, [window]).files if is_commitlog_segment(f.path)}
        by_call: dict[str, int] = {}
        for file_id, syscall, _bucket, calls in queries.sync_latency(trace, [window]):
            if file_id in segments:
                by_call[syscall] = by_call.get(syscall, 0) + calls
    syncs = sum(segment.sync_calls or 0 for segment in segments.values())
    other_writes = after["WaitingOnCommit"] - before["WaitingOnCommit"] - BATCH_WRITES
    node_syncs = after["WaitingOnFlush"] - before["WaitingOnFlush"]
    assert other_writes >= 0
    assert by_call == {"msync": syncs}
    assert BATCH_WRITES <= syncs <= node_syncs <= BATCH_WRITES + other_writes, (syncs, node_syncs, other_writes)


def test_stop_then_restart_keeps_data_and_settings(scratch):
    node, _ = scratch
    with node.connect() as session:
        create_keyspace(session, "durable")
        session.execute("CREATE TABLE IF NOT EXISTS durable.t (k int PRIMARY KEY, v text)")
        session.execute("INSERT INTO durable.t (k, v) VALUES (7, 'survives a restart')")
    pid, native_port = node.pid(), node.native_port

    stopped = casstrace("sandbox", "stop", "--data-dir", node.data_dir)
    assert stopped.returncode == 0 and f"stopped pid {pid}" in stopped.stdout
    assert not Path(f"/proc/{pid}").exists() or b"CassandraDaemon" not in Path(f"/proc/{pid}/cmdline").read_bytes()
    assert not (node.data_dir / "cassandra.pid").exists()
    status = casstrace("sandbox", "status", "--data-dir", node.data_dir)
    assert status.returncode == 3 and status.stdout.startswith("stopped")

    # Only the data dir and the one setting that changes: ports, heap and version are remembered.
    restarted = casstrace("sandbox", "start", "--data-dir", node.data_dir, "--disk-access-mode", "mmap")
    assert restarted.returncode == 0, restarted.stderr
    assert node.native_port == native_port and node.pid() not in (None, pid)
    assert "DiskAccessMode is mmap, indexAccessMode is mmap" in node.log.read_text()
    with node.connect() as session:
        assert session.execute("SELECT v FROM durable.t WHERE k = 7").one().v == "survives a restart"
    status = casstrace("sandbox", "status", "--data-dir", node.data_dir)
    assert status.returncode == 0 and "commit log  batch sync" in status.stdout


# -- bad input: each a one-line error naming the fix, and no JVM left behind --------------------


def test_java_missing(tmp_path, cached_version):
    env = {k: v for k, v in os.environ.items() if k != "JAVA_HOME"}
    env["PATH"] = str(tmp_path / "no-bin")
    result = casstrace("sandbox", "start", "--data-dir", tmp_path / "node", "--version", cached_version, env=env)
    assert_one_line_error(result, "Java is not installed", "Java 17")
    env["JAVA_HOME"] = str(tmp_path / "no-jdk")
    result = casstrace("sandbox", "start", "--data-dir", tmp_path / "node", env=env)
    assert_one_line_error(result, f"JAVA_HOME={tmp_path / 'no-jdk'} has no bin/java", "JAVA_HOME")


def test_port_in_use(tmp_path, cached_version):
    native, jmx = free_ports()
    with socket.socket() as squatter:
        squatter.bind(("127.0.0.1", native))
        squatter.listen()
        result = casstrace(
            "sandbox",
            "start",
            "--data-dir",
            tmp_path,
            "--native-port",
            native,
            "--jmx-port",
            jmx,
            "--version",
            cached_version,
        )
    assert_one_line_error(result, f"port {native} is already in use", "--native-port")
    assert not (tmp_path / "cassandra.pid").exists()


def test_unknown_cassandra_version(tmp_path):
    result = casstrace("sandbox", "start", "--data-dir", tmp_path, "--version", "5.0.999")
    assert_one_line_error(result, "5.0.999")
    assert "not published on Maven Central" in result.stderr
    assert not (tmp_path / "cassandra.pid").exists()


def test_corrupt_artifact_cache_is_refused_and_the_fix_works(tmp_path, cached_version, monkeypatch):
    # A private copy of the cache (hard links: cheap, and the real cache is never written).
    real = artifacts.maven_repo()
    cache = tmp_path / "cache"
    shutil.copytree(real, cache / "casstrace" / "maven", copy_function=os.link)
    listing = f"classpaths/cassandra-{cached_version}.txt"
    (cache / "casstrace" / "classpaths").mkdir()
    (cache / "casstrace" / listing).write_text(
        (real.parent / listing).read_text().replace(str(real), str(cache / "casstrace" / "maven"))
    )
    jar = (
        cache
        / "casstrace"
        / "maven"
        / "org/apache/cassandra/cassandra-all"
        / cached_version
        / f"cassandra-all-{cached_version}.jar"
    )
    whole = jar.read_bytes()
    jar.unlink()  # a new inode: truncating the hard link would truncate the real cache's jar
    jar.write_bytes(whole[: len(whole) // 2])

    env = {**os.environ, "XDG_CACHE_HOME": str(cache)}
    result = casstrace("sandbox", "start", "--data-dir", tmp_path / "node", "--version", cached_version, env=env)
    assert_one_line_error(result, "artifact cache is corrupt", str(jar), f"delete {jar.parent}")
    assert not (tmp_path / "node" / "cassandra.pid").exists()

    # Following the fix: Maven fetches the deleted artifact again and the cache verifies.
    shutil.rmtree(jar.parent)
    monkeypatch.setenv("XDG_CACHE_HOME", str(cache))
    jars = artifacts.classpath(cached_version, progress=lambda _: None)
    assert jar in jars and jar.read_bytes() == whole


def test_data_dir_without_write_permission(read_only_dir, cached_version):
    for data_dir in (read_only_dir, read_only_dir / "sandbox"):
        result = casstrace("sandbox", "start", "--data-dir", data_dir, "--version", cached_version)
        assert_one_line_error(
            result, f"cannot write to the sandbox data directory {data_dir}", "Read-only file system", "--data-dir"
        )


def test_failed_start_shows_the_log_tail(tmp_path, cached_version):
    native, jmx = free_ports()
    result = casstrace(
        "sandbox",
        "start",
        "--data-dir",
        tmp_path,
        "--native-port",
        native,
        "--jmx-port",
        jmx,
        "--heap",
        "99999G",
        "--version",
        cached_version,
    )
    assert_one_line_error(result, "Cassandra exited during startup", str(tmp_path / "logs/system.log"))
    assert "Could not reserve enough space" in result.stderr  # the JVM's own words, from the log
    assert not (tmp_path / "cassandra.pid").exists()


def test_unknown_data_dir_verbs_say_how_to_start(tmp_path):
    result = casstrace("sandbox", "nodetool", "--data-dir", tmp_path / str(uuid.uuid4()), "flush")
    assert_one_line_error(result, "no sandbox has been started", "sandbox start")
