"""Signals at any moment of `casstrace run`, against the test node with real BPF.

Each trial runs the real command (tests/helpers/signal_trial.py) and sends it SIGINT, SIGTERM or
SIGHUP from inside one step of the capture → trace routine: compiling and attaching the probes, an
execution, reading the maps, reading the node's query trace, writing the trace, writing the report.
Whatever the moment, the command must leave no BPF program loaded (checked by the ids of the programs
it held, with the kernel), keep a whole, readable trace (marked incomplete unless the signal came
once it was finished) with its HTML report, say where it is, exit with 128 + the signal's number,
leave no `.partial`, and stop within a few seconds (signal_trials.check). A second SIGINT changes
none of that; a SIGKILL leaves a `.partial`, which the next run removes.

The trials run beside an idle program holding the capture's tracepoints (conftest's
quick_detaches), where their own detach, after the signal, is quick: the same code,
without the kernel's wait. A signal during the detach itself, which must pay the wait a run alone
pays, is test_signals_at_detach's (it runs alone).
"""

import os
import signal
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import pytest

from signal_trials import Killed, Trial, check, kill_and_rerun, run_trial

pytestmark = pytest.mark.integration

if os.geteuid() != 0:
    pytest.skip("BPF capture needs root", allow_module_level=True)

PARALLEL = 2  # trials at once beside the held tracepoints (each is mostly waiting: the compiler, the node, the disk)

# (moment, signal, seed): every step of the routine but the detach, each signal, several places inside each step
TRIALS = [
    ("attach", "SIGINT", 1),
    ("attach", "SIGTERM", 2),
    ("attach", "SIGHUP", 3),
    ("execute", "SIGINT", 4),
    ("execute", "SIGTERM", 5),
    ("execute", "SIGHUP", 6),
    ("execute", "SIGINT", 7),
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
DOUBLE = [("execute", 23), ("trace", 25)]


@dataclass
class Outcomes:
    trials: dict[tuple[str, str, int, bool], Trial]  # by (moment, signal, seed, a second SIGINT)
    killed: Killed


@pytest.fixture(scope="module")
def outcomes(tmp_path_factory, node_args, demo_query) -> Outcomes:
    """Every trial, and the SIGKILL's, two at a time beside held tracepoints."""
    plan = [(moment, signame, seed, False) for moment, signame, seed in TRIALS]
    plan += [(moment, "SIGINT", seed, True) for moment, seed in DOUBLE]
    directories = {key: tmp_path_factory.mktemp(f"{key[0]}-{key[2]}") for key in plan}

    def trial(key: tuple[str, str, int, bool]) -> Trial:
        return run_trial(directories[key], node_args, demo_query, *key)

    with ThreadPoolExecutor(max_workers=PARALLEL) as pool:
        killed = pool.submit(kill_and_rerun, tmp_path_factory.mktemp("killed"), node_args, demo_query)
        trials = {key: pool.submit(trial, key) for key in plan}
        return Outcomes({key: future.result() for key, future in trials.items()}, killed.result())


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
