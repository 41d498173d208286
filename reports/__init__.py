"""Reports: one module per output format, each turning an Analysis (or a Document) into a string.

Public API:
    render(subject, format="text", **options) -> str      format: 'text' | 'md' | 'json' | 'html'
    write(subject, format, path) -> Path                   render into a file, whole or not at all
    beside_trace(trace_path, format) -> Path               the default report path: TRACE with the format's suffix
    FORMATS                                                the format names, in --format order

`casstrace run` prints render(analysis, "text", brief=True, color=...) (verdict, numbers, findings)
and writes write(analysis, "html", beside_trace(trace, "html")).

The subject is one trace's Analysis, or a Document (casstrace.reports.document): the report of
`casstrace compare` or `casstrace sweep`, built by casstrace.reports.comparison / .sweep.

A format module defines SUFFIX, render(analysis, **options) and render_document(document, **options).
Options a format does not use are ignored, so callers can pass e.g. color=True to any of them.
Modules load on first use: `casstrace report --format md` never imports plotly.
"""

import importlib
import os
from pathlib import Path

from casstrace.analyses.model import Analysis
from casstrace.reports.document import Document

FORMATS = ("text", "md", "json", "html")   # each the name of its module in casstrace.reports


def _module(format: str):
    if format not in FORMATS:
        raise ValueError(f"unknown report format {format!r}; choose one of {', '.join(FORMATS)}")
    return importlib.import_module(f"casstrace.reports.{format}")


def render(subject: Analysis | Document, format: str = "text", **options) -> str:
    module = _module(format)
    if isinstance(subject, Document):
        return module.render_document(subject, **options)
    return module.render(subject, **options)


def beside_trace(trace_path: str | os.PathLike, format: str) -> Path:
    return Path(trace_path).with_suffix(_module(format).SUFFIX)


def write(subject: Analysis | Document, format: str, path: str | os.PathLike, **options) -> Path:
    """Write the report to `path`, through a hidden file renamed into place: never half a report."""
    path = Path(path)
    text = render(subject, format, **options)
    partial = path.with_name(f".{path.name}.partial")
    try:
        partial.write_text(text, encoding="utf-8")
        os.replace(partial, path)
    finally:
        partial.unlink(missing_ok=True)
    return path
