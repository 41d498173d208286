"""reports/watch.py: each statement's findings with what their fix would save, as in a run's report (the
report in every format on synthetic inputs: tests/unit/test_watch_units.py)."""

import pytest

import synthetic_traces as synthetic
from casstrace.analyses.watch import analyse_watch
from casstrace.reports import render
from casstrace.reports.watch import document


@pytest.mark.parametrize("format_", ["text", "md", "html"])
def test_a_statement_s_findings_come_with_what_their_fix_would_save(tmp_path, format_):
    """3,000 tombstones past 1 live row: the tombstones' fix leaves 1/3,001 of the read."""
    watched = analyse_watch(synthetic.watch(tmp_path / "w.trace", data_read=600_000, tombstone_cells=3000))
    tombstones = next(f for f in watched.statements[0].findings if f.cause == "tombstones")
    assert tombstones.read_after_fix_bytes == pytest.approx(600_000 / 3001)
    assert render(document(watched), format_).count("once fixed: about 199 B read per execution") == 1
