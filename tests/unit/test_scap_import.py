"""ScapImporter's folding on its own: calls as the scap reader hands them over, no file, no sysdig;
the compiled fold (probes/sysdig/scap_fold.c) against the Python one, on every shared capture."""

import itertools
import sqlite3
from pathlib import Path

import pytest

from casstrace.errors import CasstraceError
from casstrace.probes.protocol import Window
from casstrace.probes.sysdig import sysdig_import
from casstrace.probes.sysdig.scap_reader import OPEN, READ, SEEK, Call, Fd, ScapReader, Thread
from casstrace.probes.sysdig.sysdig_import import ScapImporter, import_scap
from casstrace.traces import Trace, TraceWriter
from casstrace.traces.schema import SLOT_NS
from casstrace_cli import casstrace
from scap_files import exit_only

SCAP_DIR = Path(__file__).resolve().parents[1] / "data" / "scap"


@pytest.fixture(params=["compiled", "python"])
def fold(request, monkeypatch):
    """The test runs with each fold: the compiled one (where built) and the Python one."""
    if request.param == "python":
        monkeypatch.setattr(sysdig_import, "COMPILED_FOLD", None)
    elif sysdig_import.COMPILED_FOLD is None:  # a tree installed before it existed, or no compiler
        pytest.skip("probes/sysdig/scap_fold.c is not built: run scripts/install (needs gcc and python3-dev)")
    return request.param


def written(importer: ScapImporter, path: Path) -> Trace:
    writer = TraceWriter(path)
    process, _ = importer.choose(None, None)
    importer.write(writer, process, {"source": "calls"})
    importer.close()
    writer.finish()
    return Trace(path)


@pytest.mark.usefixtures("fold")
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
    assert [
        tuple(row)
        for row in trace.rows("SELECT syscall, offset, requested, returned, latency_ns FROM events ORDER BY ts_ns")
    ] == [
        ("read", 0, 4096, 4096, None),
        ("lseek", 65536, 0, 65536, None),
        ("read", 65536, 8192, 100, None),
        ("pread64", 4096, 10, 10, None),
    ]
    (io,) = trace.rows("SELECT * FROM file_io")
    assert (io["read_calls"], io["read_bytes"], io["read_requested_bytes"], io["read_ns"]) == (3, 4206, 12298, None)
    assert (io["lseek_calls"], io["seek_jumps"], io["longest_sequential_bytes"]) == (1, 2, 4096)
    assert [tuple(row) for row in trace.rows("SELECT first_page, page_count FROM coverage ORDER BY first_page")] == [
        (0, 2),
        (16, 1),
    ]
    assert dict(trace.rows("SELECT tid, name FROM threads")) == {7: "db", 8: "w 1"}  # type: ignore[arg-type]


@pytest.mark.usefixtures("fold")
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

    slots = [0, 1, 5, 9, 14, 20, 30, 1, 0, 31]  # the last three arrive late (slots 1, 0) or on time
    importer = ScapImporter(None, tmp_path)
    importer.fold(pread(slot, 0) for slot in slots)
    process = importer.processes[7]
    assert {key[1] for key in process.heatmap} == {30, 31, 1, 0}  # 5, 9, 14, 20 left memory
    trace = written(importer, tmp_path / "moved.trace")
    counted: dict[int, int] = {}
    for slot in slots:
        counted[slot] = counted.get(slot, 0) + 1
    assert {row["slot"]: row["calls"] for row in trace.rows("SELECT slot, calls FROM heatmap")} == counted
    assert {
        row["slot"]: row["count"] for row in trace.rows("SELECT slot, SUM(count) AS count FROM latency GROUP BY slot")
    } == counted


def _tables(path: Path) -> dict[str, list]:
    """Every table of a trace: the events in their order, the others' rows as a set would hold them."""
    db = sqlite3.connect(path)
    names = [name for (name,) in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
    rows = {name: db.execute(f"SELECT * FROM {name}").fetchall() for name in names}
    db.close()
    return {name: table if name == "events" else sorted(table, key=repr) for name, table in rows.items()}


def _imported(
    path: Path, out: Path, windows: list[Window] | None = None, fold: object = None, event_limit: int | None = None
) -> dict[str, list]:
    saved = sysdig_import.COMPILED_FOLD
    sysdig_import.COMPILED_FOLD = fold
    try:
        writer = TraceWriter(out)
        import_scap(path, writer, windows=windows, event_limit=event_limit)
        writer.finish()
    finally:
        sysdig_import.COMPILED_FOLD = saved
    return _tables(out)


@pytest.mark.parametrize("name", sorted(path.name for path in SCAP_DIR.glob("*.scap")))
def test_the_compiled_fold_writes_what_the_python_fold_writes(name, tmp_path):
    """Each capture whole, in three windows with a record limit, and exit-only: every table of the
    trace the same, row for row."""
    compiled = sysdig_import.COMPILED_FOLD
    if compiled is None:
        pytest.skip("probes/sysdig/scap_fold.c is not built: run scripts/install (needs gcc and python3-dev)")
    source = SCAP_DIR / name
    timestamps = [call[3] for call in ScapReader(source).calls()]
    first, last = min(timestamps), max(timestamps)
    third = (last - first) // 3
    windows = [
        Window("warmup", None, first - 1, first + third),
        Window("execution", 1, first + third, last - third),
        Window("between", None, last - third, last + 1),
    ]
    for case, windows_of, limit in (("whole", None, None), ("windows", windows, 100)):
        assert _imported(source, tmp_path / f"{case}-c.trace", windows_of, compiled, limit) == _imported(
            source, tmp_path / f"{case}-py.trace", windows_of, None, limit
        ), case
    if not source.read_bytes().startswith(b"\x1f\x8b"):
        exit_only(source, tmp_path / "exit-only.scap")
        assert _imported(tmp_path / "exit-only.scap", tmp_path / "exit-c.trace", None, compiled) == _imported(
            tmp_path / "exit-only.scap", tmp_path / "exit-py.trace", None, None
        )


def test_an_import_keeps_the_stream_limit_s_records_and_counts_the_others(tmp_path):
    """`casstrace import --stream-limit` (default: the capture protocol's, as for a capture) keeps
    the first per-call records and counts the rest: every other table is a whole import's."""
    source = SCAP_DIR / "cassandra5-select-star-lz4.scap"
    whole = _imported(source, tmp_path / "whole.trace")
    out = tmp_path / "capped.trace"
    done = casstrace("import", source, "--stream-limit", 1000, "--out", out)
    assert done.returncode == 0, done.stderr
    capped = _tables(out)
    records = len(whole["events"])
    assert records > 1000 and capped["events"] == whole["events"][:1000]
    assert f"per-call records: 1000 kept, {records - 1000} not kept" in done.stdout
    assert {name: rows for name, rows in capped.items() if name not in ("events", "meta")} == {
        name: rows for name, rows in whole.items() if name not in ("events", "meta")
    }
    with Trace(out) as trace:
        assert trace.meta["unstreamed_events"] == records - 1000


@pytest.mark.usefixtures("fold")
def test_records_name_their_file_in_a_trace_that_held_files_already(tmp_path):
    """The records carry each file's number in a trace of the import's files alone; a trace that
    numbered other files first gets them renumbered."""
    db = Thread(7, 7, "db", "db", "/usr/bin/db", "/")
    data = Fd("file", "/d/f")
    importer = ScapImporter(None, tmp_path)
    importer.fold([Call(READ, "pread64", True, 5000, 4000, db, 3, data, 10, 10, 4096, None)])
    writer = TraceWriter(tmp_path / "held.trace")
    writer.file_id("/already/there", "file")
    process, _ = importer.choose(None, None)
    importer.write(writer, process, {"source": "calls"})
    importer.close()
    writer.finish()
    trace = Trace(tmp_path / "held.trace")
    assert [tuple(row) for row in trace.rows("SELECT f.path, e.offset FROM events e JOIN files f USING (file_id)")] == [
        ("/d/f", 4096)
    ]


def test_the_cyclic_collector_waits_for_the_import_only(tmp_path):
    """import_scap turns Python's cyclic garbage collector off while it folds (its tuples hold no
    cycles) and puts it back as it was, on success as on failure."""
    import gc

    assert gc.isenabled()
    writer = TraceWriter(tmp_path / "one.trace")
    import_scap(SCAP_DIR / "test_ipv6_client.scap", writer)
    writer.finish()
    assert gc.isenabled()
    with pytest.raises(CasstraceError):  # no calls of pid 1
        import_scap(SCAP_DIR / "test_ipv6_client.scap", TraceWriter(tmp_path / "two.trace"), pid=1)
    assert gc.isenabled()
    gc.disable()
    try:
        writer = TraceWriter(tmp_path / "three.trace")
        import_scap(SCAP_DIR / "test_ipv6_client.scap", writer)
        writer.finish()
        assert not gc.isenabled()
    finally:
        gc.enable()


class MadeRow:
    """An event row that is a sequence but neither tuple nor list, its syscall name a new str each
    time it is read."""

    def __init__(self, ts: int) -> None:
        self.ts = ts

    def __len__(self) -> int:
        return 10

    def __getitem__(self, index: int) -> object:
        return (self.ts, 1, "".join(["read", str(self.ts)]), 3, None, 0, 1, 1, None, None)[index]


def test_the_bulk_insert_writes_what_executemany_writes(tmp_path, monkeypatch):
    """traces/bulk_insert.c (TraceWriter.add_events and add_coverage: per-call rows, page runs) against
    the sqlite3 module's executemany: every kind of value, then a whole import of the largest capture;
    and a row it cannot take is an error, not a half-written trace."""
    from casstrace.traces import writer as trace_writer

    if trace_writer.BULK_INSERT is None:
        pytest.skip("traces/bulk_insert.c is not built: run scripts/install (gcc, python3-dev, libsqlite3-dev)")
    rows = [
        (1, 2, "pread64", 3, 1, 0, 4096, 4096, 5, None),
        (2**63 - 1, -1, "lseek", -100, None, -(2**63), 0, -22, None, 7),
        (3, 4, "ré\u00e9d", None, 1, None, None, None, None, None),
    ]
    tables = []
    for bulk in (None, trace_writer.BULK_INSERT):
        monkeypatch.setattr(trace_writer, "BULK_INSERT", bulk)
        for count in (3, 64, 129):  # within one multi-row statement, exactly one, two and a row left over
            path = tmp_path / f"{bulk is not None}-{count}.trace"
            writer = TraceWriter(path)
            writer.add_events([(ts, *row[1:]) for ts, row in zip(range(count), itertools.cycle(rows))])
            writer.finish()
            tables.append(_tables(path)["events"])
    assert tables[:3] == tables[3:] and [len(table) for table in tables[:3]] == [3, 64, 129]
    # A row that is neither tuple nor list: its values are made anew, alive only while it is read.
    made = []
    for bulk in (None, trace_writer.BULK_INSERT):
        monkeypatch.setattr(trace_writer, "BULK_INSERT", bulk)
        writer = TraceWriter(tmp_path / f"made-{bulk is not None}.trace")
        writer.add_events([MadeRow(ts) for ts in range(130)])  # type: ignore[misc]  # under test
        made.append(_tables(writer.finish())["events"])
    assert made[0] == made[1] and [row[2] for row in made[1]] == [f"read{ts}" for ts in range(130)]
    largest = max(SCAP_DIR.glob("*.scap"), key=lambda path: path.stat().st_size)
    imported = []
    for bulk in (None, trace_writer.BULK_INSERT):
        monkeypatch.setattr(trace_writer, "BULK_INSERT", bulk)
        imported.append(
            _imported(largest, tmp_path / f"import-{bulk is not None}.trace", fold=sysdig_import.COMPILED_FOLD)
        )
    assert imported[0] == imported[1]
    writer = TraceWriter(tmp_path / "bad.trace")
    with pytest.raises(TypeError):
        writer.add_events([(1, 2, "read", 3, 1, 0, 1, 1, object(), None)])  # type: ignore[list-item]  # under test
    writer.discard()
