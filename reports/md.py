"""The Markdown report: a ticket comment with the verdict, the key numbers, the top files and the findings."""

from collections.abc import Sequence

from casstrace.analyses.model import Analysis
from casstrace.reports import common
from casstrace.reports.document import Code, Document, Heading, Items, Paragraph, Table, Tone
from casstrace.reports.formats import ReportOptions
from casstrace.terminal import printable

SUFFIX = ".md"
WRITES_A_FILE = False  # standard output without --output
TOP_FILES = 10


def render(analysis: Analysis, options: ReportOptions) -> str:
    lines: list[str] = []
    icon = {"flagged": "🔴", "not flagged": "🟢"}.get(analysis.verdict.status, "🟡")
    lines.append(f"### {icon} casstrace: {analysis.verdict.status}")
    lines.append("")
    for warning in analysis.warnings:
        lines.append(f"> ⚠️ **{_escape(warning)}**")
    if analysis.warnings:
        lines.append("")
    lines.append(_escape(analysis.verdict.summary))
    for note in common.verdict_notes(analysis.verdict):
        lines.append(f"- _{_escape(note)}_")
    lines.append("")
    if analysis.query:
        lines += _sql(analysis.query)
    lines.append(f"Totals cover {_escape(analysis.scope)}.")
    lines.append("")
    lines += _table(common.FIRST_SCREEN_COLUMNS, [common.first_screen_row(analysis)])
    lines.append("")
    lines += _table(("Measure", "Value"), common.amplification_items(analysis))

    for heading, found in (("Findings", analysis.findings), (common.LATENCY_NOTES_HEADING, analysis.latency_notes)):
        if found:
            lines += ["", f"#### {_escape(heading)}"]
        for finding in found:
            lines.append(f"- **{_escape(finding.title)}** ({finding.certainty})")
            if estimate := common.fix_estimate(finding, analysis.read_per_execution):
                lines.append(f"  - {_escape(estimate)}")
            lines += [f"  - evidence: {_escape(e)}" for e in finding.evidence]
            lines += [f"  - try: {_escape(s)}" for s in finding.suggestion]

    if analysis.nodes:
        lines += ["", f"#### {_escape(common.nodes_heading(analysis))}", ""]
        lines += _table(common.NODE_COLUMNS, common.node_rows(analysis))
        notes = common.node_notes(analysis)
        if notes:
            lines += ["", *(f"- {_escape(note)}" for note in notes)]
    if analysis.executions:
        lines += ["", "#### Executions", ""]
        lines += _table(common.execution_columns(analysis), common.execution_rows(analysis))

    lines += ["", f"#### Top files ({_escape(analysis.scope)})", ""]
    lines += _table(common.FILE_COLUMNS, common.file_rows(analysis, analysis.files[:TOP_FILES]))
    if len(analysis.files) > TOP_FILES:
        lines.append(f"\n_{len(analysis.files) - TOP_FILES} more files in the full report._")

    if analysis.profile is not None:
        lines += ["", "#### Java stacks of the reads, and CPU (run --profile)", ""]
        lines += [_escape(line) + "  " for line in common.profile_summary(analysis.profile)] + [""]
        lines += _table(common.PROFILE_FRAME_COLUMNS, common.profile_frame_rows(analysis.profile)) + [""]
        lines += _table(
            common.PROFILE_STACK_COLUMNS,
            common.profile_stack_rows(analysis.profile.stacks_bytes, "bytes")
            + common.profile_stack_rows(analysis.profile.stacks_cpu, "samples"),
        )

    lines += ["", "<details><summary>Context</summary>", ""]
    lines += _table(("", ""), common.context_items(analysis))
    lines += ["", "</details>", ""]
    return "\n".join(lines)


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


TONE_ICONS: dict[Tone, str] = {"good": "🟢 ", "bad": "🔴 ", "warning": "⚠️ ", "muted": "", "plain": ""}


def render_document(document: Document, options: ReportOptions) -> str:
    """A comparison or sweep report (casstrace.reports.document); charts are left to the html format."""
    lines = [f"### {_escape(document.title)}", ""]
    for block in document.blocks:
        if isinstance(block, Heading):
            lines += [f"#### {_escape(block.text)}", ""]
        elif isinstance(block, Paragraph):
            text = _escape(block.text)
            lines += [f"_{text}_" if block.tone == "muted" else f"{TONE_ICONS[block.tone]}{text}", ""]
        elif isinstance(block, Code):
            lines += _sql(block.text)
        elif isinstance(block, Items):
            lines += _table(("", ""), block.rows) + [""]
        elif isinstance(block, Table):
            lines += _table(block.headers, block.rows) + [""]
    return "\n".join(lines)
