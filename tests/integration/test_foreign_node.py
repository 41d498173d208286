"""A node casstrace did not start, as on a real host: a Cassandra JVM in its own mount namespace
(as in a container) whose data directory the host sees at another path. `casstrace run` finds it
by --pid or by its CassandraDaemon command line, names its files by the node's own paths (reading
them through /proc/PID/root), and flags the demo's wide query.

The node is a sandbox started inside `unshare --mount`, its directory bind-mounted over an empty
directory of the host: on the host that path stays empty, so a name that resolves there would be
wrong, and a size read there would be missing.
"""

import subprocess
import sys
from pathlib import Path

import pytest

from casstrace.analyses import analyse
from casstrace.node.context import yaml_data_directories
from casstrace.node.jvm import CassandraProcess, read_argv
from casstrace.probes.proc.proc_fds import in_root
from casstrace.sandbox.demo import WideTable
from foreign_jvms import load_demo, stop_jvm
from test_sandbox import casstrace, free_ports

pytestmark = pytest.mark.integration
SPEC = WideTable(rows=50)

# Inside the new mount namespace: the sandbox's directory ($1) appears at $2, where the sandbox
# starts; the JVM it leaves running keeps the namespace alive.
START_INSIDE = 'mount --bind "$1" "$2" && shift 2 && exec "$@"'


@pytest.fixture(scope="module")
def node(tmp_path_factory):
    """(pid, native port, the node's own directory, the same directory as the host sees it)."""
    scratch = tmp_path_factory.mktemp("foreign-node")
    on_host, inside = scratch / "on-host", scratch / "inside"
    on_host.mkdir()
    inside.mkdir()
    native, jmx = free_ports(first_jmx=11199)  # clear of the other modules' scratch nodes
    started = subprocess.run(
        [
            "unshare",
            "--mount",
            "--propagation",
            "private",
            "--",
            "sh",
            "-c",
            START_INSIDE,
            "sh",
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
            "5.0",
            "--native-port",
            str(native),
            "--jmx-port",
            str(jmx),
            "--heap",
            "512M",
        ],
        capture_output=True,
        text=True,
        timeout=600,
    )
    pid = int((on_host / "cassandra.pid").read_text()) if (on_host / "cassandra.pid").exists() else None
    try:
        assert started.returncode == 0, started.stderr
        assert pid is not None
        load_demo(pid, inside, SPEC, "--mount")
        yield pid, native, inside, on_host
    finally:
        if pid is not None:
            stop_jvm(pid)


def test_the_host_does_not_see_the_nodes_paths(node):
    pid, _, inside, on_host = node
    assert f"-Dcassandra.config=file://{inside}/conf/cassandra.yaml" in (read_argv(pid) or ())
    assert list(inside.iterdir()) == []
    assert (on_host / "conf" / "cassandra.yaml").exists()
    # What the node was started with is read through its root, and keeps the node's names.
    assert in_root(pid, str(inside)) == f"/proc/{pid}/root{inside}"
    assert yaml_data_directories(CassandraProcess(pid, read_argv(pid) or ())) == [f"{inside}/data"]


@pytest.mark.parametrize("found_by", ["--pid", "command line"])
def test_run_names_its_files_by_the_nodes_paths_and_flags_the_wide_query(node, found_by, tmp_path):
    pid, native, inside, on_host = node
    trace = tmp_path / "wide.trace"
    chosen = ["--pid", str(pid)] if found_by == "--pid" else []
    result = casstrace("run", SPEC.wide_query, "--port", native, *chosen, "--repeat", 2, "--out", trace, "--no-html")
    assert result.returncode == 0, result.stderr
    analysis = analyse(trace)

    # Where the node keeps its data, and its SSTables, by its own names; sizes read through its root.
    assert analysis.context["data_file_directories"] == [f"{inside}/data"]
    table = analysis.context["table_schema"]
    assert (table["keyspace"], table["table"]) == (SPEC.keyspace, SPEC.table) and table["sstables"]
    for sstable in table["sstables"]:
        assert sstable["path"].startswith(f"{inside}/data/{SPEC.keyspace}/")
        host_copy = on_host / Path(sstable["path"]).relative_to(inside)
        assert sstable["size"] == host_copy.stat().st_size

    data_files = [f for f in analysis.files if f.component == "Data" and f.sstable.table == SPEC.table]
    assert len(data_files) == 1, [f.path for f in analysis.files]
    data = data_files[0]
    assert data.path.startswith(f"{inside}/data/{SPEC.keyspace}/{SPEC.table}-")
    assert not Path(data.path).exists()  # the host has nothing there ...
    host_copy = on_host / Path(data.path).relative_to(inside)
    assert data.size_bytes == host_copy.stat().st_size  # ... the size came through /proc/PID/root
    assert data.read_bytes >= 0.3 * host_copy.stat().st_size

    assert analysis.verdict.status == "flagged"
    assert "full_row_read" in {finding.cause for finding in analysis.findings}
    assert "FLAGGED" in result.stdout
