"""capture.c's work per syscall against the least a capture that times each call does (prints figures; not a test)

    sudo .venv/bin/python benchmarks/probe_call_cost.py [--calls 200000]

Both as the kernel accounts the time its BPF programs run (bpf_floor.py: the timing pair), over the
same storm of cached 4 KiB preads: half logged one by one, half counted in the kernel's maps. A
ratio of two programs' time on one machine in one run, which the machine's speed moves alike; a
regression of capture.c's per-call work shows in it. A busy machine (other processes' calls run the
programs too) moves it by more than its noise, so it is a benchmark, not a test.
"""

import argparse
import contextlib
import functools
import os
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager
from pathlib import Path

from bpf_floor import TIMED_PAIR, bpf_stats, pair_attached, programs_run_time_ns
from figures import report

PREAD_STORM = """
import os, random, sys
fd, calls = os.open(sys.argv[1], os.O_RDONLY), int(sys.argv[2])
pages = os.fstat(fd).st_size // 4096
offsets = [random.randrange(pages) * 4096 for _ in range(calls)]
sys.stdin.read(1)
for offset in offsets:
    os.pread(fd, 4096, offset)
"""


def storm_run_time_ns(data: Path, calls: int, tracer: Callable[[int], AbstractContextManager[None]]) -> float:
    """ns the tracing programs ran per call of one storm (the calls of every process included: the
    tracer's own are few while it waits)."""
    storm = subprocess.Popen([sys.executable, "-c", PREAD_STORM, str(data), str(calls)], stdin=subprocess.PIPE)
    with tracer(storm.pid):
        before = programs_run_time_ns()
        storm.communicate(b"g")
        ran = programs_run_time_ns() - before
    assert storm.returncode == 0
    return ran / calls


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=200_000)
    calls = parser.parse_args().calls
    from casstrace.probes.bcc.bcc_capture import BccCapture

    @contextlib.contextmanager
    def captured(pid: int) -> Iterator[None]:
        capture = BccCapture(pid, stream_limit=calls // 2)
        capture.start()
        try:
            yield
        finally:
            counters = capture.stop().counters
            assert counters["events_offered"] >= calls and counters["aggregate_overflow"] == 0

    with tempfile.TemporaryDirectory() as scratch, bpf_stats():
        data = Path(scratch) / "cached.bin"
        data.write_bytes(os.urandom(16 << 20))
        timed = min(storm_run_time_ns(data, calls, functools.partial(pair_attached, TIMED_PAIR)) for _ in range(2))
        probes = min(storm_run_time_ns(data, calls, captured) for _ in range(2))
    print(f"capture.c: {probes:.0f} ns a call; the timing pair: {timed:.0f} ns; load {os.getloadavg()[0]:.1f}")
    report("probe_call_cost_over_timing_pair", probes / timed)


if __name__ == "__main__":
    main()
