"""The bcc probes, on this kernel, against independent truth: a helper program's own accounting of
every read it made (tests/helpers/reader.py) and the kernel's /proc/PID/io counters.

One capture of the helper serves most tests: it runs phases (syscall reads, fd reuse, mmap reads,
a TCP exchange) in windows of their own, and the trace is written and read back through the real
trace file format.
"""

import itertools
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections import Counter
from pathlib import Path

import pytest

from bpf_programs import program_exists, program_ids, wait_until_attached
from casstrace.errors import CasstraceError
from casstrace.traces import Trace, TraceWriter
from casstrace.traces.schema import latency_bucket
from casstrace_cli import CASSTRACE

# Each capture here closes beside held tracepoints (conftest's quick_detaches): what these tests check
# of a detach, every program freed by the kernel's word, is unchanged.
pytestmark = pytest.mark.integration

if os.geteuid() != 0:
    pytest.skip("BPF capture needs root", allow_module_level=True)

from casstrace.probes.backends import DEFAULT_STREAM_LIMIT  # noqa: E402
from casstrace.probes.bcc import bcc_capture  # noqa: E402
from casstrace.probes.bcc.bcc_capture import BccCapture  # noqa: E402

HELPER = Path(__file__).resolve().parents[1] / "helpers" / "reader.py"
PHASES = ("syscalls", "reuse", "mmap", "connect")


class Helper:
    def __init__(self):
        self.process = subprocess.Popen(
            [sys.executable, str(HELPER)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
        )

    def ask(self, command: str) -> dict:
        self.process.stdin.write(command + "\n")
        self.process.stdin.flush()
        return json.loads(self.process.stdout.readline())

    def close(self):
        self.process.stdin.write("exit\n")
        self.process.stdin.close()
        self.process.wait(timeout=10)


def serve_once(listener: socket.socket, reply: int) -> None:
    connection, _ = listener.accept()
    with connection:
        received = 0
        while received < 3000:
            received += len(connection.recv(3000 - received))
        connection.sendall(b"r" * reply)
        connection.recv(1)  # until the helper closes


@pytest.fixture(scope="module")
def captured(tmp_path_factory):
    """(trace, answers by phase, window id by phase, setup answer)."""
    directory = tmp_path_factory.mktemp("probes")
    helper = Helper()
    setup = helper.ask(f"setup {directory}")
    listener = socket.create_server(("127.0.0.1", 0))
    port = listener.getsockname()[1]
    server = threading.Thread(target=serve_once, args=(listener, 1234))
    server.start()
    answers, windows = {}, {}
    with BccCapture(helper.process.pid) as capture:
        for execution, phase in enumerate(PHASES, start=1):
            windows[phase] = capture.begin_window("execution", execution=execution)
            if phase == "syscalls":  # another process reading the same file: must not be counted
                subprocess.run(["dd", f"if={setup['a']}", "of=/dev/null", "bs=4096", "status=none"], check=True)
            answers[phase] = helper.ask(f"connect {port}" if phase == "connect" else phase)
            capture.begin_window("between")
    helper.close()
    server.join(timeout=10)
    listener.close()
    writer = TraceWriter(directory / "helper.trace")
    capture.stop().write(writer)
    trace = Trace(writer.finish())
    yield trace, answers, windows, setup
    trace.close()


def file_id(trace: Trace, path: str) -> int:
    (row,) = trace.rows("SELECT file_id FROM files WHERE path = ?", (path,))
    return row["file_id"]


def file_io(trace: Trace, window: int, path: str):
    (row,) = trace.rows("SELECT * FROM file_io WHERE window_id = ? AND file_id = ?", (window, file_id(trace, path)))
    return row


def reads_of(answer: dict, path: str) -> list:
    return [read for read in answer["reads"] if read[1] == path]


def pages_of(reads) -> set[int]:
    return {
        page
        for _s, _p, _fd, offset, _req, returned, _tid in reads
        if returned > 0
        for page in range(offset // 4096, (offset + returned - 1) // 4096 + 1)
    }


def covered(trace: Trace, window: int, path: str, source: str) -> set[int]:
    rows = trace.rows(
        "SELECT first_page, page_count FROM coverage WHERE window_id = ? AND file_id = ? AND source = ?",
        (window, file_id(trace, path), source),
    )
    return {page for row in rows for page in range(row["first_page"], row["first_page"] + row["page_count"])}


# -- syscall reads: exact per call -------------------------------------------------------------
def test_every_read_and_lseek_recorded_exactly(captured):
    trace, answers, windows, setup = captured
    rows = trace.rows(
        "SELECT syscall, fd, offset, requested, returned, tid FROM events WHERE file_id = ? AND ts_ns >= "
        "(SELECT start_ns FROM windows WHERE window_id = ?)"
        " AND ts_ns < (SELECT end_ns FROM windows WHERE window_id = ?)"
        " ORDER BY ts_ns",
        (file_id(trace, setup["a"]), windows["syscalls"], windows["syscalls"]),
    )
    reads = [tuple(row) for row in rows if row["syscall"] != "lseek"]
    lseeks = [
        (row["fd"], row["offset"], row["requested"], row["returned"]) for row in rows if row["syscall"] == "lseek"
    ]
    expected = [
        (s, fd, offset, requested, returned, tid)
        for s, _path, fd, offset, requested, returned, tid in answers["syscalls"]["reads"]
    ]
    assert sorted(reads) == sorted(expected)
    assert lseeks == [(fd, offset, whence, result) for _p, fd, offset, whence, result in answers["syscalls"]["lseeks"]]


def test_per_file_totals_equal_the_programs_accounting(captured):
    trace, answers, windows, setup = captured
    reads = reads_of(answers["syscalls"], setup["a"])
    row = file_io(trace, windows["syscalls"], setup["a"])
    assert row["read_calls"] == len(reads)
    assert row["read_bytes"] == sum(read[5] for read in reads)
    assert row["read_requested_bytes"] == sum(read[4] for read in reads)
    assert row["lseek_calls"] == len(answers["syscalls"]["lseeks"])
    sizes = trace.rows(
        "SELECT log2_bucket, count FROM read_sizes WHERE window_id = ? AND file_id = ?",
        (windows["syscalls"], file_id(trace, setup["a"])),
    )
    expected = Counter(read[5].bit_length() - 1 for read in reads)  # -1 for 0 bytes
    assert {r["log2_bucket"]: r["count"] for r in sizes} == dict(expected)


def test_syscall_read_bytes_equal_the_kernels_rchar(captured):
    """Over the window, file reads the probes saw == what /proc/PID/io counted (rchar), plus the
    closing /proc/self/io read that rchar cannot include yet."""
    trace, answers, windows, _setup = captured
    for phase in ("syscalls", "reuse", "mmap"):
        answer = answers[phase]
        (total,) = trace.rows(
            "SELECT sum(read_bytes) FROM file_io JOIN files USING (file_id) WHERE window_id = ? AND kind = 'file'",
            (windows[phase],),
        )
        rchar = answer["io_after"]["rchar"] - answer["io_before"]["rchar"]
        assert total[0] == rchar + answer["io_after"]["length"], phase


def test_syscall_coverage_is_the_pages_read(captured):
    trace, answers, windows, setup = captured
    reads = reads_of(answers["syscalls"], setup["a"])
    assert covered(trace, windows["syscalls"], setup["a"], "syscall") == pages_of(reads)


def test_page_cache_misses_match_the_kernels_read_bytes(captured):
    """a.bin was dropped from the cache first: every page the reads returned had to be inserted,
    and the pages inserted are what the kernel counted as read from storage (read_bytes)."""
    trace, answers, windows, setup = captured
    answer = answers["syscalls"]
    row = file_io(trace, windows["syscalls"], setup["a"])
    assert row["cache_miss_bytes"] == answer["io_after"]["read_bytes"] - answer["io_before"]["read_bytes"]
    assert row["cache_miss_bytes"] == row["cache_miss_pages"] * 4096
    inserted = covered(trace, windows["syscalls"], setup["a"], "page_cache")
    assert pages_of(reads_of(answer, setup["a"])) <= inserted  # plus readahead
    assert len(inserted) == row["cache_miss_pages"]


def test_mmap_reads_seen_through_the_page_cache(captured):
    trace, answers, windows, setup = captured
    answer = answers["mmap"]
    row = file_io(trace, windows["mmap"], setup["b"])
    assert row["read_calls"] == 0
    assert covered(trace, windows["mmap"], setup["b"], "page_cache") == set(answer["pages"])
    assert row["cache_miss_bytes"] == len(answer["pages"]) * 4096
    assert row["cache_miss_bytes"] == answer["io_after"]["read_bytes"] - answer["io_before"]["read_bytes"]


def test_fd_reuse_attributed_to_the_right_file(captured):
    trace, answers, windows, setup = captured
    answer = answers["reuse"]
    assert answer["fd_a"] == answer["fd_b"]
    a, b = file_io(trace, windows["reuse"], setup["a"]), file_io(trace, windows["reuse"], setup["b"])
    assert (a["read_calls"], a["read_bytes"]) == (1, 3333)
    assert (b["read_calls"], b["read_bytes"], b["read_requested_bytes"]) == (1, 7777, 7777)
    assert a["file_id"] != b["file_id"]


def test_all_threads_captured_and_named(captured):
    trace, answers, _windows, setup = captured
    tids = {read[6] for read in answers["syscalls"]["reads"]}
    assert len(tids) == 2
    seen = {
        row["tid"]
        for row in trace.rows("SELECT DISTINCT tid FROM events WHERE file_id = ?", (file_id(trace, setup["a"]),))
    }
    assert tids <= seen
    named = {row["tid"] for row in trace.rows("SELECT tid FROM threads")}
    assert tids <= named


RENAMES_TAKEN_WITHIN_S = 5.0  # 500 notices, by a poller sharing 2 loaded cores
# prctl(PR_SET_NAME), as the JVM names its own thread: writing /proc/self/task/TID/comm would add an
# open, a notice of its own that wakes the poller, and 1,000 notices overflow the ring when it lags.
RENAMING_THREAD = r"""
import ctypes, sys, threading
PR_SET_NAME = 15
libc = ctypes.CDLL(None, use_errno=True)
def work():
    tid = threading.get_native_id()
    print(tid, flush=True)
    sys.stdin.readline()
    for number in range(int(sys.argv[1])):
        name = f"worker-{number % 7}" if number < int(sys.argv[1]) - 1 else "final-name"
        if libc.prctl(PR_SET_NAME, name.encode(), 0, 0, 0) != 0:
            raise OSError(ctypes.get_errno(), "prctl")
    print("renamed", flush=True)
    sys.stdin.readline()
threading.Thread(target=work).start()
"""


def test_a_thread_renamed_again_and_again_is_named_by_its_last_name_while_capturing():
    """Renames wake no poller (capture.c notify): the poller still takes each at a later poll, so a
    thread's name during the capture is the one it gave itself last, as /proc says, none lost. On a
    loaded machine the poller may still be working through the 500 when the thread is done: the test
    waits for it, within the capture."""
    renames = 500  # a shared-pool worker's second's worth at ~250 requests/s; the ring holds ~840
    child = subprocess.Popen(
        [sys.executable, "-c", RENAMING_THREAD, str(renames)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    assert child.stdin is not None and child.stdout is not None
    try:
        tid = int(child.stdout.readline())
        with BccCapture(child.pid) as capture:
            child.stdin.write("rename\n")
            child.stdin.flush()
            assert child.stdout.readline().strip() == "renamed"
            truth = Path(f"/proc/{child.pid}/task/{tid}/comm").read_text().strip()
            deadline = time.monotonic() + RENAMES_TAKEN_WITHIN_S
            while (named := capture.thread_names.get(tid)) != truth and time.monotonic() < deadline:
                time.sleep(0.05)
        result = capture.stop()
        assert result is not None
        assert result.counters["notices_lost"] == 0
        assert truth == "final-name" and named == truth
    finally:
        child.kill()
        child.wait()


def test_client_connection_identified_with_bytes_at_the_wire(captured):
    trace, answers, windows, _setup = captured
    answer = answers["connect"]
    (socket_file,) = trace.rows("SELECT * FROM files WHERE kind = 'socket' AND local_addr = ?", (answer["local"],))
    assert socket_file["remote_addr"].startswith("127.0.0.1:")
    assert socket_file["path"] == f"tcp {answer['local']}->{socket_file['remote_addr']}"
    (row,) = trace.rows(
        "SELECT * FROM file_io WHERE window_id = ? AND file_id = ?", (windows["connect"], socket_file["file_id"])
    )
    assert row["write_bytes"] == answer["sent"]
    assert row["read_bytes"] == answer["received"]


def test_windows_consecutive_and_labelled(captured):
    trace, _answers, windows, _setup = captured
    rows = trace.rows("SELECT * FROM windows ORDER BY window_id")
    assert [r["label"] for r in rows] == ["between"] + ["execution", "between"] * len(PHASES)
    assert [r["execution"] for r in rows if r["label"] == "execution"] == [1, 2, 3, 4]
    assert [r["window_id"] for r in rows if r["label"] == "execution"] == list(windows.values())
    for before, after in itertools.pairwise(rows):
        assert before["end_ns"] == after["start_ns"]
    assert rows[0]["start_ns"] == trace.meta["capture_start_ns"]
    assert rows[-1]["end_ns"] == trace.meta["capture_end_ns"]


def test_latency_spectrogram_counts_every_call(captured):
    """Every pread64 on a file is streamed (far below the stream limit) and in the spectrogram."""
    trace, _answers, _windows, _setup = captured
    (streamed,) = trace.rows("SELECT count(*) FROM events WHERE syscall = 'pread64'")
    (binned,) = trace.rows("SELECT sum(count) FROM latency WHERE syscall = 'pread64' AND target = 'file'")
    assert streamed[0] == binned[0] > 0
    assert trace.meta["lost_events"] == trace.meta["unstreamed_events"] == trace.meta["aggregate_overflows"] == 0


# -- calls past the event log: the kernel's aggregates take over, with the same figures ------------
SEQUENCE_READER = r"""
import itertools, os, sys
fd = os.open(sys.argv[1], os.O_RDONLY)
cpus = itertools.cycle(sorted(os.sched_getaffinity(0)))
def hop():   # each call on the next CPU: no figure may depend on where a call ran
    os.sched_setaffinity(0, {next(cpus)})
sys.stdin.readline()
hop(); os.read(fd, 4096); hop(); os.read(fd, 4096); hop(); os.read(fd, 4096)   # 0..12288, one run
hop(); os.lseek(fd, 100000, os.SEEK_SET)
hop(); os.read(fd, 5000)                                    # jump to 100000
hop(); os.pread(fd, 8192, 200000); hop(); os.pread(fd, 8192, 208192)   # jump, then a run of 16384
hop(); os.readv(fd, [bytearray(1000), bytearray(2000)])     # jump back to 105000
hop(); os.pread(fd, 1, 0)                                   # jump, and jump again:
hop(); os.pread(fd, 10, 300000 - 4)                         # 4 bytes before the end
print("done", flush=True)
sys.stdin.readline()
"""


@pytest.mark.parametrize("stream_limit", [1, 4, DEFAULT_STREAM_LIMIT])
def test_aggregates_equal_whether_calls_are_logged_or_not(tmp_path, stream_limit):
    """Logged calls are aggregated from the event log, the others in the kernel: with none, some
    or all of a known sequence of reads in the log, every figure is the same, and exact."""
    path = tmp_path / "sequence.bin"
    path.write_bytes(os.urandom(300000))
    child = subprocess.Popen(
        [sys.executable, "-c", SEQUENCE_READER, str(path)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    with BccCapture(child.pid, stream_limit=stream_limit) as capture:
        window = capture.begin_window("execution", execution=1)
        child.stdin.write("go\n")
        child.stdin.flush()
        assert child.stdout.readline() == "done\n"
        capture.begin_window("between")
    child.communicate("exit\n", timeout=10)
    writer = TraceWriter(tmp_path / "sequence.trace")
    capture.stop().write(writer)
    with Trace(writer.finish()) as trace:
        row = file_io(trace, window, str(path))
        returned = [4096, 4096, 4096, 5000, 8192, 8192, 3000, 1, 4]
        assert (row["read_calls"], row["read_bytes"], row["read_requested_bytes"], row["lseek_calls"]) == (
            9,
            sum(returned),
            sum(returned) - 4 + 10,
            1,
        )
        assert (row["seek_jumps"], row["longest_sequential_bytes"]) == (5, 16384)
        sizes = trace.rows(
            "SELECT log2_bucket, count FROM read_sizes WHERE window_id = ? AND file_id = ?", (window, row["file_id"])
        )
        assert {r["log2_bucket"]: r["count"] for r in sizes} == dict(Counter(n.bit_length() - 1 for n in returned))
        pages = (
            {0, 1, 2}
            | set(range(100000 // 4096, (105000 + 3000 - 1) // 4096 + 1))
            | set(range(200000 // 4096, (216384 - 1) // 4096 + 1))
            | {(300000 - 1) // 4096}
        )
        assert covered(trace, window, str(path), "syscall") == pages
        (heat,) = trace.rows(
            "SELECT sum(calls), sum(bytes), max(offset_bucket) FROM heatmap WHERE file_id = ? AND source = 'syscall'",
            (row["file_id"],),
        )
        assert tuple(heat) == (9, sum(returned), 0)
        (logged,) = trace.rows("SELECT count(*) FROM events WHERE file_id = ?", (row["file_id"],))
        assert logged[0] == min(
            10,
            max(
                0, stream_limit - trace.rows("SELECT count(*) FROM events WHERE file_id != ?", (row["file_id"],))[0][0]
            ),
        )
        binned = trace.rows(
            "SELECT syscall, sum(count) FROM latency WHERE target = 'file' AND syscall IN"
            " ('read', 'pread64', 'readv', 'lseek') GROUP BY syscall"
        )
        assert dict(map(tuple, binned)) == {"read": 4, "pread64": 4, "readv": 1, "lseek": 1}
        assert trace.meta["aggregate_overflows"] == 0


MIXED_READER = r"""
import itertools, json, os, random, sys, time
fd = os.open(sys.argv[1], os.O_RDONLY)
size = os.fstat(fd).st_size
cpus = itertools.cycle(sorted(os.sched_getaffinity(0)))
rng = random.Random(47)
region = 16 << 20   # a coverage entry of capture.c: a read across its end updates two


def phase(seconds):
    # Reads of every kind the log takes, for long enough to span several 100 ms slots.
    reads = read_bytes = lseeks = 0
    deadline = time.monotonic() + seconds
    for i in itertools.count():
        if i % 64 == 0:   # now and then on the next CPU: no figure may depend on where a call ran
            if time.monotonic() > deadline:
                break
            os.sched_setaffinity(0, {next(cpus)})
        kind = rng.randrange(7)
        if kind == 2:
            os.lseek(fd, rng.randrange(size), os.SEEK_SET)
            lseeks += 1
            continue
        if kind == 0:
            got = len(os.read(fd, rng.choice([1, 4096, 65536])))   # on from the file position: runs
        elif kind == 1:
            got = len(os.pread(fd, rng.choice([512, 4096, 16384, 1 << 20]), rng.randrange(size)))
        elif kind == 3:
            got = os.readv(fd, [bytearray(1000), bytearray(3000)])
        elif kind == 4:
            got = os.preadv(fd, [bytearray(4096), bytearray(4096)], rng.randrange(size))
        elif kind == 5:
            got = len(os.pread(fd, 65536, region - 3 * 4096))
        else:
            got = len(os.pread(fd, 8192, size - rng.choice([0, 100])))   # at or near the end: 0 or 100 bytes
        reads += 1
        read_bytes += got
    return {"reads": reads, "read_bytes": read_bytes, "lseeks": lseeks}


print(json.dumps({"fd": fd}), flush=True)
for line in sys.stdin:
    if line.strip() == "exit":
        break
    print(json.dumps(phase(float(line))), flush=True)
"""


def test_kernel_aggregates_equal_the_logs_call_for_call(tmp_path):
    """One capture adds each read and lseek up both ways (ProgramOptions.logged_calls_in_maps): in the
    kernel's maps, and in userspace from its per-call record (LoggedCalls, which is how a logged call
    reaches a trace). Every aggregate a report reads of those calls is the same, key for key: the
    per-file totals (with their latency and sequential runs), the read sizes, the page coverage, the heat
    map's time slots and offset buckets, and the latency spectrogram's slots and buckets. Thousands of
    mixed calls over two windows, hopping CPUs; both sides are also checked against the reader's own count."""
    from casstrace.probes.bcc.bcc_trace import LoggedCalls
    from casstrace.probes.bcc.program import Source, Target
    from casstrace.probes.bcc.syscalls import NUMBERS, READS

    path = tmp_path / "mixed.bin"
    path.write_bytes(os.urandom((20 << 20) + 100))
    child = subprocess.Popen(
        [sys.executable, "-c", MIXED_READER, str(path)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    fd = json.loads(child.stdout.readline())["fd"]
    truth = {}
    with BccCapture(child.pid, logged_calls_in_maps=True) as capture:
        for execution in (1, 2):
            window = capture.begin_window("execution", execution=execution)
            child.stdin.write("0.35\n")
            child.stdin.flush()
            truth[window] = json.loads(child.stdout.readline())
        capture.begin_window("between")
    child.communicate("exit\n", timeout=10)
    result = capture.stop()
    assert result.unstreamed_events == 0 and result.counters["aggregate_overflow"] == 0
    tables = {name: list(rows) for name, rows in result.tables.items()}
    logged = LoggedCalls(result.event_records(), result.start_ns)
    files = {(window, 0, fd, 0) for window in truth}  # (epoch, owner, fd, gen): open before the capture
    assert set(logged.totals) == files

    # Per-file totals and read sizes.
    kernel = {
        (k.epoch, k.owner, k.fd, k.gen): v for k, v in tables["stats_by_fd"] if (k.epoch, k.owner, k.fd, k.gen) in files
    }
    for key in files:
        stats, sums = kernel[key], logged.totals[key]
        assert {
            "read_calls": stats.read_calls,
            "read_bytes": stats.read_bytes,
            "read_requested_bytes": stats.read_requested,
            "read_ns": stats.read_ns,
            "lseek_calls": stats.lseek_calls,
            "seek_jumps": stats.seek_jumps,
            "longest_sequential_bytes": stats.longest_run,
        } == dict(sums)
        assert (sums["read_calls"], sums["read_bytes"], sums["lseek_calls"]) == tuple(truth[key[0]].values())
        assert sums["read_calls"] > 500 and sums["seek_jumps"] > 100 and sums["longest_sequential_bytes"] > 65536
        sizes = {index - 1: count for index, count in enumerate(stats.read_sizes) if count}
        assert sizes == {bucket: n for (*file, bucket), n in logged.sizes.items() if tuple(file) == key}
        assert -1 in sizes and 20 in sizes  # reads of 0 bytes and of 1 MiB

    # Page coverage, by word of page bits.
    def syscall_file(file) -> bool:
        return file.source == Source.SYSCALL and file.fd_or_dev == fd and file.gen_or_inode == 0

    words: dict = {}
    for k, region in tables["coverage"]:
        if syscall_file(k.file) and k.epoch in truth:
            for index, bits in enumerate(region.words):
                if bits:
                    words.setdefault((k.epoch, 0, fd, 0), {})[k.region * len(region.words) + index] = bits
    assert words == {key: dict(bitmap) for key, bitmap in logged.coverage.items()}
    assert all(len({word // 64 for word in bitmap}) == 2 for bitmap in words.values())  # both 16 MiB regions

    # The heat map: calls and bytes per time slot and offset bucket.
    heat = {
        (0, fd, 0, k.slot, k.row * len(row.cells) + index): [cell.calls, cell.bytes]
        for k, row in tables["heatmap"]
        if syscall_file(k.file)
        for index, cell in enumerate(row.cells)
        if cell.calls
    }
    assert heat == dict(logged.heat)
    assert len({key[3] for key in heat}) >= 6 and len({key[4] for key in heat}) == 21  # slots; 1 MiB buckets

    # The latency spectrogram of the file's reads and lseeks: per time slot, syscall and bucket.
    calls = {NUMBERS[name] for name in READS} | {NUMBERS["lseek"]}
    latency = {
        (k.slot, k.nr, k.target, k.bucket): n
        for k, n in tables["latency_hist"]
        if k.target == Target.FILE and k.nr in calls
    }
    assert latency == dict(logged.latency)
    assert len({bucket for *_, bucket in latency}) >= 5

    # A trace of this capture holds each call once (the log's sums are not added to the maps' again).
    writer = TraceWriter(tmp_path / "mixed.trace")
    result.write(writer)
    with Trace(writer.finish()) as trace:
        for window, counted in truth.items():
            row = file_io(trace, window, str(path))
            assert (row["read_calls"], row["read_bytes"], row["lseek_calls"]) == tuple(counted.values())


def test_maps_are_read_whole_across_batches():
    """Stop reads each map BATCH_ENTRIES at a time: every entry comes back once, with its value,
    whatever the number of batches and however the kernel's buckets fall across them."""
    from bcc import BPF

    entries = 3 * bcc_capture.BATCH_ENTRIES + 17
    bpf = BPF(text=f"BPF_HASH(wide, u32, u64, {entries}); BPF_HASH(empty, u32, u64, 8);".encode())
    try:
        table = bpf[b"wide"]
        keys = (table.Key * entries)(*range(entries))
        values = (table.Leaf * entries)(*(key * 3 + 1 for key in range(entries)))
        table.items_update_batch(keys, values)
        rows = bcc_capture.read_hash(table)
        assert sorted(rows) == [(key, key * 3 + 1) for key in range(entries)]
        assert bcc_capture.read_hash(bpf[b"empty"]) == []
    finally:
        bpf.cleanup()


def test_latency_buckets_are_exact_tenths_of_decades():
    octaves = bcc_capture.latency_octaves()

    def bucket(ns):  # what capture.c computes from the table
        first, limits = octaves[ns.bit_length() - 1]
        return first + sum(ns >= limit for limit in limits)

    for ns in (1, 2, 9, 10, 11, 12, 13, 99, 100, 101, 125, 126, 1000, 1258, 1259, 10**9, 10**10 - 1, 10**10):
        expected = max(b for b in range(120) if ns**10 >= 10**b)
        assert bucket(ns) == expected, ns


def test_logged_latencies_binned_exactly_as_the_kernel_bins():
    """Calls in the event log (and sysdig imports) reach the spectrogram through the format's
    latency_bucket; it must bin exactly as capture.c's octave table does."""
    octaves = bcc_capture.latency_octaves()
    for ns in (0, 1, 2, 9, 10, 11, 12, 13, 99, 100, 101, 125, 126, 1000, 1258, 1259, 10**9, 10**10 - 1, 10**10):
        expected = max(b for b in range(120) if ns**10 >= 10**b) if ns else 0
        assert latency_bucket(ns) == expected, ns
    for k, (first, limits) in enumerate(octaves[:60]):  # the top octaves end at capture.c's 2^64-1 sentinel
        for ns in {
            1 << k,
            *(limit - 1 for limit in limits if limit < 1 << (k + 1)),
            *(limit for limit in limits if limit < 1 << (k + 1)),
            (1 << (k + 1)) - 1,
        }:
            assert latency_bucket(ns) == first + sum(ns >= limit for limit in limits), ns


# -- ending a capture ------------------------------------------------------------------------
def test_interrupt_detaches_every_program_and_keeps_the_capture(tmp_path):
    sleeper = subprocess.Popen(["sleep", "30"])
    capture = BccCapture(sleeper.pid)
    try:
        with pytest.raises(KeyboardInterrupt):
            with capture:
                ids = program_ids()
                assert len(ids) >= 5 and all(program_exists(i) for i in ids)
                raise KeyboardInterrupt
        assert not any(program_exists(i) for i in ids)
        writer = TraceWriter(tmp_path / "interrupted.trace")
        capture.stop().write(writer)
        with Trace(writer.finish(complete=False, reason="interrupted")) as trace:
            assert not trace.complete and trace.meta["incomplete_reason"] == "interrupted"
            assert trace.rows("SELECT count(*) FROM windows")[0][0] == 1
    finally:
        sleeper.kill()
        sleeper.wait()


def compile_thread_ended(timeout: float = 120) -> bool:
    deadline = time.monotonic() + timeout
    while bcc_capture.compile_running():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


def test_a_program_built_ahead_watches_nothing_until_its_capture_starts(tmp_path):
    """ProgramBuild (run's probes compile while it connects): attached idle, the probes count none of
    the reads the helper makes before the capture starts, and every read after, exactly."""
    helper = Helper()
    try:
        setup = helper.ask(f"setup {tmp_path}")
        build = bcc_capture.ProgramBuild()
        assert compile_thread_ended()
        ids = program_ids()
        assert len(ids) >= 5 and all(program_exists(i) for i in ids)  # loaded and attached, idle
        before = helper.ask("syscalls")
        with BccCapture(helper.process.pid, build=build) as capture:
            window = capture.begin_window("execution", execution=1)
            during = helper.ask("syscalls")
            capture.begin_window("between")
        assert not any(program_exists(i) for i in ids)  # the capture took the build's programs, and freed them
    finally:
        helper.close()
    writer = TraceWriter(tmp_path / "ahead.trace")
    capture.stop().write(writer)
    with Trace(writer.finish()) as trace:
        path = setup["a"]
        calls = trace.rows(
            "SELECT count(*) FROM events WHERE file_id = ? AND syscall != 'lseek'", (file_id(trace, path),)
        )[0][0]
        assert calls == len(reads_of(during, path)) and reads_of(before, path)
        assert file_io(trace, window, path)["read_bytes"] == sum(read[5] for read in reads_of(during, path))


def test_a_program_built_ahead_and_never_taken_is_freed():
    """A run that fails before its capture starts (bad input, an unreachable node) leaves nothing
    loaded: closed while compiling, the program is freed once the compile ends; closed after, at once."""
    for close_early in (True, False):
        before = program_ids()
        build = bcc_capture.ProgramBuild()
        if not close_early:
            assert compile_thread_ended()
            assert program_ids() - before
        held = program_ids() - before
        build.close()
        assert compile_thread_ended()
        held |= program_ids() - before
        assert program_ids() == before and not any(program_exists(i) for i in held)
        with pytest.raises(RuntimeError):
            build.take()


def test_a_started_backend_released_with_wait_leaves_nothing_running():
    """A run that captures through agents (several nodes) gives up the program its command started
    building, and waits until none of it runs: nothing of it may compete with the measured executions."""
    from casstrace.probes import backends

    before = program_ids()
    with backends.started("bcc") as started_backend:
        started_backend.release(wait=True)
        assert compile_thread_ended(timeout=0)  # no compile running, at once
        assert program_ids() == before


def test_a_run_that_fails_before_capturing_leaves_no_program_and_does_not_wait_for_the_compile():
    """`casstrace run` starts compiling at its first line; a node that does not answer ends it at
    once, with its one-line error, and nothing loaded stays behind."""
    with socket.socket() as unused:
        unused.bind(("127.0.0.1", 0))
        port = unused.getsockname()[1]  # nothing listens there
    began = time.monotonic()
    command = subprocess.Popen(
        [*CASSTRACE, "run", "SELECT * FROM system.local", "--port", str(port), "--connect-timeout", "2"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    held: set[int] = set()
    while command.poll() is None:
        held |= program_ids(command.pid)
        time.sleep(0.01)
    _, stderr = command.communicate()
    assert command.returncode != 0 and stderr.startswith("casstrace: error: ") and len(stderr.splitlines()) == 1, stderr
    assert time.monotonic() - began < 10
    assert not any(program_exists(i) for i in held)


def test_ctrl_c_on_the_command_writes_an_incomplete_trace(tmp_path):
    sleeper = subprocess.Popen(["sleep", "60"])
    out = tmp_path / "ctrl-c.trace"
    try:
        command = subprocess.Popen(
            [*CASSTRACE, "capture", "--pid", str(sleeper.pid), "--duration", "60", "--out", str(out)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        wait_until_attached(command)
        command.send_signal(signal.SIGINT)
        _stdout, stderr = command.communicate(timeout=30)
        assert command.returncode == 130, stderr
        with Trace(out) as trace:
            assert not trace.complete
            assert "Ctrl-C" in trace.meta["incomplete_reason"]
    finally:
        sleeper.kill()
        sleeper.wait()


def test_process_exit_ends_the_capture_cleanly(tmp_path):
    short = subprocess.Popen(["sleep", "0.5"])
    with BccCapture(short.pid) as capture:
        short.wait()
        deadline = time.monotonic() + 10
        while capture.ended_early is None and time.monotonic() < deadline:
            time.sleep(0.05)
    assert capture.ended_early == f"process {short.pid} exited"
    writer = TraceWriter(tmp_path / "exited.trace")
    capture.stop().write(writer)
    with Trace(writer.finish()) as trace:
        assert trace.meta["ended_early"] == capture.ended_early


def test_capture_command_on_a_command(tmp_path):
    data = tmp_path / "data.bin"
    data.write_bytes(os.urandom(3 << 20))
    out = tmp_path / "dd.trace"
    result = subprocess.run(
        [*CASSTRACE, "capture", "--out", str(out), "--", "dd", f"if={data}", "of=/dev/null", "bs=65536"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    with Trace(out) as trace:
        assert trace.complete and trace.meta["source"].startswith("command dd ")
        (row,) = trace.rows(
            "SELECT sum(read_bytes), sum(read_calls) FROM file_io WHERE file_id = ?", (file_id(trace, str(data)),)
        )
        assert tuple(row) == (3 << 20, 3 * 16 + 1)  # 48 full reads, then end of file
        (written,) = trace.rows(
            "SELECT sum(write_bytes) FROM file_io WHERE file_id = ?", (file_id(trace, "/dev/null"),)
        )
        assert written[0] == 3 << 20


@pytest.mark.parametrize("command, status", [(["sh", "-c", "exit 3"], 3), (["sh", "-c", "kill -KILL $$"], 128 + 9)])
def test_capture_exits_with_the_commands_status(tmp_path, command, status):
    """As time, strace and perf do: a failed command fails the capture, 128 + N for signal N."""
    out = tmp_path / "c.trace"
    done = subprocess.run(
        [*CASSTRACE, "capture", "--out", str(out), "--", *command], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == status, done.stderr
    with Trace(out) as trace:
        assert trace.complete


# Moves with chdir (relative: from where it was), then with fchdir, reading relfile in each place, ROUNDS
# times: one read whose notice is taken after the next move is enough to tell where it was charged.
ROUNDS = 10
MOVES = f"""
import os, sys
a, b = sys.argv[1:3]
directory = os.open(a, os.O_RDONLY | os.O_DIRECTORY)
for _ in range({ROUNDS}):
    os.chdir(a)
    os.chdir("../b")
    open("relfile", "rb").read()
    os.chdir("/")
    os.fchdir(directory)
    open("relfile", "rb").read()
    os.chdir("/")
"""


def test_relative_opens_are_named_where_the_process_was_when_it_opened(tmp_path):
    """`sh -c 'cd A && cat relfile'`, then a process moving by chdir and fchdir: each relfile read is
    charged to the file in the directory the reader was in, with that file's bytes (the reader has
    moved on or exited by the time the open's notice is read: /proc no longer says where it was)."""
    sizes = {"a": 12_345, "b": 5_432}
    for name, size in sizes.items():
        (tmp_path / name).mkdir()
        (tmp_path / name / "relfile").write_bytes(os.urandom(size))
    a, b = (str(tmp_path / name) for name in sizes)
    out = tmp_path / "moves.trace"
    script = 'cd "$1" && cat relfile > /dev/null && cd / && exec "$2" -c "$3" "$1" "$4"'
    done = subprocess.run(
        [*CASSTRACE, "capture", "--out", str(out), "--", "sh", "-c", script, "sh", a, sys.executable, MOVES, b],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    with Trace(out) as trace:
        read = {path: total for path, (_calls, total) in reads_by_path(trace).items() if path.endswith("relfile")}
    assert read == {f"{a}/relfile": (1 + ROUNDS) * sizes["a"], f"{b}/relfile": ROUNDS * sizes["b"]}


def alive(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


# One command that ignores the signal is enough: it waits out FORWARD_GRACE_S.
@pytest.mark.parametrize(
    "signum, trap",
    [(signal.SIGTERM, "heard"), (signal.SIGINT, "heard"), (signal.SIGHUP, "heard"), (signal.SIGTERM, "ignored")],
)
def test_a_signal_to_capture_reaches_the_command_and_leaves_nothing_running(tmp_path, signum, trap):
    """The command gets casstrace's signal (and exits as it chooses); what ignores it, and the
    command's own children, are killed: nothing outlives casstrace."""
    heard, sleeper, out = tmp_path / "heard", tmp_path / "sleeper", tmp_path / "c.trace"
    handler = f"echo $1 > {heard}; exit 7" if trap == "heard" else ""
    script = (
        f'trap "{handler.replace("$1", "TERM")}" TERM; trap "{handler.replace("$1", "INT")}" INT; '
        f'trap "{handler.replace("$1", "HUP")}" HUP; sleep 300 & echo $! > {sleeper}; wait; wait'
    )
    capture = subprocess.Popen(
        [*CASSTRACE, "capture", "--out", str(out), "--", "sh", "-c", script],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 60
    while not (sleeper.exists() and sleeper.read_text().strip()) and time.monotonic() < deadline:
        time.sleep(0.05)
    (sleeper_pid,) = map(int, sleeper.read_text().split())
    started = time.monotonic()
    capture.send_signal(signum)
    _, stderr = capture.communicate(timeout=60)
    assert capture.returncode == 128 + signum, stderr
    if trap == "heard":
        assert heard.read_text().strip() == signal.Signals(signum).name[3:]
    else:
        assert time.monotonic() - started >= 9  # given its FORWARD_GRACE_S before the kill
    assert not alive(sleeper_pid)
    with Trace(out) as trace:
        assert not trace.complete


# -- following a command's descendants ------------------------------------------------------------
FORKER = Path(__file__).resolve().parents[1] / "helpers" / "forker.py"


def forker_files(directory: Path) -> dict[str, str]:
    sizes = {"a.bin": 128 << 10, "b.bin": 64 << 10, "c.bin": 16 << 10}
    for name, size in sizes.items():
        (directory / name).write_bytes(os.urandom(size))
    return {name: str(directory / name) for name in sizes}


def read_by_others(paths, stop: threading.Event) -> None:
    """Another process (not a descendant) reading the same files while the capture runs."""
    while not stop.is_set():
        for path in paths:
            subprocess.run(["dd", f"if={path}", "of=/dev/null", "bs=4096", "status=none"], check=True)


def reads_by_path(trace: Trace) -> dict[str, tuple[int, int]]:
    rows = trace.rows(
        "SELECT path, sum(read_calls), sum(read_bytes) FROM file_io JOIN files USING (file_id)"
        " WHERE kind = 'file' GROUP BY path"
    )
    return {row[0]: (row[1], row[2]) for row in rows}


def check_descendants_captured(trace: Trace, files: dict[str, str], reads: list) -> None:
    """Every read of the forker, its child, grandchild (two threads) and dd, exactly."""
    assert len({read[0] for read in reads}) == 4
    totals = reads_by_path(trace)
    for path in files.values():
        mine = [read for read in reads if read[2] == path]
        assert totals[path] == (len(mine), sum(read[5] for read in mine)), path
    # The grandchild opened b.bin itself: each call logged with its offset, from both its threads.
    b_reads = [(read[1], read[3], read[4], read[5]) for read in reads if read[2] == files["b.bin"]]
    rows = trace.rows(
        "SELECT tid, syscall, offset, returned FROM events WHERE file_id IN"
        " (SELECT file_id FROM files WHERE path = ?) AND syscall != 'lseek'",
        (files["b.bin"],),
    )
    assert sorted(tuple(row) for row in rows) == sorted(b_reads)
    names = {row["tid"]: row["name"] for row in trace.rows("SELECT tid, name FROM threads")}
    (reader_tid,) = {tid for tid, syscall, _o, _r in b_reads if syscall == "pread64"}
    assert names[reader_tid] == "gkid-reader"
    dd_pid = next(read[0] for read in reads if read[2] == files["c.bin"])
    assert names[dd_pid] == "dd"


def test_command_capture_follows_its_descendants(tmp_path):
    """`capture -- COMMAND` counts what the command's children and grandchildren read, exactly as
    they counted it, and nothing another process read from the same files meanwhile."""
    files = forker_files(tmp_path)
    results, out = tmp_path / "reads.jsonl", tmp_path / "forker.trace"
    stop = threading.Event()
    others = threading.Thread(target=read_by_others, args=(list(files.values()), stop))
    others.start()
    try:
        result = subprocess.run(
            [*CASSTRACE, "capture", "--out", str(out), "--", sys.executable, str(FORKER), str(tmp_path), str(results)],
            input="go\nexit\n",
            capture_output=True,
            text=True,
            timeout=120,
        )
    finally:
        stop.set()
        others.join()
    assert result.returncode == 0, result.stderr
    reads = [json.loads(line) for line in results.read_text().splitlines()]
    with Trace(out) as trace:
        assert trace.complete and "ended_early" not in trace.meta
        assert trace.meta["source"].endswith(" and its descendants")
        assert "followed the descendants" in trace.meta["notes"][0]
        check_descendants_captured(trace, files, reads)
        # The child read a.bin through the fd it inherited (counted, named as the parent's) and
        # through its own: only the latter has offsets, logged per call.
        rows = trace.rows(
            "SELECT tid, syscall, offset, returned FROM events WHERE file_id IN"
            " (SELECT file_id FROM files WHERE path = ?) AND syscall != 'lseek'",
            (files["a.bin"],),
        )
        inherited = [read for read in reads if read[2] == files["a.bin"] and read[4] == 100]
        assert len(inherited) == 1
        own_fd = [read for read in reads if read[2] == files["a.bin"] and read not in inherited]
        assert sorted(tuple(row) for row in rows) == sorted((read[1], read[3], read[4], read[5]) for read in own_fd)


class Forker:
    """tests/helpers/forker.py, started here (not through `casstrace capture`)."""

    def __init__(self, directory: Path):
        self.files = forker_files(directory)
        self.results = directory / "reads.jsonl"
        self.process = subprocess.Popen(
            [sys.executable, str(FORKER), str(directory), str(self.results)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )

    def run(self) -> list:
        """Let it fork and read; returns every process's reads once all its descendants have exited."""
        self.process.stdin.write("go\n")
        self.process.stdin.flush()
        assert self.process.stdout.readline() == "done\n"
        return [json.loads(line) for line in self.results.read_text().splitlines()]

    def exit(self) -> None:
        self.process.communicate("exit\n", timeout=10)


def written(capture: BccCapture, path: Path) -> Trace:
    writer = TraceWriter(path)
    capture.stop().write(writer)
    return Trace(writer.finish())


def test_followed_children_exiting_do_not_end_the_capture(tmp_path):
    """Following, the capture ends when the traced process exits, not when its children do; fds it
    held before the capture began are named in the children that inherit them."""
    forker = Forker(tmp_path)
    with BccCapture(forker.process.pid, follow_children=True) as capture:
        reads = forker.run()
        time.sleep(0.3)  # the exit watch looks every 50 ms
        assert capture.ended_early is None
        forker.exit()
        for _ in range(200):
            if capture.ended_early is not None:
                break
            time.sleep(0.05)
    assert capture.ended_early == f"process {forker.process.pid} exited"
    with written(capture, tmp_path / "followed.trace") as trace:
        check_descendants_captured(trace, forker.files, reads)


def test_pid_capture_does_not_follow_children(tmp_path):
    forker = Forker(tmp_path)
    with BccCapture(forker.process.pid) as capture:
        reads = forker.run()
    forker.exit()
    with written(capture, tmp_path / "pid.trace") as trace:
        totals = reads_by_path(trace)
        assert totals[forker.files["a.bin"]] == (1, 1000)  # its own pread; its child's reads are not its own
        assert forker.files["b.bin"] not in totals and forker.files["c.bin"] not in totals
        children = {read[0] for read in reads} - {forker.process.pid}
        assert len(children) == 3
        assert not children & {row["tid"] for row in trace.rows("SELECT tid FROM threads")}
        assert "notes" not in trace.meta


# -- bad input ---------------------------------------------------------------------------------
def run_capture(*arguments, user=None):
    prefix = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "--inh-caps=-all"] if user else []
    return subprocess.run([*prefix, *CASSTRACE, "capture", *arguments], capture_output=True, text=True, timeout=60)


def test_not_root_names_the_capabilities(tmp_path):
    result = run_capture("--pid", "1", "--duration", "1", "--out", str(tmp_path / "x.trace"), user="nobody")
    assert result.returncode == 2
    assert result.stderr.count("\n") == 1 and "CAP_BPF" in result.stderr and "CAP_PERFMON" in result.stderr
    assert not list(tmp_path.iterdir())


def test_missing_pid_is_one_clear_line(tmp_path):
    result = run_capture("--pid", "4194303", "--duration", "1", "--out", str(tmp_path / "x.trace"))
    assert result.returncode == 2
    assert (
        result.stderr
        == "casstrace: error: no process with pid 4194303 (fix: check the pid (e.g. pgrep -f CassandraDaemon))\n"
    )
    assert not list(tmp_path.iterdir())


def test_missing_kernel_headers_say_how_to_fix(tmp_path):
    with pytest.raises(CasstraceError) as error:
        bcc_capture.check_kernel_headers(tmp_path)
    assert "scripts/install" in (error.value.fix or "")


# -- on the test sandbox ---------------------------------------------------------------------------
def test_select_star_reads_the_whole_data_file(sandbox, demo_tables, tmp_path):
    """SELECT * of the wide partition, page cache dropped first: the node preads all of Data.db
    (re-reading a few compressed chunks where pages meet), and the page cache fills it once."""
    from cassandra.query import SimpleStatement

    (data_file,) = demo_tables.wide.data_files
    size = data_file.stat().st_size
    fd = os.open(data_file, os.O_RDONLY)
    os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    os.close(fd)
    # Small pages: 200 rows of ~1 MB in one page would not fit the test node's heap.
    query = SimpleStatement(
        f"SELECT * FROM {demo_tables.keyspace}.{demo_tables.spec.table} WHERE stream_id = {demo_tables.spec.stream_id}",
        fetch_size=10,
    )
    with sandbox.connect() as session:
        with BccCapture(sandbox.pid(), extra_dirs=[sandbox.layout.data]) as capture:
            window = capture.begin_window("execution", execution=1)
            rows = list(session.execute(query))
            capture.begin_window("between")
    assert len(rows) == demo_tables.spec.rows
    writer = TraceWriter(tmp_path / "select-star.trace")
    capture.stop().write(writer)
    with Trace(writer.finish()) as trace:
        row = file_io(trace, window, str(data_file))
        assert size <= row["read_bytes"] <= size * 1.01
        every_page = set(range(-(-size // 4096)))
        # The page cache filled every page of the file, and nothing else of it...
        assert covered(trace, window, str(data_file), "page_cache") == every_page
        # ...once, but for a folio the kernel may drop and fill again mid-read (once in ~10 runs
        # here: one 2 MiB folio counted twice; a second fill is a real fill, and counted).
        assert len(every_page) * 4096 <= row["cache_miss_bytes"] <= len(every_page) * 4096 * 1.02
        assert covered(trace, window, str(data_file), "syscall") == every_page
        offsets = trace.rows("SELECT DISTINCT syscall FROM events WHERE file_id = ?", (row["file_id"],))
        assert {r["syscall"] for r in offsets} == {"pread64"}
        assert trace.meta["aggregate_overflows"] == 0


@pytest.mark.parametrize("spectrogram", ["captured", "all"])
def test_the_spectrogram_holds_the_calls_captured_or_every_call(tmp_path, spectrogram):
    """By default the probes run only on the calls they handle (their own syscall tracepoints): the
    spectrogram has the file reads and not the rest (getppid here, futex and epoll waits on a node);
    `--spectrogram all` attaches raw_syscalls and times every call. The reads are exact either way."""
    data = tmp_path / "data.bin"
    data.write_bytes(os.urandom(1 << 20))
    script = (
        "import os, sys; fd = os.open(sys.argv[1], os.O_RDONLY)\n"
        "for i in range(256): os.pread(fd, 4096, i * 4096); os.getppid()\n"
    )
    out = tmp_path / "calls.trace"
    result = subprocess.run(
        [
            *CASSTRACE,
            "capture",
            "--spectrogram",
            spectrogram,
            "--out",
            str(out),
            "--",
            sys.executable,
            "-c",
            script,
            str(data),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    with Trace(out) as trace:
        calls = {
            str(row[0]): int(row[1]) for row in trace.rows("SELECT syscall, sum(count) FROM latency GROUP BY syscall")
        }
        (read,) = trace.rows(
            "SELECT sum(read_calls), sum(read_bytes) FROM file_io WHERE file_id = ?", (file_id(trace, str(data)),)
        )
    assert tuple(read) == (256, 1 << 20)
    assert calls["pread64"] >= 256
    assert (calls.get("getppid", 0) >= 256) == (spectrogram == "all")


# -- a neighbour: its calls reach the programs, up to the check of the process, and none is counted --
COUNTED_READER = r"""
import os, sys
fd = os.open(sys.argv[1], os.O_RDONLY)
io = os.open("/proc/self/io", os.O_RDONLY)
def syscr():   # the kernel's own count of the process's read calls (this one's not yet in it)
    return int(dict(line.split(": ") for line in os.pread(io, 4096, 0).decode().splitlines())["syscr"])
before = syscr()
for i in range(int(sys.argv[2])): os.pread(fd, 4096, (i * 7919 % 256) * 4096)
print(syscr() - before - 1)
"""
NEIGHBOUR_READER = r"""
import os, sys
fd = os.open(sys.argv[1], os.O_RDONLY)
while True: os.pread(fd, 4096, 0)
"""


def test_only_the_captured_process_reads_are_counted_beside_a_neighbour_reading_the_same_file(tmp_path):
    """Another process reads the same file, on every CPU, all through the capture: its calls reach the
    probes too, up to the check of the process, and none is counted. The captured process's reads
    are counted call for call: as many as the kernel's own count of its read calls (/proc's syscr)."""
    data = tmp_path / "data.bin"
    data.write_bytes(os.urandom(1 << 20))
    calls = 5000
    neighbours = [
        subprocess.Popen([sys.executable, "-c", NEIGHBOUR_READER, str(data)]) for _ in range(os.cpu_count() or 1)
    ]
    out = tmp_path / "counted.trace"
    try:
        result = subprocess.run(
            [
                *CASSTRACE,
                "capture",
                "--out",
                str(out),
                "--",
                sys.executable,
                "-c",
                COUNTED_READER,
                str(data),
                str(calls),
            ],
            capture_output=True,
            text=True,
            timeout=180,
        )
    finally:
        for neighbour in neighbours:
            neighbour.kill()
            neighbour.wait()
    assert result.returncode == 0, result.stderr
    assert int(result.stdout.split()[0]) == calls  # the kernel counted each of the loop's reads
    with Trace(out) as trace:
        (read,) = trace.rows(
            "SELECT sum(read_calls), sum(read_bytes) FROM file_io WHERE file_id = ?", (file_id(trace, str(data)),)
        )
        assert trace.meta["lost_events"] == trace.meta["aggregate_overflows"] == 0
    assert tuple(read) == (calls, calls * 4096)
