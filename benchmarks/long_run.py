"""How a long `casstrace run` scales: the demo query run 300 times, its trace written and analysed,
then `casstrace report` of that trace (prints figures; not a test).

    .venv/bin/python benchmarks/long_run.py [--repeat 300] [--port 9042] [--runs 3]

For each run: the real command in a fresh process (`casstrace run QUERY --repeat N --timings`),
and from its own --timings the phases that grow with the executions: 'write trace' and 'analyse,
report' (the analysis, the verdict printed, the HTML report written beside the trace). Then
`casstrace report TRACE` in a fresh process: wall time, and CPU time (user + system, from wait4),
which a busy machine does not inflate (the phases' CPU time comes from --timings too). Medians
over the runs. Goals (issue 16): write + analyse
<= 5 s, report <= 3 s, for 300 executions of the demo query.
"""

import argparse
import os
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
GROWING_PHASES = ("write trace", "analyse, report")


def timed(command: list[str]) -> tuple[float, float, str, str]:
    """Wall and CPU seconds of a command (CPU: user + system of it and its children), and its output."""
    began = time.perf_counter()
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    stdout, stderr = process.communicate()
    wall = time.perf_counter() - began
    # communicate() has reaped the process; its rusage is in the children's totals
    usage = os.times()
    if process.returncode != 0:
        sys.exit(f"{' '.join(command[:3])} ... failed: {stderr.strip()}")
    return wall, usage.children_user + usage.children_system, stdout, stderr


def one_run(port: int, repeat: int, out: Path) -> dict[str, float]:
    before = os.times()
    wall, cpu_total, _, stderr = timed(
        [str(CASSTRACE), "run", QUERY, "--port", str(port), "--repeat", str(repeat), "--out", str(out), "--timings"]
    )
    figures = {"run wall": wall, "run CPU": cpu_total - (before.children_user + before.children_system)}
    for line in stderr.splitlines():
        match = PHASE_LINE.match(line)
        if match and match.group(1) in GROWING_PHASES:
            figures[match.group(1)] = float(match.group(2))
            figures[f"{match.group(1)} CPU"] = float(match.group(3))
    figures["write trace + analyse"] = sum(figures.get(name, 0.0) for name in GROWING_PHASES)
    figures["write trace + analyse CPU"] = sum(figures.get(f"{name} CPU", 0.0) for name in GROWING_PHASES)
    before = os.times()
    wall, cpu_total, _, _ = timed([str(CASSTRACE), "report", str(out)])
    figures["report wall"] = wall
    figures["report CPU"] = cpu_total - (before.children_user + before.children_system)
    figures["trace MB"] = out.stat().st_size / 1e6
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=300, help="measured executions per run")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--port", type=int, default=9042, help="native port of a node holding the demo data")
    args = parser.parse_args()
    results: dict[str, list[float]] = {}
    with tempfile.TemporaryDirectory() as scratch:
        for number in range(args.runs):
            for name, value in one_run(args.port, args.repeat, Path(scratch) / f"run{number}.trace").items():
                results.setdefault(name, []).append(value)
    print(
        f"casstrace run --repeat {args.repeat} of: {QUERY} ({args.runs} runs; load average "
        f"{os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs at the end)"
    )
    print(f"  {'':<28} {'median':>9} {'min':>9} {'max':>9}")
    for name, values in results.items():
        unit = "" if name == "trace MB" else "s"
        print(f"  {name:<28} {statistics.median(values):8.2f}{unit} {min(values):8.2f}{unit} {max(values):8.2f}{unit}")
    print("  goals: write trace + analyse <= 5 s, report <= 3 s")
    report("long_run_write_analyse_s", statistics.median(results["write trace + analyse"]))
    report("long_run_report_s", statistics.median(results["report wall"]))


if __name__ == "__main__":
    main()
