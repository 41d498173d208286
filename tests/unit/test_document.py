"""reports/document.py and the renderers: every kind of block is laid out by every format, each section
in the views it names."""

import json
import typing

from casstrace.analyses.model import Spectrogram
from casstrace.reports import FORMATS, ReportOptions, render
from casstrace.reports.document import (
    FULL,
    Block,
    Chart,
    Code,
    Document,
    ExecutionBars,
    FindingItem,
    Findings,
    FlameGraph,
    Heatmap,
    Items,
    Notes,
    OffsetMap,
    Paragraph,
    Query,
    Section,
    Series,
    Subheading,
    Table,
    VerdictLine,
)

DRAWINGS = (Chart, ExecutionBars, FlameGraph, OffsetMap, Heatmap)  # html's; text draws a terminal Heatmap


def every_block() -> list[Block]:
    return [
        Subheading("subheading-words"),
        Paragraph("paragraph-words", "warning"),
        Notes(["note-words"]),
        Code("SELECT code_words FROM t"),
        Query("SELECT query_words FROM t", "scope-words"),
        Items([("item-label", "item-value")]),
        Table(("table-heading",), [("table-cell",)]),
        Findings(None, [FindingItem("finding-title", "measured", "estimate-words", ["evidence-words"], ["try-words"])]),
        Chart("chart-title", "x", "y", [1.0, 2.0], [Series("series", [1.0, 2.0])]),
        ExecutionBars({"data read": 4096.0}, None),
        FlameGraph("flame-title", [], "bytes"),
        Heatmap(Spectrogram("heatmap-title", 0.1, {(0, 10): 3}, 1, 3), terminal=True),
    ]


def test_every_block_type_is_in_the_test():
    assert {type(block) for block in every_block()} | {OffsetMap} == set(typing.get_args(Block))


def test_every_format_lays_out_every_block():
    report = Document(
        "title-words",
        {"kind": "test"},
        [Section("section-heading", every_block()), Section("full-only", [Paragraph("full-words")], FULL)],
        subject="subject-words",
        verdict=VerdictLine("flagged", "summary-words", ["verdict-note"], "about-words"),
        warnings=["warning-words"],
    )
    words = [
        "title-words", "subject-words", "summary-words", "verdict-note", "warning-words", "section-heading",
        "subheading-words", "paragraph-words", "note-words", "code_words", "query_words", "scope-words",
        "item-label", "item-value", "table-heading", "table-cell", "finding-title", "estimate-words",
        "evidence-words", "try-words",
    ]  # fmt: skip
    text = render(report, "text")
    assert [w for w in words if w not in text] == [] and "full-words" in text and "heatmap-title" in text
    markdown = render(report, "md").replace("\\", "")
    # md is the summary view (no full-only section) and names the verdict, not the title
    assert [w for w in words if w not in markdown] == ["title-words", "subject-words"]
    assert "full-words" not in markdown
    page = render(report, "html")
    assert [w for w in words if w not in page] == [] and "full-words" in page
    assert page.count("Plotly.newPlot") == 3  # the chart, the bars, the heatmap (no stacks: no flame graph)
    assert json.loads(render(report, "json")) == {"kind": "test"}
    brief = render(report, "text", ReportOptions(brief=True))
    assert "section-heading" in brief and "full-words" not in brief
    assert set(FORMATS) == {"text", "md", "json", "html"}
