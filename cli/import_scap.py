"""`casstrace import FILE.scap`: turn a sysdig capture into a casstrace trace."""

from pathlib import Path

import click

from casstrace.cli.options import PID
from casstrace.cli.output import force_option
from casstrace.paths import default_traces_dir
from casstrace.probes.sysdig_import import import_scap
from casstrace.traces import TraceWriter


@click.command(name="import")
@click.argument("scap", type=click.Path(dir_okay=False, path_type=Path))
@click.option("--pid", type=PID, help="The process to import (default: the one with the most file I/O).")
@click.option("--proc", "proc", metavar="NAME", help="Import the process whose executable is NAME, e.g. java.")
@click.option("--out", type=click.Path(dir_okay=False, path_type=Path),
              help="Trace file to write (default: <traces dir>/<capture name>.trace).")
@force_option
@click.option("--query", metavar="CQL",
              help="The query the capture was taken for; lets the report name causes such as a full-row read.")
def command(scap: Path, pid: int | None, proc: str | None, out: Path | None, force: bool,
            query: str | None) -> None:
    """Read a sysdig capture (.scap) and write a trace of one process (no sysdig needed)."""
    if pid is not None and proc is not None:
        raise click.UsageError("give --pid or --proc, not both")
    out = out or default_traces_dir() / f"{scap.stem}.trace"
    writer = TraceWriter(out, force=force)
    # The capture was taken on some other node: this machine's name and kernel say nothing about it.
    writer.set_meta(hostname=None, kernel=None)
    if query:
        writer.set_meta(query=query)
    try:
        summary = import_scap(scap, writer, pid=pid, proc=proc)
    except BaseException:
        writer.discard()
        raise
    path = writer.finish()
    latency = "with" if summary.latency else "without (the capture has no enter events)"
    click.echo(f"imported pid {summary.pid} ({summary.process}), chosen by {summary.chosen_by}:"
               f" {summary.events} syscalls, {summary.file_bytes} bytes of file I/O, {latency} latency")
    click.echo(f"trace: {path}")
