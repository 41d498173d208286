"""The figures docs/performance.md states, and how benchmarks hand theirs to `scripts/bench`.

Each benchmark prints its headline figures as `FIGURE <name> <value>` lines (report()); the
expected value of each, its noise and which way is better live in benchmarks/figures.toml, the one
place docs/performance.md cites. `scripts/bench` runs the benchmarks and compares.
"""

import functools
import time
import tomllib
from collections.abc import Callable
from pathlib import Path
from typing import Any

FIGURES_TOML = Path(__file__).with_name("figures.toml")
PREFIX = "FIGURE "


def process_cpu_ns(pid: int) -> int:
    """CPU time of the process, all its threads, dead ones included, in ns (its CPU-time clock,
    as clock_getcpuclockid(3) makes it). BPF programs run in the context of the syscalls they
    watch, so this includes them."""
    return time.clock_gettime_ns((~pid << 3) | 2)  # CPUCLOCK_SCHED of the whole process


def cpu_seconds(action: Callable[[], object], repeat: int = 3) -> float:
    """The least CPU time of `repeat` calls of action (this process's: another process's load does not count)."""
    spent = []
    for _ in range(repeat):
        began = time.process_time()
        action()
        spent.append(time.process_time() - began)
    return min(spent)


def report(name: str, value: float) -> None:
    """Prints one figure for scripts/bench (and for a reader: the line says what it is), with its goal
    beside it when figures.toml states one (`goal`), so that a re-run on a quiet machine reads at once."""
    goal = expected().get(name, {}).get("goal")
    beside = ""
    if goal is not None:
        beside = f" (goal {'<=' if expected()[name]['better'] == 'lower' else '>='} {goal:g})"
    print(f"{PREFIX}{name} {value:.6g}{beside}", flush=True)


def parse(output: str) -> dict[str, float]:
    """The figures a benchmark printed."""
    figures = {}
    for line in output.splitlines():
        if line.startswith(PREFIX):
            name, value = line[len(PREFIX) :].split()[:2]
            figures[name] = float(value)
    return figures


@functools.cache
def expected() -> dict[str, dict[str, Any]]:
    """figures.toml: figure name -> {benchmark, args, value, noise, better, unit, readme, goal}."""
    with open(FIGURES_TOML, "rb") as source:
        return tomllib.load(source)["figure"]


def worse(figure: dict[str, Any], measured: float) -> bool:
    """Worse than the stated figure by more than its noise (a relative margin)."""
    value, noise = figure["value"], figure["noise"]
    if figure["better"] == "lower":
        return measured > value * (1 + noise)
    return measured < value * (1 - noise)
