"""End-to-end turnaround of `casstrace run` on the demo query (prints figures; not a test).

  .venv/bin/python benchmarks/run_turnaround.py [--runs 5] [--port 9042]

Wall time from the command's start to the printed verdict (the real command, in a fresh process:
interpreter start-up and imports included), and where it went, phase by phase, from the
command's own `--timings`: connect and prepare, find the JVM and read the schema, compile and
attach the probes, run the query (1 warmup, 5 measured, 1 traced execution), detach, write the
trace, analyse and write the reports. Medians over the runs; the goal is under 10 s warm.
"""

import argparse
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from casstrace.sandbox.demo import WideTable
from figures import report

QUERY = WideTable().wide_query
CASSTRACE = Path(sys.executable).parent / "casstrace"
PHASE_LINE = re.compile(r"^  (.+?)\s+([0-9.]+) s  cpu\s+([0-9.]+) s$")  # name, wall, CPU


def one_run(port: int, out: Path) -> tuple[float, dict[str, float]]:
    began = time.perf_counter()
    result = subprocess.run(
        [str(CASSTRACE), "run", QUERY, "--port", str(port), "--out", str(out), "--timings"],
        capture_output=True,
        text=True,
    )
    wall = time.perf_counter() - began
    if result.returncode != 0:
        sys.exit(f"casstrace run failed: {result.stderr.strip()}")
    phases = {}
    for line in result.stderr.splitlines():
        match = PHASE_LINE.match(line)
        if match:
            phases[match.group(1)] = float(match.group(2))
    return wall, phases


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--port", type=int, default=9042, help="native port of a node holding the demo data")
    args = parser.parse_args()
    walls: list[float] = []
    phases: dict[str, list[float]] = {}
    with tempfile.TemporaryDirectory() as scratch:
        for number in range(args.runs):
            wall, spans = one_run(args.port, Path(scratch) / f"run{number}.trace")
            walls.append(wall)
            for name, seconds in spans.items():
                phases.setdefault(name, []).append(seconds)
    print(f"casstrace run turnaround, {args.runs} runs of: {QUERY}")
    print(f"  {'phase':<32} {'median':>8} {'min':>8} {'max':>8}")
    for name, values in phases.items():
        print(f"  {name:<32} {statistics.median(values):7.3f}s {min(values):7.3f}s {max(values):7.3f}s")
    print(
        f"  {'wall, command start to verdict':<32} {statistics.median(walls):7.3f}s {min(walls):7.3f}s "
        f"{max(walls):7.3f}s  (goal < 10 s)"
    )
    report("run_turnaround_s", statistics.median(walls))


if __name__ == "__main__":
    main()
