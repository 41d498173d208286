"""The write path of the bcc capture, against a program's own accounting: bytes its write syscalls
wrote, pages it dirtied through them and through a shared mapping, bytes the kernel wrote back to the
device for its file (its syncs: nothing else writes the file), and its sync calls, each file's and
each thread's. Real BPF on this machine's root file system (ext4)."""

import os
import subprocess
import sys

import pytest

from casstrace.traces import Trace, TraceWriter
from casstrace.traces.schema import PAGE_BYTES, THREAD_SLOT_NS

pytestmark = pytest.mark.integration

if os.geteuid() != 0:
    pytest.skip("BPF capture needs root", allow_module_level=True)

from casstrace.probes.bcc.bcc_capture import BccCapture  # noqa: E402

WRITES, WRITE_BYTES = 40, 3 * PAGE_BYTES  # each write dirties 3 fresh pages
MAPPED_PAGES = 64  # stores into a shared mapping, past the written part
SYNC_FILE_RANGE_WRITE = 2  # <linux/fs.h> SYNC_FILE_RANGE_WRITE
# The program: N writes, fsync, stores into a shared mapping of the same file, msync, one more write
# into a page the mapping dirtied (cleaned by the msync: dirtied again), fdatasync, and one write
# pushed out by sync_file_range(WAIT_BEFORE | WRITE | WAIT_AFTER). Each step's accounting is below.
WRITER = f"""
import ctypes, mmap, os, sys
def dirtied():  # the kernel's own count of the bytes this process dirtied (task_io_account_write)
    with open("/proc/self/io") as io:
        return next(int(line.split()[1]) for line in io if line.startswith("write_bytes:"))
fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o644)
sys.stdin.readline()
before = dirtied()
for _ in range({WRITES}):
    os.write(fd, b"w" * {WRITE_BYTES})
os.fsync(fd)
written = {WRITES * WRITE_BYTES}
os.ftruncate(fd, written + {MAPPED_PAGES * PAGE_BYTES})
mapping = mmap.mmap(fd, written + {MAPPED_PAGES * PAGE_BYTES})
for page in range({MAPPED_PAGES}):
    mapping[written + page * {PAGE_BYTES}] = 1
mapping.flush()
os.pwrite(fd, b"again", written)
os.fdatasync(fd)
os.pwrite(fd, b"range", 0)
libc = ctypes.CDLL(None, use_errno=True)
assert libc.sync_file_range(fd, ctypes.c_int64(0), ctypes.c_int64(0), 7) == 0
print(dirtied() - before, flush=True)
sys.stdin.readline()
"""


@pytest.fixture(scope="module")
def written(tmp_path_factory):
    directory = tmp_path_factory.mktemp("writes")
    path = directory / "written.bin"
    child = subprocess.Popen(
        [sys.executable, "-c", WRITER, str(path)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    try:
        with BccCapture(child.pid, thread_slot_ns=THREAD_SLOT_NS) as capture:
            child.stdin.write("\n")
            child.stdin.flush()
            dirtied_bytes = int(child.stdout.readline())
    finally:
        child.communicate("\n", timeout=30)
    writer = TraceWriter(directory / "written.trace")
    capture.stop().write(writer)
    with Trace(writer.finish()) as trace:
        yield trace, str(path), child.pid, dirtied_bytes


def test_write_bytes_dirtied_and_written_back_pages_equal_the_programs(written):
    trace, path, _, dirtied_bytes = written
    (row,) = trace.rows(
        "SELECT sum(write_calls), sum(write_bytes), sum(dirtied_pages), sum(mapped_dirtied_pages),"
        " sum(written_back_bytes) FROM file_io JOIN files USING (file_id) WHERE path = ?",
        (path,),
    )
    calls, size, dirtied, mapped, written_back = tuple(row)
    assert calls == WRITES + 2 and size == WRITES * WRITE_BYTES + 10
    # the kernel dirties whole folios (the file's may be larger than a page: page 0's, dirtied again by
    # the last write, was two here): its own count of the bytes the process dirtied, in every file
    # (Python dirtied one page of another), is the truth
    ((everywhere,),) = trace.rows("SELECT sum(dirtied_pages) FROM file_io")
    assert everywhere * PAGE_BYTES == dirtied_bytes
    # the written pages, the mapping's, the one dirtied again after the msync, page 0's folio again
    assert WRITES * 3 + MAPPED_PAGES + 2 <= dirtied <= WRITES * 3 + MAPPED_PAGES + 1 + 4
    assert mapped == MAPPED_PAGES
    assert written_back == dirtied * PAGE_BYTES  # each sync wrote exactly what was dirty
    assert trace.meta["measures"]["dirtied"] and trace.meta["measures"]["written_back"]
    assert trace.meta["aggregate_overflows"] == 0


def test_sync_calls_each_in_the_spectrogram_of_its_file(written):
    trace, path, _, _ = written
    by_call = dict(
        tuple(row)
        for row in trace.rows(
            "SELECT syscall, sum(count) FROM sync_latency JOIN files USING (file_id) WHERE path = ? GROUP BY syscall",
            (path,),
        )
    )
    assert by_call == {"fsync": 1, "msync": 1, "fdatasync": 1, "sync_file_range": 1}  # msync: the mapping's file
    ((calls, ns),) = trace.rows(
        "SELECT sum(sync_calls), sum(sync_ns) FROM file_io JOIN files USING (file_id) WHERE path = ?", (path,)
    )
    assert calls == 4 and ns > 0


def test_each_thread_has_its_writes_and_dirtied_pages(written):
    trace, path, pid, dirtied_bytes = written
    rows = trace.rows(
        "SELECT tid, sum(write_calls), sum(write_bytes), sum(mapped_dirtied_pages)"
        " FROM thread_io JOIN files USING (file_id) WHERE path = ? GROUP BY tid",
        (path,),
    )
    assert [tuple(row) for row in rows] == [(pid, WRITES + 2, WRITES * WRITE_BYTES + 10, MAPPED_PAGES)]
    ((tid, dirtied),) = trace.rows("SELECT tid, sum(dirtied_pages) FROM thread_io GROUP BY tid")
    assert (tid, dirtied * PAGE_BYTES) == (pid, dirtied_bytes)
