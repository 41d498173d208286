"""A report that is not one trace's analysis (a comparison, a sweep), as format-neutral blocks.

Such a report is built once as a Document: its JSON-ready `data` (what the json format writes) and
a list of blocks (what text, md and html lay out, each with its own markup). A format module renders
it with render_document(document, options), beside its render(analysis, options)
(casstrace.reports.formats.ReportFormat).
"""

from dataclasses import dataclass, field
from typing import Any, Literal

from casstrace.analyses.model import WeightedStack

Tone = Literal["plain", "good", "bad", "warning", "muted"]


@dataclass
class Heading:
    text: str


@dataclass
class Paragraph:
    text: str
    tone: Tone = "plain"


@dataclass
class Code:
    text: str  # a query, shown as is


@dataclass
class Items:
    rows: list[tuple[str, str]]  # label, value


@dataclass
class Table:
    headers: tuple[str, ...]
    rows: list[tuple[str, ...]]


@dataclass
class Series:
    name: str
    y: list[float | None]
    colour: str | None = None  # CSS colour, so one thing keeps one colour across charts
    dashed: bool = False


@dataclass
class Chart:
    """A line chart over a shared x axis (drawn by the html format only; the others show the table)."""

    title: str
    x_title: str
    y_title: str
    x: list[float]
    series: list[Series]


@dataclass
class FlameGraph:
    """Stacks weighted by bytes or samples (drawn by the html format only; the others show a table
    of the heaviest stacks beside it)."""

    title: str
    stacks: list[WeightedStack]
    unit: str  # 'bytes' | 'samples'


Block = Heading | Paragraph | Code | Items | Table | Chart | FlameGraph


@dataclass
class Document:
    title: str
    data: dict[str, Any]  # JSON-ready, with its schema documented where it is built
    blocks: list[Block] = field(default_factory=list)
