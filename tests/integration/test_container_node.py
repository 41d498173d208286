"""A node in a container, as Docker, podman or Kubernetes run one: its JVM in network, mount and PID
namespaces of its own, nothing published. casstrace runs on the host: the probes watch the JVM by
its host pid, its files are read through /proc/PID/root and named by the node's own paths, and the
driver reaches the native port in the JVM's network namespace (node.namespaces).

The node is a sandbox started inside `unshare --net --mount --pid`: it listens on the loopback of
its own network namespace, which a veth pair joins to the host (10.213.0.1/30 here, 10.213.0.2/30
there) as a container runtime's bridge would. On the host that port has no listener, so a driver
that connected from the host's namespace would be refused. Its directory is bind-mounted over an
empty one, as in test_foreign_node. For --container the JVM is put in a cgroup named as docker's
systemd driver names its containers' (system.slice/docker-ID.scope): no container runtime runs on
this machine (docs/production-node.md says why).
"""

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from bpf_programs import wait_until_attached
from casstrace.analyses import analyse
from casstrace.node.jvm import cassandra_processes
from casstrace.node.namespaces import container_ids, container_jvm, in_our_network
from casstrace.sandbox.demo import WideTable
from foreign_jvms import in_container_cgroup, load_demo, stop_jvm
from test_sandbox import cached_version, casstrace, free_ports  # noqa: F401 (a fixture)

pytestmark = pytest.mark.integration
SPEC = WideTable(rows=50)
HOST_SIDE, NODE_SIDE = "10.213.0.1/30", "10.213.0.2/30"
NODE_STARTED_S = 600
# Inside the new namespaces ($1: a file for the start's exit status): the loopback up, the sandbox's
# directory ($2) at $3, the sandbox started; then this shell stays on as the PID namespace's init,
# which keeps the namespaces (and the JVM) alive until the fixture kills it.
START_INSIDE = (
    'ip link set lo up && mount --bind "$2" "$3" && status="$1" && shift 3 && '
    '{ "$@" > "$status.log" 2>&1; echo $? > "$status"; } ; exec sleep 86400'
)


def _ip(*args: str, netns_of: int | None = None) -> None:
    command = ["ip", *args] if netns_of is None else ["nsenter", f"--net=/proc/{netns_of}/ns/net", "ip", *args]
    subprocess.run(command, check=True, capture_output=True)


@pytest.fixture(scope="module")
def node(tmp_path_factory, cached_version):
    """(host pid of the JVM, native port, the node's own directory, the same directory as the host sees it)."""
    scratch = tmp_path_factory.mktemp("container-node")
    on_host, inside, status = scratch / "on-host", scratch / "inside", scratch / "started"
    on_host.mkdir()
    inside.mkdir()
    native, jmx = free_ports(first_jmx=13199)  # clear of the other modules' scratch nodes
    namespaces = subprocess.Popen(
        [
            "unshare",
            "--net",
            "--mount",
            "--pid",
            "--fork",
            "--mount-proc",
            "--propagation",
            "private",
            "--",
            "sh",
            "-c",
            START_INSIDE,
            "sh",
            str(status),
            str(on_host),
            str(inside),
            sys.executable,
            "-m",
            "casstrace",
            "sandbox",
            "start",
            "--data-dir",
            str(inside),
            "--version",
            cached_version,
            "--native-port",
            str(native),
            "--jmx-port",
            str(jmx),
            "--heap",
            "512M",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    veth = f"ctn{os.getpid() % 100000}"
    pid = None
    try:
        deadline = time.monotonic() + 10
        while in_our_network(namespaces.pid) and time.monotonic() < deadline:  # unshare has not run yet
            time.sleep(0.05)
        _ip("link", "add", veth, "type", "veth", "peer", "name", "eth0", "netns", str(namespaces.pid))
        _ip("addr", "add", HOST_SIDE, "dev", veth)
        _ip("link", "set", veth, "up")
        _ip("addr", "add", NODE_SIDE, "dev", "eth0", netns_of=namespaces.pid)
        _ip("link", "set", "eth0", "up", netns_of=namespaces.pid)
        deadline = time.monotonic() + NODE_STARTED_S
        while not status.exists() and time.monotonic() < deadline:
            time.sleep(0.5)
        assert status.exists() and status.read_text().strip() == "0", (
            Path(f"{status}.log").read_text() if Path(f"{status}.log").exists() else "no start log"
        )
        (pid,) = [
            process.pid
            for process in cassandra_processes()
            if f"-Dcassandra.config=file://{inside}/conf/cassandra.yaml" in process.argv
        ]
        load_demo(pid, inside, SPEC, "--net", "--mount", "--pid")
        yield pid, native, inside, on_host
    finally:
        if pid is not None:
            stop_jvm(pid)
        # The PID namespace's init (the shell, now sleep): its end ends the namespaces.
        children = Path(f"/proc/{namespaces.pid}/task/{namespaces.pid}/children")
        for child in children.read_text().split() if children.exists() else []:
            os.kill(int(child), signal.SIGKILL)
        namespaces.kill()
        namespaces.wait()
        subprocess.run(["ip", "link", "del", veth], capture_output=True)


def test_the_node_is_in_namespaces_of_its_own_and_publishes_nothing(node):
    pid, native, inside, _ = node
    for kind in ("net", "mnt", "pid"):
        assert os.stat(f"/proc/{pid}/ns/{kind}").st_ino != os.stat(f"/proc/self/ns/{kind}").st_ino, kind
    assert int((Path(f"/proc/{pid}/root{inside}") / "cassandra.pid").read_text()) != pid  # its own pid numbers
    with socket.socket() as probe:
        assert probe.connect_ex(("127.0.0.1", native)) != 0  # the host reaches no native port there
    with socket.socket() as probe:
        probe.settimeout(2)
        assert probe.connect_ex(("10.213.0.2", native)) != 0  # nor through the veth: it listens on its loopback


def _flags_the_wide_query_by_the_nodes_names(
    result: subprocess.CompletedProcess[str], trace: Path, inside: Path, on_host: Path
) -> None:
    assert result.returncode == 0, result.stderr
    analysis = analyse(trace)
    assert analysis.context["data_file_directories"] == [f"{inside}/data"]
    data_files = [f for f in analysis.files if f.component == "Data" and f.sstable.table == SPEC.table]
    assert len(data_files) == 1, [f.path for f in analysis.files]
    data = data_files[0]
    assert data.path.startswith(f"{inside}/data/{SPEC.keyspace}/{SPEC.table}-")
    host_copy = on_host / Path(data.path).relative_to(inside)
    assert data.size_bytes == host_copy.stat().st_size  # read through /proc/PID/root
    assert data.read_bytes >= 0.3 * host_copy.stat().st_size
    assert analysis.verdict.status == "flagged"
    assert "full_row_read" in {finding.cause for finding in analysis.findings}


def test_run_by_pid_connects_in_the_nodes_network_and_names_its_files_by_its_paths(node, tmp_path):
    pid, native, inside, on_host = node
    trace = tmp_path / "wide.trace"
    result = casstrace(
        "run", SPEC.wide_query, "--pid", pid, "--port", native, "--repeat", 2, "--out", trace, "--no-html"
    )
    _flags_the_wide_query_by_the_nodes_names(result, trace, inside, on_host)
    report = casstrace("report", trace, "--format", "json")
    # The node as it names itself: the address it serves CQL on in its own network.
    assert '"127.0.0.1"' in report.stdout


def test_capture_by_pid_sees_the_reads_of_a_query_made_in_the_nodes_network(node, tmp_path):
    pid, native, inside, on_host = node
    trace = tmp_path / "capture.trace"
    capture = subprocess.Popen(
        [*casstrace_command(), "capture", "--pid", str(pid), "--duration", "20", "--out", str(trace)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    wait_until_attached(capture)  # however long a loaded machine takes (a fixed 8 s fired too early at load 10)
    query = subprocess.run(
        [
            "nsenter",
            f"--target={pid}",
            "--net",
            "--",
            sys.executable,
            "-c",
            "import sys; from cassandra.cluster import Cluster; "
            "session = Cluster(['127.0.0.1'], port=int(sys.argv[1])).connect(); "
            "print(sum(1 for _ in session.execute(sys.argv[2])))",
            str(native),
            SPEC.wide_query,
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert query.returncode == 0, query.stderr
    _, stderr = capture.communicate(timeout=120)
    assert capture.returncode == 0, stderr
    analysis = analyse(trace)
    data = [f for f in analysis.files if f.component == "Data" and f.sstable.table == SPEC.table]
    assert len(data) == 1 and data[0].path.startswith(f"{inside}/data/{SPEC.keyspace}/")
    assert data[0].read_bytes >= 0.3 * (on_host / Path(data[0].path).relative_to(inside)).stat().st_size


def casstrace_command() -> list[str]:
    from casstrace_cli import CASSTRACE

    return CASSTRACE


@pytest.fixture
def docker_cgroup(node):
    """The JVM in a cgroup named as docker (systemd driver) names a container's: its container id."""
    with in_container_cgroup(node[0], "system.slice", "docker-") as container_id:
        yield container_id


def test_run_by_container_finds_the_jvm_by_its_cgroup(node, docker_cgroup, tmp_path):
    pid, native, inside, on_host = node
    assert container_ids(pid) == {docker_cgroup}
    assert container_jvm(docker_cgroup[:12]).pid == pid
    trace = tmp_path / "wide.trace"
    result = casstrace(
        "run",
        SPEC.wide_query,
        "--container",
        docker_cgroup[:12],
        "--port",
        native,
        "--repeat",
        2,
        "--out",
        trace,
        "--no-html",
    )
    _flags_the_wide_query_by_the_nodes_names(result, trace, inside, on_host)


def test_watch_by_pid_charges_the_nodes_reads_to_its_statements_and_restores_tracing(node, tmp_path):
    """nodetool and jcmd run where the node runs (its classes, its JMX port, its pid numbers); the thread
    ids jcmd gives in the node's PID namespace are turned into this machine's, which the probes see."""
    pid, native, inside, on_host = node
    trace = tmp_path / "watch.trace"
    watcher = subprocess.Popen(
        [
            *casstrace_command(),
            "watch",
            "--pid",
            str(pid),
            "--port",
            str(native),
            "--sample",
            "1",
            "--duration",
            "25",
            "--out",
            str(trace),
            "--format",
            "json",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    started = []
    for line in watcher.stderr:  # the probes are attached and the node traces every request
        started.append(line)
        if "probes attached" in line:
            break
    assert watcher.poll() is None, "".join(started)
    executions = 4
    query = subprocess.run(
        [
            "nsenter",
            f"--target={pid}",
            "--net",
            "--",
            sys.executable,
            "-c",
            "import sys; from cassandra.cluster import Cluster; "
            "session = Cluster(['127.0.0.1'], port=int(sys.argv[1])).connect(); "
            "[list(session.execute(sys.argv[2])) for _ in range(int(sys.argv[3]))]",
            str(native),
            SPEC.wide_query,
            str(executions),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert query.returncode == 0, query.stderr
    report, errors = watcher.communicate(timeout=300)
    assert watcher.returncode == 0, errors
    from casstrace.node.statements import normalize

    wide = next(s for s in json.loads(report)["statements"] if s["query"] == normalize(SPEC.wide_query))
    assert wide["sampled_executions"] == executions
    assert wide["rows_per_execution"] == SPEC.rows
    (data,) = list((on_host / "data" / SPEC.keyspace).glob(f"{SPEC.table}-*/*-Data.db"))
    assert wide["data_read_bytes_per_execution"] >= 0.3 * data.stat().st_size
    probability = subprocess.run(
        [
            "nsenter",
            f"--target={pid}",
            "--net",
            "--mount",
            "--pid",
            "--",
            sys.executable,
            "-m",
            "casstrace",
            "sandbox",
            "nodetool",
            "--data-dir",
            str(inside),
            "gettraceprobability",
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert probability.stdout.strip().endswith(": 0.0"), probability.stdout + probability.stderr
