"""`casstrace sweep --tables` end to end on the test sandbox: the same small write load over 1 and 20
tables, under the probes; the capture's flushes against the node's own memtable switch counts."""

import json

import pytest

from casstrace.sandbox.tables import TABLES_KEYSPACE
from casstrace_cli import casstrace

pytestmark = pytest.mark.integration

TABLES = (1, 20)
WRITES, VALUE_BYTES = 3_000, 2_000  # 6 MB of mutations a point: its flushes are mostly its tables' last


@pytest.fixture(scope="module")
def two_points(tmp_path_factory, sandbox):
    directory = tmp_path_factory.mktemp("sweep-tables")
    report = directory / "sweep.json"
    load = [argument for n in TABLES for argument in ("--tables", n)]
    load += ["--writes", WRITES, "--value-bytes", VALUE_BYTES]
    out = ["--traces-dir", directory / "traces", "--format", "json", "--output", report]
    done = casstrace("sweep", "--data-dir", sandbox.data_dir, *load, *out)
    assert done.returncode == 0, done.stderr
    return json.loads(report.read_text())


def test_flushes_are_the_nodes_memtable_switches(two_points):
    """Per point, every flush the node counted (nodetool tablestats) is one the capture saw write its
    SSTable; more tables, more and smaller flushes; every write acknowledged."""
    one, twenty = two_points["points"]
    assert [p["tables"] for p in (one, twenty)] == list(TABLES)
    for point in (one, twenty):
        assert point["writes"] == WRITES and point["failed_writes"] == 0
        assert point["flushes"] == point["node_flushes"] >= point["tables"]
        assert len(point["flush_sizes"]) == point["flushes"]
        # The flushes wrote what the flushed memtables held (random values: nothing to compress), give or
        # take the SSTables' other components: the node's log against the capture's syscalls.
        assert 0.9 < point["write_amplification"] < 1.2
        assert point["heap_used_bytes"] > 0 and point["throughput"] > 0
    assert twenty["flushes"] > one["flushes"]
    assert max(twenty["flush_sizes"]) < min(one["flush_sizes"])
    assert not two_points["warnings"]


def test_the_keyspace_is_dropped(two_points, cql_session):
    found = cql_session.execute(
        "SELECT keyspace_name FROM system_schema.keyspaces WHERE keyspace_name = %s", (TABLES_KEYSPACE,)
    ).one()
    assert found is None
