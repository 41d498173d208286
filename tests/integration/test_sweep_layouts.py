"""`casstrace sweep --layout` end to end on the test sandbox: the many-columns study at small N (the
same time series in N text columns, in one frozen UDT of N fields and as N clustering rows a point, at a
constant row size), real loads and probes.

The truths: the data loaded (LIMIT 20 points, N fields of ROW_BYTES / N characters each: the same
values in both layouts), the node's own schema (the keyspace the sweep created is gone after it), and
the cells each layout makes the node decode (20 x N against 20).
"""

import json

import pytest

from casstrace.sandbox.layouts import LAYOUT_KEYSPACE, LIMIT
from casstrace_cli import casstrace

pytestmark = pytest.mark.integration

COLUMNS = (4, 64)
ROWS, ROW_BYTES = 40, 1_024


@pytest.fixture(scope="module")
def layouts(tmp_path_factory, sandbox):
    """A sweep of the three layouts at N = 4 and 64: (JSON report, process)."""
    directory = tmp_path_factory.mktemp("layouts")
    report = directory / "sweep.json"
    done = casstrace(
        "sweep",
        "--data-dir",
        sandbox.data_dir,
        "--layout",
        "columns",
        "--layout",
        "udt",
        "--layout",
        "rows",
        "--min-columns",
        COLUMNS[0],
        "--max-columns",
        COLUMNS[-1],
        "--step",
        COLUMNS[1] - COLUMNS[0],
        "--rows",
        ROWS,
        "--row-bytes",
        ROW_BYTES,
        "--repeat",
        8,
        "--traces-dir",
        directory / "traces",
        "--format",
        "json",
        "--output",
        report,
    )
    return json.loads(report.read_text()) if report.exists() else None, done


def test_the_layout_sweep_measures_each_layout_at_each_n(layouts):
    report, done = layouts
    assert done.returncode == 0, done.stderr
    assert LAYOUT_KEYSPACE in done.stderr  # it says where it creates its tables
    assert report["kind"] == "layout sweep"
    points = {(p["layout"], p["columns"]): p for p in report["points"]}
    assert set(points) == {(layout, n) for layout in ("columns", "udt", "rows") for n in COLUMNS}
    for (layout, n), point in points.items():
        query = point["query"]
        assert query["rows"] == LIMIT * (n if layout == "rows" else 1) and query["executions"] == 8
        assert query["latency_of"] == "node" and point["node_p99_s"] > 0
        assert point["cpu_ns"] > 0 and query["data_read_bytes"] > 0
        # the same characters either way: N fields of ROW_BYTES // N each, 20 points
        assert query["payload_bytes"] >= LIMIT * n * (ROW_BYTES // n)
    # 20 x 64 cells to decode against 20: the columns cost the node more CPU at the larger N
    assert points[("columns", COLUMNS[-1])]["cpu_ns"] > points[("udt", COLUMNS[-1])]["cpu_ns"]
    assert any(f.startswith("The columns layout, as N grows") for f in report["findings"])


def test_the_layout_sweep_drops_its_keyspace(layouts, cql_session):
    _, done = layouts
    assert done.returncode == 0, done.stderr
    found = cql_session.execute(
        "SELECT keyspace_name FROM system_schema.keyspaces WHERE keyspace_name = %s", (LAYOUT_KEYSPACE,)
    ).one()
    assert found is None
