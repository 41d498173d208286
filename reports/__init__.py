"""Reports: one module per output format, each turning an Analysis into a string.

Public API:
    render(analysis, format="text", **options) -> str     format: 'text' | 'md' | 'json' | 'html'
    write(analysis, format, path) -> Path                  render into a file, whole or not at all
    beside_trace(trace_path, format) -> Path               the default report path: TRACE with the format's suffix
    FORMATS                                                the format names, in --format order

`casstrace run` prints render(analysis, "text", brief=True, color=...) (verdict, numbers, findings)
and writes write(analysis, "html", beside_trace(trace, "html")).

A format module defines SUFFIX and render(analysis, **options). Options a format does not use are
ignored, so callers can pass e.g. color=True to any of them. Modules load on first use: `casstrace
report --format md` never imports plotly.
"""

import importlib
import os
from pathlib import Path

from casstrace.analyses.model import Analysis

FORMATS = ("text", "md", "json", "html")   # each the name of its module in casstrace.reports


def _module(format: str):
    if format not in FORMATS:
        raise ValueError(f"unknown report format {format!r}; choose one of {', '.join(FORMATS)}")
    return importlib.import_module(f"casstrace.reports.{format}")


def render(analysis: Analysis, format: str = "text", **options) -> str:
    return _module(format).render(analysis, **options)


def beside_trace(trace_path: str | os.PathLike, format: str) -> Path:
    return Path(trace_path).with_suffix(_module(format).SUFFIX)


def write(analysis: Analysis, format: str, path: str | os.PathLike, **options) -> Path:
    """Write the report to `path`, through a hidden file renamed into place: never half a report."""
    path = Path(path)
    text = render(analysis, format, **options)
    partial = path.with_name(f".{path.name}.partial")
    try:
        partial.write_text(text, encoding="utf-8")
        os.replace(partial, path)
    finally:
        partial.unlink(missing_ok=True)
    return path
