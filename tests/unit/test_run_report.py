"""reports/run.py: one trace's Analysis as one Document, its outline written once for every format."""

import dataclasses
import html
import json

from casstrace.reports import ReportOptions, document, render
from casstrace.reports.document import Findings, Heatmap, Items, Query, Table


def test_the_outline_is_the_reports_sections_in_order(wide):
    report = document(wide)
    assert report.subject == wide.trace_path and report.verdict is not None
    assert report.verdict.status == "flagged" and report.verdict.about == wide.query
    headings = [section.heading for section in report.sections if section.heading is not None]
    assert headings[:2] == ["Executions", f"Top files ({wide.scope})"]
    assert headings[2:] == [
        "SSTable files",
        "Other files and sockets",
        "Access patterns",
        "Syscall latency",
        "Spectrograms",
        "Cassandra query trace",
        "Context",
    ]
    # the head: what `run` prints (brief), then the rest by view
    brief = [block for section in report.shown("brief") for block in section.blocks]
    assert [type(block) for block in brief] == [Query, Items, Findings, Findings]
    summary_tables = [b for s in report.shown("summary") for b in s.blocks if isinstance(b, Table)]
    assert summary_tables[0].headers[0] == "Data read"  # the first screen: md and html alike
    heatmaps = [b for s in report.sections for b in s.blocks if isinstance(b, Heatmap)]
    assert [h.terminal for h in heatmaps] == [True, False]  # the terminal draws the file I/O one only


def test_every_format_shows_each_finding_once_with_its_estimate(wide):
    [flagged] = [b for s in document(wide).sections for b in s.blocks if isinstance(b, Findings) and b.items]
    assert [f.title for f in flagged.items] == [f.title for f in wide.findings]
    [estimated] = [f for f in flagged.items if f.estimate]
    assert estimated.estimate and estimated.estimate.startswith("once fixed: about 36.0 KiB read per execution")
    for name in ("text", "md", "html"):
        page = render(wide, name)
        assert page.count("once fixed: about 36.0 KiB") == 1, name
        shown = (html.escape(e[:40]) if name == "html" else e[:40] for e in estimated.evidence)
        assert all(part in page for part in shown), name
    findings = json.loads(render(wide, "json"))["findings"]
    assert [f["read_after_fix_bytes"] for f in findings] == [f.read_after_fix_bytes for f in wide.findings]


def test_the_brief_view_is_the_head(wide):
    brief = render(wide, "text", ReportOptions(brief=True))
    full = render(wide, "text")
    assert full.startswith(brief.splitlines()[0]) and "== Findings ==" in brief
    assert "SSTable files" not in brief and "SSTable files" in full
    assert "Top files" not in full  # the summary's own section: md's
    assert "Top files" in render(wide, "md") and "SSTable files" not in render(wide, "md")


def _device_item(analysis):
    """The device amplification item in every format, and in the headline numbers."""
    items = [block for s in document(analysis).sections for block in s.blocks if isinstance(block, Items)]
    labels = [label for block in items for label, _ in block.rows]
    texts = {fmt: render(analysis, fmt) for fmt in ("text", "md", "html")}
    return labels.count("Device amplification"), {fmt: "Device amplification" in text for fmt, text in texts.items()}


def test_the_device_amplification_is_left_out_when_the_device_read_nothing(wide):
    assert wide.overall.cache_miss_bytes == 0  # a warm node's read: every page from the page cache
    assert _device_item(wide) == (0, {"text": False, "md": False, "html": False})
    assert json.loads(render(wide, "json"))["amplification"]["device"] == 0.0  # the schema's field stays


def test_the_device_amplification_is_shown_when_the_device_read(wide):
    payload = wide.overall.payload_bytes
    cold = dataclasses.replace(
        wide, overall=dataclasses.replace(wide.overall, cache_miss_bytes=40 * payload, device=40.0)
    )
    assert _device_item(cold) == (1, {"text": True, "md": True, "html": True})
    assert ("Device amplification", "40.0x") in [
        row for s in document(cold).sections for b in s.blocks if isinstance(b, Items) for row in b.rows
    ]
