"""A report as one typed outline, built once and laid out by every format.

Every report (`run`'s and `report`'s of one trace, `compare`, `sweep`, `watch`) is built as a Document:
its title, its verdict and warnings, its JSON-ready `data` (what the json format writes, its schema
documented where it is built) and its sections of blocks (what text, md and html lay out, each with
its own markup: casstrace.reports.formats.Renderer). A format decides how a block looks, never which
blocks a report has: the outline is written once, in the module that builds the Document
(reports/run.py, comparison.py, sweep.py, watch.py).

A section says in which views it appears: `brief` (what `casstrace run` prints: the verdict, its numbers
and the findings), `summary` (a ticket comment: md) and `full` (text and html). Blocks that are
drawings (a chart, a flame graph, an offset map, a spectrogram) are drawn by html; the others show the
table beside them, or nothing.
"""

from dataclasses import dataclass, field
from typing import Any, Literal

from casstrace.analyses.model import AccessPattern, Spectrogram, TimeSplit, WeightedStack

Tone = Literal["plain", "good", "bad", "warning", "muted"]
View = Literal["brief", "summary", "full"]
EVERY_VIEW: tuple[View, ...] = ("brief", "summary", "full")
NOT_BRIEF: tuple[View, ...] = ("summary", "full")
FULL: tuple[View, ...] = ("full",)


@dataclass
class Subheading:
    text: str  # a heading inside a section (an SSTable's files, the heaviest stacks by bytes)


@dataclass
class Paragraph:
    text: str
    tone: Tone = "plain"


@dataclass
class Notes:
    lines: list[str]  # short remarks under a table, one per line


@dataclass
class Code:
    text: str  # a query, shown as is


@dataclass
class Query:
    """The measured query and what the totals cover (the head of a run's report)."""

    text: str | None  # None: not recorded
    scope: str


@dataclass
class Items:
    rows: list[tuple[str, str]]  # label, value
    headers: tuple[str, str] = ("", "")  # for a format whose tables need a header row (md)


@dataclass
class Table:
    headers: tuple[str, ...]
    rows: list[tuple[str, ...]]


@dataclass
class FindingItem:
    """A finding as every format shows it: title and certainty, what its fix would save, its evidence and
    what to try."""

    title: str
    certainty: str
    estimate: str | None
    evidence: list[str]
    suggestions: list[str]


@dataclass
class Findings:
    heading: str | None  # None: the findings of a part of the report (a watch's statement), under its heading
    items: list[FindingItem]
    empty: str | None = None  # what a format that shows an empty list says (html); None: no list, nothing


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
class ExecutionBars:
    """Per execution: bytes read against what was needed (top) and the node's time split (bottom), drawn
    by the html format only (the others show the table beside it)."""

    bytes_per_execution: dict[str, float]  # label -> bytes, the known ones
    time_split: TimeSplit | None  # None: the node's time or its split was not measured


@dataclass
class FlameGraph:
    """Stacks weighted by bytes or samples (drawn by the html format only; the others show a table
    of the heaviest stacks beside it)."""

    title: str
    stacks: list[WeightedStack]
    unit: str  # 'bytes' | 'samples'


@dataclass
class OffsetMap:
    """Where in a file the reads went, over time (drawn by the html format only; the others show the
    access patterns' table)."""

    pattern: AccessPattern


@dataclass
class Heatmap:
    """A syscall latency spectrogram: drawn by html; the text format draws the one marked `terminal`."""

    spectrogram: Spectrogram
    terminal: bool


Block = (
    Subheading
    | Paragraph
    | Notes
    | Code
    | Query
    | Items
    | Table
    | Findings
    | Chart
    | ExecutionBars
    | FlameGraph
    | OffsetMap
    | Heatmap
)


@dataclass
class Section:
    heading: str | None  # None: part of the report's head, under its title and verdict
    blocks: list[Block]
    views: tuple[View, ...] = EVERY_VIEW
    collapsed: bool = False  # shown folded where a format can fold (md's <details>)


@dataclass
class VerdictLine:
    status: str  # 'flagged' | 'not flagged' | 'undetermined'
    summary: str
    notes: list[str]  # under the verdict, the fix last
    about: str  # what was judged, in a few words (the query, else the trace): a page's title


@dataclass
class Document:
    title: str
    data: dict[str, Any]  # JSON-ready, with its schema documented where it is built
    sections: list[Section] = field(default_factory=list)
    subject: str | None = None  # what the report is of, shown beside the title (a trace's path)
    verdict: VerdictLine | None = None
    warnings: list[str] = field(default_factory=list)  # shown before everything else

    def shown(self, view: View) -> list[Section]:
        return [section for section in self.sections if view in section.views]
