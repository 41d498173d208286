"""The scap reader on its own (no sysdig, no trace): the shared captures read whole, with the
figures tests/data/README.md states for them (measured with sysdig); the same capture rewritten
exit-only, or read in tiny chunks, gives the same calls; bad files are told apart.
tests/integration/test_sysdig.py checks whole imports against the installed sysdig itself."""

from pathlib import Path

import pytest

from casstrace.probes.sysdig import scap_reader
from casstrace.probes.sysdig.scap_reader import READ, ScapError, ScapReader
from scap_files import exit_only, thread_renamed, with_execve

SCAP_DIR = Path(__file__).resolve().parents[1] / "data" / "scap"
# capture: (Data.db bytes read, preads), as tests/data/README.md states them
DATA_DB = {
    "cassandra5-fullrow-lz4.scap": (62_574_072, 3_803),
    "cassandra5-narrow-fixed.scap": (32_084, 2),
    "cassandra5-select-star-lz4.scap": (190_897_095, 11_600),
}


def calls(path: Path) -> list[tuple]:
    return list(ScapReader(path).calls())


@pytest.mark.parametrize("name", DATA_DB)
def test_the_cassandra_captures_read_as_their_readme_states(name):
    preads = [
        call
        for call in calls(SCAP_DIR / name)
        if call[1] == "pread64" and call[7] is not None and call[7].name.endswith("-Data.db")
    ]
    assert (sum(call[8] for call in preads), len(preads)) == DATA_DB[name]
    assert all(call[4] is not None and call[10] is not None and call[5].pid == 24004 for call in preads)


def test_a_gzipped_capture_of_old_v1_blocks():
    """curl_google.scap: gzipped, v1 event blocks (no parameter count), process list v5, fd list
    v1; curl maps its libraries after reading each one's 832-byte ELF header."""
    libraries = {
        call[7].name: call[8]
        for call in calls(SCAP_DIR / "curl_google.scap")
        if call[0] == READ and call[7] is not None and ".so" in call[7].name
    }
    assert len(libraries) > 20 and set(libraries.values()) == {832}


def test_exit_only_gives_the_same_calls_without_their_enter_times(tmp_path):
    source = SCAP_DIR / "cassandra5-fullrow-lz4.scap"
    exit_only(source, tmp_path / "exit-only.scap")
    paired, alone = calls(source), calls(tmp_path / "exit-only.scap")

    def what(call: tuple) -> tuple:
        return call[:4] + (call[5].tid, call[6], call[7].name if call[7] else None) + call[8:]

    assert [what(call) for call in alone] == [what(call) for call in paired]
    assert all(call[4] is None for call in alone) and all(call[4] is not None for call in paired)


def test_blocks_cut_by_the_chunks_read_whole(monkeypatch):
    whole = [call[:5] + call[6:7] + call[8:] for call in calls(SCAP_DIR / "cassandra5-narrow-fixed.scap")]
    monkeypatch.setattr(scap_reader, "CHUNK_BYTES", 999)
    cut = [call[:5] + call[6:7] + call[8:] for call in calls(SCAP_DIR / "cassandra5-narrow-fixed.scap")]
    assert cut == whole and len(whole) == 11


def test_not_a_capture_and_a_cut_capture_are_told_apart(tmp_path):
    (tmp_path / "notes.scap").write_text("not a capture\n")
    with pytest.raises(ScapError) as error:
        calls(tmp_path / "notes.scap")
    assert not error.value.truncated and "not a sysdig capture" in str(error.value)
    (tmp_path / "cut.scap").write_bytes((SCAP_DIR / "cassandra5-narrow-fixed.scap").read_bytes()[:100_001])
    with pytest.raises(ScapError) as error:
        calls(tmp_path / "cut.scap")
    assert error.value.truncated


def test_a_thread_the_capture_never_introduced(tmp_path):
    """Its calls are its own process's, unless the capture is known to hold one process only (a
    live capture's filter), whose they then are."""
    source = SCAP_DIR / "cassandra5-narrow-fixed.scap"
    preads = {call[5].tid for call in calls(source) if call[1] == "pread64"}
    (tid,) = preads
    thread_renamed(source, tmp_path / "renamed.scap", tid, 999_999)
    alone = [call for call in calls(tmp_path / "renamed.scap") if call[1] == "pread64"]
    assert {(call[5].tid, call[5].pid) for call in alone} == {(999_999, 999_999)}
    filtered = [call for call in ScapReader(tmp_path / "renamed.scap", 24004).calls() if call[1] == "pread64"]
    assert {(call[5].tid, call[5].pid, call[5].exe) for call in filtered} == {(999_999, 24004, calls(source)[0][5].exe)}
    assert sum(call[8] for call in filtered) == DATA_DB["cassandra5-narrow-fixed.scap"][0]


def _read_by(scan, path: Path, pid: int | None = None) -> tuple:
    """Everything a reader hands on, with `scan` as its loop: the calls (threads and fds by their
    fields), the event count and the thread and fd tables it ends with."""
    saved = scap_reader.COMPILED_SCAN
    scap_reader.COMPILED_SCAN = scan
    try:
        reader = ScapReader(path, pid)
        read = list(reader.calls())
    finally:
        scap_reader.COMPILED_SCAN = saved

    def thread(value: scap_reader.Thread) -> tuple:
        return (value.tid, value.pid, value.comm, value.exe, value.exepath, value.cwd)

    def fd(value: scap_reader.Fd | None) -> tuple | None:
        return (
            None if value is None else (value.kind, value.name, value.type_name, value.proto, value.local, value.remote)
        )

    return (
        [call[:5] + (thread(call[5]), call[6], fd(call[7])) + tuple(call[8:]) for call in read],
        reader.events,
        reader.skipped_state_only,
        {tid: thread(each) for tid, each in reader.threads.items()},
        {pid: {number: fd(each) for number, each in table.items()} for pid, table in reader.fds.items()},
    )


@pytest.mark.parametrize("name", sorted(path.name for path in SCAP_DIR.glob("*.scap")))
def test_the_compiled_loop_reads_what_the_python_loop_reads(name, tmp_path, monkeypatch):
    """probes/sysdig/scap_scan.c (built by scripts/install) against ScapReader._scan, the fallback without
    a compiler: every capture whole, exit-only, cut into small chunks, and with a thread it never
    introduced (those two made of the v2 blocks of the captures not gzipped)."""
    compiled = scap_reader.COMPILED_SCAN
    if compiled is None:  # a tree installed before it existed, or no compiler (scripts/install says so)
        pytest.skip("probes/sysdig/scap_scan.c is not built: run scripts/install (needs gcc and python3-dev)")
    source = SCAP_DIR / name
    variants: list[tuple[Path, int | None]] = [(source, None)]
    paired = _read_by(None, source)
    if not source.read_bytes().startswith(b"\x1f\x8b"):
        exit_only(source, tmp_path / "exit-only.scap")
        variants.append((tmp_path / "exit-only.scap", None))
        tid = paired[0][-1][5][0]
        thread_renamed(source, tmp_path / "renamed.scap", tid, 999_999)
        variants += [(tmp_path / "renamed.scap", None), (tmp_path / "renamed.scap", paired[0][-1][5][1])]
    for path, pid in variants:
        assert _read_by(compiled, path, pid) == _read_by(None, path, pid), path.name
    monkeypatch.setattr(scap_reader, "CHUNK_BYTES", 999)
    assert _read_by(compiled, source) == _read_by(None, source) == paired


def test_ipv6_addresses_are_written_as_inet_ntop_writes_them():
    """scap_reader writes them itself (importing socket costs more than reading a capture's
    IPv6 sockets); IPv4-mapped ones as plain IPv4, as before."""
    import random
    import socket

    def inet_ntop(raw: bytes) -> str:
        address = socket.inet_ntop(socket.AF_INET6, raw)
        return address[7:] if address.startswith("::ffff:") and "." in address else address

    rng = random.Random(15)
    cases = [
        bytes(16),
        bytes(15) + b"\1",
        bytes(10) + b"\xff\xff\x0a\0\0\1",
        bytes(12) + b"\x0a\0\0\1",
        bytes.fromhex("20010db8000000000000000000000001"),
        bytes.fromhex("20010db8000100000001000000000001"),
    ]
    cases += [
        b"".join(rng.choice((0, 0, 0, 0xFFFF, rng.randrange(1 << 16))).to_bytes(2, "big") for _ in range(8))
        for _ in range(20_000)
    ]
    assert [scap_reader._ipv6(raw) for raw in cases] == [inet_ntop(raw) for raw in cases]


@pytest.mark.parametrize("loop", ["compiled", "python"])
def test_calls_before_an_execve_are_handed_on_before_it_renames_their_thread(loop, tmp_path, monkeypatch):
    """Calls go to the fold a list at a time, and an execve renames its thread in place: a list
    ends before an execve, so that the calls before it are folded with the thread as it was."""
    if loop == "python":
        monkeypatch.setattr(scap_reader, "COMPILED_SCAN", None)
    elif scap_reader.COMPILED_SCAN is None:
        pytest.skip("probes/sysdig/scap_scan.c is not built: run scripts/install (needs gcc and python3-dev)")
    source = SCAP_DIR / "cassandra5-narrow-fixed.scap"
    (tid,) = {call[5].tid for call in calls(source) if call[1] == "pread64"}
    before = [call for call in calls(source) if call[5].tid == tid]
    exec_ts = before[0][3]  # right after the thread's first call returned
    with_execve(source, tmp_path / "exec.scap", tid, exec_ts, b"/usr/bin/other", b"other")
    handed_on = []
    for batch in ScapReader(tmp_path / "exec.scap").batches():
        handed_on += [(call[3], call[5].comm, call[5].exe) for call in batch if call[5].tid == tid]
    assert [comm for ts, comm, _ in handed_on if ts <= exec_ts] == [before[0][5].comm]
    assert {(comm, exe) for ts, comm, exe in handed_on if ts > exec_ts} == {("other", "/usr/bin/other")}
    assert len(handed_on) == len(before)
