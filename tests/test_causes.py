"""Cause names are one list (analyses.model.Cause): every one has a finder, and the JSON schema doc
and the README name exactly these."""

import re
from pathlib import Path

from casstrace.analyses.causes import CAUSE_FINDERS
from casstrace.analyses.model import CAUSES
from casstrace.reports import json_report

PACKAGE = Path(__file__).resolve().parents[1]


def test_every_cause_has_one_finder():
    assert tuple(CAUSE_FINDERS) == CAUSES


def test_the_json_schema_doc_lists_every_cause():
    doc = json_report.__doc__ or ""
    listed = doc[doc.index('"cause":'):doc.index('"title": str')]
    assert set(re.findall(r'"(\w+)"', listed)) - {"cause"} == set(CAUSES)


def test_the_readme_lists_every_cause():
    readme = (PACKAGE / "README.md").read_text()
    listed = readme[readme.index("Causes are named only with evidence"):]
    listed = listed[:listed.index("below the threshold")]
    assert set(re.findall(r"`(\w+)`", listed)) == set(CAUSES)
