"""The report-format contract, its options, and the one registry of formats.

A format is a Renderer (checked by mypy where the registry returns it): its file suffix, where it
writes without --output, and render(document, options), the one way it lays out every report (a
Document: casstrace.reports.document). A format module holds its renderer as RENDERER.
Every format takes the same ReportOptions; an option that does not exist is a TypeError where the
options are built (and a mypy error before that), never silently ignored.

Formats load on first use: `casstrace report --format md` never imports plotly.
"""

from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from casstrace.reports.document import Document


@dataclass(frozen=True)
class ReportOptions:
    """How to render a report. A format that has no use for an option renders the same without it."""

    color: bool = False  # ANSI colours for a terminal (text; the other formats have no terminal form)
    brief: bool = False  # the brief view: the verdict, its numbers and the findings (text: what `run` prints)


class Renderer(Protocol):
    """One output format: a Document (any report) to its text."""

    @property
    def suffix(self) -> str: ...  # of a report file in this format, e.g. ".html"

    @property
    def writes_a_file(self) -> bool: ...  # without --output: a file beside the command's input (True), or stdout

    def render(self, document: Document, options: ReportOptions) -> str: ...


def _text() -> Renderer:
    from casstrace.reports import text

    return text.RENDERER


def _md() -> Renderer:
    from casstrace.reports import md

    return md.RENDERER


def _json() -> Renderer:
    from casstrace.reports import json_report

    return json_report.RENDERER


def _html() -> Renderer:
    from casstrace.reports import html_report

    return html_report.RENDERER


# --format name -> the format's loader, in --format order
_REGISTRY: dict[str, Callable[[], Renderer]] = {"text": _text, "md": _md, "json": _json, "html": _html}
FORMATS = tuple(_REGISTRY)


def report_format(name: str) -> Renderer:
    try:
        load = _REGISTRY[name]
    except KeyError:
        raise ValueError(f"unknown report format {name!r}; choose one of {', '.join(FORMATS)}") from None
    return load()
