"""ScapImporter's folding on its own: calls as the scap reader hands them over, no file, no sysdig."""

from pathlib import Path

from casstrace.probes import sysdig_import
from casstrace.probes.scap_reader import OPEN, READ, SEEK, Call, Fd, Thread
from casstrace.probes.sysdig_import import ScapImporter
from casstrace.traces import Trace, TraceWriter
from casstrace.traces.schema import SLOT_NS


def written(importer: ScapImporter, path: Path) -> Trace:
    writer = TraceWriter(path)
    process, _ = importer.choose(None, None)
    importer.write(writer, process, {"source": "calls"})
    importer.close()
    writer.finish()
    return Trace(path)


def test_offsets_of_plain_reads_follow_opens_and_lseeks(tmp_path):
    """Calls as an exit-only capture gives them (arguments on the exit, no enter time): read offsets
    from the fd's position, no latency, requested bytes from the exit."""
    db, worker = Thread(7, 7, "db", "db", "/usr/bin/db", "/"), Thread(8, 7, "w 1", "db", "/usr/bin/db", "/")
    data = Fd("file", "/d/f")
    calls = [
        Call(OPEN, "openat", False, 1000, None, db, 3, None, 3, None, None, None),
        Call(READ, "read", False, 2000, None, db, 3, data, 4096, 4096, None, None),
        Call(SEEK, "lseek", False, 3000, None, db, 3, data, 65536, None, 65536, 0),
        Call(READ, "read", False, 4000, None, worker, 3, data, 100, 8192, None, None),
        Call(READ, "pread64", True, 5000, None, worker, 3, data, 10, 10, 4096, None),
    ]
    importer = ScapImporter(None, tmp_path)
    importer.fold(calls)
    trace = written(importer, tmp_path / "synthetic.trace")
    assert not trace.measured("latency") and not trace.rows("SELECT * FROM latency")
    assert [tuple(row) for row in trace.rows(
        "SELECT syscall, offset, requested, returned, latency_ns FROM events ORDER BY ts_ns")] == [
        ("read", 0, 4096, 4096, None), ("lseek", 65536, 0, 65536, None),
        ("read", 65536, 8192, 100, None), ("pread64", 4096, 10, 10, None)]
    (io,) = trace.rows("SELECT * FROM file_io")
    assert (io["read_calls"], io["read_bytes"], io["read_requested_bytes"], io["read_ns"]) == (3, 4206, 12298, None)
    assert (io["lseek_calls"], io["seek_jumps"], io["longest_sequential_bytes"]) == (1, 2, 4096)
    assert [tuple(row) for row in trace.rows("SELECT first_page, page_count FROM coverage ORDER BY first_page")] == [
        (0, 2), (16, 1)]
    assert dict(trace.rows("SELECT tid, name FROM threads")) == {7: "db", 8: "w 1"}


def test_cells_of_long_past_slots_move_to_disk_and_late_calls_still_count(tmp_path, monkeypatch):
    """A long capture keeps only recent heat-map and latency cells in memory; a call that comes
    after its slot moved to disk (out of time order) is added to the moved cell, not duplicated."""
    monkeypatch.setattr(sysdig_import, "SLOT_LAG", 2)
    monkeypatch.setattr(sysdig_import, "MOVE_EVERY_SLOTS", 3)
    db = Thread(7, 7, "db", "db", "/usr/bin/db", "/")
    data = Fd("file", "/d/f")

    def pread(slot: int, offset: int) -> Call:
        ts = 1_000 + slot * SLOT_NS
        return Call(READ, "pread64", True, ts + 500, ts, db, 3, data, 4096, 4096, offset, None)

    slots = [0, 1, 5, 9, 14, 20, 30, 1, 0, 31]      # the last three arrive late (slots 1, 0) or on time
    importer = ScapImporter(None, tmp_path)
    importer.fold(pread(slot, 0) for slot in slots)
    process = importer.processes[7]
    assert {key[1] for key in process.heatmap} == {30, 31, 1, 0}   # 5, 9, 14, 20 left memory
    trace = written(importer, tmp_path / "moved.trace")
    counted = {}
    for slot in slots:
        counted[slot] = counted.get(slot, 0) + 1
    assert {row["slot"]: row["calls"] for row in trace.rows("SELECT slot, calls FROM heatmap")} == counted
    assert {row["slot"]: row["count"] for row in trace.rows(
        "SELECT slot, SUM(count) AS count FROM latency GROUP BY slot")} == counted
