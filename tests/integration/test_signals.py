"""Signals at any moment of `casstrace run`, against the test node with real BPF.

Each trial runs the real command (tests/helpers/signal_trial.py) and sends it SIGINT, SIGTERM or
SIGHUP from inside one step of the capture → trace routine: compiling and attaching the probes, an
execution, detaching, reading the maps, reading the node's query trace, writing the trace, writing
the report. Whatever the moment, the command must leave no BPF program loaded (checked by the ids
of the programs it held, with the kernel), keep a whole, readable trace (marked incomplete unless
the signal came once it was finished) with its HTML report, say where it is, exit with 128 + the
signal's number, leave no `.partial`, and stop within a few seconds. A second SIGINT changes none
of that; a SIGKILL leaves a `.partial`, which the next run removes.

The detach trials run one at a time with nothing else holding the capture's tracepoints: each
pays the detach a run alone pays (~6 s on kernel 6.18) between its signal and its exit. The others
run beside an idle program holding those tracepoints (bpf_programs.held_tracepoints), where their
own detach, after the signal, is quick: the same code, without the kernel's wait.
"""

import os
import re
import signal
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import pytest

from bpf_programs import held_tracepoints, program_exists, program_ids
from casstrace.reports import beside_trace
from casstrace.traces import Trace
from casstrace_cli import CASSTRACE

pytestmark = pytest.mark.integration

if os.geteuid() != 0:
    pytest.skip("BPF capture needs root", allow_module_level=True)

TRIAL = Path(__file__).resolve().parents[1] / "helpers" / "signal_trial.py"
STOP_WITHIN_S = 10  # from the signal to the exit, report included, on a busy 2-core machine
PARALLEL = 2  # trials at once beside the held tracepoints (each is mostly waiting: the compiler, the node, the disk)
SENT = re.compile(r"signal-trial: sent (\w+) at (\d+)")
REASONS = {"SIGINT": "interrupted (Ctrl-C)", "SIGTERM": "terminated (SIGTERM)", "SIGHUP": "hung up (SIGHUP)"}

# (moment, signal, seed): every step of the routine, each signal, several places inside each step
TRIALS = [
    ("attach", "SIGINT", 1),
    ("attach", "SIGTERM", 2),
    ("attach", "SIGHUP", 3),
    ("execute", "SIGINT", 4),
    ("execute", "SIGTERM", 5),
    ("execute", "SIGHUP", 6),
    ("execute", "SIGINT", 7),
    ("detach", "SIGINT", 8),
    ("detach", "SIGTERM", 9),
    ("detach", "SIGINT", 10),
    ("maps", "SIGINT", 11),
    ("maps", "SIGHUP", 12),
    ("maps", "SIGTERM", 13),
    ("collect", "SIGINT", 14),
    ("collect", "SIGTERM", 15),
    ("trace", "SIGINT", 16),
    ("trace", "SIGTERM", 17),
    ("trace", "SIGHUP", 18),
    ("trace", "SIGINT", 19),
    ("report", "SIGINT", 20),
    ("report", "SIGTERM", 21),
    ("report", "SIGHUP", 22),
]
DOUBLE = [("execute", 23), ("detach", 24), ("trace", 25)]


class Watched:
    """A command run, with the BPF program ids it held (read from its fdinfo while it runs)."""

    def __init__(self, argv: list[str]):
        self.process = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.program_ids: set[int] = set()
        self._watcher = threading.Thread(target=self._watch)
        self._watcher.start()

    def _watch(self) -> None:
        while self.process.poll() is None:
            self.program_ids |= program_ids(self.process.pid)
            time.sleep(0.01)

    def finish(self, timeout: float = 120) -> tuple[int, str, str, int]:
        """(exit status, stdout, stderr, monotonic ns at the exit)."""
        stdout, stderr = self.process.communicate(timeout=timeout)
        ended = time.monotonic_ns()
        self._watcher.join()
        return self.process.returncode, stdout, stderr, ended


@dataclass
class Trial:
    """One interrupted `casstrace run`, finished."""

    moment: str
    signame: str
    out: Path
    status: int
    stdout: str
    stderr: str
    ended_ns: int
    program_ids: set[int]


def run_trial(
    directory: Path, node_args: list[str], query: str, moment: str, signame: str, seed: int, again: bool = False
) -> Trial:
    out = directory / "t.trace"
    watched = Watched(
        [
            sys.executable,
            str(TRIAL),
            moment,
            signame,
            str(seed),
            *(["--again"] if again else []),
            "--",
            "run",
            query,
            *node_args,
            "--repeat",
            "2",
            "--warmup",
            "0",
            "--out",
            str(out),
        ]
    )
    status, stdout, stderr, ended = watched.finish()
    return Trial(moment, signame, out, status, stdout, stderr, ended, watched.program_ids)


def check(trial: Trial) -> None:
    moment, signame, out = trial.moment, trial.signame, trial.out
    context = f"{moment} {signame}:\n{trial.stdout}\n{trial.stderr}"
    sent = SENT.search(trial.stderr)
    assert sent and sent.group(1) == signame, context
    assert trial.status == 128 + signal.Signals[signame], context
    assert "Traceback" not in trial.stderr, context
    assert (trial.ended_ns - int(sent.group(2))) / 1e9 < STOP_WITHIN_S, context
    assert trial.program_ids, context  # the probes were attached ...
    assert not any(program_exists(i) for i in trial.program_ids), context  # ... and are gone
    # The command's last word (a second signal may still be acknowledged after it).
    said = [
        line for line in trial.stderr.splitlines() if line.startswith(f"casstrace: {REASONS[signame]}: the trace, ")
    ]
    assert len(said) == 1 and said[0].endswith(f", is at {out}"), context
    last = said[0]
    with Trace(out) as trace:
        if "marked incomplete" in last:
            assert not trace.complete and trace.meta["incomplete_reason"] == REASONS[signame], context
        else:  # the signal came once the trace was finished: whole, and said so
            assert trace.complete and moment in ("trace", "report"), context
        assert trace.rows("SELECT count(*) FROM windows")[0][0] >= 1
        executions = trace.rows("SELECT count(*) FROM executions")[0][0]
        if moment in ("detach", "maps", "collect", "trace", "report"):
            assert executions == 3, context  # the two measured ones and the tracing one, all kept
    assert f"report: {beside_trace(out, 'html')}" in trial.stdout, context
    assert sorted(p.name for p in out.parent.iterdir()) == sorted([out.name, beside_trace(out, "html").name]), context


@dataclass
class Killed:
    """A `casstrace run` killed (SIGKILL) while writing its trace, and the run after it in the same
    directory."""

    status: int
    stderr: str
    program_ids: set[int]
    still_loaded: list[int]  # of those, the kernel's, once the killed run has exited
    left: list[str]  # the directory's names then
    rerun: subprocess.CompletedProcess[str]
    left_by_rerun: list[str]


def kill_and_rerun(directory: Path, node_args: list[str], query: str) -> Killed:
    killed = Watched(
        [
            sys.executable,
            str(TRIAL),
            "trace",
            "SIGKILL",
            "26",
            "--",
            "run",
            query,
            *node_args,
            "--repeat",
            "2",
            "--warmup",
            "0",
            "--out",
            str(directory / "killed.trace"),
        ]
    )
    status, _, stderr, _ = killed.finish()
    still_loaded = [i for i in killed.program_ids if program_exists(i)]
    left = [p.name for p in directory.iterdir()]
    rerun = subprocess.run(
        [
            *CASSTRACE,
            "run",
            query,
            *node_args,
            "--repeat",
            "1",
            "--warmup",
            "0",
            "--no-html",
            "--out",
            str(directory / "rerun.trace"),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    return Killed(status, stderr, killed.program_ids, still_loaded, left, rerun, [p.name for p in directory.iterdir()])


@dataclass
class Outcomes:
    trials: dict[tuple[str, str, int, bool], Trial]  # by (moment, signal, seed, a second SIGINT)
    killed: Killed


@pytest.fixture(scope="module")
def outcomes(tmp_path_factory, node_args, demo_query) -> Outcomes:
    """Every trial, and the SIGKILL's. Those whose moment is not the detach run two at a time beside
    held tracepoints; then the detach trials, one at a time, alone (the module's docstring)."""
    plan = [(moment, signame, seed, False) for moment, signame, seed in TRIALS]
    plan += [(moment, "SIGINT", seed, True) for moment, seed in DOUBLE]
    directories = {key: tmp_path_factory.mktemp(f"{key[0]}-{key[2]}") for key in plan}

    def trial(key: tuple[str, str, int, bool]) -> Trial:
        return run_trial(directories[key], node_args, demo_query, *key)

    with held_tracepoints(), ThreadPoolExecutor(max_workers=PARALLEL) as pool:
        killed = pool.submit(kill_and_rerun, tmp_path_factory.mktemp("killed"), node_args, demo_query)
        beside = {key: pool.submit(trial, key) for key in plan if key[0] != "detach"}
        trials = {key: future.result() for key, future in beside.items()}
        killed_outcome = killed.result()
    trials |= {key: trial(key) for key in plan if key[0] == "detach"}
    return Outcomes(trials, killed_outcome)


@pytest.mark.parametrize("moment, signame, seed", TRIALS)
def test_a_signal_at_any_moment_keeps_a_whole_trace(outcomes, moment, signame, seed):
    check(outcomes.trials[(moment, signame, seed, False)])


@pytest.mark.parametrize("moment, seed", DOUBLE)
def test_a_second_sigint_changes_nothing(outcomes, moment, seed):
    check(outcomes.trials[(moment, "SIGINT", seed, True)])


def test_sigkill_leaves_a_partial_that_the_next_run_removes(outcomes):
    killed = outcomes.killed
    assert killed.status == -signal.SIGKILL, killed.stderr
    assert killed.program_ids and not killed.still_loaded
    assert killed.left == [".killed.trace.partial"]
    assert killed.rerun.returncode == 0, killed.rerun.stderr
    assert killed.left_by_rerun == ["rerun.trace"]
