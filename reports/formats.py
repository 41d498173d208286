"""The report-format contract, its options, and the one registry of formats.

A format is a module of casstrace.reports that implements ReportFormat (checked by mypy where the
registry returns it): SUFFIX, WRITES_A_FILE (where it goes without --output), render(analysis, options)
and render_document(document, options).
Every format takes the same ReportOptions; an option that does not exist is a TypeError where the
options are built (and a mypy error before that), never silently ignored.

Formats load on first use: `casstrace report --format md` never imports plotly.
"""

from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from casstrace.analyses.model import Analysis
from casstrace.reports.document import Document


@dataclass(frozen=True)
class ReportOptions:
    """How to render a report. A format that has no use for an option renders the same without it."""

    color: bool = False  # ANSI colours for a terminal (text; the other formats have no terminal form)
    brief: bool = False  # only the verdict, its numbers and the findings (text, what `run` prints)


class ReportFormat(Protocol):
    """One output format: an Analysis (one trace) or a Document (a comparison, a sweep) to its text."""

    SUFFIX: str  # of a report file in this format, e.g. ".html"
    WRITES_A_FILE: bool  # without --output: a file beside the command's input (True) or standard output

    def render(self, analysis: Analysis, options: ReportOptions) -> str: ...

    def render_document(self, document: Document, options: ReportOptions) -> str: ...


def _text() -> ReportFormat:
    from casstrace.reports import text

    return text


def _md() -> ReportFormat:
    from casstrace.reports import md

    return md


def _json() -> ReportFormat:
    from casstrace.reports import json_report

    return json_report


def _html() -> ReportFormat:
    from casstrace.reports import html_report

    return html_report


# --format name -> the format's loader, in --format order
_REGISTRY: dict[str, Callable[[], ReportFormat]] = {"text": _text, "md": _md, "json": _json, "html": _html}
FORMATS = tuple(_REGISTRY)


def report_format(name: str) -> ReportFormat:
    try:
        load = _REGISTRY[name]
    except KeyError:
        raise ValueError(f"unknown report format {name!r}; choose one of {', '.join(FORMATS)}") from None
    return load()
