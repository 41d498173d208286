"""How long `casstrace import` takes next to sysdig's own `topfiles_bytes` on the same capture.

    .venv/bin/python benchmarks/import_speed.py [CAPTURE.scap] [--runs N] [--all]

Default capture: the largest .scap in tests/data/scap. Every command is timed the same way: a fresh
process started from here, its output thrown away, wall time from start to exit and CPU time (user +
system of the command and its children) from wait4. The commands take turns (A B C D, A B C D, ...)
so that load from other processes on the machine falls on all of them alike; the figures are
medians, with the quartiles of the wall time. One untimed round first warms the page cache and lets
Python write casstrace's bytecode, as `pip install` does (a shell with PYTHONDONTWRITEBYTECODE would
otherwise have every run compile casstrace from source).

Prints, for the capture:
- `sysdig -r FILE -c topfiles_bytes` (the baseline: sysdig parsing the file, summing in Lua),
- `python -c pass` and Python loading what `casstrace import` loads (the fixed costs: starting
  Python in the virtualenv, then casstrace's modules; a plain import starts without click), and
  Python loading only the floor's modules (SQLite, json, signal, the compiled loops: what no import
  can start without),
- `casstrace import FILE` (the whole import: casstrace reads the file itself, trace written),
and the ratio import / topfiles_bytes (goal: <= 1.3, issue 47; <= 1.5 in issue 36), wall and CPU, and what it would be
if the import loaded only the floor's modules. --all adds both ends for every
shared capture.
"""

import argparse
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from casstrace.probes.sysdig.sysdig_tool import find_sysdig
from figures import report

REPO = Path(__file__).resolve().parents[1]
SHARED_SCAP = REPO / "tests" / "data" / "scap"
CASSTRACE = str(Path(sys.executable).parent / "casstrace")
# What `casstrace import FILE` loads before it reads the file (cli/main.py, cli/import_scap.py).
STARTUP = (
    "import casstrace.cli.main, casstrace.cli.import_scap, casstrace.paths, casstrace.probes.sysdig.sysdig_import,"
    " casstrace.traces.writer"
)
# What no import can start without: SQLite, json (the trace's meta; it loads re and enum), signal, and the
# compiled loops (loading them loads casstrace's package modules, typing with them).
FLOOR = (
    "import sqlite3, json, struct, signal, casstrace.probes.sysdig._scap_scan, casstrace.probes.sysdig._scap_fold,"
    " casstrace.traces._bulk_insert"
)
# What a user's shell has: bytecode is read and written as usual.
ENV = {key: value for key, value in os.environ.items() if key != "PYTHONDONTWRITEBYTECODE"}


def run_once(command: list[str]) -> tuple[float, float]:
    """(wall s, CPU s) of one run of command."""
    start = time.perf_counter()
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, env=ENV)
    _, status, usage = os.wait4(process.pid, 0)
    wall = time.perf_counter() - start
    process.returncode = os.waitstatus_to_exitcode(status)  # reaped here, so Popen must not wait
    if process.returncode != 0:
        raise SystemExit(f"exit status {process.returncode}: {' '.join(command)}")
    return wall, usage.ru_utime + usage.ru_stime


def measure(commands: dict[str, list[str]], runs: int) -> dict[str, list[tuple[float, float]]]:
    for command in commands.values():
        run_once(command)  # warm-up, untimed
    samples: dict[str, list[tuple[float, float]]] = {name: [] for name in commands}
    for _ in range(runs):
        for name, command in commands.items():
            samples[name].append(run_once(command))
    return samples


def median_wall(samples) -> float:
    return statistics.median(wall for wall, _ in samples)


def describe(samples) -> str:
    walls = sorted(wall for wall, _ in samples)
    low, _, high = statistics.quantiles(walls, n=4) if len(walls) > 1 else (walls[0],) * 3
    cpu = statistics.median(cpu for _, cpu in samples)
    return (
        f"{median_wall(samples) * 1000:7.1f} ms  (quartiles {low * 1000:6.1f} .. {high * 1000:6.1f})"
        f"  cpu {cpu * 1000:6.1f} ms"
    )


def machine() -> str:
    model = next(
        (
            line.split(":", 1)[1].strip()
            for line in Path("/proc/cpuinfo").read_text().splitlines()
            if line.startswith("model name")
        ),
        platform.machine(),
    )
    sysdig = subprocess.run([find_sysdig(), "--version"], capture_output=True, text=True).stdout.split()
    return (
        f"{os.cpu_count()} x {model}, Linux {platform.release()}, Python {platform.python_version()},"
        f" sysdig {sysdig[-1] if sysdig else '?'}"
    )


def load() -> str:
    return " ".join(f"{value:.2f}" for value in os.getloadavg())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("capture", nargs="?", type=Path)
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--all", action="store_true", help="also time both ends on every shared capture")
    args = parser.parse_args()
    captures = sorted(SHARED_SCAP.glob("*.scap"), key=lambda path: path.stat().st_size)
    capture = args.capture or captures[-1]
    sysdig = find_sysdig()
    print(f"machine: {machine()}")
    print(f"load average before: {load()}")
    with tempfile.TemporaryDirectory() as tmp:
        trace = f"{tmp}/bench.trace"
        samples = measure(
            {
                "sysdig -c topfiles_bytes": [sysdig, "-r", str(capture), "-c", "topfiles_bytes"],
                "python -c pass": [sys.executable, "-c", "pass"],
                "python: the import's modules": [sys.executable, "-c", STARTUP],
                "python: the floor's modules": [sys.executable, "-c", FLOOR],
                "casstrace import": [CASSTRACE, "import", str(capture), "--out", trace, "--force"],
            },
            args.runs,
        )
        print(f"capture: {capture} ({capture.stat().st_size:,} bytes), median of {args.runs} interleaved runs")
        for name, timings in samples.items():
            print(f"  {name:28s} {describe(timings)}")
        baseline = median_wall(samples["sysdig -c topfiles_bytes"])
        whole = median_wall(samples["casstrace import"])
        print(f"ratio import / topfiles_bytes: {whole / baseline:.2f} (goal <= 1.3)")
        cpu_ratio = statistics.median(cpu for _, cpu in samples["casstrace import"]) / statistics.median(
            cpu for _, cpu in samples["sysdig -c topfiles_bytes"]
        )
        print(f"ratio of their CPU times: {cpu_ratio:.2f}")
        report("import_ratio_topfiles", whole / baseline)
        report("import_ratio_topfiles_cpu", cpu_ratio)
        beyond_startup = whole - median_wall(samples["python: the import's modules"])
        print(f"ratio without Python's start-up and casstrace's modules: {beyond_startup / baseline:.2f}")
        floor = beyond_startup + median_wall(samples["python: the floor's modules"])
        print(f"ratio at the floor (the import's work after only the floor's modules): {floor / baseline:.2f}")
        if args.all:
            print("every shared capture (no larger real capture exists here: this kernel's sysdig cannot capture):")
            for each in captures:
                pair = measure(
                    {
                        "topfiles": [sysdig, "-r", str(each), "-c", "topfiles_bytes"],
                        "import": [CASSTRACE, "import", str(each), "--out", trace, "--force"],
                    },
                    args.runs,
                )
                topfiles, imported = median_wall(pair["topfiles"]), median_wall(pair["import"])
                cpu = [statistics.median(cpu for _, cpu in pair[name]) for name in ("topfiles", "import")]
                print(
                    f"  {each.name:34s} {each.stat().st_size:>10,} B  topfiles {topfiles * 1000:6.1f} ms"
                    f"  import {imported * 1000:6.1f} ms  ratio {imported / topfiles:.2f}"
                    f"  (CPU {cpu[0] * 1000:5.1f} / {cpu[1] * 1000:5.1f} ms: {cpu[1] / cpu[0]:.2f})"
                )
    print(f"load average after: {load()}")


if __name__ == "__main__":
    main()
