"""Runs every benchmark that states a figure of docs/performance.md and prints each figure beside the stated one.

    .venv/bin/python benchmarks/bench.py [--only NAME ...] [--skip NAME ...]

The stated figures, their noise and their benchmarks are in benchmarks/figures.toml. Each
benchmark runs once (with the arguments given there), its own output shown as it runs; then one
table: figure, measured, stated, noise, and WORSE where the figure is worse than stated by more
than its noise. A benchmark whose needs are missing (root for BPF, the demo node on 9042) is
reported as not run, never as passed. Exit status 1 when a figure is worse, 0 otherwise.
"""

import argparse
import os
import socket
import subprocess
import sys
from pathlib import Path

from figures import expected, parse, worse

HERE = Path(__file__).resolve().parent
# Scripts in benchmarks/ that are not benchmarks: this runner, its figures, a capture generator, the
# lesser programs probe_overhead.py and probe_call_cost.py measure the probes against.
NOT_BENCHMARKS = {"bench.py", "figures.py", "make_large_scap.py", "bpf_floor.py"}


def unstated(figures: dict[str, dict]) -> list[str]:
    """Benchmark scripts that state no figure in figures.toml (so are not run here)."""
    named = {figure["benchmark"] for figure in figures.values()}
    return sorted(path.name for path in HERE.glob("*.py") if path.name not in NOT_BENCHMARKS | named)


def missing(needs: list[str]) -> str | None:
    """What a benchmark needs that this machine lacks, or None."""
    if "root" in needs and os.geteuid() != 0:
        return "needs root (BPF)"
    for need in needs:
        if need.startswith("memory_gib:"):  # a node of its own (scale.py: an 8 GiB heap)
            available_gib = int(Path("/proc/meminfo").read_text().split("MemAvailable:")[1].split()[0]) / 2**20
            if available_gib < float(need.split(":")[1]):
                return f"needs {need.split(':')[1]} GiB of memory available, {available_gib:.1f} are"
    if "node" in needs:
        try:
            socket.create_connection(("127.0.0.1", 9042), timeout=1).close()
        except OSError:
            return "needs the demo node on 127.0.0.1:9042 (scripts/demo)"
    return None


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", nargs="*", default=[], help="benchmark scripts to run (e.g. import_speed.py)")
    parser.add_argument("--skip", nargs="*", default=[], help="benchmark scripts to leave out")
    args = parser.parse_args()
    figures = expected()
    runs: dict[tuple[str, tuple[str, ...]], list[str]] = {}
    for name, figure in figures.items():
        runs.setdefault((figure["benchmark"], tuple(figure["args"])), []).append(name)
    measured: dict[str, float] = {}
    not_run: dict[str, str] = {}
    for (script, script_args), names in runs.items():
        if (args.only and script not in args.only) or script in args.skip:
            not_run.update(dict.fromkeys(names, "left out"))
            continue
        lacking = missing(figures[names[0]].get("needs", []))
        if lacking:
            not_run.update(dict.fromkeys(names, lacking))
            continue
        print(f"== {script} {' '.join(script_args)}", flush=True)
        result = subprocess.run([sys.executable, str(HERE / script), *script_args], stdout=subprocess.PIPE, text=True)
        sys.stdout.write(result.stdout)
        if result.returncode != 0:
            not_run.update(dict.fromkeys(names, f"{script} failed (exit status {result.returncode})"))
            continue
        printed = parse(result.stdout)
        for name in names:
            if name in printed:
                measured[name] = printed[name]
            else:
                not_run[name] = f"{script} printed no FIGURE {name}"
    print()
    print(f"{'figure':32} {'measured':>10} {'stated':>10} {'noise':>6}  unit")
    any_worse = False
    for name, figure in figures.items():
        if name in measured:
            flag = ""
            if worse(figure, measured[name]):
                flag, any_worse = "  WORSE", True
            print(
                f"{name:32} {measured[name]:10.3f} {figure['value']:10.3f} {figure['noise']:6.0%}  "
                f"{figure['unit']}{flag}"
            )
        else:
            print(
                f"{name:32} {'-':>10} {figure['value']:10.3f} {figure['noise']:6.0%}  "
                f"{figure['unit']}  not run: {not_run[name]}"
            )
    missing_figures = unstated(figures)
    if missing_figures:
        print(f"benchmarks stating no figure in figures.toml (not run): {', '.join(missing_figures)}")
    return 1 if any_worse else 0


if __name__ == "__main__":
    sys.exit(main())
