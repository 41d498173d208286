"""reports/html_report.py: one self-contained HTML page, every name escaped (opened in a browser:
tests/integration/test_html_in_a_browser.py)."""

import html
import re

import synthetic_traces as synthetic
from casstrace.reports import render


def test_html_escapes_every_name(hostile):
    page = render(hostile, "html")
    assert synthetic.HOSTILE not in page
    assert "<script>alert(2)</script>" not in page
    assert html.escape(f"wide{synthetic.HOSTILE}") in page  # the table, as text
    # inside plotly's figure JSON '<' is written \u003c, so no tag can close the script
    assert "\\u003cimg src=x onerror" in page or "&lt;img src=x onerror" in page


def test_html_is_self_contained(wide):
    page = render(wide, "html")
    assert not re.search(r"<script[^>]+src=", page)
    assert not re.search(r"<link[^>]+href=", page)
    assert page.count("Plotly.newPlot") == 5  # the first screen + 2 offset maps + 2 spectrograms
    assert page.index("FLAGGED") < page.index("<h2>SSTable files")  # the verdict first
