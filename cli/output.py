"""What the commands that end in a report share: --format, --output, --force, --color, and delivering it."""

import os
import sys
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING

import click

from casstrace.terminal import printable

if TYPE_CHECKING:  # only for annotations: commands that take just --force (import, capture) start
    # without the reports and the analyses they load
    from casstrace.analyses.model import Analysis
    from casstrace.reports.document import Document

Command = Callable[..., None]


FORCE_HELP = "Replace an existing regular file at the output path (never a device, directory or link)."
force_option = click.option("--force", is_flag=True, help=FORCE_HELP)


def report_options(html_default: str) -> Callable[[Command], Command]:
    """--format, --output/-o, --force and --color/--no-color; `html_default` says where html goes without --output."""
    from casstrace.reports import FORMATS  # here, not at the top: see TYPE_CHECKING above

    def decorate(function: Command) -> Command:
        for option in reversed(
            (
                click.option(
                    "--format",
                    "format_",
                    type=click.Choice(FORMATS),
                    default="text",
                    show_default=True,
                    help="Report format, as `casstrace report`: text, md, json or html (with charts).",
                ),
                click.option(
                    "--output",
                    "-o",
                    type=click.Path(dir_okay=False, path_type=Path),
                    help=f"Write the report to FILE (default: standard output; html: {html_default}).",
                ),
                force_option,
                click.option(
                    "--color/--no-color",
                    default=None,
                    help="Colour the text report (default: when writing to a terminal).",
                ),
            )
        ):
            function = option(function)
        return function

    return decorate


def deliver(
    subject: "Analysis | Document",
    format_: str,
    output: Path | None,
    color: bool | None,
    summary: list[str],
    force: bool = False,
    inputs: Iterable[str | os.PathLike[str]] = (),
) -> None:
    """Print the report; or write it to `output` (whole or not at all, never over a file without
    --force, never over one of the `inputs` it was made from) and print `summary` and its path."""
    from casstrace.reports import ReportOptions, render, write

    if output is None:
        click.echo(
            render(subject, format_, ReportOptions(color=sys.stdout.isatty() if color is None else color)), nl=False
        )
        return
    path = write(subject, format_, output, ReportOptions(color=bool(color)), force=force, inputs=inputs)
    for line in summary:
        click.echo(printable(line))
    click.echo(printable(f"report: {path}"))
