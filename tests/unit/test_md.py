"""reports/md.py: the Markdown report, a ticket comment, with every name escaped."""

import re

import synthetic_traces as synthetic
from casstrace.reports import render


def test_markdown_is_a_ticket_comment(wide, hostile):
    md = render(wide, "md")
    assert md.startswith("### 🔴 casstrace: flagged")
    assert "| Amplification (data read ÷ basis) | 3,129x |" in md
    assert "**Full-row read" in md
    outside_code = re.sub(r"```sql\n.*?\n```", "", render(hostile, "md"), flags=re.S)
    assert synthetic.HOSTILE not in outside_code
    assert "\\<img src=x onerror=alert(1)\\>" in outside_code
