"""Signals during the capture's detach (test_signals has the other moments and its checks): SIGINT or
SIGTERM between two tracepoints being detached, and a second SIGINT shortly after the first.

The trials run one at a time with nothing else holding the capture's tracepoints, and the module runs
alone (tests/worker_groups.py): each pays the detach a run alone pays (~6 s on kernel 6.18) between
its signal and its exit, and must still stop within signal_trials.STOP_WITHIN_S.
"""

import os

import pytest

from signal_trials import Trial, check, run_trial

pytestmark = [pytest.mark.integration, pytest.mark.detach_alone]  # not beside conftest's held tracepoints

if os.geteuid() != 0:
    pytest.skip("BPF capture needs root", allow_module_level=True)

# (signal, seed, a second SIGINT)
TRIALS = [("SIGINT", 8, False), ("SIGTERM", 9, False), ("SIGINT", 10, False), ("SIGINT", 24, True)]


@pytest.fixture(scope="module")
def trials(tmp_path_factory, node_args, demo_query) -> dict[tuple[str, int, bool], Trial]:
    return {
        (signame, seed, again): run_trial(
            tmp_path_factory.mktemp(f"detach-{seed}"), node_args, demo_query, "detach", signame, seed, again
        )
        for signame, seed, again in TRIALS
    }


@pytest.mark.parametrize("signame, seed, again", TRIALS)
def test_a_signal_during_the_detach_keeps_a_whole_trace(trials, signame, seed, again):
    check(trials[(signame, seed, again)])
