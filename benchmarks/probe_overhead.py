"""Overhead of the bcc probes on the traced process (prints figures; not a test).

  .venv/bin/python benchmarks/probe_overhead.py [--query-runs 100] [--storm-rounds 5] [--skip-query]

(a) the demo query warm on the dev sandbox (127.0.0.1:9042):
    SELECT c0 FROM casstrace_demo.streams WHERE stream_id=1, traced and untraced executions
    interleaved in blocks (a capture is attached for each traced block);
(b) a syscall storm: a C program making 1,000,000 4 KiB preads at random page offsets of a
    256 MiB file held in the page cache, traced and untraced runs alternating.

For each: traced / untraced medians, the tracer's own CPU (this process: the notice poller while
capturing, reading the maps at the end), and the per-call records kept, not streamed and lost. The
storm also checks that the in-kernel aggregates counted every one of the calls.
"""

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from casstrace.probes.bcc_capture import BccCapture
from casstrace.traces import Trace, TraceWriter

STORM_SOURCE = r"""
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>
/* storm FILE CALLS: waits for a byte on stdin, then preads 4 KiB at random page offsets. */
int main(int argc, char **argv) {
    int fd = open(argv[1], O_RDONLY);
    long calls = atol(argv[2]);
    off_t pages = lseek(fd, 0, SEEK_END) / 4096;
    char go, buffer[4096];
    if (read(0, &go, 1) != 1) return 1;
    uint64_t x = 88172645463325252ULL;
    struct timespec start, end;
    clock_gettime(CLOCK_MONOTONIC, &start);
    for (long i = 0; i < calls; i++) {
        x ^= x << 13; x ^= x >> 7; x ^= x << 17;
        if (pread(fd, buffer, sizeof buffer, (off_t)(x % pages) * 4096) != sizeof buffer) return 2;
    }
    clock_gettime(CLOCK_MONOTONIC, &end);
    printf("%ld\n", (end.tv_sec - start.tv_sec) * 1000000000L + end.tv_nsec - start.tv_nsec);
    return 0;
}
"""
STORM_CALLS = 1_000_000
STORM_FILE_BYTES = 256 << 20
QUERY = "SELECT c0 FROM casstrace_demo.streams WHERE stream_id=1"


def cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


class TracerCost:
    """The tracer's CPU while capturing (its notice poller thread: the rest of this process is the
    workload's client) and while stopping, and what it streamed, over traced runs."""

    def __init__(self):
        self.capturing = self.stopping = 0.0
        self.seconds = 0.0
        self.offered = self.kept = self.lost = self.overflows = 0

    def trace(self, pid: int, work, extra_dirs=()):
        capture = BccCapture(pid, extra_dirs=extra_dirs)
        capture.start()
        began = time.monotonic()
        try:
            result = work()
        finally:
            self.seconds += time.monotonic() - began
            cpu = cpu_seconds()
            capture.stop()
            self.stopping += cpu_seconds() - cpu
            self.capturing += capture.poller_cpu_seconds
        counters = capture.counters
        self.offered += counters["events_offered"]
        self.kept += min(counters["events_offered"], capture.stream_limit)
        self.lost += counters["notices_lost"]
        self.overflows += counters["aggregate_overflows"]
        return capture, result

    def report(self, label: str) -> None:
        print(f"  tracer CPU while capturing: {self.capturing:.2f} s over {self.seconds:.1f} s traced "
              f"({100 * self.capturing / max(self.seconds, 1e-9):.1f}% of a core); reading maps at stop: "
              f"{self.stopping:.2f} s")
        print(f"  {label}: per-call records offered {self.offered}, kept {self.kept}, "
              f"not streamed {self.offered - self.kept}, lost {self.lost}; aggregate updates lost {self.overflows}")


def ratio_line(name: str, untraced: list[float], traced: list[float], unit: str, scale: float) -> None:
    u, t = statistics.median(untraced), statistics.median(traced)
    print(f"{name}: untraced median {u * scale:.3f} {unit} (n={len(untraced)}), traced median "
          f"{t * scale:.3f} {unit} (n={len(traced)}): {t / u:.3f}x")


def query_overhead(runs: int, block: int) -> None:
    from cassandra.cluster import Cluster

    pid = int(Path.home().joinpath(".local/share/casstrace/sandbox/cassandra.pid").read_text())
    cluster = Cluster(["127.0.0.1"], port=9042)
    session = cluster.connect()
    statement = session.prepare(QUERY)

    def execute(n: int) -> list[float]:
        times = []
        for _ in range(n):
            began = time.perf_counter()
            list(session.execute(statement))
            times.append(time.perf_counter() - began)
        return times

    execute(20)   # warm: JIT, caches, connection
    untraced, traced, cost = [], [], TracerCost()
    while len(traced) < runs:
        untraced += execute(block)
        traced += cost.trace(pid, lambda: execute(block))[1]
    cluster.shutdown()
    ratio_line("query (a)", untraced, traced, "ms", 1e3)
    cost.report("query")


def storm_overhead(rounds: int) -> None:
    work = Path(tempfile.mkdtemp(prefix="casstrace-storm-"))
    try:
        binary, data = work / "storm", work / "storm.bin"
        (work / "storm.c").write_text(STORM_SOURCE)
        subprocess.run(["cc", "-O2", "-o", str(binary), str(work / "storm.c")], check=True)
        with open(data, "wb") as out:
            for _ in range(STORM_FILE_BYTES >> 20):
                out.write(os.urandom(1 << 20))
        subprocess.run(["cat", str(data)], stdout=subprocess.DEVNULL, check=True)   # into the page cache

        def run(traced: bool, cost: TracerCost):
            process = subprocess.Popen([str(binary), str(data), str(STORM_CALLS)], stdin=subprocess.PIPE,
                                       stdout=subprocess.PIPE, text=True)

            def go():
                stdout, _ = process.communicate("g")
                return int(stdout) / 1e9

            if not traced:
                return go(), None
            capture, seconds = cost.trace(process.pid, go)
            return seconds, capture

        untraced, traced, cost = [], [], TracerCost()
        run(False, cost)   # warm
        for _ in range(rounds):
            untraced.append(run(False, cost)[0])
            seconds, capture = run(True, cost)
            traced.append(seconds)
        writer = TraceWriter(work / "storm.trace")
        capture.write(writer)
        with Trace(writer.finish()) as trace:
            (row,) = trace.rows("SELECT sum(read_calls), sum(read_bytes) FROM file_io JOIN files USING (file_id)"
                                " WHERE path = ?", (str(data),))
        ratio_line("storm (b)", untraced, traced, "s", 1)
        cost.report("storm")
        exact = tuple(row) == (STORM_CALLS, STORM_CALLS * 4096)
        print(f"  storm aggregates of the last traced run: {row[0]} preads, {row[1]} bytes "
              f"({'exact' if exact else 'NOT EXACT'}: {STORM_CALLS} calls made)")
    finally:
        subprocess.run(["rm", "-rf", str(work)], check=False)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--query-runs", type=int, default=100)
    parser.add_argument("--query-block", type=int, default=10)
    parser.add_argument("--storm-rounds", type=int, default=5)
    parser.add_argument("--skip-query", action="store_true")
    parser.add_argument("--skip-storm", action="store_true")
    arguments = parser.parse_args()
    print(f"machine: {os.cpu_count()} cores, kernel {os.uname().release}, python {sys.version.split()[0]}")
    if not arguments.skip_query:
        query_overhead(arguments.query_runs, arguments.query_block)
    if not arguments.skip_storm:
        storm_overhead(arguments.storm_rounds)


if __name__ == "__main__":
    main()
