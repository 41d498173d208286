"""Cause names are one list (analyses.model.Cause): every one has a finder, and the JSON schema doc
and docs/measurement.md name exactly these."""

import re
from pathlib import Path

import synthetic_traces as synthetic
from casstrace.analyses import analyse
from casstrace.analyses.causes import CAUSE_FINDERS
from casstrace.analyses.compare import compare
from casstrace.analyses.model import CAUSES
from casstrace.reports import json_report

PACKAGE = Path(__file__).resolve().parents[2]


def test_every_cause_has_one_finder():
    assert tuple(CAUSE_FINDERS) == CAUSES


def test_the_json_schema_doc_lists_every_cause():
    doc = json_report.__doc__ or ""
    listed = doc[doc.index('"cause":') : doc.index('"title": str')]
    assert set(re.findall(r'"(\w+)"', listed)) - {"cause"} == set(CAUSES)


def test_the_measurement_doc_lists_every_cause():
    doc = (PACKAGE / "docs" / "measurement.md").read_text()
    listed = doc[doc.index("### Causes") :]
    listed = listed[: listed.index("Below the threshold")]
    assert set(re.findall(r"^\| `(\w+)` \|", listed, re.MULTILINE)) == set(CAUSES)


def test_compare_s_amplification_gate_is_the_verdict_s_rule(tmp_path):
    """--max-amplification X fails the second query when it would be flagged at threshold X: the narrow
    read (1.6x its payload, 0.87x its necessary read) passes at 1.5, the wide read fails at 1,000."""
    narrow = analyse(synthetic.wide_select_c0(tmp_path / "narrow.trace", data_read=32_084))
    wide = analyse(synthetic.wide_select_c0(tmp_path / "wide.trace"))
    assert narrow.overall.read is not None and narrow.overall.over_necessary is not None
    assert narrow.overall.read > 1.5 and narrow.overall.over_necessary < 1
    [passed] = compare(wide, narrow, max_amplification=1.5).gates
    assert passed.passed, passed.reason
    [failed] = compare(narrow, wide, max_amplification=1_000).gates
    assert not failed.passed and "1,697x its necessary read" in failed.reason
