"""What the commands that end in a report share: --format, --output, --color, and delivering it."""

import sys
from pathlib import Path

import click

from casstrace.errors import CasstraceError
from casstrace.reports import FORMATS


def report_options(html_default: str):
    """--format, --output/-o and --color/--no-color; `html_default` says where html goes without --output."""
    def decorate(function):
        for option in reversed((
            click.option("--format", "format_", type=click.Choice(FORMATS), default="text", show_default=True,
                         help="Report format, as `casstrace report`: text, md, json or html (with charts)."),
            click.option("--output", "-o", type=click.Path(dir_okay=False, path_type=Path),
                         help=f"Write the report to FILE (default: standard output; html: {html_default})."),
            click.option("--color/--no-color", default=None,
                         help="Colour the text report (default: when writing to a terminal)."),
        )):
            function = option(function)
        return function
    return decorate


def deliver(subject, format_: str, output: Path | None, color: bool | None, summary: list[str]) -> None:
    """Print the report; or write it to `output` (whole or not at all) and print `summary` and its path."""
    from casstrace.reports import ReportOptions, render, write

    if output is None:
        click.echo(render(subject, format_, ReportOptions(color=sys.stdout.isatty() if color is None else color)), nl=False)
        return
    try:
        path = write(subject, format_, output, ReportOptions(color=bool(color)))
    except OSError as error:
        raise CasstraceError(f"cannot write the report to {output} ({error.strerror})",
                             "choose a writable --output path") from None
    for line in summary:
        click.echo(line)
    click.echo(f"report: {path}")
