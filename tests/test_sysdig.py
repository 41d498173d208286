"""The sysdig backend against sysdig itself: real captures (tests/data/scap, provenance in tests/data/README.md) read by the installed sysdig.

The independent truth is sysdig's own accounting: its topfiles_bytes / fdbytes_by chisels and its
evt.latency field, run on the same files, plus the figures the captures' README states.
"""

import json
import os
import struct
import subprocess
import sys
from pathlib import Path

import pytest

from casstrace.analyses import analyse
from casstrace.errors import CasstraceError
from casstrace.probes.sysdig_capture import SysdigCapture, write_capture
from casstrace.probes.sysdig_import import ScapImporter, SysdigVersion, Window, find_sysdig, import_scap
from casstrace.traces import Trace, TraceWriter

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[1]
SCAP_DIR = REPO / "tests" / "data" / "scap"
CAPTURES = sorted(SCAP_DIR.glob("*.scap"))
CASSANDRA = {
    # capture: (Data.db bytes read, preads, bytes the JVM wrote to the CQL connection)
    "cassandra5-fullrow-lz4.scap": (62_574_072, 3_803, 20_861),
    "cassandra5-narrow-fixed.scap": (32_084, 2, 20_867),
    "cassandra5-select-star-lz4.scap": (190_897_095, 11_600, 190_053_904),
}
CASSTRACE = str(Path(sys.executable).parent / "casstrace")

def imported(scap: Path, out: Path, **options) -> Trace:
    writer = TraceWriter(out)
    import_scap(scap, writer, **options)
    writer.finish()
    return Trace(out)


@pytest.fixture(scope="module")
def traces(tmp_path_factory) -> dict[str, Trace]:
    directory = tmp_path_factory.mktemp("imports")
    return {scap.name: imported(scap, directory / f"{scap.stem}.trace") for scap in CAPTURES}


def sysdig_table(scap: Path, chisel: list[str], condition: str) -> dict[str, int]:
    """A table chisel's JSON output, key -> bytes."""
    out = subprocess.run(["sysdig", "-r", str(scap), "-j", "-c", *chisel, condition],
                         capture_output=True, text=True, check=True).stdout
    return {key: value for key, value in json.loads(out)["data"]}


def per_path(trace: Trace, column: str) -> dict[str, int]:
    return {row["path"]: row["total"] for row in trace.rows(
        f"SELECT f.path, SUM(io.{column}) AS total FROM file_io io JOIN files f USING (file_id)"
        " WHERE f.kind = 'file' GROUP BY f.path")}


@pytest.mark.parametrize("scap", CAPTURES, ids=lambda path: path.name)
def test_per_file_bytes_agree_with_sysdig_topfiles_bytes(scap, traces):
    trace = traces[scap.name]
    pid = trace.meta["pid"]
    both = sysdig_table(scap, ["topfiles_bytes"], f"proc.pid={pid}")
    reads = sysdig_table(scap, ["topfiles_bytes"], f"proc.pid={pid} and evt.is_io_read=true")
    writes = sysdig_table(scap, ["topfiles_bytes"], f"proc.pid={pid} and evt.is_io_write=true")
    read_bytes, write_bytes = per_path(trace, "read_bytes"), per_path(trace, "write_bytes")
    assert both, "sysdig lists no files"
    for path, total in both.items():
        assert read_bytes[path] + write_bytes[path] == total, path
    # topfiles_bytes lists the top 10 (ties in any order): a file it leaves out read or wrote 0
    # bytes only when the list is shorter than 10.
    for listed, ours in ((reads, read_bytes), (writes, write_bytes)):
        for path in both:
            if path in listed or len(listed) < 10:
                assert ours[path] == listed.get(path, 0), path


@pytest.mark.parametrize("name", CASSANDRA)
def test_cassandra_captures_match_their_readme(name, traces):
    data_bytes, preads, wire_bytes = CASSANDRA[name]
    trace = traces[name]
    assert trace.meta["process"] == "java"
    (data,) = trace.rows("SELECT f.file_id, io.* FROM file_io io JOIN files f USING (file_id)"
                         " WHERE f.path LIKE '%-Data.db'")
    assert (data["read_bytes"], data["read_calls"]) == (data_bytes, preads)
    assert data["cache_miss_pages"] is None and data["cache_miss_bytes"] is None
    counted = trace.rows("SELECT count(*) AS calls, SUM(returned) AS bytes FROM events"
                         " WHERE file_id = ? AND syscall = 'pread64'", (data["file_id"],))[0]
    assert (counted["bytes"], counted["calls"]) == (data_bytes, preads)
    # Every pread has its offset: the pages they touched cover the bytes read (chunks do not overlap).
    (pages,) = trace.rows("SELECT SUM(page_count) AS pages FROM coverage WHERE file_id = ? AND source = 'syscall'",
                          (data["file_id"],))
    assert pages["pages"] * 4096 >= data_bytes
    (client,) = trace.rows("SELECT f.local_addr, f.remote_addr, io.write_bytes FROM file_io io"
                           " JOIN files f USING (file_id) WHERE f.kind = 'socket' AND f.local_addr LIKE '%:9042'")
    assert client["write_bytes"] == wire_bytes
    assert sysdig_table(SCAP_DIR / name, ["fdbytes_by", "fd.name"],
                        "fd.sport=9042 and evt.is_io_write=true") == {
        f"{client['remote_addr']}->{client['local_addr']}": wire_bytes}


@pytest.mark.parametrize("name", CASSANDRA)
def test_latency_comes_from_enter_exit_pairs_as_sysdig_computes_it(name, traces):
    trace = traces[name]
    assert trace.measured("latency") and not trace.measured("page_cache")
    out = subprocess.run(["sysdig", "-r", str(SCAP_DIR / name), "-p", "%evt.latency",
                          "proc.pid=24004 and evt.dir=< and evt.type=pread"],
                         capture_output=True, text=True, check=True).stdout
    (row,) = trace.rows("SELECT SUM(read_ns) AS read_ns FROM file_io io JOIN files f USING (file_id)"
                        " WHERE f.path LIKE '%-Data.db'")
    assert row["read_ns"] == sum(int(value) for value in out.split())
    (spectrogram,) = trace.rows("SELECT SUM(count) AS calls FROM latency WHERE syscall = 'pread64'")
    assert spectrogram["calls"] == CASSANDRA[name][1]


def test_meta_of_an_import(traces):
    trace = traces["cassandra5-fullrow-lz4.scap"]
    meta = trace.meta
    assert meta["backend"] == "sysdig" and meta["source"] == "import of cassandra5-fullrow-lz4.scap"
    assert (meta["pid"], meta["clock_offset_ns"], meta["slot_ns"], meta["heatmap_offset_bytes"]) == (
        24004, 0, 100_000_000, 1 << 20)
    assert meta["lost_events"] == 0 and any("drops" in note for note in meta["notes"])
    (window,) = trace.rows("SELECT * FROM windows")
    assert (window["label"], window["start_ns"], window["end_ns"]) == (
        "capture", meta["capture_start_ns"], meta["capture_end_ns"])
    assert {row["name"] for row in trace.rows("SELECT name FROM threads")} >= {"Native-Transpor", "C1"}


def test_choosing_the_process(tmp_path):
    scap = SCAP_DIR / "curl_google.scap"
    by_default = imported(scap, tmp_path / "default.trace")
    assert by_default.meta["process"] == "curl" and "most file I/O" in " ".join(by_default.meta["notes"])
    by_name = imported(scap, tmp_path / "name.trace", proc="curl")
    by_pid = imported(scap, tmp_path / "pid.trace", pid=by_default.meta["pid"])
    assert by_name.meta["pid"] == by_pid.meta["pid"] == by_default.meta["pid"]


def test_windows_of_a_live_capture_split_the_totals_as_sysdig_does(tmp_path):
    """SysdigCapture.write's path (write_capture) on a real capture, windows on its timestamps."""
    scap = SCAP_DIR / "cassandra5-fullrow-lz4.scap"
    start, end = 1795348297834000000, 1795348299401000000
    cuts = [start, 1795348299064000000, 1795348299100000000, end]
    windows = [Window("between", None, cuts[0], cuts[1]), Window("execution", 1, cuts[1], cuts[2]),
               Window("between", None, cuts[2], cuts[3])]
    writer = TraceWriter(tmp_path / "live.trace")
    write_capture(scap, writer, 24004, windows)
    writer.finish()
    trace = Trace(tmp_path / "live.trace")
    assert [(w["window_id"], w["label"], w["execution"]) for w in trace.rows("SELECT * FROM windows")] == [
        (1, "between", None), (2, "execution", 1), (3, "between", None)]
    assert trace.meta["source"] == "pid 24004" and trace.meta["capture_start_ns"] == start
    for window_id, (low, high) in enumerate(zip(cuts, cuts[1:]), start=1):
        expected = sysdig_table(scap, ["topfiles_bytes"], f"evt.rawtime >= {low} and evt.rawtime < {high}")
        got = {row["path"]: row["read_bytes"] for row in trace.rows(
            "SELECT f.path, io.read_bytes FROM file_io io JOIN files f USING (file_id)"
            " WHERE f.kind = 'file' AND io.window_id = ? AND io.read_bytes > 0", (window_id,))}
        assert got == expected


def test_offsets_of_plain_reads_follow_opens_and_lseeks(tmp_path):
    """Exit-only lines as a sysdig on falcosecurity libs >= 0.23 prints them (arguments on the exit
    event): read offsets from the fd's position, no latency, requested bytes from the exit."""
    lines = [
        # dir ts pid tid type fd typechar is_server l4proto res size pos offset whence exe thread fdname
        "<\t1000\t7\t7\topenat\t3\tf\tfalse\t<NA>\t<NA>\t<NA>\t<NA>\t<NA>\t<NA>\tdb\tdb\t/d/f",
        "<\t2000\t7\t7\tread\t3\tf\tfalse\t<NA>\t4096\t4096\t<NA>\t<NA>\t<NA>\tdb\tdb\t/d/f",
        "<\t3000\t7\t7\tlseek\t3\tf\tfalse\t<NA>\t65536\t<NA>\t<NA>\t65536\tSEEK_SET\tdb\tdb\t/d/f",
        "<\t4000\t7\t8\tread\t3\tf\tfalse\t<NA>\t100\t8192\t<NA>\t<NA>\t<NA>\tdb\tw 1\t/d/f",
        "<\t5000\t7\t8\tpread\t3\tf\tfalse\t<NA>\t10\t10\t4096\t<NA>\t<NA>\tdb\tw 1\t/d/f",
    ]
    importer = ScapImporter(None, tmp_path)
    for line in lines:
        importer.feed(line + "\n")
    writer = TraceWriter(tmp_path / "synthetic.trace")
    process, _ = importer.choose(None, None)
    importer.write(writer, process, {"source": "lines"})
    importer.close()
    writer.finish()
    trace = Trace(tmp_path / "synthetic.trace")
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


def test_records_spilled_to_disk_reach_the_trace_in_order(tmp_path, monkeypatch, traces):
    """A capture longer than the spool's memory: its per-call records go through the spool's database
    and come out as the in-memory import has them."""
    monkeypatch.setattr("casstrace.probes.sysdig_import._EventSpool.MEMORY_ROWS", 500)
    spilled = imported(SCAP_DIR / "cassandra5-fullrow-lz4.scap", tmp_path / "spilled.trace")
    query = "SELECT * FROM events ORDER BY rowid"
    assert len(spilled.rows(query)) > 3 * 500
    assert [tuple(row) for row in spilled.rows(query)] == [
        tuple(row) for row in traces["cassandra5-fullrow-lz4.scap"].rows(query)]


def test_sysdig_version_is_asked_once_per_binary(tmp_path, monkeypatch):
    """`sysdig --version` costs a sysdig start-up: it is remembered per binary and asked again only of
    a different or upgraded binary."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    fake_sysdig(tmp_path, "exit 1")
    fake = tmp_path / "bin" / "sysdig"
    first = SysdigVersion(str(fake))
    assert first.process is not None and str(first) == "0.1.0"
    again = SysdigVersion(str(fake))
    assert again.process is None and str(again) == "0.1.0"
    fake.write_text(fake.read_text().replace("0.1.0", "0.2.10"))
    upgraded = SysdigVersion(str(fake))
    assert upgraded.process is not None and str(upgraded) == "0.2.10"
    real = find_sysdig()
    said = subprocess.run([real, "--version"], capture_output=True, text=True, check=True).stdout.split()[-1]
    assert str(SysdigVersion(real)) == said
    remembered = SysdigVersion(real)
    assert remembered.process is None and str(remembered) == said


# -- bad input: one line, non-zero exit, no trace -----------------------------------------------------
def run_import(tmp_path, *args, env=None):
    out = tmp_path / "out.trace"
    result = subprocess.run([CASSTRACE, "import", *map(str, args), "--out", str(out)],
                            capture_output=True, text=True, env=env, timeout=120)
    assert result.returncode != 0
    assert result.stderr.startswith("casstrace: error: ") and len(result.stderr.strip().splitlines()) == 1
    assert list(tmp_path.glob("*.trace")) == [] and list(tmp_path.glob(".*partial")) == []
    return result.stderr


def test_not_a_scap_file(tmp_path):
    (tmp_path / "notes.scap").write_text("not a capture\n")
    assert "is not a sysdig capture" in run_import(tmp_path, tmp_path / "notes.scap")


def test_truncated_capture(tmp_path):
    cut = tmp_path / "cut.scap"
    cut.write_bytes((SCAP_DIR / "cassandra5-fullrow-lz4.scap").read_bytes()[:300_000])
    assert "is truncated" in run_import(tmp_path, cut)


def test_sysdig_missing(tmp_path):
    env = dict(os.environ, PATH=str(tmp_path / "empty"))
    assert "sysdig is not installed" in run_import(tmp_path, SCAP_DIR / "curl_google.scap", env=env)


def test_no_events_of_the_chosen_process(tmp_path):
    assert "of pid 1" in run_import(tmp_path, SCAP_DIR / "curl_google.scap", "--pid", "1")
    assert "named 'java'" in run_import(tmp_path, SCAP_DIR / "curl_google.scap", "--proc", "java")


def test_sysdig_too_old_for_exit_only_events(tmp_path):
    """The narrow capture with every enter event turned into a type sysdig 0.29 does not know: what a
    capture of falcosecurity libs >= 0.23 (exit events only) looks like to it."""
    source = SCAP_DIR / "cassandra5-narrow-fixed.scap"
    data = bytearray(source.read_bytes())
    enters = subprocess.run(["sysdig", "-r", str(source), "-p", "%evt.rawtime %thread.tid", "evt.dir=>"],
                            capture_output=True, text=True, check=True).stdout.split("\n")
    for line in filter(None, enters):
        header = data.find(struct.pack("<QQ", *map(int, line.split())))   # event header: ts, tid, len, type
        struct.pack_into("<H", data, header + 20, 9999)
    exit_only = tmp_path / "exit-only.scap"
    exit_only.write_bytes(data)
    assert "too old for this capture" in run_import(tmp_path, exit_only)


def fake_sysdig(tmp_path, body: str) -> dict:
    """A PATH whose `sysdig` runs `body` for `-r` (a stand-in for a sysdig that crashes or hangs)."""
    bindir = tmp_path / "bin"
    bindir.mkdir()
    script = bindir / "sysdig"
    script.write_text(f'#!/bin/sh\nif [ "$1" = --version ]; then echo "sysdig version 0.1.0"; exit 0; fi\n{body}\n')
    script.chmod(0o755)
    return dict(os.environ, PATH=f"{bindir}:{os.environ['PATH']}")


def test_sysdig_crashing(tmp_path):
    env = fake_sysdig(tmp_path, 'echo "unknown event" >&2; kill -SEGV $$')
    assert "crashed (SIGSEGV)" in run_import(tmp_path, SCAP_DIR / "curl_google.scap", env=env)


def test_sysdig_hanging_is_stopped(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", fake_sysdig(tmp_path, "exec sleep 600")["PATH"])
    writer = TraceWriter(tmp_path / "hang.trace")
    try:
        with pytest.raises(CasstraceError, match="did not finish reading"):
            import_scap(SCAP_DIR / "curl_google.scap", writer, timeout_s=1)
    finally:
        writer.discard()
    assert not list(tmp_path.glob("*.trace")) and not list(tmp_path.glob(".*partial"))


# -- live capture ---------------------------------------------------------------------------------------
def test_live_capture_without_a_driver_says_what_is_missing(monkeypatch):
    if Path("/dev/scap0").exists() or (Path.home() / ".scap/scap-bpf.o").exists():
        pytest.skip("this machine has a sysdig driver")
    monkeypatch.delenv("SYSDIG_BPF_PROBE", raising=False)
    with pytest.raises(CasstraceError) as error:
        with SysdigCapture(os.getpid()):
            pass
    assert "kernel module" in str(error.value) and "eBPF probe" in str(error.value)


def test_live_capture_whose_driver_fails_is_an_error_not_a_hang(monkeypatch, tmp_path):
    bogus = tmp_path / "probe.o"
    bogus.write_bytes(b"not an eBPF object")
    monkeypatch.setenv("SYSDIG_BPF_PROBE", str(bogus))
    with pytest.raises(CasstraceError, match="before capturing"):
        with SysdigCapture(os.getpid()):
            pass


def test_imported_cassandra_captures_get_the_live_verdicts(traces):
    analyses = pytest.importorskip("casstrace.analyses")
    verdicts = {name: analyses.analyse(traces[name]).verdict.status for name in CASSANDRA}
    assert verdicts == {"cassandra5-fullrow-lz4.scap": "flagged", "cassandra5-narrow-fixed.scap": "not flagged",
                        "cassandra5-select-star-lz4.scap": "not flagged"}


@pytest.mark.parametrize("capture, status, low, high", [
    ("cassandra5-fullrow-lz4.scap", "flagged", 2_900, 3_100),       # 62,574,072 B read for ~20.9 KB sent
    ("cassandra5-narrow-fixed.scap", "not flagged", 1.4, 1.7),       # 32,084 B read
    ("cassandra5-select-star-lz4.scap", "not flagged", 0.99, 1.02),  # 190,897,095 B read, ~190 MB sent
])
def test_real_sysdig_captures(tmp_path, capture, status, low, high):
    writer = TraceWriter(tmp_path / "capture.trace")
    import_scap(SCAP_DIR / capture, writer)
    analysis = analyse(writer.finish())
    assert analysis.verdict.status == status
    assert low <= analysis.overall.read <= high
    assert analysis.overall.basis == "wire"
    data = [f for f in analysis.files if f.component == "Data"]
    assert len(data) == 1 and data[0].read_bytes == {"cassandra5-fullrow-lz4.scap": 62_574_072,
                                                     "cassandra5-narrow-fixed.scap": 32_084,
                                                     "cassandra5-select-star-lz4.scap": 190_897_095}[capture]
