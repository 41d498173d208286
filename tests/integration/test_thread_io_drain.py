"""The time-slotted maps (per-thread bytes, heat map, latency spectrogram) drained while capturing
(BccCapture.drain_thread_io, as a watch does every refresh): entries leave the kernel's maps and no
byte is lost or counted twice. Real BPF; the truth is what the reader itself read."""

import os
import subprocess
import sys
import time

import pytest

from casstrace.traces import Trace, TraceWriter
from casstrace.traces.schema import THREAD_SLOT_NS

pytestmark = pytest.mark.integration

if os.geteuid() != 0:
    pytest.skip("BPF capture needs root", allow_module_level=True)

from casstrace.probes.backends import DEFAULT_STREAM_LIMIT  # noqa: E402
from casstrace.probes.bcc import bcc_capture  # noqa: E402
from casstrace.probes.bcc.bcc_capture import BccCapture  # noqa: E402

CHUNK = 4096
READER = """
import os, sys, time
fd = os.open(sys.argv[1], os.O_RDONLY)
for line in sys.stdin:
    for _ in range(int(line)):
        os.pread(fd, 4096, 0)
        time.sleep(0.002)              # several 1 ms slots
    print("done", flush=True)
"""


def _read(child: subprocess.Popen, chunks: int) -> None:
    child.stdin.write(f"{chunks}\n")
    child.stdin.flush()
    assert child.stdout.readline() == "done\n"


@pytest.mark.parametrize("stream_limit", [1, DEFAULT_STREAM_LIMIT])  # the kernel's aggregates, or the log's
def test_drained_entries_stay_counted_once(tmp_path, monkeypatch, stream_limit):
    monkeypatch.setattr(bcc_capture, "DRAIN_MARGIN_NS", 500_000_000)  # complete after 0.5 s, not 10
    path = tmp_path / "data.bin"
    path.write_bytes(os.urandom(CHUNK))
    child = subprocess.Popen(
        [sys.executable, "-c", READER, str(path)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    try:
        with BccCapture(child.pid, thread_slot_ns=THREAD_SLOT_NS, stream_limit=stream_limit) as capture:
            _read(child, 50)
            time.sleep(1.0)
            moved = capture.drain_thread_io()
            assert moved >= 50 / 10  # the reads' slots, now complete, left the kernel's map
            assert capture.drain_thread_io() == 0
            so_far = sum(row[3] for row in capture.thread_io_so_far() if row[2] == str(path))
            assert so_far == 50 * CHUNK
            _read(child, 30)
    finally:
        child.communicate("", timeout=10)
    writer = TraceWriter(tmp_path / "drained.trace")
    capture.stop().write(writer)
    with Trace(writer.finish()) as trace:
        (total,) = trace.rows(
            "SELECT sum(t.read_bytes) FROM thread_io t JOIN files f USING (file_id) WHERE f.path = ?", (str(path),)
        )
        assert total[0] == 80 * CHUNK
        (heat,) = trace.rows(
            "SELECT sum(h.calls) FROM heatmap h JOIN files f USING (file_id) WHERE f.path = ?", (str(path),)
        )
        assert heat[0] == 80  # the heat map's 100 ms slots drained too
        (latency,) = trace.rows("SELECT sum(count) FROM latency WHERE target = 'file' AND syscall = 'pread64'")
        assert latency[0] == 80
        assert trace.meta["aggregate_overflows"] == 0
