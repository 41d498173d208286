"""Results of any size, safely (issue 26): `casstrace run --repeat 5` of a partition of hundreds of
MB, SELECT *, right after it was loaded into a freshly started node with a 1 GiB heap (the
condition in which one page of the whole partition killed the node with OutOfMemoryError, and in
which the driver's quadratic v5 segment reassembly timed its heartbeats out). Every execution must
complete, the node must be up afterwards with no OutOfMemoryError in its log, and the page size
casstrace chose must keep each page within --page-bytes."""

import re
import shutil
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from casstrace.node.paging import DEFAULT_CQL_PAGE_BYTES
from casstrace.sandbox.control import Sandbox
from casstrace.sandbox.demo import DemoData, WideTable, ensure_loaded
from casstrace.traces import Trace
from casstrace_cli import casstrace

pytestmark = pytest.mark.integration

# Ports apart from the test node's (19042, JMX 17199) and the test cluster's.
NATIVE_PORT, JMX_PORT = 19342, 17599
DEMO = WideTable()  # 200 rows of 950 KB: 190 MB
LARGER = WideTable(keyspace="casstrace_large", rows=500)  # 475 MB


@pytest.fixture(scope="module")
def fresh_node(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Sandbox]:
    node = Sandbox(tmp_path_factory.mktemp("fresh-1g-node"))
    node.start(native_port=NATIVE_PORT, jmx_port=JMX_PORT, heap="1G", progress=lambda _: None)
    try:
        yield node
    finally:
        node.stop()
        shutil.rmtree(node.data_dir)  # 1.3 GB of SSTables: not kept among pytest's last sessions' files


def out_of_memory(node: Sandbox) -> list[str]:
    return [line for line in node.log.read_text(errors="replace").splitlines() if "java.lang.OutOfMemoryError" in line]


@pytest.mark.parametrize("spec", [DEMO, LARGER], ids=["demo-190MB", "larger-475MB"])
def test_select_star_of_a_large_partition_right_after_loading(
    fresh_node: Sandbox, spec: WideTable, tmp_path: Path
) -> None:
    ensure_loaded(fresh_node, spec)  # then query at once: the node's heap still holds what the load left
    query = f"SELECT * FROM {spec.keyspace}.{spec.table} WHERE stream_id = {spec.stream_id}"
    out = tmp_path / "large.trace"
    started = time.monotonic()
    done = casstrace(
        "run",
        query,
        "--host",
        fresh_node.host,
        "--port",
        NATIVE_PORT,
        "--repeat",
        5,
        "--out",
        out,
        "--no-html",
        timeout=900,
    )
    seconds = time.monotonic() - started
    assert done.returncode == 0, done.stderr
    assert fresh_node.is_running() and not out_of_memory(fresh_node)

    with Trace(out) as trace:
        paging = trace.meta["paging"]
        executions = trace.rows("SELECT * FROM executions ORDER BY execution")
    # the page size: the budget over a row's bytes as the node sent them: the blobs and the two int keys
    row_bytes = spec.row_bytes + 2 * 4
    assert paging["chosen"] and paging["sampled_row_bytes"] == row_bytes
    assert paging["page_size"] == DEFAULT_CQL_PAGE_BYTES // row_bytes == 8
    assert [e["kind"] for e in executions] == ["warmup"] + ["measured"] * 5 + ["tracing"]
    for execution in executions:
        assert execution["error"] is None
        assert execution["rows"] == spec.rows and execution["payload_bytes"] == spec.rows * row_bytes
        # full pages, then the rest (the node ends a result of whole pages with an empty one)
        assert execution["pages"] == spec.rows // paging["page_size"] + 1
    latencies = [e["latency_s"] for e in executions if e["kind"] == "measured"]
    print(
        f"{spec.rows} rows, {spec.total_bytes / 1e6:.0f} MB: {paging['page_size']} rows a page, executions "
        + ", ".join(f"{latency:.2f} s" for latency in latencies)
        + f"; the whole run {seconds:.0f} s"
    )
    assert re.search(r"chosen: 8 rows", casstrace("report", out, "--format", "text").stdout)


def test_a_row_larger_than_the_budget_is_warned_of_and_paged_alone(
    node_args: list[str], demo_tables: DemoData, tmp_path: Path
) -> None:
    """Rows of 950 KB against a budget of 64 KiB: no page is within it; the run says so before
    running, and runs one row a page."""
    spec = demo_tables.spec
    query = f"SELECT * FROM {spec.keyspace}.{spec.table} WHERE stream_id = {spec.stream_id} LIMIT 3"
    out = tmp_path / "over.trace"
    done = casstrace("run", query, *node_args, "--repeat", 1, "--page-bytes", 64 * 1024, "--out", out, "--no-html")
    assert done.returncode == 0, done.stderr
    assert (
        f"casstrace: warning: a row of this query holds {spec.row_bytes + 8:,} B, more than --page-bytes (65,536 B)"
    ) in done.stderr
    with Trace(out) as trace:
        assert trace.meta["page_size"] == 1 and trace.meta["paging"]["sampled_row_bytes"] == spec.row_bytes + 8
        pages = [row["pages"] for row in trace.rows("SELECT pages FROM executions")]
    assert pages and all(count >= 3 for count in pages)  # one row a page (and maybe an empty last one)
