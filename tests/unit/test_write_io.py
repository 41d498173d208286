"""Each file's writes (analyses.write_io) and their report section, from hand-built traces: the figures
a capture took, and those it did not with why (a syscall capture sees no dirtying nor writeback)."""

import json

import pytest

from casstrace.analyses import analyse
from casstrace.reports import render
from casstrace.traces import TraceWriter
from casstrace.traces.schema import PAGE_BYTES, latency_bucket

SEGMENT = "/var/lib/cassandra/commitlog/CommitLog-7-1764400000000.log"
DATA = "/var/lib/cassandra/data/ks/t-0123/nb-7-big-Data.db"
WRITES = {"syncs": True}


def _trace(tmp_path, backend, measures):
    writer = TraceWriter(tmp_path / f"{backend}.trace")
    writer.set_meta(
        backend=backend,
        source="pid 4242",
        measures={"syscalls": True, "latency": True, **measures},
        pid=4242,
        capture_start_ns=0,
        capture_end_ns=10**9,
        slot_ns=10**8,
        heatmap_offset_bytes=1 << 20,
        lost_events=0,
        unstreamed_events=0,
    )
    window = writer.add_window("capture", 0, 10**9)
    segment, data = writer.file_id(SEGMENT, "file"), writer.file_id(DATA, "file")
    dirtied = measures.get("dirtied")
    writer.add_file_io(
        [
            {
                "window_id": window,
                "file_id": segment,
                "dirtied_pages": 300 if dirtied else None,
                "mapped_dirtied_pages": 300 if dirtied else None,
                "written_back_bytes": 300 * PAGE_BYTES if measures.get("written_back") else None,
                "sync_calls": 100,
                "sync_ns": 100 * 2_000_000,
            },
            {
                "window_id": window,
                "file_id": data,
                "write_calls": 80,
                "write_bytes": 5_000_000,
                "dirtied_pages": 1221 if dirtied else None,
                "mapped_dirtied_pages": 0 if dirtied else None,
                "written_back_bytes": 0 if measures.get("written_back") else None,
                "sync_calls": 0,
                "sync_ns": 0,
            },
        ]
    )
    # 98 syncs of 1 ms and 2 of 50 ms: p50 in the 1 ms bucket, p99 in the 50 ms one
    writer.add_sync_latency(
        [
            {"window_id": window, "file_id": segment, "syscall": "msync", "bucket": latency_bucket(10**6), "count": 98},
            {
                "window_id": window,
                "file_id": segment,
                "syscall": "fsync",
                "bucket": latency_bucket(5 * 10**7),
                "count": 2,
            },
        ]
    )
    return writer.finish()


def test_each_files_writes_dirtied_pages_and_sync_percentiles(tmp_path):
    analysis = analyse(_trace(tmp_path, "bcc", {"dirtied": True, "written_back": True, **WRITES}))
    assert analysis.writes is not None and analysis.writes.unmeasured == {}
    data, segment = analysis.writes.files  # most bytes first
    assert (data.path, data.written_bytes, data.write_calls, data.dirtied_bytes) == (DATA, 5_000_000, 80, 1221 * 4096)
    assert (segment.written_bytes, segment.mapped_dirtied_bytes, segment.written_back_bytes) == (
        0,
        300 * 4096,
        300 * 4096,
    )
    assert segment.sync_calls == 100 and segment.sync_ns == 200_000_000
    assert segment.sync_p50_ns is not None and segment.sync_p99_ns is not None
    assert 10**6 <= segment.sync_p50_ns < 1.26 * 10**6 and 5 * 10**7 <= segment.sync_p99_ns < 6.4 * 10**7
    text = render(analysis, "text")
    [row] = [line for line in text.splitlines() if line.strip().startswith(SEGMENT)]
    assert row.split()[1:] == [
        "0",
        "B",
        "0",
        "1.2",
        "MiB",
        "1.2",
        "MiB",
        "1.2",
        "MiB",
        "100",
        "1.26",
        "ms",
        "50.1",
        "ms",
    ]
    written = json.loads(render(analysis, "json"))["writes"]["files"]
    assert [f["written_bytes"] for f in written] == [5_000_000, 0]
    for name in ("md", "html"):
        assert SEGMENT in render(analysis, name) and "Mapped dirtied" in render(analysis, name)


@pytest.mark.parametrize("backend", ["sysdig", "bcc"])
def test_a_figure_not_measured_is_said_so_with_why(tmp_path, backend):
    syncs = {"syncs": backend != "sysdig"}
    analysis = analyse(_trace(tmp_path, backend, {"dirtied": False, "written_back": False, **syncs}))
    assert analysis.writes is not None
    data = next(f for f in analysis.writes.files if f.path == DATA)
    assert data.written_bytes == 5_000_000 and data.dirtied_bytes is None and data.written_back_bytes is None
    why = "not visible to a syscall capture (sysdig)" if backend == "sysdig" else "this kernel has no tracepoint for it"
    unmeasured = {"pages dirtied (mapped too)": why, "bytes written back": why}
    if backend == "sysdig":
        unmeasured["sync calls"] = why + ": its records of sync calls carry no file"
    assert analysis.writes.unmeasured == unmeasured
    text = render(analysis, "text")
    assert f"pages dirtied (mapped too): {why}" in text and "not measured" in text
