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
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from casstrace.analyses.model import Analysis
from casstrace.orchestration.kept_capture import KeptCapture
from casstrace.sandbox.control import Sandbox
from casstrace.sandbox.demo import WideTable
from casstrace.traces import Trace
from casstrace.traces.schema import PAGE_BYTES
from casstrace.traces.sstable_names import parse_sstable_path
from verdict_tables import (
    CITIES,
    FLAGGED,
    LOW_CARDINALITY,
    MEMBERS,
    NOT_FLAGGED,
    PEOPLE,
    SAI_SHAPES,
    SESSION_LIVE,
    SESSION_ROWS,
    SHAPES_FLAGGED,
    SHAPES_NOT_FLAGGED,
    judged,
    load,
    load_low_cardinality,
    load_shapes,
    traced,
)

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


@pytest.fixture(scope="module")
def big_shapes(big: Sandbox) -> Sandbox:
    load_shapes(big)
    return big


@pytest.fixture(scope="module")
def bti_shapes(bti: Sandbox) -> Sandbox:
    load_shapes(bti)
    return bti


@pytest.fixture(scope="module")
def trace_once(
    tmp_path_factory: pytest.TempPathFactory, kept_capture: KeptCapture
) -> Callable[[Sandbox, str], Analysis]:
    """The query traced on the node (repeat 2, a warmup first) once for the module: tests that judge
    the same query on the same node assert on one run's analysis. The runs go through one capture,
    on either node: conftest's kept_capture, compiled and attached once, detached once (a detach is
    ~6 s of a run's ~10). Not the index reads' own tests, which count the executions that read
    the index: the run the everyday test made read it in one of its two executions, where those tests'
    own later runs, a capture of their own each, read it in both."""
    directory = tmp_path_factory.mktemp("traces")
    analyses: dict[tuple[Path, str], Analysis] = {}

    def trace(node: Sandbox, query: str) -> Analysis:
        key = (node.data_dir, query)
        if key not in analyses:
            analyses[key] = traced(node, query, directory / f"{len(analyses)}.trace", kept_capture)
        return analyses[key]

    return trace


@pytest.mark.parametrize("label", NOT_FLAGGED)
def test_everyday_reads_are_not_flagged_on_big(big, label, trace_once):
    analysis = trace_once(big, NOT_FLAGGED[label])
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
def test_everyday_reads_are_not_flagged_on_bti(bti, label, trace_once):
    analysis = trace_once(bti, NOT_FLAGGED[label])
    assert analysis.verdict.status == "not flagged", judged(analysis)
    assert analysis.necessary is not None and analysis.necessary.sstable_format == "bti"


def test_a_point_read_is_judged_against_one_chunk_as_stored(big, trace_once):
    """The issue's users table: the read is one LZ4 chunk; the necessary read is that chunk as the
    SSTable stores it (CompressionInfo.db, read at run time) and one index page."""
    analysis = trace_once(big, NOT_FLAGGED["point read by full primary key"])
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


def flagged_with_cause_first(
    trace_once: Callable[[Sandbox, str], Analysis], node: Sandbox, query: str, cause: str
) -> Analysis:
    """The query's analysis, once it is asserted flagged with `cause` first, for at least half the excess."""
    analysis = trace_once(node, query)
    assert analysis.verdict.status == "flagged", judged(analysis)
    assert analysis.findings[0].cause == cause, judged(analysis)
    assert (analysis.findings[0].excess_share or 0) >= 0.5, judged(analysis)
    return analysis


@pytest.mark.parametrize("label", FLAGGED)
def test_pathological_reads_are_flagged_with_the_right_cause_first(big, label, trace_once):
    analysis = flagged_with_cause_first(trace_once, big, *FLAGGED[label])
    if label == "scan without partition key":
        assert "whole_partition_scan" in [f.cause for f in analysis.findings], judged(analysis)


def test_full_row_read_of_wide_rows_is_flagged_with_its_cause_first(big, demo_tables, trace_once):
    analysis = trace_once(big, DEMO.wide_query)
    assert analysis.verdict.status == "flagged", judged(analysis)
    assert [f.cause for f in analysis.findings][:2] == ["full_row_read", "whole_partition_scan"], judged(analysis)


@pytest.mark.parametrize("label", SHAPES_NOT_FLAGGED)
def test_everyday_read_shapes_are_not_flagged_on_big(big_shapes, label, trace_once):
    """Indexes, views, DISTINCT, statics, IN on clustering, token ranges, counters, an element of a
    collection: each judged with its own model, none flagged and none with a cause."""
    analysis = trace_once(big_shapes, SHAPES_NOT_FLAGGED[label])
    assert analysis.verdict.status == "not flagged", judged(analysis)
    assert analysis.necessary is not None and analysis.necessary.sstable_format == "big", judged(analysis)
    assert analysis.findings == []


@pytest.mark.parametrize("label", SHAPES_NOT_FLAGGED)
def test_everyday_read_shapes_are_not_flagged_on_bti(bti_shapes, label, trace_once):
    analysis = trace_once(bti_shapes, SHAPES_NOT_FLAGGED[label])
    assert analysis.verdict.status == "not flagged", judged(analysis)
    assert analysis.necessary is not None and analysis.necessary.sstable_format == "bti", judged(analysis)


@pytest.mark.parametrize("label", ["through a secondary index", "through an SAI index"])
def test_an_index_read_needs_a_chunk_and_a_lookup_per_partition_found(big_shapes, label, tmp_path):
    """Ten people a city (a team), ten partitions apart: ten chunks and ten partition-index lookups,
    no range read's read-ahead, and the index's own lookup in the index part."""
    analysis = traced(big_shapes, SHAPES_NOT_FLAGGED[label], tmp_path / "q.trace")
    necessary = analysis.necessary
    assert [e.rows for e in analysis.executions if e.kind == "measured"] == [PEOPLE // CITIES] * 2
    assert necessary.units == PEOPLE // CITIES, judged(analysis)
    assert necessary.data_bytes == necessary.units * necessary.unit_bytes  # no 256 KiB read-ahead
    assert necessary.index_bytes > PEOPLE // CITIES * 4_096  # each partition's lookup, and the index's
    kind = "sai" if label in SAI_SHAPES else "legacy"
    assert f"through the {kind} index" in necessary.basis
    # what the node read is the chunks of those ten rows (hex text compresses little): 0.5x to 2x
    assert 0.5 * necessary.data_bytes <= analysis.read_per_execution <= 2 * necessary.data_bytes, judged(analysis)


@pytest.mark.parametrize(
    "label, index_files",
    [
        ("through a secondary index", ".people_city/*-Data.db"),
        ("through an SAI index", "*-SAI+aa+people_team+*.db"),
    ],
)
def test_an_index_read_is_counted_by_part_against_its_files_on_disk(big_shapes, label, index_files, tmp_path):
    """The index part of the read, measured by part: the index's own files (a legacy index's hidden
    table, the SAI index's components) read, each part at most its files on disk (their sizes read
    here, in whole pages) per execution, and not in the data read the verdict counts."""
    analysis = traced(big_shapes, SHAPES_NOT_FLAGGED[label], tmp_path / "q.trace")
    assert analysis.verdict.status == "not flagged", judged(analysis)
    index = analysis.index_read
    assert index is not None and index.executions == 2
    directories = {Path(f["path"]).parent for f in analysis.context["table_schema"]["sstables"]}
    [table_dir] = [directory for directory in directories if not directory.name.startswith(".")]
    on_disk: dict[str, int] = {}  # part -> its files' size, as the node's directory lists them now
    for path in table_dir.glob(index_files):
        name = parse_sstable_path(str(path))
        assert name is not None, path
        on_disk[name.part] = on_disk.get(name.part, 0) + path.stat().st_size
    read = [part for part in index.parts if part.part in on_disk and part.read_bytes]
    assert read, (index.parts, on_disk)
    for part in read:  # at most the part's files, in whole pages, each execution
        assert part.file_bytes == on_disk[part.part], (part, on_disk)
        assert part.read_bytes <= index.executions * -(-part.file_bytes // PAGE_BYTES) * PAGE_BYTES, part


@pytest.mark.parametrize("label", LOW_CARDINALITY)
def test_a_low_cardinality_index_is_flagged_reading_a_chunk_a_row(big_shapes, label, trace_once):
    """Half of 2,000 one-row partitions through an index of two values: the node reads each row by its
    key, a chunk a row, many times the table's chunks; the necessary read is those chunks once."""
    load_low_cardinality(big_shapes)
    query, kind = LOW_CARDINALITY[label]
    analysis = flagged_with_cause_first(trace_once, big_shapes, query, "low_cardinality_index")
    necessary = analysis.necessary
    chunks = sum(s["compression"]["chunks"] for s in _storage(analysis))
    assert [e.rows for e in analysis.executions if e.kind == "measured"] == [MEMBERS // 2] * 2
    assert necessary is not None and necessary.units == chunks < MEMBERS // 2, judged(analysis)
    assert f"through the {kind} index" in necessary.basis
    # a chunk a row, at least half of them read again: far past the table's Data files per execution
    assert analysis.read_per_execution >= MEMBERS // 4 * necessary.unit_bytes, judged(analysis)


def test_a_low_cardinality_index_is_flagged_on_bti(bti_shapes, trace_once):
    """The same through SAI on a node writing BTI (its partition index a trie, the same chunks)."""
    load_low_cardinality(bti_shapes)
    query, _ = LOW_CARDINALITY["through a low-cardinality SAI index"]
    analysis = flagged_with_cause_first(trace_once, bti_shapes, query, "low_cardinality_index")
    assert analysis.necessary is not None and analysis.necessary.sstable_format == "bti"


def test_a_materialized_view_is_judged_by_its_own_table(big_shapes, trace_once):
    analysis = trace_once(big_shapes, SHAPES_NOT_FLAGGED["from a materialized view"])
    assert analysis.context["table_schema"]["table"] == "people_by_city"
    # the ten people of a city are one partition of the view: one chunk, one lookup
    assert analysis.necessary is not None and analysis.necessary.units == 1, judged(analysis)
    assert {f.sstable.table for f in analysis.files if f.component == "Data" and f.read_bytes} >= {"people_by_city"}


@pytest.mark.parametrize(
    "label, cell_bytes",
    [
        # 300 entries: a count, then each key ('k0'..'k299': 1,090 B) and 100-character value with its length
        ("an element of a large map", 4 + 300 * (4 + 4 + 100) + 1_090),
        # the fields 'street', 'city' and 40,000 hex characters, each with its length
        ("a field of a large frozen UDT", 4 + 6 + 4 + 4 + 4 + 40_000),
    ],
)
def test_an_element_or_field_needs_its_whole_cell_as_sampled(big_shapes, label, cell_bytes, trace_once):
    """One element of a 300-element map, one field of a 40 KB frozen UDT: the node reads the whole cell,
    the necessary read's result is that cell as sampled before the capture (the size the data loaded
    gives, exactly), not the element's few bytes nor the whole row; not flagged."""
    analysis = trace_once(big_shapes, SHAPES_NOT_FLAGGED[label])
    with Trace(analysis.trace_path) as trace:
        assert trace.meta["whole_cells"] == {"rows": 1, "payload_bytes": cell_bytes}
    necessary = analysis.necessary
    assert necessary is not None and necessary.result_bytes == cell_bytes, judged(analysis)
    assert (analysis.overall.basis_bytes or 0) / 2 < 200  # the element or field returned, per execution
    assert "sampled on the first 1 row" in necessary.basis
    assert analysis.verdict.status == "not flagged", judged(analysis)


@pytest.mark.parametrize("label", SHAPES_FLAGGED)
def test_pathological_read_shapes_are_flagged_with_the_right_cause_first(big_shapes, label, trace_once):
    flagged_with_cause_first(trace_once, big_shapes, *SHAPES_FLAGGED[label])


def test_rows_past_their_ttl_are_counted_as_cassandra_counts_them(big_shapes, trace_once):
    """1,990 of the 2,000 rows written with a 1 s TTL: Cassandra's trace counts their cells as
    tombstones; the SSTable's Statistics.db records the longest TTL written (one day)."""
    query, _ = SHAPES_FLAGGED["rows past their TTL"]
    analysis = trace_once(big_shapes, query)
    [expired] = [f for f in analysis.findings if f.cause == "expired_cells"]
    assert f"{SESSION_LIVE:,} live rows and {SESSION_ROWS - SESSION_LIVE:,} tombstone cells" in expired.evidence[0]
    assert "86,400 s" in expired.evidence[1]
    assert "tombstones" not in [f.cause for f in analysis.findings]
