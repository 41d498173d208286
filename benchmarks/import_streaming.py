"""`casstrace import` of a large capture: throughput and memory (prints figures; not a test).

    .venv/bin/python benchmarks/import_streaming.py [--size-mb 1024] [--capture FILE.scap] [--sysdig]

Builds the capture with benchmarks/make_large_scap.py when none is given (in a scratch directory,
deleted afterwards; ~1 GB of disk for a moment), then runs `casstrace import` on it once as a
whole process: wall time, CPU time (user + system, from wait4) and its maximum resident set size
(ru_maxrss). Throughput is capture bytes over wall time and over CPU time (the machine may be
shared: CPU time is what the import itself costs). Goal: >= 50 MB/s in constant memory. --sysdig
also times `sysdig -r FILE -c topfiles_bytes` on the same file, and prints the ratio of their CPU
times (the import's goal: <= 1.0).
"""

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from figures import report

HERE = Path(__file__).resolve().parent
CASSTRACE = str(Path(sys.executable).parent / "casstrace")


def run(command: list[str]) -> tuple[float, float, int]:
    """(wall s, CPU s, max RSS bytes) of one run of command."""
    start = time.perf_counter()
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL)
    _, status, usage = os.wait4(process.pid, 0)
    wall = time.perf_counter() - start
    process.returncode = os.waitstatus_to_exitcode(status)
    if process.returncode != 0:
        raise SystemExit(f"exit status {process.returncode}: {' '.join(command)}")
    return wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss * 1024


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size-mb", type=int, default=1024)
    parser.add_argument("--capture", type=Path, help="a capture to import instead of building one")
    parser.add_argument("--sysdig", action="store_true", help="also time sysdig's topfiles_bytes on it")
    args = parser.parse_args()
    print(f"load average before: {' '.join(f'{value:.2f}' for value in os.getloadavg())}")
    with tempfile.TemporaryDirectory(prefix="casstrace-streaming-") as scratch:
        capture = args.capture
        if capture is None:
            capture = Path(scratch) / "large.scap"
            subprocess.run(
                [sys.executable, str(HERE / "make_large_scap.py"), str(capture), "--size-mb", str(args.size_mb)],
                check=True,
            )
        size = capture.stat().st_size
        wall, import_cpu, rss = run([CASSTRACE, "import", str(capture), "--out", str(Path(scratch) / "large.trace")])
        trace_size = (Path(scratch) / "large.trace").stat().st_size
        print(
            f"casstrace import of {size / 1e6:,.0f} MB: {wall:.1f} s wall ({size / 1e6 / wall:.1f} MB/s),"
            f" {import_cpu:.1f} s CPU ({size / 1e6 / import_cpu:.1f} MB/s of CPU), max RSS {rss / 2**20:.0f} MiB,"
            f" trace {trace_size / 1e6:,.0f} MB"
        )
        report("import_streaming_mb_per_s", size / 1e6 / wall)
        report("import_streaming_mb_per_cpu_s", size / 1e6 / import_cpu)
        report("import_streaming_max_rss_mib", rss / 2**20)
        if args.sysdig:
            wall, cpu, rss = run(["sysdig", "-r", str(capture), "-c", "topfiles_bytes"])
            print(
                f"sysdig -c topfiles_bytes: {wall:.1f} s wall ({size / 1e6 / wall:.1f} MB/s), {cpu:.1f} s CPU,"
                f" max RSS {rss / 2**20:.0f} MiB"
            )
            report("import_streaming_ratio_topfiles_cpu", import_cpu / cpu)
    print(f"load average after: {' '.join(f'{value:.2f}' for value in os.getloadavg())}")


if __name__ == "__main__":
    main()
