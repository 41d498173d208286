"""End to end on a real node: the query runs under the real probes, the trace is analysed offline,
and the verdicts match what the data is known to hold (the demo values' sizes are the truth)."""

import shutil
from pathlib import Path

import pytest

from casstrace.analyses import analyse
from casstrace.probes.sysdig.sysdig_import import import_scap
from casstrace.sandbox.control import Sandbox
from casstrace.sandbox.demo import WideTable, ensure_loaded
from casstrace.traces import TraceWriter
from verdict_tables import traced

pytestmark = pytest.mark.integration

SCAP_DIR = Path(__file__).resolve().parents[1] / "data" / "scap"  # provenance: tests/data/README.md
DEMO = WideTable()
SELECT_STAR = f"SELECT * FROM {DEMO.keyspace}.{DEMO.table} WHERE stream_id = {DEMO.stream_id}"


@pytest.fixture(scope="module")
def live(sandbox, demo_tables, kept_capture, tmp_path_factory):
    """The three queries of the shared captures, traced live with bcc on the test node (through the
    module's kept capture)."""
    out = tmp_path_factory.mktemp("live")
    return {
        "fullrow": traced(sandbox, DEMO.wide_query, out / "wide.trace", kept_capture, repeat=2),
        "narrow": traced(sandbox, DEMO.narrow_query, out / "narrow.trace", kept_capture, repeat=2),
        # One 1 MB row per page keeps the 1 GiB test heap far from its limit.
        "select-star": traced(sandbox, SELECT_STAR, out / "star.trace", kept_capture, repeat=1, page_size=20),
    }


def test_full_row_read_is_flagged_with_its_cause(live, demo_tables):
    wide = live["fullrow"]
    assert wide.verdict.status == "flagged"
    assert wide.overall.basis == "payload"
    measured = [e for e in wide.executions if e.kind == "measured"]
    assert [e.payload_bytes for e in measured] == [DEMO.rows * DEMO.first_column_bytes] * 2
    for execution in measured:
        assert execution.amplification.read >= 100
        # Every row is read whole: at least the compressed size of all the rows' cells.
        assert execution.amplification.syscall_bytes >= 0.3 * demo_tables.wide.data_bytes
    assert "full_row_read" in {finding.cause for finding in wide.findings}


def test_narrow_refactor_is_not_flagged(live):
    narrow = live["narrow"]
    assert narrow.verdict.status == "not flagged"
    assert narrow.overall.read <= 2
    assert "full_row_read" not in {finding.cause for finding in narrow.findings}


def test_the_full_row_fix_estimate_is_what_the_narrow_refactor_reads(live):
    """The wide -> narrow refactor that `compare` validates: the read the full-row finding estimates
    after its fix, against what the narrow table is measured to read, within 2x."""
    full_row = next(f for f in live["fullrow"].findings if f.cause == "full_row_read")
    measured = live["narrow"].read_per_execution
    print(f"estimated {full_row.read_after_fix_bytes:,.0f} B per execution, measured {measured:,.0f} B")
    assert measured / 2 <= full_row.read_after_fix_bytes <= measured * 2
    assert full_row.excess_share > 0.99


def test_select_star_reads_what_it_returns(live, demo_tables):
    star = live["select-star"]
    assert star.verdict.status == "not flagged"
    assert 0.9 <= star.overall.read <= 1.2
    (execution,) = [e for e in star.executions if e.kind == "measured"]
    # every blob, plus the two 4-byte int keys (stream_id, ts) of each row
    assert execution.payload_bytes == DEMO.total_bytes + DEMO.rows * 2 * 4


@pytest.mark.parametrize(
    "capture, query",
    [
        ("fullrow", "SELECT c0 FROM probe.streams_lz4 WHERE stream_id=1"),
        ("narrow", "SELECT value FROM probe.streams_narrow WHERE stream_id=1 AND column_no=0"),
        ("select-star", "SELECT * FROM probe.streams_lz4 WHERE stream_id=1"),
    ],
)
def test_imported_sysdig_capture_gets_the_live_verdict(live, capture, query, tmp_path):
    scap = {
        "fullrow": "cassandra5-fullrow-lz4.scap",
        "narrow": "cassandra5-narrow-fixed.scap",
        "select-star": "cassandra5-select-star-lz4.scap",
    }[capture]
    writer = TraceWriter(tmp_path / "imported.trace")
    import_scap(SCAP_DIR / scap, writer, proc="java")
    writer.set_meta(query=query)
    imported = analyse(writer.finish())
    assert imported.overall.basis == "wire"
    assert imported.verdict.status == live[capture].verdict.status


@pytest.fixture(scope="module")
def mmap_node(tmp_path_factory):
    """A node of its own with disk_access_mode: mmap, holding a smaller copy of the demo data."""
    node = Sandbox(tmp_path_factory.mktemp("mmap-node"))
    node.start(native_port=29142, jmx_port=27299, disk_access_mode="mmap", progress=lambda _: None)
    try:
        spec = WideTable(rows=50)
        data = ensure_loaded(node, spec)
        # Pages a process keeps mapped survive drop_caches; a restart unmaps what loading touched.
        node.stop()
        node.start(progress=lambda _: None)
        yield node, data, spec
    finally:
        node.stop()
        shutil.rmtree(node.data_dir, ignore_errors=True)


def test_mmap_reads_are_caught_by_the_page_cache_probe(mmap_node, kept_capture, tmp_path):
    """With mmap the JVM makes no read syscalls on Data.db: only page-cache insertions show the I/O."""
    node, data, spec = mmap_node
    # No warmup: drop_caches cannot evict pages the JVM mapped and touched, so only the first
    # execution after the restart reads cold.
    analysis = traced(node, spec.wide_query, tmp_path / "mmap.trace", kept_capture, repeat=1, warmup=0, cold=True)
    assert analysis.context["disk_access_mode"] == "mmap"
    data_files = [f for f in analysis.files if f.sstable and f.component == "Data" and f.sstable.table == spec.table]
    assert data_files, [(f.path, f.cache_miss_bytes) for f in analysis.files]
    assert all(f.read_calls == 0 for f in data_files)
    fills = [f.cache_miss_bytes for f in data_files]
    assert None not in fills  # the page cache's fills were measured
    filled = sum(fill for fill in fills if fill is not None)
    # The rows are read whole through the mapping; readahead may add a little beyond the file's pages.
    assert 0.3 * data.wide.data_bytes <= filled <= 1.1 * data.wide.data_bytes + (1 << 20)
    assert analysis.overall.syscall_bytes == 0
    assert analysis.overall.read is not None and analysis.overall.read >= 100
    assert analysis.verdict.status == "flagged"


def test_demo_traces_both_tables_and_shows_them_side_by_side(sandbox, demo_tables):
    import re
    import subprocess
    import sys

    done = subprocess.run(
        [Path(sys.executable).parent / "casstrace", "demo", "--data-dir", str(sandbox.data_dir)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    assert "The demo data was already in place" in done.stdout
    verdicts = re.findall(r"^VERDICT: (FLAGGED|NOT FLAGGED)", done.stdout, re.MULTILINE)
    assert verdicts == ["FLAGGED", "NOT FLAGGED"]
    side_by_side = done.stdout.split("=== Side by side")[1]
    assert re.search(r"Rows returned\s+200\s+200\s+1\s+same", side_by_side)
    less = re.search(r"Data read from the table's Data files .* ([0-9,]+)x less", side_by_side)
    assert less and int(less.group(1).replace(",", "")) >= 100
