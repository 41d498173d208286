"""Verdicts by class of query, on real nodes: everyday reads are not flagged, however small their
payload; pathological reads are flagged with the right cause first.

The truth is how the data was laid out (tables of this module, loaded once per node and kept: a
table comment marks a finished load): a point read by primary key of ~400 B rows reads one 16 KiB
chunk; a partition of 2,000 rows of which 1,990 were deleted afterwards (a second SSTable of
tombstones); a partition written over 12 flushes with compaction off (12 SSTables); tables of some
MB, so that a scan reads well past a 5.0 range read's 256 KiB read-ahead. On the test node (5.0,
BIG) and a 5.0 node writing BTI (a node of this module, 127.0.0.1 on its own ports, left running
when it already ran), compressed and not.
"""

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from casstrace.analyses.model import Analysis
from casstrace.sandbox.control import Sandbox
from casstrace.sandbox.demo import WideTable
from verdict_tables import FLAGGED, NOT_FLAGGED, judged, load, traced

pytestmark = pytest.mark.integration

BTI_DATA_DIR = Path(
    os.environ.get("CASSTRACE_TEST_BTI_DATA_DIR") or Path.home() / ".local/share/casstrace/test-bti-sandbox"
)
BTI_NATIVE_PORT = int(os.environ.get("CASSTRACE_TEST_BTI_NATIVE_PORT", "19312"))
BTI_JMX_PORT = int(os.environ.get("CASSTRACE_TEST_BTI_JMX_PORT", "17312"))
DEMO = WideTable()


@pytest.fixture(scope="module")
def big(sandbox: Sandbox) -> Sandbox:
    assert (sandbox.settings.sstable_format or "big") == "big"
    load(sandbox)
    return sandbox


@pytest.fixture(scope="module")
def bti() -> Iterator[Sandbox]:
    node = Sandbox(BTI_DATA_DIR)
    started_here = not node.is_running()
    if started_here:
        node.start(
            version="5.0",
            native_port=BTI_NATIVE_PORT,
            jmx_port=BTI_JMX_PORT,
            sstable_format="bti",
            heap="512M",
            progress=lambda _: None,
        )
    load(node, pathological=False)
    yield node
    if started_here:
        node.stop()


@pytest.mark.parametrize("label", NOT_FLAGGED)
def test_everyday_reads_are_not_flagged_on_big(big, label, tmp_path):
    analysis = traced(big, NOT_FLAGGED[label], tmp_path / "q.trace")
    assert analysis.verdict.status == "not flagged", judged(analysis)
    assert analysis.necessary is not None and analysis.necessary.sstable_format == "big"
    assert analysis.findings == []


@pytest.mark.parametrize(
    "label",
    [
        "point read by full primary key",
        "point read, uncompressed table",
        "all columns of one row",
        "latest rows of a small partition",
    ],
)
def test_everyday_reads_are_not_flagged_on_bti(bti, label, tmp_path):
    analysis = traced(bti, NOT_FLAGGED[label], tmp_path / "q.trace")
    assert analysis.verdict.status == "not flagged", judged(analysis)
    assert analysis.necessary is not None and analysis.necessary.sstable_format == "bti"


def test_a_point_read_is_judged_against_one_chunk_as_stored(big, tmp_path):
    """The issue's users table: the read is one LZ4 chunk; the necessary read is that chunk as the
    SSTable stores it (CompressionInfo.db, read at run time) and one index page."""
    analysis = traced(big, NOT_FLAGGED["point read by full primary key"], tmp_path / "point.trace")
    necessary = analysis.necessary
    assert (necessary.units, necessary.chunk_length, necessary.index_bytes) == (1, 16_384, 4_096)
    with_layout = [s for s in _storage(analysis) if s.get("compression")]
    assert with_layout and with_layout[0]["compression"]["chunk_length"] == 16_384
    layout = with_layout[0]["compression"]
    assert necessary.unit_bytes == -(-layout["compressed_bytes"] // layout["chunks"])
    assert analysis.overall.read is not None
    assert analysis.overall.read > 100  # the payload basis would have flagged it
    per_execution = analysis.read_per_execution
    assert 0.5 * necessary.bytes <= per_execution <= 2 * necessary.bytes, judged(analysis)
    # not flagged, and yet a cost of latency: a whole 16 KiB chunk decompressed for one small row
    assert [note.cause for note in analysis.latency_notes] == ["compression_chunk_overhead"]


def _storage(analysis: Analysis) -> list[dict]:
    return analysis.context["table_schema"].get("storage") or []


@pytest.mark.parametrize("label", FLAGGED)
def test_pathological_reads_are_flagged_with_the_right_cause_first(big, label, tmp_path):
    query, cause = FLAGGED[label]
    analysis = traced(big, query, tmp_path / "q.trace")
    assert analysis.verdict.status == "flagged", judged(analysis)
    assert analysis.findings[0].cause == cause, judged(analysis)
    assert analysis.findings[0].excess_share is not None
    assert analysis.findings[0].excess_share >= 0.5, judged(analysis)
    if label == "scan without partition key":
        assert "whole_partition_scan" in [f.cause for f in analysis.findings], judged(analysis)


def test_full_row_read_of_wide_rows_is_flagged_with_its_cause_first(big, demo_tables, tmp_path):
    analysis = traced(big, DEMO.wide_query, tmp_path / "wide.trace")
    assert analysis.verdict.status == "flagged", judged(analysis)
    assert [f.cause for f in analysis.findings][:2] == ["full_row_read", "whole_partition_scan"], judged(analysis)
