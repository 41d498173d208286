"""The mapped-pages measure and page-out (probes/proc/mapped_pages.py) against a process that touches
known pages of a mapped file (tests/helpers/mapper.py), and the kernel's page-cache residency of the
file as mincore(2) shows it to this test process."""

import ctypes
import json
import mmap
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from casstrace.analyses import amplification
from casstrace.interrupts import INTERRUPTS
from casstrace.probes.proc import mapped_pages
from casstrace.probes.proc.mapped_pages import MappedPages, MappedPagesCapture
from casstrace.traces import Trace, TraceWriter
from casstrace.traces.schema import HUGE_PAGE_BYTES

pytestmark = pytest.mark.integration  # root: clear_refs of another process, process_madvise

if os.geteuid() != 0:
    pytest.skip("clear_refs and process_madvise of another process need root", allow_module_level=True)

HELPER = Path(__file__).resolve().parents[1] / "helpers" / "mapper.py"
PAGE = mmap.PAGESIZE
FILE_PAGES = 2048  # 8 MiB
TOUCHED = (0, 1, 2, 100, 101, 513, 1024, 2047)  # pages spread over the file


class Mapper:
    def __init__(self, path: Path, small: bool = True):
        self.process = subprocess.Popen(
            [sys.executable, str(HELPER)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
        )
        self.mapped = self.ask(f"map {path}" + (" small" if small else ""))

    @property
    def pid(self) -> int:
        return self.process.pid

    def ask(self, command: str) -> dict:
        assert self.process.stdin and self.process.stdout
        self.process.stdin.write(command + "\n")
        self.process.stdin.flush()
        return json.loads(self.process.stdout.readline())

    def close(self) -> None:
        self.ask("exit")
        self.process.wait(timeout=10)


def resident_pages(path: Path) -> int:
    """Pages of the file in the page cache, by mincore(2) on a mapping of this test process (mapped
    with libc, whose address Python's mmap does not expose; mapping without touching brings no page in)."""
    libc = ctypes.CDLL(None, use_errno=True)
    size = path.stat().st_size
    libc.mmap.restype = ctypes.c_void_p
    libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_long]
    libc.munmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
    libc.mincore.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_void_p]
    fd = os.open(path, os.O_RDONLY)
    try:
        address = libc.mmap(None, size, mmap.PROT_READ, mmap.MAP_SHARED, fd, 0)
        assert address not in (None, ctypes.c_void_p(-1).value)
        pages = (size + PAGE - 1) // PAGE
        vector = (ctypes.c_ubyte * pages)()
        assert libc.mincore(address, size, vector) == 0, os.strerror(ctypes.get_errno())
        libc.munmap(address, size)
        return sum(byte & 1 for byte in vector)
    finally:
        os.close(fd)


def smaps_lines_of(pid: int, path: Path) -> dict[str, int]:
    """Size/Rss/Referenced (kB) of the process's mappings of `path`, read from smaps with nothing
    of casstrace's parser."""
    totals = {"Size:": 0, "Rss:": 0, "Referenced:": 0}
    inside = False
    for line in Path(f"/proc/{pid}/smaps").read_text().splitlines():
        first = line.split()[0]
        if not first.endswith(":"):
            inside = line.endswith(str(path))
        elif inside and first in totals:
            totals[first] += int(line.split()[1])
    return totals


@pytest.fixture
def mapped_file(tmp_path) -> Path:
    """The file written a page at a time, so that the page cache holds it in 4 KiB folios: smaps counts
    a page mapped by a 4 KiB entry as referenced when its entry or its folio says so, so one access in
    a large folio counts the whole folio once anything has moved the entry's accessed bit into the
    folio (this machine's DAMON, sampling physical memory, does so within a second; the measure itself
    reads smaps within milliseconds of the execution, the test's reads after it)."""
    path = tmp_path / "mapped.bin"
    with path.open("wb") as out:
        for _ in range(FILE_PAGES):
            out.write(os.urandom(PAGE))
    os.sync()
    return path


@pytest.fixture
def file_in_large_folios(tmp_path) -> Path:
    """The file written in one go: the page cache holds it in large folios."""
    path = tmp_path / "mapped-large.bin"
    path.write_bytes(os.urandom(FILE_PAGES * PAGE))
    os.sync()
    return path


@pytest.fixture
def warm_mapper(mapped_file):
    """The file mapped page by page (4 KiB entries), every page touched once."""
    mapper = Mapper(mapped_file)
    mapper.ask("prefault")
    yield mapper
    mapper.close()


def test_touched_pages_are_measured_exactly_on_a_warm_mapping(warm_mapper, mapped_file):
    key = (mapped_file.stat().st_dev, mapped_file.stat().st_ino)
    measure = MappedPages(warm_mapper.pid)

    measure.begin()
    idle = measure.end()
    assert idle is not None and idle[key].referenced_bytes == 0
    assert idle[key].mapped_bytes == FILE_PAGES * PAGE
    assert idle[key].resident_bytes == FILE_PAGES * PAGE
    assert idle[key].path == str(mapped_file)

    measure.begin()
    answer = warm_mapper.ask("touch " + " ".join(map(str, TOUCHED)))
    touched = measure.end()
    assert touched is not None
    assert touched[key].referenced_bytes == answer["touched_bytes"] == len(TOUCHED) * PAGE
    assert touched[key].huge_bytes == 0
    assert smaps_lines_of(warm_mapper.pid, mapped_file)["Referenced:"] * 1024 == len(TOUCHED) * PAGE


def test_two_mib_mappings_are_recorded_and_bound_what_was_touched(file_in_large_folios):
    """Written in one go, the file sits in large folios, which the kernel maps with 2 MiB entries
    where it may (here: unless the mapping says MADV_NOHUGEPAGE): one access marks 2 MiB."""
    mapper = Mapper(file_in_large_folios, small=False)
    try:
        mapper.ask("prefault")
        key = (file_in_large_folios.stat().st_dev, file_in_large_folios.stat().st_ino)
        measure = MappedPages(mapper.pid)
        measure.begin()
        answer = mapper.ask("touch " + " ".join(map(str, TOUCHED)))
        touched = measure.end()
    finally:
        mapper.close()
    assert touched is not None
    f = touched[key]
    if not f.huge_bytes:
        pytest.skip("this kernel or filesystem mapped the file page by page: no 2 MiB entry to test")
    # the truth lies between the least the accessed bits allow and what they mark
    least = amplification.least_touched(f.referenced_bytes, f.huge_bytes)
    assert least <= answer["touched_bytes"] <= f.referenced_bytes
    assert f.referenced_bytes % HUGE_PAGE_BYTES == 0 or f.huge_bytes < f.mapped_bytes


def test_parse_smaps_agrees_with_a_plain_reading(warm_mapper, mapped_file):
    warm_mapper.ask("touch 5 6 7")
    key = (mapped_file.stat().st_dev, mapped_file.stat().st_ino)
    plain = smaps_lines_of(warm_mapper.pid, mapped_file)
    directory = (os.path.join(os.path.realpath(mapped_file.parent), ""),)
    for parsed in (
        mapped_pages.read_smaps(warm_mapper.pid)[key],
        mapped_pages.read_smaps(warm_mapper.pid, directory)[key],
    ):
        assert (parsed.mapped_bytes, parsed.resident_bytes, parsed.referenced_bytes) == (
            plain["Size:"] * 1024,
            plain["Rss:"] * 1024,
            plain["Referenced:"] * 1024,
        )
    assert set(mapped_pages.read_smaps(warm_mapper.pid, directory)) == {key}  # only the files under it


def test_a_process_mapping_nothing_under_the_directories_is_measured_without_clear_or_smaps(
    mapped_file, tmp_path, monkeypatch
):
    """A node reading by pread (disk_access_mode standard) maps no data file: each window measures
    nothing touched, exactly, from /proc/PID/maps, without the clear and the smaps read (150 ms a
    window on an 8 GiB heap). A file mapped during a window was mapped in it: its pages touched are
    counted as a clear would have let them be; from then on every window is cleared and read."""
    data = tmp_path / "data"
    data.mkdir()
    late = data / "late.bin"
    late.write_bytes(os.urandom(64 * PAGE))
    calls: list[str] = []
    for name in ("read_smaps", "clear_referenced"):
        real = getattr(mapped_pages, name)
        monkeypatch.setattr(mapped_pages, name, lambda *args, real=real, name=name: calls.append(name) or real(*args))  # type: ignore[func-returns-value]
    mapper = Mapper(mapped_file)  # a file outside data/
    try:
        measure = MappedPages(mapper.pid, (os.path.join(os.path.realpath(data), ""),))
        measure.begin()
        mapper.ask("touch 1 2 3")
        assert measure.end() == {} and calls == [] and measure.available

        measure.begin()
        mapper.ask(f"map {late} small")
        mapper.ask("touch 0 5 9")
        touched = measure.end()
        assert calls == ["read_smaps"]
        key = (late.stat().st_dev, late.stat().st_ino)
        assert touched is not None and set(touched) == {key}
        # the pages touched, and the cached neighbours a fault maps with them: what a cleared window
        # counts too. Fault-around maps the 64 KiB-aligned 16 pages around each, but a fault on a page
        # of a large folio maps the whole folio (6.x kernels), and the write that made the file may
        # have left it as one 256 KiB folio: 1 in 3 runs here. At most the file, never less than the three.
        assert 3 * PAGE <= touched[key].referenced_bytes <= late.stat().st_size

        measure.begin()
        answer = mapper.ask("touch 1 2")  # mapped in the last window: no fault maps neighbours now
        ended = measure.end()
        assert ended is not None and ended[key].referenced_bytes == answer["touched_bytes"]
        assert calls == ["read_smaps", "clear_referenced", "read_smaps"]
    finally:
        mapper.close()


def test_refused_clear_makes_the_measure_unavailable_for_the_rest_of_the_capture(warm_mapper, monkeypatch):
    measure = MappedPages(warm_mapper.pid)
    measure.begin()
    assert measure.end() is not None

    def refuse(pid: int) -> None:
        raise mapped_pages.MappedPagesUnavailable(f"/proc/{pid}/clear_refs refused the clear (test)", "fix it")

    monkeypatch.setattr(mapped_pages, "clear_referenced", refuse)
    measure.begin()
    assert measure.end() is None
    assert not measure.available and "clear_refs" in str(measure.unavailable)
    monkeypatch.undo()
    measure.begin()
    assert measure.end() is None  # never measured again: the totals would mix measured and not


def test_page_out_pushes_the_mapped_pages_out_of_the_process_and_the_page_cache(warm_mapper, mapped_file):
    assert resident_pages(mapped_file) == FILE_PAGES
    key = (mapped_file.stat().st_dev, mapped_file.stat().st_ino)
    mappings = mapped_pages.file_mappings(warm_mapper.pid, {key})
    assert sum(m.size for m in mappings) == FILE_PAGES * PAGE

    advised = mapped_pages.page_out(warm_mapper.pid, mappings)

    assert advised == FILE_PAGES * PAGE
    assert smaps_lines_of(warm_mapper.pid, mapped_file)["Rss:"] == 0
    assert resident_pages(mapped_file) == 0
    # and the process reads them back on demand: nothing to restore
    warm_mapper.ask("touch 1 2 3")
    assert smaps_lines_of(warm_mapper.pid, mapped_file)["Rss:"] > 0


def test_page_out_of_a_gone_process_says_why():
    process = subprocess.Popen([sys.executable, "-c", "pass"])
    process.wait()
    with pytest.raises(mapped_pages.PageOutUnavailable, match="cannot open pid"):
        mapped_pages.page_out(process.pid, [mapped_pages.Mapping(0x1000, 0x2000, 0, 0, 1, "/x", "r--s")])


def test_an_eviction_is_never_left_half_done_by_ctrl_c(monkeypatch):
    """page_out's calls run under casstrace.interrupts' deferral: a Ctrl-C meanwhile is raised after them."""
    done = []

    def advise(*args: object) -> int:
        os.kill(os.getpid(), signal.SIGINT)
        done.append("the call returned")
        return 0x1000

    monkeypatch.setattr(
        mapped_pages.ctypes, "CDLL", lambda *a, **k: type("Libc", (), {"syscall": staticmethod(advise)})
    )
    try:
        with pytest.raises(KeyboardInterrupt):
            mapped_pages.page_out(os.getpid(), [mapped_pages.Mapping(0x1000, 0x2000, 0, 0, 1, "/x", "r--s")])
    finally:
        INTERRUPTS.uninstall()
    assert done == ["the call returned"]


def test_a_process_whose_maps_cannot_be_read_is_not_said_to_map_nothing(tmp_path):
    """Neither measured nor listed: an analysis must not take "no mappings" for "nothing mapped"."""
    process = subprocess.Popen([sys.executable, "-c", "pass"])
    process.wait()
    capture = MappedPagesCapture(process.pid)
    capture.before_window()
    capture.after_window(1)
    writer = TraceWriter(tmp_path / "gone.trace")
    writer.add_window("execution", 0, 1, execution=1)
    capture.write(writer)
    with Trace(writer.finish()) as trace:
        assert trace.meta["measures"] == {"mapped": False, "mappings": False}
        assert "clear_refs refused" in trace.meta["mapped_unmeasured"]["reason"]
        assert trace.rows("SELECT COUNT(*) FROM mappings")[0][0] == 0
