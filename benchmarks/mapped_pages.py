"""What the mapped-pages measure costs per execution window, on a running Cassandra JVM.

    .venv/bin/python benchmarks/mapped_pages.py [--pid PID | --port 9042] [--runs N]

Default: the Cassandra JVM `casstrace run` would find (the only one, else the one listening on
--port). Times, N times each (as root): the clear before a window (clear_refs 3, then 4 for the TLB
flush: mapped_pages.clear_referenced) and the smaps read after it (mapped_pages.read_smaps), and prints
their medians and quartiles with the JVM's resident size, the number of its mappings and the machine's
load average: both grow with the JVM's page tables, and a busy machine stretches them. The medians are its figures for
scripts/bench (benchmarks/figures.toml).
"""

import argparse
import os
import platform
import statistics
import time
from pathlib import Path

from casstrace.node.jvm import find_cassandra
from casstrace.probes.proc import mapped_pages
from figures import report


def timed(action, runs: int) -> list[float]:
    seconds = []
    for _ in range(runs):
        began = time.perf_counter()
        action()
        seconds.append(time.perf_counter() - began)
    return seconds


def describe(name: str, seconds: list[float]) -> str:
    q1, median, q3 = statistics.quantiles(seconds, n=4) if len(seconds) > 1 else (seconds[0],) * 3
    return f"{name:<38} median {median * 1000:7.1f} ms   (quartiles {q1 * 1000:.1f}–{q3 * 1000:.1f} ms)"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pid", type=int, help="the JVM (default: the only Cassandra JVM running)")
    parser.add_argument("--port", type=int, default=9042, help="native port of the JVM, when several run")
    parser.add_argument("--runs", type=int, default=20)
    options = parser.parse_args()
    pid = find_cassandra(options.pid, native_port=options.port).pid
    status = Path(f"/proc/{pid}/status").read_text()
    rss = next(line.split()[1] for line in status.splitlines() if line.startswith("VmRSS:"))
    mappings = len(Path(f"/proc/{pid}/maps").read_text().splitlines())
    print(
        f"pid {pid}: resident {int(rss) / 1024:.0f} MiB, {mappings:,} mappings; "
        f"{os.cpu_count()} CPUs, load {os.getloadavg()[0]:.1f}, kernel {platform.release()}"
    )
    clear = timed(lambda: mapped_pages.clear_referenced(pid), options.runs)
    smaps = timed(lambda: mapped_pages.read_smaps(pid), options.runs)
    print(describe("clear (clear_refs 3, then 4)", clear))
    print(describe("smaps read and parsed", smaps))
    report("mapped_pages_clear_ms", statistics.median(clear) * 1000)
    report("mapped_pages_smaps_ms", statistics.median(smaps) * 1000)


if __name__ == "__main__":
    main()
