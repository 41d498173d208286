"""`casstrace report TRACE`: analyse a trace file offline and render it as text, Markdown, JSON or HTML."""

import sys
from pathlib import Path

import click

from casstrace.analyses import DEFAULT_THRESHOLD, analyse
from casstrace.errors import CasstraceError
from casstrace.reports import FORMATS, beside_trace, render, write


@click.command("report")
@click.argument("trace", type=click.Path(dir_okay=False, path_type=Path))
@click.option("--format", "format_", type=click.Choice(FORMATS), default="text", show_default=True,
              help="text: terminal tables and spectrogram; md: a ticket comment; json: the documented schema "
                   "(casstrace.reports.json); html: one self-contained file that opens offline.")
@click.option("--output", "-o", type=click.Path(dir_okay=False, path_type=Path),
              help="Write the report to FILE (default: standard output; html: TRACE.html beside the trace).")
@click.option("--threshold", type=click.FloatRange(min=0, min_open=True), default=DEFAULT_THRESHOLD,
              show_default=True, help="Amplification (data read ÷ payload) at or above which the query is flagged.")
@click.option("--color/--no-color", default=None, help="Colour the text report (default: when writing to a terminal).")
def command(trace: Path, format_: str, output: Path | None, threshold: float, color: bool | None):
    """Analyse TRACE (written by `casstrace run` or `casstrace import`) and report what its I/O says."""
    analysis = analyse(trace, threshold=threshold)
    if output is None and format_ == "html":
        output = beside_trace(trace, "html")
    if output is None:
        click.echo(render(analysis, format_, color=sys.stdout.isatty() if color is None else color), nl=False)
        return
    try:
        path = write(analysis, format_, output, color=bool(color))
    except OSError as error:
        raise CasstraceError(f"cannot write the report to {output} ({error.strerror})",
                             "choose a writable --output path") from None
    click.echo(f"{analysis.verdict.status}: {analysis.verdict.summary}")
    click.echo(f"report: {path}")
