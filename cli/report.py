"""`casstrace report TRACE`: analyse a trace file offline and render it as text, Markdown, JSON or HTML."""

from pathlib import Path

import click

from casstrace.analyses import analyse
from casstrace.analyses.verdict_rule import VerdictRule
from casstrace.analyses.watch import analyse_watch, describe_share, is_watch_trace
from casstrace.cli.options import verdict_options
from casstrace.cli.output import deliver, report_options
from casstrace.outputs import check_output
from casstrace.reports import beside_trace, default_output
from casstrace.reports.watch import document
from casstrace.traces import Trace


@click.command("report")
@click.argument("trace", type=click.Path(dir_okay=False, path_type=Path))
@report_options(html_default="TRACE.html beside the trace")
@verdict_options
def command(
    trace: Path, format_: str, output: Path | None, force: bool, color: bool | None, threshold: float, min_excess: int
) -> None:
    """Analyse TRACE (written by `casstrace run`, `watch` or `import`) and report what its I/O says.

    Formats: text (terminal tables and spectrogram), md (a ticket comment), json (the documented
    schema in casstrace.reports.run), html (one self-contained file that opens offline).
    --threshold and --min-excess judge every kind of trace: a run's query, each statement of a watch."""
    rule = VerdictRule(threshold, min_excess)
    if output is None:
        output = default_output(format_, beside_trace(trace, format_))
    if output is not None:
        check_output(output, force, inputs=[trace])  # before the analysis: a refusal costs nothing
    with Trace(trace) as opened:
        if is_watch_trace(opened):
            watch = analyse_watch(opened, rule)
            deliver(document(watch), format_, output, color, [describe_share(watch)], force, inputs=[trace])
            return
        analysis = analyse(opened, rule)
    deliver(
        analysis,
        format_,
        output,
        color,
        [f"{analysis.verdict.status}: {analysis.verdict.summary}"],
        force,
        inputs=[trace],
    )
