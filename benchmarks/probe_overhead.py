"""Overhead of the bcc probes on the traced process (prints figures; not a test).

  .venv/bin/python benchmarks/probe_overhead.py [--query-runs 300] [--storm-rounds 15] [--skip-query]
                                                [--bpf-stats] [--floor] [--in-kernel]
                                                [--neighbour [--neighbour-of PID]]

(a) the demo query warm on the dev sandbox (127.0.0.1:9042, or --host/--port):
    SELECT c0 FROM casstrace_demo.streams WHERE stream_id=1, traced and untraced executions
    interleaved in blocks (a capture is attached for each traced block);
(b) a syscall storm: a C program making 1,000,000 4 KiB preads at random page offsets of a
    256 MiB file held in the page cache, traced and untraced runs alternating.

For each: traced / untraced medians, with the spread of the ratio between neighbouring untraced
and traced blocks (quartiles and extremes: on a shared 2-core machine a single ratio means little),
the tracer's own CPU (this process: the notice poller while capturing, reading the maps at the end),
and the per-call records kept, not streamed and lost. The storm also checks that the aggregates
counted every one of the calls: half of them are past the event log's default capacity, so both
the logged path and the kernel-aggregated path are measured.

--floor also runs query blocks and storm rounds with two lesser pairs of raw_syscalls programs:
- an empty pair (each program returns at once): what any capture that times calls from entry to
  exit costs here before it does any work (figures probe_overhead_query_floor, _storm_floor);
- a timing pair, the least such a capture does: the entry notes the time in the thread's task
  storage, the exit reads the clock again and adds the call's latency up, for the traced process
  only (figures probe_overhead_query_timed_floor, _storm_timed_floor). What capture.c does beyond
  that (the fd's state, the record, the aggregates) is the difference to the full figures.

--in-kernel also runs, in the same rounds, casstrace's capture with a per-call log of one record
(--stream-limit 1): every call but the first goes to the kernel's aggregate maps instead of the log
(figures probe_overhead_query_in_kernel, _storm_in_kernel); and the storm with every call logged
(a log as long as the storm, figure probe_overhead_storm_logged), where the default logs half.
What each path costs a call: which of the two a capture should take by default.

--neighbour runs the storm untraced beside a captured process (a `sleep`, or --neighbour-of PID, a
JVM): what a capture costs every other process of the node, whose syscalls run its raw_syscalls
programs too, up to their check of the process. Alone, under an empty pair attached, under a
capture (figures probe_overhead_neighbour, _neighbour_floor: x alone); the goal is the empty pair's.
In the same rounds, under the same programs, a syscall-heavy neighbour: `dd bs=1` (DD_NEIGHBOUR,
800,000 one-byte reads and writes, DD_RUNS times a round), its CPU (user + system) against its CPU
alone, medians and least (figures probe_overhead_neighbour_dd, _dd_tracepoint_floor,
_dd_captured_floor, _dd_floor: the least's ratio, which a loaded machine moves far less; goal <= 1.05x).

--bpf-stats also prints the time each BPF program took per run (the kernel's run_time_ns, with
/proc/sys/kernel/bpf_stats_enabled on while the benchmark runs, as it was after): a figure a busy
machine disturbs far less than wall or CPU time, for comparing versions of capture.c. Counting
costs each run two clock reads, so the ratios of such a run are not the figures.
"""

import argparse
import contextlib
import functools
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager
from pathlib import Path

from bpf_floor import EMPTY_PAIR, TIMED_PAIR, UNMADE_CALL, bpf_stats, empty_programs_attached, pair_attached
from casstrace.node.jvm import find_cassandra
from casstrace.probes.bcc.bcc_capture import BccCapture
from casstrace.probes.bcc.syscalls import CAPTURED
from casstrace.traces import Trace, TraceWriter
from figures import process_cpu_ns, report

STORM_SOURCE = r"""
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>
/* storm FILE CALLS: waits for a byte on stdin, then preads 4 KiB at random page offsets, and
   prints the wall and CPU nanoseconds that took. */
static long ns(clockid_t clock) {
    struct timespec t;
    clock_gettime(clock, &t);
    return t.tv_sec * 1000000000L + t.tv_nsec;
}

int main(int argc, char **argv) {
    int fd = open(argv[1], O_RDONLY);
    long calls = atol(argv[2]);
    off_t pages = lseek(fd, 0, SEEK_END) / 4096;
    char go, buffer[4096];
    if (read(0, &go, 1) != 1) return 1;
    uint64_t x = 88172645463325252ULL;
    long wall = ns(CLOCK_MONOTONIC), cpu = ns(CLOCK_PROCESS_CPUTIME_ID);
    for (long i = 0; i < calls; i++) {
        x ^= x << 13; x ^= x >> 7; x ^= x << 17;
        if (pread(fd, buffer, sizeof buffer, (off_t)(x % pages) * 4096) != sizeof buffer) return 2;
    }
    printf("%ld %ld\n", ns(CLOCK_MONOTONIC) - wall, ns(CLOCK_PROCESS_CPUTIME_ID) - cpu);
    return 0;
}
"""
STORM_CALLS = 1_000_000
STORM_FILE_BYTES = 256 << 20
QUERY = "SELECT c0 FROM casstrace_demo.streams WHERE stream_id=1"
DD_NEIGHBOUR = ("dd", "if=/dev/zero", "of=/dev/null", "bs=1", "count=400000", "status=none")
DD_RUNS = 5  # dd runs a round under each program: the least of them is what a loaded machine disturbs least


def cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


class TracerCost:
    """The tracer's CPU while capturing (its notice poller thread: the rest of this process is the
    workload's client) and while stopping, and what it streamed, over traced runs."""

    def __init__(self, stream_limit: int | None = None):
        self.stream_limit = stream_limit  # None: the default capture's
        self.capturing = self.stopping = 0.0
        self.seconds = 0.0
        self.offered = self.kept = self.lost = self.overflows = 0
        self.programs: dict[str, list[int]] = {}  # BPF program -> [ns, runs] (with --bpf-stats)

    def trace(self, pid: int, work, extra_dirs=()):
        capture = BccCapture(pid, extra_dirs=extra_dirs, stream_limit=self.stream_limit)
        capture.start()
        began = time.monotonic()
        try:
            result = work()
        finally:
            self.seconds += time.monotonic() - began
            for name, (ns, runs) in capture.program_run_times().items():
                totals = self.programs.setdefault(name, [0, 0])
                totals[0] += ns
                totals[1] += runs
            cpu = cpu_seconds()
            captured = capture.stop()
            self.stopping += cpu_seconds() - cpu
        assert captured is not None
        self.capturing += captured.poller_cpu_seconds
        counters = captured.counters
        self.offered += counters["events_offered"]
        self.kept += captured.streamed_events
        self.lost += counters["notices_lost"]
        self.overflows += counters["aggregate_overflow"]
        return capture, result

    def report(self, label: str) -> None:
        print(
            f"  tracer CPU while capturing: {self.capturing:.2f} s over {self.seconds:.1f} s traced "
            f"({100 * self.capturing / max(self.seconds, 1e-9):.1f}% of a core); reading maps at stop: "
            f"{self.stopping:.2f} s"
        )
        print(
            f"  {label}: per-call records offered {self.offered}, kept {self.kept}, "
            f"not streamed {self.offered - self.kept}, lost {self.lost}; aggregate updates lost {self.overflows}"
        )
        counted = {name: (ns, runs) for name, (ns, runs) in self.programs.items() if runs}
        if counted:
            print(
                "  BPF programs, ns per run (runs, every process's included): "
                + ", ".join(f"{name.split('__')[-1]} {ns / runs:.0f} ({runs})" for name, (ns, runs) in counted.items())
            )
            # Per read or lseek of a file by the traced process (each is offered to the log, logged or
            # not): what one path or the other costs a call, whatever the mix of other calls.
            total_ns = sum(ns for ns, _ in counted.values())
            print(f"  BPF programs, all: {total_ns / max(self.offered, 1):.0f} ns per read or lseek of a file")


def ratio_line(
    name: str,
    untraced: Sequence[float],
    traced: Sequence[float],
    unit: str,
    scale: float,
    pairs: list[float],
    figure: str | None = None,
) -> None:
    """pairs: traced / untraced of each block (or run) and the untraced one just before it. Wall
    time is what the issue's anchors measured; CPU time of the traced process is less disturbed by
    other work on the machine (it waits less), so both are printed."""
    u, t = statistics.median(untraced), statistics.median(traced)
    q1, _, q3 = statistics.quantiles(pairs, n=4) if len(pairs) > 1 else (pairs[0],) * 3
    print(
        f"{name}: untraced median {u * scale:.3f} {unit} (n={len(untraced)}), traced median "
        f"{t * scale:.3f} {unit} (n={len(traced)}): {t / u:.3f}x; ratio of neighbouring blocks over "
        f"{len(pairs)}: quartiles {q1:.3f}-{q3:.3f}, range {min(pairs):.3f}-{max(pairs):.3f}"
    )
    if figure:
        report(figure, t / u)


# --floor: the lesser programs the workloads also run under, (what it is, attach(pid), figure suffix).
FLOOR_PAIRS: list[tuple[str, Callable[[int], AbstractContextManager[None]], str]] = [
    (
        "an enabled syscall tracepoint, no program run (the kernel's floor)",
        functools.partial(empty_programs_attached, (UNMADE_CALL,)),
        "tracepoint_floor",
    ),
    (
        "an empty program on each call capture.c handles",
        functools.partial(empty_programs_attached, CAPTURED),
        "captured_floor",
    ),
    (
        "an empty raw_syscalls pair (the floor of an every-call capture)",
        functools.partial(pair_attached, EMPTY_PAIR),
        "floor",
    ),
    (
        "a timing pair (entry time in task storage, latency added up at exit)",
        functools.partial(pair_attached, TIMED_PAIR),
        "timed_floor",
    ),
]


# casstrace's capture, (what it is, its per-call log's length (None: the default's), figure suffix):
# the default, and with --in-kernel every call but the first to the kernel's aggregate maps.
DEFAULT_CAPTURE = ("casstrace's capture", None, "")
IN_KERNEL = ("casstrace's capture, every call to the kernel's aggregates (a log of one record)", 1, "_in_kernel")


def rotated(variants: list, round_: int) -> list:
    """The variants in another order each round, so that none always runs first after the untraced block."""
    shift = round_ % len(variants)
    return variants[shift:] + variants[:shift]


def query_overhead(runs: int, block: int, floor: bool, in_kernel: bool, host: str, port: int) -> None:
    from cassandra.cluster import Cluster

    pid = find_cassandra(native_port=port, address=host).pid
    cluster = Cluster([host], port=port)
    session = cluster.connect()
    statement = session.prepare(QUERY)

    def execute(n: int) -> tuple[list[float], float]:
        """Latency of each of n executions, and the node's CPU per execution over them."""
        times, cpu = [], process_cpu_ns(pid)
        for _ in range(n):
            began = time.perf_counter()
            list(session.execute(statement))
            times.append(time.perf_counter() - began)
        return times, (process_cpu_ns(pid) - cpu) / n / 1e9

    execute(20)  # warm: JIT, caches, connection
    captures = [DEFAULT_CAPTURE, *([IN_KERNEL] if in_kernel else [])]
    costs = {suffix: TracerCost(limit) for _, limit, suffix in captures}
    traced: dict[str, list[float]] = {suffix: [] for _, _, suffix in captures}
    traced_cpu: dict[str, list[float]] = {suffix: [] for _, _, suffix in captures}
    pairs: dict[str, list[float]] = {suffix: [] for _, _, suffix in captures}
    untraced, untraced_cpu = [], []
    floors: dict[str, tuple[list[float], list[float]]] = {suffix: ([], []) for _, _, suffix in FLOOR_PAIRS}
    round_ = 0
    while len(traced[""]) < runs:
        before, before_cpu = execute(block)
        untraced += before
        untraced_cpu.append(before_cpu)
        for _, _, suffix in rotated(captures, round_):
            during, during_cpu = costs[suffix].trace(pid, lambda: execute(block))[1]
            traced[suffix] += during
            traced_cpu[suffix].append(during_cpu)
            pairs[suffix].append(statistics.median(during) / statistics.median(before))
        for _, attach, suffix in FLOOR_PAIRS if floor else ():
            with attach(pid):
                lesser = execute(block)[0]
            floors[suffix][0].extend(lesser)
            floors[suffix][1].append(statistics.median(lesser) / statistics.median(before))
        round_ += 1
    cluster.shutdown()
    for what, _, suffix in captures:
        ratio_line(
            f"query (a) latency, {what}",
            untraced,
            traced[suffix],
            "ms",
            1e3,
            pairs[suffix],
            figure=f"probe_overhead_query{suffix}",
        )
    for what, _, suffix in FLOOR_PAIRS if floor else ():
        ratio_line(
            f"  query latency with only {what}",
            untraced,
            floors[suffix][0],
            "ms",
            1e3,
            floors[suffix][1],
            figure=f"probe_overhead_query_{suffix}",
        )
    for what, _, suffix in captures:
        ratio_line(
            f"  node CPU per execution (blocks), {what}",
            untraced_cpu,
            traced_cpu[suffix],
            "ms",
            1e3,
            [t / u for u, t in zip(untraced_cpu, traced_cpu[suffix])],
        )
        costs[suffix].report(f"query, {what}")


class Storm:
    """The storm program, built, and its 256 MiB file held in the page cache, in a scratch directory."""

    def __init__(self, work: Path):
        self.binary, self.data = work / "storm", work / "storm.bin"
        (work / "storm.c").write_text(STORM_SOURCE)
        subprocess.run(["cc", "-O2", "-o", str(self.binary), str(work / "storm.c")], check=True)
        with open(self.data, "wb") as out:
            for _ in range(STORM_FILE_BYTES >> 20):
                out.write(os.urandom(1 << 20))
        subprocess.run(["cat", str(self.data)], stdout=subprocess.DEVNULL, check=True)  # into the page cache

    def start(self) -> subprocess.Popen:
        return subprocess.Popen(
            [str(self.binary), str(self.data), str(STORM_CALLS)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )

    @staticmethod
    def go(process: subprocess.Popen) -> tuple[float, float]:
        """(wall s, CPU s) of the storm's calls."""
        stdout, _ = process.communicate("g")
        wall, cpu = stdout.split()
        return int(wall) / 1e9, int(cpu) / 1e9


@contextlib.contextmanager
def scratch() -> Iterator[Path]:
    work = Path(tempfile.mkdtemp(prefix="casstrace-storm-"))
    try:
        yield work
    finally:
        subprocess.run(["rm", "-rf", str(work)], check=False)


# --in-kernel, the storm: every call logged (the default logs the first half, the rest to the maps).
STORM_LOGGED = ("casstrace's capture, every call logged", STORM_CALLS, "_logged")


def storm_overhead(rounds: int, floor: bool, in_kernel: bool) -> None:
    with scratch() as work:
        storm = Storm(work)
        data = storm.data

        def run(cost: TracerCost | None, floor_attached: Callable[[int], AbstractContextManager[None]] | None = None):
            """((wall s, CPU s), the capture when traced) of one storm: traced by casstrace (cost), under
            a floor, or neither."""
            process = storm.start()
            go = functools.partial(storm.go, process)

            if floor_attached is not None:
                with floor_attached(process.pid):
                    return go(), None
            if cost is None:
                return go(), None
            capture, seconds = cost.trace(process.pid, go)
            return seconds, capture

        captures = [DEFAULT_CAPTURE, *([IN_KERNEL, STORM_LOGGED] if in_kernel else [])]
        costs = {suffix: TracerCost(limit) for _, limit, suffix in captures}
        traced: dict[str, list[tuple[float, float]]] = {suffix: [] for _, _, suffix in captures}
        last: dict[str, BccCapture] = {}
        untraced = []
        floors: dict[str, list[tuple[float, float]]] = {suffix: [] for _, _, suffix in FLOOR_PAIRS}
        run(None)  # warm
        for round_ in range(rounds):
            untraced.append(run(None)[0])
            for _, _, suffix in rotated(captures, round_):
                seconds, last[suffix] = run(costs[suffix])
                traced[suffix].append(seconds)
            for _, attach, suffix in FLOOR_PAIRS if floor else ():
                floors[suffix].append(run(None, attach)[0])
        for what, _, suffix in captures:
            storm_lines(
                f"storm (b) wall, {what}", "  storm CPU", untraced, traced[suffix], f"probe_overhead_storm{suffix}"
            )
        for what, _, suffix in FLOOR_PAIRS if floor else ():
            storm_lines(
                f"  storm wall with only {what}",
                "    its CPU",
                untraced,
                floors[suffix],
                f"probe_overhead_storm_{suffix}",
            )
        if floor:
            # The probe goal (capture / timing pair <= 1.10): in CPU too, which other processes on a
            # busy machine disturb far less than wall time.
            traced_wall, traced_cpu = zip(*traced[""])
            timed_wall, timed_cpu = zip(*floors["timed_floor"])
            print(
                f"  capture / timing pair: wall {statistics.median(traced_wall) / statistics.median(timed_wall):.3f}, "
                f"CPU {statistics.median(traced_cpu) / statistics.median(timed_cpu):.3f}"
            )
            report("probe_overhead_storm_cpu_to_timed", statistics.median(traced_cpu) / statistics.median(timed_cpu))
        for what, _, suffix in captures:
            costs[suffix].report(f"storm, {what}")
            preads, read_bytes = storm_totals(last[suffix], work / f"storm{suffix}.trace", data)
            exact = (preads, read_bytes) == (STORM_CALLS, STORM_CALLS * 4096)
            print(
                f"  storm aggregates of the last traced run: {preads} preads, {read_bytes} bytes "
                f"({'exact' if exact else 'NOT EXACT'}: {STORM_CALLS} calls made)"
            )


def storm_lines(
    wall_name: str, cpu_name: str, untraced: list[tuple[float, float]], runs: list[tuple[float, float]], figure: str
) -> None:
    """The wall-time line (with its figure) and the CPU line of storm runs, (wall s, CPU s) each, against
    the untraced runs of the same rounds."""
    untraced_wall, untraced_cpu = zip(*untraced)
    wall, cpu = zip(*runs)
    ratio_line(wall_name, untraced_wall, wall, "s", 1, [t / u for u, t in zip(untraced_wall, wall)], figure=figure)
    ratio_line(cpu_name, untraced_cpu, cpu, "s", 1, [t / u for u, t in zip(untraced_cpu, cpu)])


def storm_totals(capture: BccCapture, path: Path, data: Path) -> tuple[int, int]:
    """(read calls, bytes read) of the storm's file in a stopped capture's trace."""
    writer = TraceWriter(path)
    capture.stop().write(writer)
    with Trace(writer.finish()) as trace:
        (row,) = trace.rows(
            "SELECT sum(read_calls), sum(read_bytes) FROM file_io JOIN files USING (file_id) WHERE path = ?",
            (str(data),),
        )
    return row[0], row[1]


def neighbour_overhead(rounds: int, captured_pid: int | None) -> None:
    """The storm, not traced, beside a captured process: alone, with an empty pair attached (for
    another process), with a capture of the other process attached; rounds interleaved."""
    with scratch() as work:
        storm = Storm(work)
        other = None if captured_pid else subprocess.Popen(["sleep", "3600"])
        target = captured_pid or other.pid
        try:
            attached: dict[str, Callable[[], AbstractContextManager[object]]] = {
                "alone": contextlib.nullcontext,
                "an enabled syscall tracepoint": lambda: empty_programs_attached((UNMADE_CALL,), target),
                "empty programs on capture.c's calls": lambda: empty_programs_attached(CAPTURED, target),
                "empty raw_syscalls pair": lambda: pair_attached(EMPTY_PAIR, target),
                "capture": lambda: captured(target),
            }
            walls: dict[str, list[float]] = {name: [] for name in attached}
            dd_cpu: dict[str, list[float]] = {name: [] for name in attached}
            storm.go(storm.start())  # warm
            for _ in range(rounds):
                for name, attach in attached.items():
                    process = storm.start()
                    with attach():
                        walls[name].append(storm.go(process)[0])
                        dd_cpu[name] += [dd_cpu_seconds() for _ in range(DD_RUNS)]
        finally:
            if other is not None:
                other.kill()
                other.wait()
        alone = walls["alone"]
        print(
            f"neighbour (c): the storm not traced, beside pid {target} "
            f"({'a sleep' if other is not None else 'given'}) captured"
        )
        for name, figure in (
            ("an enabled syscall tracepoint", "probe_overhead_neighbour_tracepoint_floor"),
            ("empty programs on capture.c's calls", "probe_overhead_neighbour_captured_floor"),
            ("empty raw_syscalls pair", "probe_overhead_neighbour_floor"),
            ("capture", "probe_overhead_neighbour"),
        ):
            ratio_line(
                f"  storm wall with {name} attached",
                alone,
                walls[name],
                "s",
                1,
                [t / u for u, t in zip(alone, walls[name])],
                figure=figure,
            )
        capture = statistics.median(walls["capture"])
        empty = statistics.median(walls["empty programs on capture.c's calls"])
        print(f"  capture / empty programs on its calls: {capture / empty:.3f}")
        print(f"neighbour (d): {' '.join(DD_NEIGHBOUR)}, its CPU (user + system), not traced, beside pid {target}")
        for name, figure in (
            ("an enabled syscall tracepoint", "probe_overhead_neighbour_dd_tracepoint_floor"),
            ("empty programs on capture.c's calls", "probe_overhead_neighbour_dd_captured_floor"),
            ("empty raw_syscalls pair", "probe_overhead_neighbour_dd_floor"),
            ("capture", "probe_overhead_neighbour_dd"),
        ):
            ratio_line(
                f"  dd CPU with {name} attached",
                dd_cpu["alone"],
                dd_cpu[name],
                "s",
                1,
                [t / u for u, t in zip(dd_cpu["alone"], dd_cpu[name])],
            )
            least = min(dd_cpu[name]) / min(dd_cpu["alone"])
            print(f"    least: {least:.3f}x ({min(dd_cpu[name]):.3f} s against {min(dd_cpu['alone']):.3f} s alone)")
            report(figure, least)


def dd_cpu_seconds() -> float:
    """The CPU (user + system) one run of DD_NEIGHBOUR took."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run(DD_NEIGHBOUR, check=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime


@contextlib.contextmanager
def captured(pid: int) -> Iterator[None]:
    capture = BccCapture(pid)
    capture.start()
    try:
        yield
    finally:
        capture.stop()


def machine() -> str:
    import bcc

    memory_kib = int(Path("/proc/meminfo").read_text().split()[1])
    load = " ".join(f"{value:.2f}" for value in os.getloadavg())
    return (
        f"{os.cpu_count()} cores, {memory_kib / (1 << 20):.0f} GiB, kernel {os.uname().release}, "
        f"bcc {bcc.__version__}, python {sys.version.split()[0]}; load average before: {load}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--query-runs", type=int, default=300)
    parser.add_argument("--query-block", type=int, default=10)
    parser.add_argument("--storm-rounds", type=int, default=15)
    parser.add_argument("--skip-query", action="store_true")
    parser.add_argument(
        "--host", default="127.0.0.1", help="the node holding the demo data (default: the demo sandbox)"
    )
    parser.add_argument("--port", type=int, default=9042)
    parser.add_argument("--skip-storm", action="store_true")
    parser.add_argument(
        "--neighbour",
        action="store_true",
        help="also run the storm untraced beside a captured process (the cost to the rest of the node)",
    )
    parser.add_argument("--neighbour-of", type=int, help="the process captured beside the storm (default: a sleep)")
    parser.add_argument("--bpf-stats", action="store_true", help="print each BPF program's time per run")
    parser.add_argument(
        "--in-kernel",
        action="store_true",
        help="also run casstrace's capture with every call to the kernel's aggregates (--stream-limit 1), "
        "and the storm with every call logged, in the same rounds",
    )
    parser.add_argument(
        "--floor",
        action="store_true",
        help="also run the query and the storm under an empty raw_syscalls pair (the least any "
        "capture that times calls from entry to exit costs) and under a timing pair (the least "
        "such a capture does)",
    )
    arguments = parser.parse_args()
    print(f"machine: {machine()}")
    with bpf_stats() if arguments.bpf_stats else contextlib.nullcontext():
        if not arguments.skip_query:
            query_overhead(
                arguments.query_runs,
                arguments.query_block,
                arguments.floor,
                arguments.in_kernel,
                arguments.host,
                arguments.port,
            )
        if not arguments.skip_storm:
            storm_overhead(arguments.storm_rounds, arguments.floor, arguments.in_kernel)
        if arguments.neighbour:
            neighbour_overhead(arguments.storm_rounds, arguments.neighbour_of)


if __name__ == "__main__":
    main()
