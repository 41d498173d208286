"""Nodes that read their Data files through memory maps (disk_access_mode mmap), warm, as a
production node is: the verdict comes from the mapped pages the JVM touched, checked against the
syscall bytes the same query reads on a node that reads with syscalls (the test node: 5.0's default
mmap_index_only reads Data files with pread), and against the JVM's smaps read by the test itself.

The mmap node is a node of this module (CASSTRACE_TEST_MMAP_DATA_DIR, _NATIVE_PORT, _JMX_PORT; left
running when it already ran), with the same demo data as the test node (seeded: the same bytes).
"""

import os
import statistics
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from bpf_programs import wait_until_attached
from casstrace.analyses import analyse
from casstrace.analyses.model import Analysis
from casstrace.probes.proc import mapped_pages
from casstrace.sandbox.control import Sandbox
from casstrace.sandbox.demo import WideTable, ensure_loaded
from casstrace.traces import Trace
from casstrace_cli import CASSTRACE
from verdict_tables import (
    NOT_FLAGGED,
    SAI_SHAPES,
    SHAPES_FLAGGED,
    SHAPES_NOT_FLAGGED,
    judged,
    load,
    load_shapes,
    traced,
)

pytestmark = pytest.mark.integration

DEMO = WideTable()
SELECT_STAR = f"SELECT * FROM {DEMO.keyspace}.{DEMO.table} WHERE stream_id = {DEMO.stream_id}"
MMAP_DATA_DIR = Path(
    os.environ.get("CASSTRACE_TEST_MMAP_DATA_DIR") or Path.home() / ".local/share/casstrace/test-mmap-sandbox"
)
MMAP_NATIVE_PORT = int(os.environ.get("CASSTRACE_TEST_MMAP_NATIVE_PORT", "19142"))
MMAP_JMX_PORT = int(os.environ.get("CASSTRACE_TEST_MMAP_JMX_PORT", "17299"))


def data_files(analysis: Analysis):
    return [f for f in analysis.files if f.component == "Data" and f.sstable.table == DEMO.table]


def node_of_this_module(data_dir: Path, **start_options: object) -> Iterator[Sandbox]:
    """The node in data_dir with the demo data, started when it does not run (and then stopped)."""
    node = Sandbox(data_dir)
    started_here = not node.is_running()
    if started_here:
        node.start(progress=lambda _: None, **start_options)  # type: ignore[arg-type]
    ensure_loaded(node)
    yield node
    if started_here:
        node.stop()


@pytest.fixture(scope="module")
def mmap_node() -> Iterator[Sandbox]:
    yield from node_of_this_module(
        MMAP_DATA_DIR, native_port=MMAP_NATIVE_PORT, jmx_port=MMAP_JMX_PORT, disk_access_mode="mmap"
    )


@pytest.fixture(scope="module")
def warm(mmap_node, kept_capture, tmp_path_factory):
    """The full-row read, warm (one warmup execution, the query served before): on the mmap node,
    and the same query on the test node, which reads its Data files with syscalls."""
    out = tmp_path_factory.mktemp("warm")
    return traced(mmap_node, DEMO.wide_query, out / "mmap.trace", kept_capture, repeat=3)


@pytest.fixture(scope="module")
def syscall_node_read(sandbox, demo_tables, kept_capture, tmp_path_factory) -> Analysis:
    out = tmp_path_factory.mktemp("syscalls") / "wide.trace"
    analysis = traced(sandbox, DEMO.wide_query, out, kept_capture, repeat=2)
    assert analysis.context["disk_access_mode"] in ("standard", "mmap_index_only")
    return analysis


def test_warm_full_row_read_on_an_mmap_node_is_flagged_by_the_mapped_pages(warm):
    assert warm.context["disk_access_mode"] == "mmap"
    assert warm.measures["mapped"]
    o = warm.overall
    assert o.syscall_bytes == 0  # no read syscall on a mapped Data file
    assert o.carried_by == "mapped pages touched"
    assert o.read >= 100 and o.read_least >= 100
    assert warm.verdict.status == "flagged"
    assert "full_row_read" in {finding.cause for finding in warm.findings}
    assert warm.warmup is not None and warm.warmup.mapped_touched_bytes > 0  # reported, apart


def test_warm_full_row_read_on_4_1_with_its_defaults_is_flagged(node_41, syscall_node_read, kept_capture, tmp_path):
    """Cassandra 4.1 as users run it: auto -> mmap, LZ4, warm, no --cold."""
    analysis = traced(node_41, DEMO.wide_query, tmp_path / "41.trace", kept_capture, repeat=3)
    assert analysis.context["cassandra_version"].startswith("4.1")
    assert analysis.context["disk_access_mode"] in ("mmap", "auto")
    o = analysis.overall
    assert o.syscall_bytes == 0 and o.carried_by == "mapped pages touched"
    assert o.read is not None
    assert o.read >= 100 and analysis.verdict.status == "flagged", analysis.verdict.summary
    assert "full_row_read" in {finding.cause for finding in analysis.findings}
    touched = min(e.amplification.mapped_touched_bytes for e in analysis.executions if e.kind == "measured")  # type: ignore[type-var]
    (syscall_data,) = data_files(syscall_node_read)
    print(
        f"4.1: mapped touched per execution {touched}, amplification {o.read:.0f}x; 5.0 with pread: "
        f"{syscall_data.touched_bytes} B of pages"
    )
    # 4.1 writes the same rows in the same format (nb-big, LZ4 16 KiB): about the same pages
    pages = syscall_data.touched_bytes
    with Trace(analysis.trace_path) as trace:
        (huge,) = trace.rows("SELECT MAX(mapped_huge_bytes) FROM file_io")[0]
    if huge:  # 2 MiB entries (one run in four here): the figure is a bracket, which must hold the truth
        assert o.data_read_least_bytes is not None
        least = o.data_read_least_bytes / sum(e.kind == "measured" for e in analysis.executions)
        assert least <= pages * 1.25 and touched >= pages * 0.8
    else:
        assert 0.8 <= touched / pages <= 1.25


def test_mapped_bytes_touched_match_what_the_query_reads_with_syscalls(warm, syscall_node_read):
    per_execution = [e.amplification.mapped_touched_bytes for e in warm.executions if e.kind == "measured"]
    syscall_bytes = [e.amplification.syscall_bytes for e in syscall_node_read.executions if e.kind == "measured"]
    (syscall_data,) = data_files(syscall_node_read)
    # distinct pages the syscalls returned (the same in each execution, so the union's are each one's):
    # the mapped measure counts pages too
    syscall_pages = syscall_data.touched_bytes
    with Trace(warm.trace_path) as trace:
        (huge,) = trace.rows("SELECT MAX(mapped_huge_bytes) FROM file_io")[0]
    print(
        f"mapped touched per execution {per_execution}, syscall bytes per execution {syscall_bytes}, "
        f"syscall pages per execution {syscall_pages:.0f}, 2 MiB-mapped {huge}"
    )
    # The fewest: touches only ever add up (a page the kernel reclaimed under memory pressure is
    # faulted back with up to 15 cached neighbours mapped as accessed), never go missing.
    touched = min(per_execution)
    if huge:  # 2 MiB entries: the figure is a bracket, which must hold the truth
        least = warm.overall.data_read_least_bytes / len(per_execution)
        assert least <= syscall_pages * 1.25 and touched >= syscall_pages * 0.8
    else:
        assert 0.95 <= touched / syscall_pages <= 1.05
        # Pages against bytes: each 16 KiB chunk pread at an unaligned offset spans 5 pages, not 4.
        assert 0.8 <= touched / statistics.median(syscall_bytes) <= 1.3


def test_mapped_bytes_touched_match_the_jvms_smaps_read_independently(mmap_node, warm):
    """The test clears the accessed bits and reads smaps itself around one more execution."""
    pid = mmap_node.pid()
    (data,) = data_files(warm)
    Path(f"/proc/{pid}/clear_refs").write_text("1")
    Path(f"/proc/{pid}/clear_refs").write_text("4")  # flushes the TLB (see mapped_pages.clear_referenced)
    with mmap_node.connect() as session:
        rows = list(session.execute(DEMO.wide_query))
    referenced_kb, inside = 0, False
    for line in Path(f"/proc/{pid}/smaps").read_text().splitlines():
        first = line.split()[0]
        if not first.endswith(":"):
            inside = line.endswith(data.path)
        elif inside and first == "Referenced:":
            referenced_kb += int(line.split()[1])
    assert len(rows) == DEMO.rows
    per_execution = [e.amplification.mapped_touched_bytes for e in warm.executions if e.kind == "measured"]
    assert 0.9 <= min(per_execution) / (referenced_kb * 1024) <= 1.1


def test_capture_of_the_jvm_measures_its_mapped_reads_as_run_does(mmap_node, warm, tmp_path):
    """`capture --pid` takes the mapped-pages measure over the whole capture (it showed these reads as
    0 B): three executions of the demo query in it touch the pages one execution of `run` touched,
    the same pages each time."""
    out = tmp_path / "capture.trace"
    command = subprocess.Popen(
        [*CASSTRACE, "capture", "--pid", str(mmap_node.pid()), "--duration", "10", "--out", str(out)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    wait_until_attached(command)
    with mmap_node.connect() as session:
        for _ in range(3):
            assert len(list(session.execute(DEMO.wide_query))) == DEMO.rows
    _, stderr = command.communicate(timeout=60)
    assert command.returncode == 0, stderr
    captured = analyse(out)
    assert captured.measures["mapped"] and captured.overall.carried_by == "mapped pages touched"
    (data,) = data_files(captured)
    assert data.read_bytes == 0
    touched = data.mapped_touched_bytes
    by_run = [e.amplification.mapped_touched_bytes for e in warm.executions if e.kind == "measured"]
    with Trace(out) as trace, Trace(warm.trace_path) as run_trace:
        huge = max(t.rows("SELECT MAX(mapped_huge_bytes) FROM file_io")[0][0] or 0 for t in (trace, run_trace))
    print(
        f"capture: {touched} B of mapped pages touched over 3 executions; run: {by_run} per execution;"
        f" 2 MiB-mapped {huge}"
    )
    if huge:  # 2 MiB entries: one access marks 2 MiB, so the two may differ by whole 2 MiB blocks
        assert 0.5 <= touched / min(by_run) <= 2
    else:
        assert 0.95 <= touched / min(by_run) <= 1.1


def test_narrow_refactor_and_select_star_on_an_mmap_node_are_not_flagged(mmap_node, kept_capture, tmp_path):
    narrow = traced(mmap_node, DEMO.narrow_query, tmp_path / "narrow.trace", kept_capture, repeat=2)
    assert narrow.measures["mapped"]
    assert narrow.verdict.status == "not flagged", narrow.verdict.summary
    star = traced(mmap_node, SELECT_STAR, tmp_path / "star.trace", kept_capture, repeat=1, page_size=20)
    assert star.verdict.status == "not flagged", star.verdict.summary
    assert star.overall.carried_by == "mapped pages touched"
    assert star.overall.read is not None
    assert 0.8 <= star.overall.read <= 1.3


def test_refused_clear_refs_gives_undetermined_not_not_flagged(mmap_node, kept_capture, tmp_path, monkeypatch):
    def refuse(pid: int) -> None:
        raise mapped_pages.MappedPagesUnavailable(
            f"/proc/{pid}/clear_refs refused the clear (test hook)", "run casstrace as root on the node's host"
        )

    monkeypatch.setattr(mapped_pages, "clear_referenced", refuse)
    analysis = traced(mmap_node, DEMO.narrow_query, tmp_path / "refused.trace", kept_capture, repeat=1)
    assert not analysis.measures["mapped"]
    assert analysis.verdict.status == "undetermined", analysis.verdict.summary
    assert "clear_refs refused the clear (test hook)" in analysis.verdict.summary
    assert analysis.verdict.fix == "run casstrace as root on the node's host"


def test_cold_pushes_the_mapped_pages_out_without_a_restart(mmap_node, warm, kept_capture, tmp_path):
    """The table is mapped and warm (the warm fixture ran): --cold must still read from the device."""
    cold = traced(mmap_node, DEMO.wide_query, tmp_path / "cold.trace", kept_capture, repeat=1, warmup=0, cold=True)
    (measured,) = [e for e in cold.executions if e.kind == "measured"]
    filled = sum(f.cache_miss_bytes for f in data_files(cold))
    assert filled > 0 and measured.amplification.cache_miss_bytes == filled
    assert cold.verdict.status == "flagged"
    # the pages came from the device while the request waited: its threads slept on the disk
    assert 0 < measured.measures["io_wait_ns"] <= measured.measures["node_ns"], measured.measures
    with Trace(cold.trace_path) as trace:
        assert trace.meta["cold"]["mapped_bytes_paged_out"] > 0


@pytest.mark.parametrize(
    "label", ["point read by full primary key", "all columns of one row", "latest rows of a small partition"]
)
def test_everyday_reads_on_a_warm_4_1_mmap_node_are_not_flagged(node_41, label, kept_capture, tmp_path):
    """Everyday reads judged by the mapped pages the JVM touched (4.1 maps its Data files): the
    necessary read holds there too (tests/integration/test_verdict_classes.py has them on 5.0)."""
    load(node_41, pathological=False)
    analysis = traced(node_41, NOT_FLAGGED[label], tmp_path / "q.trace", kept_capture)
    assert analysis.context["disk_access_mode"] in ("mmap", "auto")
    assert analysis.overall.mapped_touched_bytes, judged(analysis)  # the read was seen, through the maps
    assert analysis.verdict.status == "not flagged", judged(analysis)


@pytest.mark.parametrize("label", [label for label in SHAPES_NOT_FLAGGED if label not in SAI_SHAPES])
def test_everyday_read_shapes_on_a_warm_4_1_mmap_node_are_not_flagged(node_41, label, kept_capture, tmp_path):
    """CQL's other read shapes (indexes, a view, DISTINCT, statics, IN on clustering, token ranges,
    counters, an element of a collection) on 4.1's mapped Data files: no read-ahead there (4.1 has
    no compressed_read_ahead_buffer_size), each judged with its own model all the same. 4.1 has no SAI."""
    load_shapes(node_41)
    analysis = traced(node_41, SHAPES_NOT_FLAGGED[label], tmp_path / "q.trace", kept_capture)
    assert analysis.context["disk_access_mode"] in ("mmap", "auto")
    assert analysis.verdict.status == "not flagged", judged(analysis)


def test_rows_past_their_ttl_on_a_warm_4_1_mmap_node_are_flagged_as_expired_cells(node_41, kept_capture, tmp_path):
    load_shapes(node_41)
    query, cause = SHAPES_FLAGGED["rows past their TTL"]
    analysis = traced(node_41, query, tmp_path / "q.trace", kept_capture)
    assert analysis.verdict.status == "flagged", judged(analysis)
    assert analysis.findings[0].cause == cause, judged(analysis)
