"""analyses/verdict_rule.py: the one rule of every verdict (`run`, `report`, `compare`, `sweep`, `watch`).
The one data-read formula both count by: tests/unit/test_amplification.py."""

import json

import pytest

import synthetic_traces as synthetic
from casstrace.analyses import VerdictRule, judge
from casstrace.analyses.watch import analyse_watch
from casstrace_cli import casstrace

KiB = 1024


@pytest.mark.parametrize(
    "data_read_bytes, necessary, executions, extra, status",
    [
        (100 * KiB, 10 * KiB, 1, {}, "flagged"),  # 10x and 90 KiB past it
        (99 * KiB, 10 * KiB, 1, {}, "not flagged"),  # 9.9x
        (10 * KiB, KiB, 1, {}, "not flagged"),  # 10x, but only 9 KiB past it
        (1000 * KiB, 100 * KiB, 10, {}, "flagged"),  # per execution: 90 KiB past it
        (2000 * KiB, 100 * KiB, 30, {}, "not flagged"),  # 20x, but per execution 63.3 KiB past it
        (100 * KiB, None, 1, {}, "undetermined"),  # nothing to judge it by
        (100 * KiB, 10 * KiB, 1, {"data_read_least": 20 * KiB}, "undetermined"),  # flagged on its upper bound only
        (100 * KiB, 10 * KiB, 1, {"data_read_least": 100 * KiB}, "flagged"),
        (50 * KiB, 10 * KiB, 1, {"unseen": True}, "undetermined"),  # unseen reads could lift it
        (200 * KiB, 10 * KiB, 1, {"unseen": True}, "flagged"),  # unseen reads only add to a flagged read
        (80 * KiB, 10 * KiB, 1, {"necessary_least": 2 * KiB}, "undetermined"),  # flagged against the least only
        (80 * KiB, 10 * KiB, 1, {"necessary_least": 9 * KiB}, "not flagged"),
    ],
)
def test_judge_gives_the_status_the_rule_and_the_bounds_allow(data_read_bytes, necessary, executions, extra, status):
    assert judge(VerdictRule(), data_read_bytes, necessary, executions, **extra) == status


def test_the_rule_takes_threshold_and_min_excess():
    assert VerdictRule(threshold=3).exceeds(100 * KiB, 30 * KiB, executions=1)
    assert not VerdictRule(threshold=4).exceeds(100 * KiB, 30 * KiB, executions=1)
    assert not VerdictRule(threshold=3, min_excess=71 * KiB).exceeds(100 * KiB, 30 * KiB, executions=1)
    assert VerdictRule().describe() == "threshold 10x and 64.0 KiB per execution"


def test_a_watch_statement_is_judged_by_the_rule_it_is_given(tmp_path):
    # 200,000 B read for one row: 4x the necessary read of a row of the table's mean cell (49,408 B),
    # 12x the least one c0 cell takes (one chunk): undetermined at 10x, flagged at 3x
    path = synthetic.watch(tmp_path / "watch.trace", data_read=200_000)
    assert analyse_watch(path).statements[0].verdict == "undetermined"
    assert analyse_watch(path, VerdictRule(threshold=3)).statements[0].verdict == "flagged"
    assert analyse_watch(path, VerdictRule(threshold=3, min_excess=200_000)).statements[0].verdict == "not flagged"


def test_report_threshold_applies_to_a_watch_trace(tmp_path):
    """The round-4 bug: `casstrace report --threshold 3 WATCH.trace` ignored the flag."""
    path = synthetic.watch(tmp_path / "watch.trace", data_read=200_000)
    verdicts = {}
    for options in ((), ("--threshold", "3"), ("--threshold", "3", "--min-excess", "200000")):
        done = casstrace("report", "--format", "json", *options, path)
        assert done.returncode == 0, done.stderr
        verdicts[options] = json.loads(done.stdout)["statements"][0]["verdict"]
    assert list(verdicts.values()) == ["undetermined", "flagged", "not flagged"]
