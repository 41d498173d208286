"""Signals at any moment of `casstrace run`, against the test node with real BPF.

Each trial runs the real command (tests/helpers/signal_trial.py) and sends it SIGINT, SIGTERM or
SIGHUP from inside one step of the capture → trace routine: compiling and attaching the probes, an
execution, detaching, reading the maps, reading the node's query trace, writing the trace, writing
the report. Whatever the moment, the command must leave no BPF program loaded (checked by the ids
of the programs it held, with the kernel), keep a whole, readable trace (marked incomplete unless
the signal came once it was finished) with its HTML report, say where it is, exit with 128 + the
signal's number, leave no `.partial`, and stop within a few seconds. A second SIGINT changes none
of that; a SIGKILL leaves a `.partial`, which the next run removes.
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

from bpf_programs import program_exists, program_ids
from casstrace.reports import beside_trace
from casstrace.traces import Trace
from casstrace_cli import CASSTRACE

pytestmark = pytest.mark.integration

if os.geteuid() != 0:
    pytest.skip("BPF capture needs root", allow_module_level=True)

TRIAL = Path(__file__).resolve().parents[1] / "helpers" / "signal_trial.py"
STOP_WITHIN_S = 10  # from the signal to the exit, report included, on a busy 2-core machine
PARALLEL = 2  # trials at once: the suite's signal trials stay within about 3 minutes
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


@pytest.fixture(scope="module")
def trials(tmp_path_factory, node_args, demo_query) -> dict[tuple[str, str, int, bool], Trial]:
    """Every trial, two at a time (each is mostly waiting: for the compiler, the node, the disk)."""
    plan = [(moment, signame, seed, False) for moment, signame, seed in TRIALS]
    plan += [(moment, "SIGINT", seed, True) for moment, seed in DOUBLE]
    with ThreadPoolExecutor(max_workers=PARALLEL) as pool:
        futures = {
            key: pool.submit(run_trial, tmp_path_factory.mktemp(f"{key[0]}-{key[2]}"), node_args, demo_query, *key)
            for key in plan
        }
        return {key: future.result() for key, future in futures.items()}


@pytest.mark.parametrize("moment, signame, seed", TRIALS)
def test_a_signal_at_any_moment_keeps_a_whole_trace(trials, moment, signame, seed):
    check(trials[(moment, signame, seed, False)])


@pytest.mark.parametrize("moment, seed", DOUBLE)
def test_a_second_sigint_changes_nothing(trials, moment, seed):
    check(trials[(moment, "SIGINT", seed, True)])


def test_sigkill_leaves_a_partial_that_the_next_run_removes(tmp_path, node_args, demo_query):
    killed = Watched(
        [
            sys.executable,
            str(TRIAL),
            "trace",
            "SIGKILL",
            "26",
            "--",
            "run",
            demo_query,
            *node_args,
            "--repeat",
            "2",
            "--warmup",
            "0",
            "--out",
            str(tmp_path / "killed.trace"),
        ]
    )
    status, _, stderr, _ = killed.finish()
    assert status == -signal.SIGKILL, stderr
    assert killed.program_ids and not any(program_exists(i) for i in killed.program_ids)
    assert [p.name for p in tmp_path.iterdir()] == [".killed.trace.partial"]
    rerun = subprocess.run(
        [
            *CASSTRACE,
            "run",
            demo_query,
            *node_args,
            "--repeat",
            "1",
            "--warmup",
            "0",
            "--no-html",
            "--out",
            str(tmp_path / "rerun.trace"),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert rerun.returncode == 0, rerun.stderr
    assert [p.name for p in tmp_path.iterdir()] == ["rerun.trace"]
