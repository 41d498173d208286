"""Session fixtures every test shares: the test sandbox node, a driver session to it, the options
that point a command at it, the demo data and its query; a 3-node test cluster and the demo data on
it at replication factor 3; the analyses of synthetic traces the analyses' and reports' tests share.

The test sandbox is the one scripts/test starts (CASSTRACE_TEST_DATA_DIR, CASSTRACE_TEST_NATIVE_PORT,
CASSTRACE_TEST_JMX_PORT). When it is not running, the first test that needs it starts it, and the
session stops it at the end; a node that was already running is left running. The test cluster
(CASSTRACE_TEST_CLUSTER_DIR, CASSTRACE_TEST_CLUSTER_NATIVE_PORT, CASSTRACE_TEST_CLUSTER_JMX_PORT:
node 1's, node K's is that + K - 1) and the 4.1 node are pooled: started by the first module that
needs them, stopped after the last test that uses them (POOLED_NODES). Under `pytest -n 2` each
worker has a test node of its own (WORKER) and worker_groups.py says which modules share a worker.

Unit and integration tests are told apart by the `integration` marker (registered in setup.cfg): a
module that needs a node, BPF, root, sysdig, Java, ssh, async-profiler or a browser sets
`pytestmark = pytest.mark.integration`, and `pytest -m "not integration"` runs the rest without any
of them. A test without the marker that asks for the node fails at once, saying so, instead of
quietly starting a JVM.
"""

import json
import os
import subprocess
from collections import defaultdict
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

import synthetic_traces as synthetic
from bpf_programs import TracepointHolder
from casstrace.analyses import Analysis, analyse
from casstrace.orchestration.kept_capture import KeptCapture
from casstrace.sandbox.cluster import SandboxCluster
from casstrace.sandbox.control import JVM_EXTRA_OPTS, Sandbox
from casstrace.sandbox.demo import DemoData, WideTable, ensure_loaded
from casstrace.traces import TraceWriter
from node_jit import QUICK_JIT, full_jit
from worker_groups import WorkerGroups, runs_alone

# Under `pytest -n N` (worker_groups.py) each worker has a test node of its own: the first worker the
# one above, worker K another beside it (its data dir suffixed "-gwK", its ports WORKER_PORT_STEP * K up).
WORKER = int(os.environ.get("PYTEST_XDIST_WORKER", "gw0").removeprefix("gw"))
WORKER_PORT_STEP = 200
_FIRST_TEST_DATA_DIR = os.environ.get("CASSTRACE_TEST_DATA_DIR") or str(
    Path.home() / ".local/share/casstrace/test-sandbox"
)
TEST_DATA_DIR = Path(_FIRST_TEST_DATA_DIR + (f"-gw{WORKER}" if WORKER else ""))
TEST_NATIVE_PORT = int(os.environ.get("CASSTRACE_TEST_NATIVE_PORT", "19042")) + WORKER_PORT_STEP * WORKER
TEST_JMX_PORT = int(os.environ.get("CASSTRACE_TEST_JMX_PORT", "17199")) + WORKER_PORT_STEP * WORKER
TEST_CLUSTER_DIR = Path(
    os.environ.get("CASSTRACE_TEST_CLUSTER_DIR") or Path.home() / ".local/share/casstrace/test-cluster"
)
TEST_CLUSTER_NATIVE_PORT = int(os.environ.get("CASSTRACE_TEST_CLUSTER_NATIVE_PORT", "19044"))
TEST_CLUSTER_JMX_PORT = int(os.environ.get("CASSTRACE_TEST_CLUSTER_JMX_PORT", "17211"))
CLUSTER_NODES = 3
CLUSTER_HEAP = "512M"  # three nodes side by side on a CI machine
# The demo data on the test cluster: every node a replica (RF 3). 20 rows of 1 MB: a full-row read
# is 20 MB of Data.db per replica, far above the index and system reads around it, and the load
# (2 tables x 3 replicas) stays within a minute.
CLUSTER_DEMO = WideTable(rows=20, replication_factor=CLUSTER_NODES)

# A 4.1 node with 4.1's defaults (disk_access_mode auto -> mmap), on Java 11 (sandbox/java.py), holding
# the demo data: the one 4.1 node of the run, shared by every module that needs one (node_41).
V41_DATA_DIR = Path(
    os.environ.get("CASSTRACE_TEST_41_DATA_DIR") or Path.home() / ".local/share/casstrace/test-41-sandbox"
)
V41_NATIVE_PORT = int(os.environ.get("CASSTRACE_TEST_41_NATIVE_PORT", "19143"))
V41_JMX_PORT = int(os.environ.get("CASSTRACE_TEST_41_JMX_PORT", "17289"))

# The fixtures below that reach a test node; any test that uses one is an integration test.
NODE_FIXTURES = frozenset({"sandbox", "cql_session", "demo_tables", "cluster", "cluster_demo", "node_41"})
# Nodes the run shares between modules that are started (when not running) by the first module that
# asks and stopped once the next test to run on this worker is of a module that does not use them:
# their modules run one after another, at the place of the first, so that no idle JVM sits beside the
# modules between them (some measure the machine's CPU). A module that asks after that (under -n 2,
# one that runs alone at the end) starts the node again; the session stops what it started.
POOLED_NODES = ("node_41", "cluster")
_user_modules: dict[str, set[Path]] = {}
_started_here: dict[str, Sandbox | SandboxCluster] = {}


@pytest.hookimpl(optionalhook=True, tryfirst=True)
def pytest_xdist_make_scheduler(config, log) -> WorkerGroups:
    """`pytest -n N`: modules whole, grouped where they share a node, those that measure the machine last
    and alone (worker_groups.py)."""
    return WorkerGroups(config, log)


def pytest_runtest_setup(item: pytest.Item) -> None:
    """A unit test must not reach the node, not even through another fixture: fail it loudly."""
    uses_node = NODE_FIXTURES.intersection(getattr(item, "fixturenames", ()))
    if uses_node and item.get_closest_marker("integration") is None:
        pytest.fail(
            f"{item.nodeid} uses {', '.join(sorted(uses_node))} (the test node) but is not marked "
            "integration: set `pytestmark = pytest.mark.integration` in its module",
            pytrace=False,
        )


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Each pooled node's modules moved together to where its first module stands, and noted, to stop
    the node when the next test is of another module."""
    for name in POOLED_NODES:
        users = [item for item in items if name in getattr(item, "fixturenames", ())]
        if not users:
            continue
        modules = {item.path for item in users}
        first = items.index(users[0])
        rest = [item for item in items if item.path not in modules]
        before = sum(item.path not in modules for item in items[:first])
        moved = [item for item in items if item.path in modules]
        items[:] = rest[:before] + moved + rest[before:]
        _user_modules[name] = modules


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_teardown(item: pytest.Item, nextitem: pytest.Item | None):
    """A pooled node this session started is stopped after its modules' last test on this worker (the
    next one, which xdist's worker knows before it runs this one, is of a module that does not use it)."""
    yield
    for name, modules in _user_modules.items():
        leaving = item.path in modules and (nextitem is None or nextitem.path not in modules)
        if leaving and name in _started_here:
            _started_here.pop(name).stop()


# Seconds spent per test module (set-up, call and teardown), for the table that ends the run.
_module_seconds: defaultdict[str, float] = defaultdict(float)
MODULES_SHOWN = 15
# Under -n 2, the wall-clock span of each phase: the two workers beside each other, then the modules
# that run alone (worker_groups.ALONE): phase -> [first start, last stop], in seconds since the epoch.
_phase_spans: dict[str, list[float]] = {}


# CASSTRACE_TEST_TIMELINE=FILE: each test phase as a JSON line (worker, test, phase, outcome, start, stop), to see
# where a worker waited.
TIMELINE = os.environ.get("CASSTRACE_TEST_TIMELINE")


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    _module_seconds[report.nodeid.split("::")[0]] += report.duration
    if TIMELINE and not hasattr(report, "node"):  # under -n, the worker's own (xdist's controller hears it again)
        line = {"worker": f"gw{WORKER}", "test": report.nodeid, "phase": report.when, "outcome": report.outcome}
        with open(TIMELINE, "a") as timeline:
            timeline.write(json.dumps(line | {"start": report.start, "stop": report.stop}) + "\n")
    span = _phase_spans.setdefault("alone" if runs_alone([report.nodeid]) else "beside", [report.start, report.stop])
    span[0], span[1] = min(span[0], report.start), max(span[1], report.stop)


def pytest_terminal_summary(terminalreporter) -> None:
    """Where the minutes went, by module (CONTRIBUTING.md's table is read from this)."""
    if not _module_seconds:
        return
    total = sum(_module_seconds.values())
    workers = terminalreporter.config.getoption("numprocesses", None)
    summed = f" (summed over {workers} workers)" if workers else ""
    terminalreporter.write_sep("=", f"minutes by module: {total / 60:.1f} min in tests{summed}")
    if workers and _phase_spans.keys() == {"beside", "alone"}:
        beside, alone = (_phase_spans[phase][1] - _phase_spans[phase][0] for phase in ("beside", "alone"))
        terminalreporter.write_line(
            f"{beside / 60:6.1f} min  the workers beside each other, then {alone / 60:.1f} min  those that run alone"
        )
    shown = sorted(_module_seconds.items(), key=lambda item: item[1], reverse=True)[:MODULES_SHOWN]
    for module, seconds in shown:
        terminalreporter.write_line(f"{seconds / 60:6.1f} min {100 * seconds / total:5.1f} %  {module}")
    rest, others = total - sum(seconds for _, seconds in shown), len(_module_seconds) - len(shown)
    if others:
        terminalreporter.write_line(f"{rest / 60:6.1f} min {100 * rest / total:5.1f} %  the other {others} modules")


@pytest.fixture(scope="session", autouse=True)
def scratch_data_home(tmp_path_factory):
    """Traces the tests write by default (and `casstrace traces` lists) go to a scratch data
    directory, not the user's. The test node lives at TEST_DATA_DIR, chosen apart from this."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("XDG_DATA_HOME", str(tmp_path_factory.mktemp("data-home")))
        yield


@pytest.fixture(scope="session", autouse=True)
def quick_jit_nodes() -> Iterator[None]:
    """The nodes this worker starts run C1 only (node_jit), unless started inside full_jit()."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv(JVM_EXTRA_OPTS, QUICK_JIT)
        yield


@pytest.fixture(scope="session")
def sandbox() -> Iterator[Sandbox]:
    """The running test node. Use .pid(), .data_dir, .host, .native_port, .jmx_port, .log,
    .layout.data (the data_file_directory), .nodetool("flush", ...), .connect()."""
    node = Sandbox(TEST_DATA_DIR)
    started_here = not node.is_running()
    if started_here:
        with full_jit():
            node.start(native_port=TEST_NATIVE_PORT, jmx_port=TEST_JMX_PORT, progress=lambda _: None)
    yield node
    if started_here:
        node.stop()


@pytest.fixture(scope="session")
def cql_session(sandbox):
    """A cassandra-driver Session to the test node (no keyspace set)."""
    with sandbox.connect() as session:
        yield session


@pytest.fixture(scope="session")
def demo_tables(sandbox) -> DemoData:
    """The demo data in the test node, loaded once (kept across sessions). Fields:
    .keyspace; .spec (WideTable: .table, .narrow_table, .stream_id, .rows, .columns,
    .column_names, .value_bytes(column_no), .first_column_bytes, .other_column_bytes, .values());
    .wide and .narrow (LoadedTable: .name, .data_files [Data.db paths], .data_bytes)."""
    return ensure_loaded(sandbox)


@pytest.fixture(scope="session")
def node_args(sandbox: Sandbox) -> list[str]:
    """The options that point `run`, `compare` and the rest at the test node."""
    return ["--host", sandbox.host, "--port", str(sandbox.native_port)]


@pytest.fixture(scope="session")
def demo_query(demo_tables: DemoData) -> str:
    """The write-up's query on the demo data: one small column of the wide rows."""
    return demo_tables.spec.wide_query


@pytest.fixture(scope="session", autouse=True)
def pooled_nodes_stopped() -> Iterator[None]:
    """At the session's end, the pooled nodes it started and has not stopped yet, stopped."""
    yield
    while _started_here:
        _started_here.popitem()[1].stop()


@pytest.fixture(scope="module")
def node_41() -> Sandbox:
    """The run's 4.1 node (disk_access_mode auto: its Data files read through memory maps) with the
    demo data; pooled (POOLED_NODES)."""
    node = Sandbox(V41_DATA_DIR)
    if not node.is_running():
        with full_jit():
            node.start(
                version="4.1", native_port=V41_NATIVE_PORT, jmx_port=V41_JMX_PORT, heap="512M", progress=lambda _: None
            )
        _started_here["node_41"] = node
    ensure_loaded(node)
    return node


@pytest.fixture(scope="module")
def kept_capture() -> Iterator[KeptCapture]:
    """One bcc capture kept attached across a module's in-process runs (orchestration.kept_capture):
    compiled and attached once, detached once at the module's end (a detach is ~6 s of a run's ~10);
    each run's trace is what a capture of its own writes (test_kept_capture). Not for a test of a
    run's own attach, stop or detach."""
    with KeptCapture() as capture:
        yield capture


@pytest.fixture(scope="session")
def tracepoint_holder() -> Iterator[TracepointHolder]:
    """The worker's idle program holding run's tracepoints (bpf_programs.TracepointHolder), so that
    every capture closes in ~0.5 s instead of ~6 s, the other worker's too (quick_detaches); released
    at the session's end (its one slow detach)."""
    holder = TracepointHolder()
    try:
        yield holder
    finally:
        holder.release()


@pytest.fixture(scope="module", autouse=True)
def quick_detaches(request: pytest.FixtureRequest, tracepoint_holder: TracepointHolder) -> None:
    """Run's tracepoints held for every integration module but one marked `detach_alone`, which releases
    them: its captures must pay the detach a run alone pays (test_signals_at_detach, last of those that
    run alone, when the other worker is gone). The idle holder costs each syscall on the machine a
    program that returns at once, the same for a traced run and its untraced baseline. A unit module
    changes nothing."""
    module = request.node
    if module.get_closest_marker("integration") is None or os.geteuid() != 0:
        return
    if module.get_closest_marker("detach_alone") is None:
        tracepoint_holder.hold()
    else:
        tracepoint_holder.release()


@pytest.fixture(scope="module")
def cluster() -> SandboxCluster:
    """The running 3-node test cluster on 127.0.0.1-3 (SandboxCluster): .nodes ([Sandbox], node 1
    first; each with .host (its address), .pid(), .native_port, .jmx_port, .layout.data, .log,
    .nodetool(...), .connect() whose queries node K coordinates), .node(K), .ring() (address ->
    'UN'...), .stop(only=K) and .start(only=K) to take a node down and back. Pooled (POOLED_NODES):
    a module that finds a node stopped starts it."""
    cluster = SandboxCluster(TEST_CLUSTER_DIR)
    if not cluster.is_running():  # every node not running is started
        with full_jit():
            cluster.start(
                nodes=CLUSTER_NODES,
                native_port=TEST_CLUSTER_NATIVE_PORT,
                jmx_port=TEST_CLUSTER_JMX_PORT,
                heap=CLUSTER_HEAP,
                progress=lambda _: None,
            )
        _started_here["cluster"] = cluster
    return cluster


@pytest.fixture(scope="module")
def cluster_demo(cluster: SandboxCluster) -> DemoData:
    """The demo data (CLUSTER_DEMO: 20 rows, RF 3) on the test cluster, loaded once (kept across
    sessions): as demo_tables, and .nodes ([NodeTables: .address, .wide, .narrow], node 1 first),
    each node holding the whole rows in one Data.db per table."""
    return ensure_loaded(cluster, CLUSTER_DEMO)


@pytest.fixture(scope="module")
def no_speculative_retry(cluster: SandboxCluster, cluster_demo: DemoData) -> Iterator[None]:
    """The cluster's demo table without speculative retries for the rest of the module (the table's
    own setting is put back after). With the default (99p), a read slower than the table's 99th
    percentile, which on a busy CI machine is any read, also goes to another replica: at ONE two
    replicas then read, and a replica's late read may end after the capture stopped."""
    table = f"{cluster_demo.keyspace}.{cluster_demo.spec.table}"
    with cluster.nodes[0].connect() as session:
        previous = (
            session.execute(
                "SELECT speculative_retry FROM system_schema.tables WHERE keyspace_name = %s AND table_name = %s",
                (cluster_demo.keyspace, cluster_demo.spec.table),
            )
            .one()
            .speculative_retry
        )
        session.execute(f"ALTER TABLE {table} WITH speculative_retry = 'NEVER'")
    yield
    with cluster.nodes[0].connect() as session:
        session.execute(f"ALTER TABLE {table} WITH speculative_retry = '{previous}'")


@contextmanager
def mounted_tmpfs(mount_point: Path, options: str) -> Iterator[Path]:
    """A tmpfs mounted at `mount_point` (made) with these mount options. Needs root: integration tests only."""
    mount_point.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(mount_point)], check=True)
    try:
        yield mount_point
    finally:
        subprocess.run(["umount", str(mount_point)], check=True)


@pytest.fixture
def read_only_dir(tmp_path: Path) -> Iterator[Path]:
    """A directory on a read-only tmpfs (root ignores file modes: only a read-only filesystem truly
    refuses its writes)."""
    with mounted_tmpfs(tmp_path / "read-only", "ro,size=1m") as mount_point:
        yield mount_point


@pytest.fixture
def full_disk_dir(tmp_path: Path) -> Iterator[Path]:
    """A directory on a tmpfs with room for a new trace's empty tables and 8 KiB more, not for a
    capture's rows, so that the disk fills up while the trace is being written. (The empty tables are
    measured: a fixed 160 KiB held a whole small run once the format had grown to 140 KiB.)"""
    empty = TraceWriter(tmp_path / "empty.trace")
    empty_bytes = empty.partial_path.stat().st_size
    empty.discard()
    with mounted_tmpfs(tmp_path / "small-disk", f"size={empty_bytes // 1024 + 8}k") as mount_point:
        yield mount_point


@pytest.fixture(scope="session")
def sshd(tmp_path_factory) -> Iterator[Path]:
    """A real sshd on a loopback port (CASSTRACE_TEST_SSH_PORT, else a free one) with a throwaway key:
    the ssh config file that reaches it as Host 'node1' (tests/replicas_helpers.py). Integration only."""
    from replicas_helpers import test_sshd

    with test_sshd(tmp_path_factory.mktemp("sshd")) as config:
        yield config


# -- analyses of synthetic traces (tests/synthetic_traces.py), for the analyses' and reports' tests --


@pytest.fixture
def wide(tmp_path: Path) -> Analysis:
    """The full-row read (synthetic_traces.wide_select_c0), analysed."""
    return analyse(synthetic.wide_select_c0(tmp_path / "wide.trace"))


@pytest.fixture
def hostile(tmp_path: Path) -> Analysis:
    """A table and query whose names carry HTML (synthetic_traces.hostile_names), analysed."""
    return analyse(synthetic.hostile_names(tmp_path / "hostile.trace"))
