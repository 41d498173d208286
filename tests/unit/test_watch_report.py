"""reports/watch.py: each statement's findings with what their fix would save, as in a run's report (the
report in every format on synthetic inputs: tests/unit/test_watch_units.py)."""

import dataclasses
import json

import pytest

import synthetic_traces as synthetic
from casstrace.analyses.watch import analyse_watch
from casstrace.reports import common, render
from casstrace.reports.formats import FORMATS
from casstrace.reports.watch import document


@pytest.mark.parametrize("format_", ["text", "md", "html"])
def test_a_statement_s_findings_come_with_what_their_fix_would_save(tmp_path, format_):
    """3,000 tombstones past 1 live row: the tombstones' fix leaves 1/3,001 of the read."""
    watched = analyse_watch(synthetic.watch(tmp_path / "w.trace", data_read=600_000, tombstone_cells=3000))
    tombstones = next(f for f in watched.statements[0].findings if f.cause == "tombstones")
    assert tombstones.read_after_fix_bytes == pytest.approx(600_000 / 3001)
    assert render(document(watched), format_).count("once fixed: about 199 B read per execution") == 1


def test_a_statements_measures_per_execution_show_in_every_format_as_in_a_run(tmp_path):
    """The sampled session's traced time (its duration) is summarised as `run` summarises its executions'
    measures: the same item in every format, the same JSON entry."""
    watched = analyse_watch(synthetic.watch(tmp_path / "w.trace", data_read=600_000))
    (statement,) = watched.statements
    (traced,) = [s for s in statement.measures if s.name == "traced_ns"]
    assert (traced.executions, traced.median, traced.total) == (
        1,
        2 * synthetic.WATCH_SLOT_NS,
        2 * synthetic.WATCH_SLOT_NS,
    )
    shown = common.summary_items([traced])
    for format_ in FORMATS:
        text = render(document(watched), format_)
        if format_ == "json":
            (entry,) = [
                m for m in json.loads(text)["statements"][0]["measures_per_execution"] if m["name"] == "traced_ns"
            ]
            assert entry == dataclasses.asdict(traced)
        else:
            label, value = shown[0]
            assert label.replace("'", "&#x27;" if format_ == "html" else "'") in text, format_
            assert value in text, format_
