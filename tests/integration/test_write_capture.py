"""The write path of the bcc capture, against a program's own accounting: bytes its write syscalls
wrote, pages it dirtied through them and through a shared mapping, bytes the kernel wrote back to the
device for its file (its syncs: nothing else writes the file), and its sync calls, each file's and
each thread's. Real BPF on this machine's root file system (ext4), and on /dev/shm (tmpfs: no
writeback the capture can see)."""

import os
import subprocess
import sys
from pathlib import Path

import pytest
from cassandra.concurrent import execute_concurrent_with_args

from casstrace.analyses.write_io import OFF_EXT4, WRITE_MEASURES, write_io
from casstrace.traces import Trace, TraceWriter, queries
from casstrace.traces.schema import PAGE_BYTES, THREAD_SLOT_NS
from casstrace.traces.thread_roles import ALL_POOLS, Role, role_of

pytestmark = pytest.mark.integration

if os.geteuid() != 0:
    pytest.skip("BPF capture needs root", allow_module_level=True)

from casstrace.probes.bcc.bcc_capture import BccCapture  # noqa: E402

WRITES, WRITE_BYTES = 40, 3 * PAGE_BYTES  # each write dirties 3 fresh pages
MAPPED_PAGES = 64  # stores into a shared mapping, past the written part
SYNC_FILE_RANGE_WRITE = 2  # <linux/fs.h> SYNC_FILE_RANGE_WRITE
SHM_WRITES = 5  # pages written to a tmpfs file and fsynced
# The program: N writes, fsync, stores into a shared mapping of the same file, msync, one more write
# into a page the mapping dirtied (cleaned by the msync: dirtied again), fdatasync, and one write
# pushed out by sync_file_range(WAIT_BEFORE | WRITE | WAIT_AFTER); then pages written to a second file,
# on tmpfs, and fsynced. Each step's accounting is below.
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
shm = os.open(sys.argv[2], os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o644)
for _ in range({SHM_WRITES}):
    os.write(shm, b"s" * {PAGE_BYTES})
os.fsync(shm)
print(dirtied() - before, flush=True)
sys.stdin.readline()
"""


@pytest.fixture(scope="module")
def written(tmp_path_factory):
    directory = tmp_path_factory.mktemp("writes")
    path = directory / "written.bin"
    shm_path = Path(f"/dev/shm/casstrace-write-capture-{os.getpid()}.bin")
    child = subprocess.Popen(
        [sys.executable, "-c", WRITER, str(path), str(shm_path)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        with BccCapture(child.pid, thread_slot_ns=THREAD_SLOT_NS) as capture:
            child.stdin.write("\n")
            child.stdin.flush()
            dirtied_bytes = int(child.stdout.readline())
    finally:
        child.communicate("\n", timeout=30)
        shm_path.unlink(missing_ok=True)
    writer = TraceWriter(directory / "written.trace")
    capture.stop().write(writer)
    with Trace(writer.finish()) as trace:
        yield trace, str(path), child.pid, dirtied_bytes, str(shm_path)


def test_write_bytes_dirtied_and_written_back_pages_equal_the_programs(written):
    trace, path, _, dirtied_bytes, _ = written
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
    assert written_back >= WRITES * WRITE_BYTES + MAPPED_PAGES * PAGE_BYTES  # the whole file was synced
    assert trace.meta["measures"]["dirtied"] and trace.meta["measures"]["written_back"]
    assert trace.meta["aggregate_overflows"] == 0


def test_sync_calls_each_in_the_spectrogram_of_its_file(written):
    trace, path, _, _, _ = written
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
    trace, path, pid, dirtied_bytes, _ = written
    rows = trace.rows(
        "SELECT tid, sum(write_calls), sum(write_bytes), sum(mapped_dirtied_pages)"
        " FROM thread_io JOIN files USING (file_id) WHERE path = ? GROUP BY tid",
        (path,),
    )
    assert [tuple(row) for row in rows] == [(pid, WRITES + 2, WRITES * WRITE_BYTES + 10, MAPPED_PAGES)]
    ((tid, dirtied),) = trace.rows("SELECT tid, sum(dirtied_pages) FROM thread_io GROUP BY tid")
    assert (tid, dirtied * PAGE_BYTES) == (pid, dirtied_bytes)


def test_written_back_off_ext4_is_not_measured_never_0(written):
    """tmpfs has no writeback ext4's tracepoint could report: the file's bytes written back are NULL in
    the trace and None (with why) in the analysis, beside the ext4 file's, measured in the same capture."""
    trace, path, _, _, shm_path = written
    ((calls, size, written_back, syncs),) = trace.rows(
        "SELECT sum(write_calls), sum(write_bytes), sum(written_back_bytes), sum(sync_calls)"
        " FROM file_io JOIN files USING (file_id) WHERE path = ?",
        (shm_path,),
    )
    assert (calls, size, written_back, syncs) == (SHM_WRITES, SHM_WRITES * PAGE_BYTES, None, 1)
    files = write_io(trace, queries.window_ids(trace))
    by_path = {f.path: f for f in files.files}
    assert by_path[shm_path].written_back_bytes is None and by_path[shm_path].written_bytes == SHM_WRITES * PAGE_BYTES
    assert (by_path[path].written_back_bytes or 0) > 0
    assert files.unmeasured == {WRITE_MEASURES["written_back"]: OFF_EXT4}


# -- on the node ------------------------------------------------------------------------------------
KEYSPACE, TABLE = "casstrace_write_io", "writes"
SHARED_POOL_ROLES = {pool.role for pool in ALL_POOLS if pool.shared}
ROWS, VALUE_BYTES = 2000, 1024


def _segment_end(path: Path) -> int:
    """Where a commit-log segment's appended data ends: its last non-zero byte (a segment is a fresh
    file, zero past what was appended). Positions only: the bytes themselves are not kept."""
    with open(path, "rb") as segment:
        data = segment.read()
    return len(data.rstrip(b"\0"))


def _segment_ends(directory: Path) -> dict[str, int]:
    return {str(path): _segment_end(path) for path in sorted(directory.glob("CommitLog-*.log"))}


def _component_sizes(table_dir: Path) -> dict[str, int]:
    return {str(path): path.stat().st_size for path in table_dir.iterdir() if path.is_file()}


@pytest.fixture(scope="module")
def node_writes(sandbox, cql_session, tmp_path_factory):
    """One capture of the node's JVM, a window each: writes and their flush (twice), then a major
    compaction. With the SSTables' sizes on disk after each step and the commit log's ends."""
    cql_session.execute(
        f"CREATE KEYSPACE IF NOT EXISTS {KEYSPACE}"
        " WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}"
    )
    cql_session.execute(f"DROP TABLE IF EXISTS {KEYSPACE}.{TABLE}")
    cql_session.execute(
        f"CREATE TABLE {KEYSPACE}.{TABLE} (id int PRIMARY KEY, value blob)"
        " WITH compaction = {'class': 'SizeTieredCompactionStrategy', 'enabled': 'false'}"
    )
    insert = cql_session.prepare(f"INSERT INTO {KEYSPACE}.{TABLE} (id, value) VALUES (?, ?)")
    commitlog = Path(sandbox.data_dir) / "commitlog"
    (table_id,) = cql_session.execute(
        "SELECT id FROM system_schema.tables WHERE keyspace_name = %s AND table_name = %s", (KEYSPACE, TABLE)
    ).one()
    table_dir = Path(sandbox.layout.data) / KEYSPACE / f"{TABLE}-{table_id.hex}"
    steps: dict[str, dict] = {}
    try:
        with BccCapture(sandbox.pid(), thread_slot_ns=THREAD_SLOT_NS) as capture:
            for flush in (1, 2):
                before = set(_component_sizes(table_dir))
                ends = _segment_ends(commitlog)  # the window's bounds (the node may have other writers)
                capture.begin_window(f"flush {flush}")
                execute_concurrent_with_args(
                    cql_session, insert, [(flush * ROWS + n, os.urandom(VALUE_BYTES)) for n in range(ROWS)]
                )
                sandbox.nodetool("flush", KEYSPACE, TABLE)
                sizes = _component_sizes(table_dir)
                # by segment still there at the end (a segment the flush let go is gone, with its count)
                appended = {path: end - ends.get(path, 0) for path, end in _segment_ends(commitlog).items()}
                steps[f"flush {flush}"] = {
                    "appended": appended,
                    "new": {p: s for p, s in sizes.items() if p not in before},
                }
            capture.begin_window("compaction")
            inputs = _component_sizes(table_dir)
            sandbox.nodetool("compact", KEYSPACE, TABLE)
            sizes = _component_sizes(table_dir)
            steps["compaction"] = {"inputs": inputs, "new": {p: s for p, s in sizes.items() if p not in inputs}}
            capture.begin_window("after")
        writer = TraceWriter(tmp_path_factory.mktemp("node") / "node.trace")
        capture.stop().write(writer)
        with Trace(writer.finish()) as trace:
            yield trace, steps
    finally:
        cql_session.execute(f"DROP KEYSPACE IF EXISTS {KEYSPACE}")
        sandbox.nodetool("clearsnapshot", "--all", "--", KEYSPACE)  # the drop's own snapshot


def _by_path(trace: Trace, label: str, column: str) -> dict[str, int]:
    return dict(
        tuple(row)
        for row in trace.rows(
            f"SELECT f.path, sum(io.{column}) FROM file_io io JOIN files f USING (file_id)"
            " JOIN windows w USING (window_id) WHERE w.label = ? GROUP BY f.path",
            (label,),
        )
    )


def test_a_flush_writes_each_new_sstable_component_whole(node_writes):
    trace, steps = node_writes
    for flush in ("flush 1", "flush 2"):
        new = steps[flush]["new"]
        assert any(path.endswith("-Data.db") for path in new)
        written = _by_path(trace, flush, "write_bytes")
        assert {path: written.get(path) for path in new} == new


def test_a_compaction_reads_its_inputs_whole_and_writes_its_output(node_writes):
    trace, steps = node_writes
    inputs = {path: size for path, size in steps["compaction"]["inputs"].items() if path.endswith("-Data.db")}
    assert len(inputs) == 2
    read = _by_path(trace, "compaction", "read_bytes")
    assert {path: read.get(path) for path in inputs} == inputs
    written = _by_path(trace, "compaction", "write_bytes")
    new = steps["compaction"]["new"]
    assert any(path.endswith("-Data.db") for path in new)
    assert {path: written.get(path) for path in new} == new


def test_the_commit_log_appended_is_its_mapped_dirtied_pages(node_writes):
    trace, steps = node_writes
    for flush in ("flush 1", "flush 2"):
        appended = steps[flush]["appended"]
        assert sum(appended.values()) > ROWS * VALUE_BYTES
        dirtied = _by_path(trace, flush, "mapped_dirtied_pages")
        segments = sum(dirtied.get(path) or 0 for path in appended) * PAGE_BYTES
        assert abs(segments - sum(appended.values())) <= 0.05 * sum(appended.values()), (segments, appended)


def test_the_threads_that_write_have_their_roles(node_writes):
    """Who writes what on 5.0: the flush writers the new Data.db files, the compaction executor its
    output, the request threads the mapped commit log, its syncer its msyncs (traces/thread_roles.py)."""
    trace, steps = node_writes
    rows = trace.rows(
        "SELECT t.name, f.path, sum(io.write_bytes), sum(io.mapped_dirtied_pages) FROM thread_io io"
        " JOIN files f USING (file_id) JOIN threads t USING (tid) GROUP BY t.name, f.path"
    )
    roles: dict[str, set[Role]] = {}
    appended: dict[bool, int] = {True: 0, False: 0}  # mapped commit-log pages, by a shared-pool worker or not
    for name, path, written, mapped in rows:
        if written or mapped:
            roles.setdefault(path, set()).add(role_of(name, "5.0"))
            if "/commitlog/CommitLog-" in path:
                appended[role_of(name, "5.0") in SHARED_POOL_ROLES] += mapped
    flushed = [path for flush in ("flush 1", "flush 2") for path in steps[flush]["new"]]
    compacted = list(steps["compaction"]["new"])
    assert {role for path in flushed for role in roles[path]} == {Role.MEMTABLE_FLUSH}
    assert {role for path in compacted for role in roles[path]} == {Role.COMPACTION}
    # the mapped commit log: appended by the shared pool's workers serving the writes (a worker is named
    # by the stage it serves last, so by its name alone it may be a reader now); the rest by the syncer's
    # markers and the node's own writes to its system tables (compaction history, ...) in the thread
    # that makes them
    segment_roles = {role for path, found in roles.items() if "/commitlog/CommitLog-" in path for role in found}
    assert Role.LOCAL_WRITE in segment_roles
    assert appended[True] >= 0.9 * (appended[True] + appended[False])
