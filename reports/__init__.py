"""Reports: every report built once as a Document, and one module per output format laying it out.

Holds: the outline every report is built as (document.py: Document, its sections and blocks), the
reports (run.py: one trace's Analysis; comparison.py, sweep.py, watch.py), the rows and words they share
(common.py), the formats (text, md, json_report, html_report: each a Renderer of Documents), their
contract and their one registry (formats.py: Renderer, ReportOptions, FORMATS).
May import: casstrace.analyses (its model and units) and plotly (html only). Never SQL, the trace
file, probes, node or cli: a report renders what the analyses found.

Public API:
    render(subject, format="text", options=ReportOptions()) -> str    format: one of FORMATS
    document(subject) -> Document                the subject's outline, built once for every format
    write(subject, format, path, options=ReportOptions(), force=False, inputs=()) -> Path
                                                 render into a file, whole or not at all, and never over
                                                 a file without force, nor over one of `inputs` (outputs.py)
    beside_trace(trace_path, format) -> Path     the default report path: TRACE with the format's suffix
                                                 (never the trace's own name)
    default_output(format, beside) -> Path|None  where a format writes without --output: `beside` for a
                                                 format that writes a file (html), else standard output
    FORMATS                                      the format names, in --format order
    ReportOptions(color=False, brief=False)      an option that does not exist is a TypeError

`casstrace run` prints render(analysis, "text", ReportOptions(brief=True, color=...)) (verdict,
numbers, findings) and writes write(analysis, "html", beside_trace(trace, "html")).

The subject is a Document (casstrace.reports.document), or one trace's Analysis, whose Document
casstrace.reports.run builds.
"""

import os
from collections.abc import Iterable
from pathlib import Path

from casstrace import outputs
from casstrace.analyses.model import Analysis
from casstrace.reports.document import Document
from casstrace.reports.formats import FORMATS, Renderer, ReportOptions, report_format

__all__ = [
    "FORMATS",
    "Renderer",
    "ReportOptions",
    "beside_trace",
    "default_output",
    "document",
    "render",
    "report_format",
    "write",
]


def render(subject: Analysis | Document, format: str = "text", options: ReportOptions = ReportOptions()) -> str:
    return report_format(format).render(document(subject), options)


def document(subject: Analysis | Document) -> Document:
    """The subject's Document: an Analysis's is the run report (casstrace.reports.run)."""
    if isinstance(subject, Document):
        return subject
    from casstrace.reports import run  # here: `casstrace compare` never needs the run report's outline

    return run.document(subject)


def beside_trace(trace_path: str | os.PathLike[str], format: str) -> Path:
    """TRACE with the format's suffix; a trace that already has that suffix (`run --out x.html`)
    gets x.report.html, so that its report never takes its name."""
    trace_path = Path(trace_path)
    suffix = report_format(format).suffix
    beside = trace_path.with_suffix(suffix)
    return beside if beside != trace_path else trace_path.with_suffix(f".report{suffix}")


def default_output(format: str, beside: Path) -> Path | None:
    """Where a report in `format` goes without --output: `beside` (the path the command names beside its
    input, e.g. beside_trace(trace, format)) for a format that writes a file (html), None (standard
    output) for the others."""
    return beside if report_format(format).writes_a_file else None


def write(
    subject: Analysis | Document,
    format: str,
    path: str | os.PathLike[str],
    options: ReportOptions = ReportOptions(),
    force: bool = False,
    inputs: Iterable[str | os.PathLike[str]] = (),
) -> Path:
    """Write the report to `path` whole or not at all, never destroying a file (casstrace.outputs:
    never over an existing file without force, nor over one of the `inputs` it was made from)."""
    outputs.check_output(path, force, inputs)  # before rendering: a refusal costs nothing
    return outputs.write_text(path, render(subject, format, options), force, inputs)
