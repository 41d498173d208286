"""The terminal report: tables, and the spectrogram drawn in colour like csysdig's spectro_file
(black: no calls, green: up to ~100, yellow: hundreds, red: thousands or more)."""

from collections.abc import Iterable, Sequence

from casstrace.analyses.model import Spectrogram
from casstrace.analyses.spectrogram import LAST_BUCKET
from casstrace.analyses.units import s_to_ms
from casstrace.reports import common
from casstrace.reports.document import (
    Block,
    Code,
    Document,
    Findings,
    Heatmap,
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

BUCKETS_PER_CHAR = 2  # 100 latency buckets -> 50 columns, 5 per decade
MAX_ROWS = 60  # longer captures merge time slots
DECADE_LABELS = ("1ns", "10ns", "100n", "1us", "10us", "100u", "1ms", "10ms", "100m", "1s", "10s")
# (lowest count, ANSI 256-colour background) from csysdig's palette idea: shades of green, yellow, red
COLOUR_STEPS = ((1, 22), (10, 28), (50, 34), (100, 178), (500, 220), (1000, 160), (10000, 196))
PLAIN_STEPS = ((1, "."), (10, ":"), (100, "+"), (1000, "#"), (10000, "@"))
RESET = "\033[0m"


class Text:
    """The terminal's tables; the spectrogram drawn in colour. `brief`: the brief view (what `run` prints)."""

    suffix = ".txt"
    writes_a_file = False  # standard output without --output

    def render(self, document: Document, options: ReportOptions) -> str:
        out = Output(options.color)
        out.line(f"{document.title}: {document.subject}" if document.subject else document.title, bold=True)
        for warning in document.warnings:
            out.line(f"!! {warning}", colour=31 if "INCOMPLETE" in warning or "lost" in warning else 33)
        if document.verdict is not None:
            verdict = document.verdict
            out.line("")
            out.line(
                f"VERDICT: {verdict.status.upper()}  {verdict.summary}",
                colour={"flagged": 31, "not flagged": 32}.get(verdict.status, 33),
                bold=True,
            )
            for note in verdict.notes:
                out.line(f"  note: {note}", colour=33)
            out.line("")
        for section in document.shown("brief" if options.brief else "full"):
            if section.heading is not None:
                out.section(section.heading)
            for block in section.blocks:
                _block(out, block)
        return out.text()


RENDERER = Text()


class Output:
    def __init__(self, color: bool):
        self.color = color
        self.lines: list[str] = []

    def line(self, text: str, colour: int | None = None, bold: bool = False) -> None:
        text = printable(text)  # whatever a node or a user named is shown, never obeyed
        if self.color and (colour or bold):
            codes = ";".join(str(c) for c in ((1,) if bold else ()) + ((colour,) if colour else ()))
            text = f"\033[{codes}m{text}{RESET}"
        self.lines.append(text)

    def section(self, title: str) -> None:
        self.line("")
        self.line(f"== {title} ==", bold=True)

    def table(self, headers: Sequence[str], rows: Iterable[Sequence[object]], header: bool = True) -> None:
        cells = [tuple(printable(str(cell)) for cell in row) for row in rows]
        if not cells:
            self.line("  none")
            return
        widths = [max(len(str(h)) if header else 0, *(len(row[i]) for row in cells)) for i, h in enumerate(headers)]
        numeric = [all(_is_numeric(row[i]) for row in cells) for i in range(len(headers))]

        def fmt(line: Sequence[str]) -> str:
            return (
                "  " + "  ".join(c.rjust(w) if num else c.ljust(w) for c, w, num in zip(line, widths, numeric)).rstrip()
            )

        if header:
            self.line(fmt(headers), bold=True)
        for row in cells:
            self.line(fmt(row))

    def text(self) -> str:
        return "\n".join(self.lines) + "\n"


def _is_numeric(cell: str) -> bool:
    return bool(cell) and (cell[0].isdigit() or cell in ("—", common.NOT_MEASURED))


def _spectrogram(out: Output, spectrogram: Spectrogram) -> None:
    if not spectrogram.counts:
        out.line("  no calls")
        return
    first, per_row, rows = spectrogram.time_rows(MAX_ROWS)
    columns = LAST_BUCKET // BUCKETS_PER_CHAR
    grid: dict[tuple[int, int], int] = {}
    for (slot, bucket), count in spectrogram.counts.items():
        key = ((slot - first) // per_row, bucket // BUCKETS_PER_CHAR)
        grid[key] = grid.get(key, 0) + count
    row_s = spectrogram.slot_s * per_row
    out.line(f"  one row = {s_to_ms(row_s):g} ms, columns = latency (log scale), colour = calls")
    axis = "".join(label.ljust(columns // (len(DECADE_LABELS) - 1)) for label in DECADE_LABELS[:-1])
    out.line(" " * 10 + axis + DECADE_LABELS[-1])
    for row in range(rows):
        cells = "".join(_cell(grid.get((row, column), 0), out.color) for column in range(columns))
        out.lines.append(f"{(first + row * per_row) * spectrogram.slot_s:8.1f}s " + cells + "|")
    legend = "  legend: " + "  ".join(f"{_cell(low, out.color)} ≥{low:,}" for low, _ in COLOUR_STEPS)
    out.lines.append(legend)


def _cell(count: int, color: bool) -> str:
    if color:
        code = None
        for low, colour in COLOUR_STEPS:
            if count >= low:
                code = colour
        return f"\033[48;5;{code}m \033[0m" if code is not None else " "
    symbol = " "
    for low, char in PLAIN_STEPS:
        if count >= low:
            symbol = char
    return symbol


TONE_COLOURS: dict[Tone, int | None] = {"good": 32, "bad": 31, "warning": 33, "muted": None, "plain": None}


def _block(out: Output, block: Block) -> None:
    if isinstance(block, Subheading):
        out.line(block.text, bold=True)
    elif isinstance(block, Paragraph):
        out.line(block.text, colour=TONE_COLOURS[block.tone], bold=block.tone in ("good", "bad"))
    elif isinstance(block, Notes):
        for line in block.lines:
            out.line(f"  {line}")
    elif isinstance(block, Code):
        out.line(f"  {block.text}")
    elif isinstance(block, Query):
        out.line(f"Query: {block.text or '(not recorded)'}")
        out.line(f"Totals cover {block.scope}.")
    elif isinstance(block, Items):
        out.table(("", ""), block.rows, header=False)
    elif isinstance(block, Table):
        out.table(block.headers, block.rows)
    elif isinstance(block, Findings) and block.items:
        if block.heading is not None:
            out.section(block.heading)
        for finding in block.items:
            out.line(f"* [{finding.certainty}] {finding.title}", bold=True)
            if finding.estimate:
                out.line(f"    {finding.estimate}")
            for evidence in finding.evidence:
                out.line(f"    evidence: {evidence}")
            for suggestion in finding.suggestions:
                out.line(f"    try: {suggestion}")
    elif isinstance(block, Heatmap) and block.terminal:
        out.line(block.spectrogram.title, bold=True)
        _spectrogram(out, block.spectrogram)
    # charts, flame graphs and offset maps are drawn by html; their tables are beside them
