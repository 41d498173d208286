"""Mapped pages touched in the analyses and reports (unit: synthetic format-2 traces, no node)."""

import json
import re
import sqlite3

import synthetic_traces as synthetic
from casstrace.analyses import analyse
from casstrace.reports import render

MiB = 1 << 20
FULL_ROW_READ = 62_574_592  # what the full-row read touches, in 4 KiB pages (the 5.0 demo)


def test_a_warm_mmap_read_is_counted_and_flagged(tmp_path):
    analysis = analyse(synthetic.warm_mmap(tmp_path / "w.trace", touched=FULL_ROW_READ))
    o = analysis.overall
    assert (o.syscall_bytes, o.cache_miss_bytes, o.mapped_touched_bytes) == (0, 0, FULL_ROW_READ)
    assert o.data_read_bytes == o.data_read_least_bytes == FULL_ROW_READ
    assert o.read == FULL_ROW_READ / synthetic.WIDE_PAYLOAD
    assert o.carried_by == "mapped pages touched"
    assert analysis.verdict.status == "flagged"
    assert "most of it seen by mapped pages touched" in analysis.verdict.summary
    assert "full_row_read" in {f.cause for f in analysis.findings}
    (data,) = [f for f in analysis.files if f.component == "Data"]
    assert (data.read_bytes, data.cache_miss_bytes, data.mapped_touched_bytes) == (0, 0, FULL_ROW_READ)
    # the warmup's reads are reported, apart
    assert analysis.warmup is not None and analysis.warmup.mapped_touched_bytes == FULL_ROW_READ


def test_every_format_shows_the_three_measures_side_by_side(tmp_path):
    analysis = analyse(synthetic.warm_mmap(tmp_path / "w.trace", touched=FULL_ROW_READ, warmup_touched=3 * MiB))
    text = render(analysis, "text")
    header = next(line for line in text.splitlines() if "Mapped touched" in line)
    assert header.index("Read") < header.index("Cache misses") < header.index("Mapped touched")
    assert re.search(r"Data\.db\s+Data\s+0 B\s+0 B\s+0\s+0 B\s+59\.7 MiB", text)
    assert re.search(r"Warmup \(kept apart, not in the figures above\)\s+read 3\.0 MiB", text)
    assert "Mapped touched" in render(analysis, "md") and "Mapped touched" in render(analysis, "html")
    document = json.loads(render(analysis, "json"))
    assert document["measures"]["mapped"] is True
    assert document["amplification"]["mapped_touched_bytes"] == FULL_ROW_READ
    assert document["amplification"]["carried_by"] == "mapped pages touched"
    assert document["warmup"]["mapped_touched_bytes"] == 3 * MiB
    (data,) = [f for f in document["files"] if f["component"] == "Data"]
    assert data["mapped_touched_bytes"] == FULL_ROW_READ


def test_a_narrow_mapped_read_is_not_flagged(tmp_path):
    analysis = analyse(synthetic.warm_mmap(tmp_path / "n.trace", touched=8 * 4096))
    assert analysis.verdict.status == "not flagged"


def test_a_refused_measure_gives_no_verdict_from_absence_of_evidence(tmp_path):
    analysis = analyse(synthetic.warm_mmap(tmp_path / "r.trace", touched=0, measured=False))
    assert analysis.overall.data_read_bytes == 0 and analysis.overall.mapped_touched_bytes is None
    assert (analysis.verdict.status, analysis.verdict.reason) == ("undetermined", "unseen_reads")
    assert "The JVM maps 182.1 MiB of demo.wide's Data files" in analysis.verdict.summary
    assert "clear_refs refused" in analysis.verdict.summary
    assert analysis.verdict.fix == "run as root"
    text = render(analysis, "text")
    assert "VERDICT: UNDETERMINED" in text and "Fix: run as root" in text
    assert re.search(r"Mapped pages touched \(reads through memory maps\)\s+not measured", text)
    assert json.loads(render(analysis, "json"))["fix"] == "run as root"


def test_a_flagged_figure_stands_even_when_the_measure_was_refused(tmp_path):
    """A lower bound at or above the threshold is enough to flag."""
    path = synthetic.warm_mmap(tmp_path / "r.trace", touched=0, measured=False, syscall_pages=1000)
    assert analyse(path).verdict.status == "flagged"


def test_two_mib_mappings_bound_the_figure_and_stop_a_verdict_they_could_make(tmp_path):
    # 4 entries of 2 MiB marked: 8 MiB referenced, but perhaps 4 KiB read in each
    analysis = analyse(synthetic.warm_mmap(tmp_path / "h.trace", touched=8 * MiB, huge=8 * MiB))
    o = analysis.overall
    assert (o.data_read_bytes, o.data_read_least_bytes) == (8 * MiB, 4 * 4096)
    assert (analysis.verdict.status, analysis.verdict.reason) == ("undetermined", "upper_bound_only")
    assert "between 16.0 KiB" in analysis.verdict.summary and "--cold" in (analysis.verdict.fix or "")
    # the same accessed bits, the mapping in 4 KiB pages: the figure is exact and flags
    assert analyse(synthetic.warm_mmap(tmp_path / "p.trace", touched=8 * MiB)).verdict.status == "flagged"
    # far above the threshold even at the least: flagged
    big = analyse(synthetic.warm_mmap(tmp_path / "b.trace", touched=100 * MiB, huge=60 * MiB))
    assert big.verdict.status == "flagged" and big.overall.data_read_least_bytes == 40 * MiB + 30 * 4096


def test_a_page_seen_by_a_syscall_and_the_map_counts_once(tmp_path):
    # 10 pages read by a syscall from the mapped file are Referenced too: 12 pages in all, not 22
    analysis = analyse(synthetic.warm_mmap(tmp_path / "d.trace", touched=12 * 4096, syscall_pages=10))
    o = analysis.overall
    assert (o.syscall_bytes, o.mapped_touched_bytes, o.mapped_outside_syscall_bytes) == (40_960, 49_152, 8_192)
    assert o.data_read_bytes == 49_152


def test_format_1_traces_are_read_and_their_mapped_pages_are_not_measured(tmp_path):
    path = synthetic.warm_mmap(tmp_path / "v1.trace", touched=0, measured=False)
    with sqlite3.connect(path) as db:  # what a format-1 writer made: none of format 2's additions
        db.execute("ALTER TABLE file_io DROP COLUMN mapped_touched_bytes")
        db.execute("ALTER TABLE file_io DROP COLUMN mapped_huge_bytes")
        db.execute("DROP TABLE mappings")
        db.execute("UPDATE meta SET value = '1' WHERE key = 'format_version'")
        measures = {"syscalls": True, "offsets": True, "page_cache": True, "latency": True, "wire": True}
        db.execute("UPDATE meta SET value = ? WHERE key = 'measures'", (json.dumps(measures),))
        db.execute("DELETE FROM meta WHERE key = 'mapped_unmeasured'")
    analysis = analyse(path)
    assert analysis.measures["mapped"] is False
    assert analysis.overall.mapped_touched_bytes is None
    # disk_access_mode mmap: reads unseen
    assert (analysis.verdict.status, analysis.verdict.reason) == ("undetermined", "unseen_reads")
    assert any("mapped pages touched" in warning for warning in analysis.warnings)


def test_an_import_that_saw_no_data_read_on_a_node_of_unknown_mode_is_undetermined(tmp_path):
    """A sysdig capture of a warm mmap node: the query ran (bytes went to the client), no read
    syscall touched a Data file, and nothing says whether the node maps them."""
    from casstrace.traces import TraceWriter

    writer = TraceWriter(tmp_path / "import.trace")
    writer.set_meta(
        backend="sysdig",
        source="import of mmap-node.scap",
        query="SELECT c0 FROM demo.wide WHERE id = 1",
        keyspace="demo",
        measures={"syscalls": True, "offsets": True, "page_cache": False, "latency": True, "wire": True},
        capture_start_ns=0,
        capture_end_ns=10,
        lost_events=0,
        unstreamed_events=0,
    )
    window = writer.add_window("capture", 0, 10)
    writer.file_id(synthetic.DATA_PATH, "file", size_bytes=synthetic.DATA_SIZE)
    client = writer.file_id(
        synthetic.CLIENT_SOCKET, "socket", local_addr="127.0.0.1:9042", remote_addr="127.0.0.1:50412"
    )
    writer.add_file_io([{"window_id": window, "file_id": client, "write_calls": 1, "write_bytes": 21_000}])
    analysis = analyse(writer.finish())
    assert analysis.overall.data_read_bytes == 0
    assert (analysis.verdict.status, analysis.verdict.reason) == ("undetermined", "unseen_reads")
    assert "casstrace run" in (analysis.verdict.fix or "")
