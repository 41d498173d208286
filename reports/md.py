"""The Markdown report: a ticket comment, the summary view (the verdict, the key numbers, the findings,
the top files)."""

from collections.abc import Sequence

from casstrace.reports.document import (
    Block,
    Code,
    Document,
    Findings,
    Items,
    Notes,
    Paragraph,
    Query,
    Subheading,
    Table,
    Tone,
)
from casstrace.reports.formats import ReportOptions
from casstrace.terminal import printable

TONE_ICONS: dict[Tone, str] = {"good": "🟢 ", "bad": "🔴 ", "warning": "⚠️ ", "muted": "", "plain": ""}
VERDICT_ICONS = {"flagged": "🔴", "not flagged": "🟢"}


class Markdown:
    suffix = ".md"
    writes_a_file = False  # standard output without --output

    def render(self, document: Document, options: ReportOptions) -> str:
        if document.verdict is None:
            lines = [f"### {_escape(document.title)}", ""]
        else:
            verdict = document.verdict
            lines = [f"### {VERDICT_ICONS.get(verdict.status, '🟡')} casstrace: {verdict.status}", ""]
        lines += [f"> ⚠️ **{_escape(warning)}**" for warning in document.warnings]
        if document.warnings:
            lines.append("")
        if document.verdict is not None:
            lines.append(_escape(document.verdict.summary))
            lines += [f"- _{_escape(note)}_" for note in document.verdict.notes]
            lines.append("")
        for section in document.shown("summary"):
            if section.collapsed:
                lines += [f"<details><summary>{_escape(section.heading or '')}</summary>", ""]
            elif section.heading is not None:
                lines += [f"#### {_escape(section.heading)}", ""]
            for block in section.blocks:
                lines += _block(block)
            if section.collapsed:
                lines += ["</details>", ""]
        return "\n".join(lines)


RENDERER = Markdown()


def _block(block: Block) -> list[str]:
    """The block's lines, a blank line after it."""
    if isinstance(block, Subheading):
        return [f"##### {_escape(block.text)}", ""]
    if isinstance(block, Paragraph):
        text = _escape(block.text)
        return [f"_{text}_" if block.tone == "muted" else f"{TONE_ICONS[block.tone]}{text}", ""]
    if isinstance(block, Notes):
        return [*(f"- {_escape(line)}" for line in block.lines), ""]
    if isinstance(block, Code):
        return _sql(block.text)
    if isinstance(block, Query):
        return [*(_sql(block.text) if block.text else []), f"Totals cover {_escape(block.scope)}.", ""]
    if isinstance(block, Items):
        return _table(block.headers, block.rows) + [""]
    if isinstance(block, Table):
        return _table(block.headers, block.rows) + [""]
    if isinstance(block, Findings) and block.items:
        lines = [f"#### {_escape(block.heading)}"] if block.heading is not None else []
        for finding in block.items:
            lines.append(f"- **{_escape(finding.title)}** ({finding.certainty})")
            if finding.estimate:
                lines.append(f"  - {_escape(finding.estimate)}")
            lines += [f"  - evidence: {_escape(e)}" for e in finding.evidence]
            lines += [f"  - try: {_escape(s)}" for s in finding.suggestions]
        return lines + [""]
    return []  # drawings: html's


def _table(headers: Sequence[str], rows: Sequence[Sequence[object]]) -> list[str]:
    if not rows:
        return ["_none_"]
    return [
        "| " + " | ".join(_escape(str(h)) for h in headers) + " |",
        "|" + "|".join("---" for _ in headers) + "|",
    ] + ["| " + " | ".join(_escape(str(cell)) for cell in row) + " |" for row in rows]


def _sql(query: str) -> list[str]:
    return ["```sql", printable(query).replace("```", "`\u200b``"), "```", ""]


def _escape(text: str) -> str:
    """Keep names (which may hold anything) from becoming Markdown or HTML in a ticket, or control
    characters on a terminal (a newline would end a table's row)."""
    for char in "\\`*_[]<>|#":
        text = text.replace(char, "\\" + char)
    return printable(text)
