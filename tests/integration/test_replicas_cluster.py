"""`casstrace run` on a real 3-node sandbox (RF 3, every node holds every row): every replica of the
partition is captured on the same windows, each node's figures against its own JVM's /proc/PID/io,
the ssh path against the local path, Ctrl-C, and a node down: `run` names it, and a `watch` of the
coordinator shows the hints it stored for it."""

import json
import signal
import statistics
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from cassandra import ConsistencyLevel
from cassandra.concurrent import execute_concurrent_with_args

from bpf_programs import program_exists, program_ids
from casstrace.node.jvm import cassandra_at
from casstrace.sandbox.control import Sandbox
from casstrace.traces import Trace
from casstrace_cli import CASSTRACE, casstrace
from node_jit import full_jit
from replicas_helpers import agents_of, data_bytes_per_execution, rchar, remote_casstrace
from watching import start_watch, watch_command

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def query(cluster_demo):
    return (
        f"SELECT c0 FROM {cluster_demo.keyspace}.{cluster_demo.spec.table} "
        f"WHERE stream_id = {cluster_demo.spec.stream_id}"
    )


def node_args(cluster, node: int = 1) -> list[object]:
    member = cluster.node(node)
    return ["--host", member.host, "--port", member.native_port]


def reads_per_execution(trace: Trace) -> list[dict[int, int]]:
    """For each measured execution's window: node_id -> the Data.db bytes its JVM read in it."""
    windows: dict[int, dict[int, int]] = {
        row["window_id"]: {}
        for row in trace.rows("SELECT window_id FROM windows WHERE label = 'execution' ORDER BY window_id")
    }
    for row in trace.rows(
        "SELECT io.window_id, f.node_id, SUM(io.read_bytes) AS bytes FROM file_io io"
        " JOIN files f USING (file_id) WHERE f.path LIKE '%-Data.db' GROUP BY 1, 2"
    ):
        if row["window_id"] in windows:
            windows[row["window_id"]][row["node_id"]] = row["bytes"]
    return list(windows.values())


def whole_reads(reads: dict[int, int], whole: int) -> int:
    """How many nodes read (within 1 %) the whole rows in one execution."""
    return sum(read >= 0.99 * whole for read in reads.values())


@pytest.fixture(scope="module")
def at_one(cluster, query, tmp_path_factory):
    """Node 1 coordinating at ONE: the Data bytes of each node in each measured execution."""
    out = tmp_path_factory.mktemp("one") / "one.trace"
    done = casstrace(
        "run", query, *node_args(cluster), "--consistency", "ONE", "--repeat", 3, "--out", out, "--no-html"
    )
    assert done.returncode == 0, done.stderr
    with Trace(out) as trace:
        assert trace.rows("SELECT COUNT(*) FROM nodes WHERE captured = 1")[0][0] == 3
        return reads_per_execution(trace)


def whole_read(at_one: list[dict[int, int]]) -> int:
    """The Data bytes of one replica's read of the partition: the median over the executions of the
    most a node read in each. Not the most of all: a replica may read a page or a chunk more in one
    execution (measured: 6,349,669 B once, 6,285,394 B in the others), which is still the whole rows."""
    return statistics.median_low(max(reads.values()) for reads in at_one)


def test_one_reads_the_rows_once_per_execution_on_some_replica(at_one):
    """At ONE the coordinator asks one replica (the dynamic snitch picks which; a speculative retry
    may start a second read, which the answer does not wait for)."""
    assert all(whole_reads(reads, whole_read(at_one)) >= 1 for reads in at_one), at_one


def test_every_local_replica_is_captured_with_its_own_bytes(cluster, query, at_one, no_speculative_retry, tmp_path):
    """QUORUM on RF 3 from node 1: three nodes captured, node 1 coordinating; in every execution at
    least two replicas each read the whole rows (a data read and a digest read, both answered before
    the client has its rows), and every node's bytes over the run are what its JVM read (rchar).
    Without speculative retries: a third replica's speculative read, which the client does not wait
    for, can end after the capture stopped, and rchar would count bytes no window holds."""
    pids = {member.host: member.pid() for member in cluster.nodes}
    before = {address: rchar(pid) for address, pid in pids.items()}
    out = tmp_path / "quorum.trace"
    # --page-size: without it the run first samples the query's rows to size its pages, reads that rchar
    # counts and no window holds (up to 11 rows of 1 MB on a replica).
    done = casstrace(
        "run",
        query,
        *node_args(cluster),
        "--consistency",
        "QUORUM",
        "--repeat",
        3,
        "--page-size",
        5000,
        "--out",
        out,
        "--no-html",
    )
    after = {address: rchar(pid) for address, pid in pids.items()}
    assert done.returncode == 0, done.stderr
    with Trace(out) as trace:
        nodes = {row["address"]: row for row in trace.rows("SELECT * FROM nodes")}
        assert set(nodes) == set(pids) and nodes["127.0.0.1"]["node_id"] == 1
        assert all(row["captured"] and row["replica"] and row["pid"] == pids[address] for address, row in nodes.items())
        assert trace.meta["replicas"]["routing"] == "token map"
        assert {row["coordinator"] for row in trace.rows("SELECT coordinator FROM executions")} == {"127.0.0.1"}
        assert {event.get("source") for session in trace.meta["query_trace"] for event in session["events"]} - {
            "127.0.0.1"
        }, "no replica's own events"
        quorum = reads_per_execution(trace)
        assert all(whole_reads(reads, whole_read(at_one)) >= 2 for reads in quorum), quorum
        # what each JVM read during the capture is in its node's files: rchar counts a little more (the
        # run's reads before and after the capture), and a little less (recvfrom/recvmsg, which the
        # probes count as socket reads, add nothing to rchar: inter-node messages, a few KiB)
        for address, row in nodes.items():
            (seen,) = trace.rows(
                "SELECT SUM(io.read_bytes) FROM file_io io JOIN files f USING (file_id) WHERE f.node_id = ?",
                (row["node_id"],),
            )[0]
            kernel = after[address] - before[address]
            assert 0.95 * kernel - 2_000_000 <= seen <= kernel + 1_000_000, (address, seen, kernel)
        assert {json.loads(row["meta"])["pid"] for row in nodes.values()} == set(pids.values())


def test_the_ssh_path_gives_each_node_the_local_path_s_bytes(cluster, cluster_demo, query, sshd, tmp_path):
    hosts = ",".join(f"{member.host}=node1" for member in cluster.nodes)  # one sshd reaches all three
    local, remote = tmp_path / "local.trace", tmp_path / "ssh.trace"
    common = [query, *node_args(cluster), "--consistency", "ALL", "--repeat", 3, "--no-html"]
    done = casstrace("run", *common, "--out", local)
    assert done.returncode == 0, done.stderr
    done = casstrace(
        "run",
        *common,
        "--out",
        remote,
        "--hosts",
        hosts,
        "--ssh-config",
        sshd,
        "--remote-casstrace",
        remote_casstrace(),
    )
    assert done.returncode == 0, done.stderr
    with Trace(local) as here, Trace(remote) as there:
        assert {row["host"] for row in there.rows("SELECT host FROM nodes")} == {"node1"}
        local_bytes, ssh_bytes = data_bytes_per_execution(here), data_bytes_per_execution(there)
        assert set(local_bytes) == set(ssh_bytes) == {1, 2, 3}
        for node_id, read in local_bytes.items():
            assert abs(ssh_bytes[node_id] - read) <= 0.05 * read, (node_id, read, ssh_bytes[node_id])


def test_ctrl_c_stops_every_agent_and_keeps_their_capture(cluster, query, tmp_path):
    out = tmp_path / "interrupted.trace"
    run = subprocess.Popen(
        [*CASSTRACE, "run", query, *map(str, node_args(cluster)), "--repeat", "300", "--out", str(out), "--no-html"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    programs: set[int] = set()
    deadline = time.monotonic() + 120
    agents: list[int] = []
    while time.monotonic() < deadline:  # until every agent has its probes attached
        agents = agents_of(run.pid)
        held = {agent: program_ids(agent) for agent in agents}
        programs |= {program for ids in held.values() for program in ids}
        if len(agents) == 3 and all(held.values()):
            break
        assert run.poll() is None, run.communicate()
        time.sleep(0.1)
    time.sleep(2)  # executions under way
    run.send_signal(signal.SIGINT)
    _stdout, stderr = run.communicate(timeout=120)
    assert run.returncode == 130, stderr
    assert "Traceback" not in stderr
    assert not any(Path(f"/proc/{agent}").exists() for agent in agents)
    assert programs and not any(program_exists(program) for program in programs)
    with Trace(out) as trace:
        assert not trace.complete
        assert trace.rows("SELECT COUNT(*) FROM nodes WHERE captured = 1")[0][0] == 3
        assert trace.rows("SELECT COUNT(DISTINCT node_id) FROM files")[0][0] == 3


HINTED_KEYSPACE = "casstrace_hints"


@pytest.fixture(scope="module")
def hinted_table(cluster) -> Iterator[str]:
    """A table every node holds every row of, made while the cluster is whole (a schema change with a
    node down waits out the driver's schema agreement)."""
    with cluster.node(1).connect() as session:
        session.execute(
            f"CREATE KEYSPACE IF NOT EXISTS {HINTED_KEYSPACE} "
            "WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 3}"
        )
        session.execute(f"CREATE TABLE IF NOT EXISTS {HINTED_KEYSPACE}.t (k int PRIMARY KEY, v blob)")
        yield f"{HINTED_KEYSPACE}.t"
        session.execute(f"DROP KEYSPACE IF EXISTS {HINTED_KEYSPACE}")


@pytest.fixture(scope="module")
def node_3_down(cluster, hinted_table) -> Iterator[Sandbox]:
    """Node 3 stopped for the module's last tests (they are last in the file), started again after them:
    one stop and start for all (about 30 s each)."""
    cluster.stop(only=3)
    try:
        yield cluster.node(3)
    finally:
        with full_jit():
            cluster.start(only=3)  # the cluster is whole again for the modules after this one


def test_a_node_down_is_named_and_one_still_works(cluster, query, node_3_down, tmp_path):
    down = node_3_down
    assert cassandra_at(down.host, down.native_port) is None
    out = tmp_path / "down.trace"
    done = casstrace(
        "run", query, *node_args(cluster), "--consistency", "ONE", "--repeat", 2, "--out", out, "--no-html"
    )
    assert done.returncode == 0, done.stderr
    with Trace(out) as trace:
        rows = {row["address"]: row for row in trace.rows("SELECT * FROM nodes")}
        assert rows[down.host]["captured"] == 0 and rows[down.host]["replica"] == 1
        assert rows[down.host]["not_captured"].startswith(f"down: no Cassandra JVM serves {down.host}:")
        assert all(rows[address]["captured"] for address in rows if address != down.host)
        assert not trace.rows("SELECT * FROM executions WHERE error IS NOT NULL")


HINTED_ROWS, HINTED_VALUE = 2000, 1000
# The node writes its hints buffers out every 10 s (hints_flush_period, by default), on a shared
# executor that a loaded machine delays: once the files have not grown for a period and a slack
# past the last write, every hint of the test's writes is on disk
HINTS_QUIET_S, HINTS_SETTLE_LIMIT_S = 14.0, 90.0


def hints_sizes(directory: Path) -> dict[str, int]:
    """Each hints file's size on disk, by name."""
    return {path.name: path.stat().st_size for path in directory.glob("*.hints")}


def hints_settled(directory: Path) -> dict[str, int]:
    """The hints files' sizes once they have stopped growing (HINTS_QUIET_S unchanged)."""
    sizes, quiet_since, limit = hints_sizes(directory), time.monotonic(), time.monotonic() + HINTS_SETTLE_LIMIT_S
    while time.monotonic() - quiet_since < HINTS_QUIET_S:
        assert time.monotonic() < limit, f"hints files still growing after {HINTS_SETTLE_LIMIT_S} s: {sizes}"
        time.sleep(0.25)
        now = hints_sizes(directory)
        if now != sizes:
            sizes, quiet_since = now, time.monotonic()
    return sizes


def test_a_coordinator_stores_hints_for_a_replica_down_and_the_watch_names_it(
    cluster, hinted_table, node_3_down, tmp_path
):
    """Writes at ONE through node 1 while node 3, a replica of every row, is down: node 1 keeps them as
    hints for node 3. The truths: the hints files' sizes on node 1's disk, and node 3's host ID as node
    1's system.peers has it (the files are named by it)."""
    coordinator = cluster.node(1)
    with coordinator.connect() as session:
        [peer] = session.execute("SELECT host_id FROM system.peers WHERE peer = %s", (node_3_down.host,))
        down_id = str(peer.host_id)
        watcher = start_watch(watch_command(coordinator, tmp_path / "hints.trace", "--format", "json", sample=0.01))
        # Read once the watch watches: the module's earlier runs traced sessions into system_traces
        # (RF 2), hinted for node 3 too and flushed on the node's next period, which may fall during
        # the watch's start
        before = hints_sizes(coordinator.layout.hints)
        insert = session.prepare(f"INSERT INTO {hinted_table} (k, v) VALUES (?, ?)")
        insert.consistency_level = ConsistencyLevel.ONE
        execute_concurrent_with_args(session, insert, [(key, bytes(HINTED_VALUE)) for key in range(HINTED_ROWS)])
        settled = hints_settled(coordinator.layout.hints)  # every hint of those writes is in its file
        watcher.send_signal(signal.SIGINT)
        stdout, stderr = watcher.communicate(timeout=120)
        assert watcher.returncode == 0, stderr
        after = hints_sizes(coordinator.layout.hints)
    assert after == settled, "a hints flush came after the watch ended"
    stored_on_disk = sum(size - before.get(name, 0) for name, size in after.items() if name.startswith(down_id))
    assert stored_on_disk > HINTED_ROWS * HINTED_VALUE  # each hint holds its row, and more
    assert all(name.startswith(down_id) for name in after)  # hints for the replica down only
    report = json.loads(stdout)["background"]
    assert report["hints"] == [{"host_id": down_id, "stored_bytes": stored_on_disk, "replayed_bytes": 0}]
    [finding] = [f for f in report["findings"] if f["cause"] == "hints"]
    assert finding["saves_bytes"] == stored_on_disk
    assert down_id in finding["evidence"][0]
