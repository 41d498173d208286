"""casstrace traces: list the stored traces, newest first."""

from datetime import datetime
from pathlib import Path

import click

from casstrace.errors import CasstraceError
from casstrace.paths import default_traces_dir
from casstrace.terminal import printable


def trace_summary(path: Path) -> dict:
    """What one line of the listing says about a trace; unreadable files say why."""
    from casstrace.analyses import analyse
    from casstrace.traces import Trace

    try:
        with Trace(path) as trace:
            meta = trace.meta
            analysis = analyse(trace)
    except CasstraceError as error:
        return {"path": path, "problem": error.message}
    except Exception as error:  # a damaged file that still opens: one bad trace must not hide the others
        return {"path": path, "problem": f"not a readable casstrace trace ({type(error).__name__}: {error})"}
    node = meta.get("node") or {}
    start_ns = meta.get("capture_start_ns")
    taken = (
        datetime.fromtimestamp((start_ns + meta.get("clock_offset_ns", 0)) / 1e9)
        if start_ns is not None
        else datetime.fromtimestamp(path.stat().st_mtime)
    )
    return {
        "path": path,
        "date": taken,
        "query": meta.get("query") or meta.get("source", ""),
        "node": f"{node['host']}:{node['port']}" if node else meta.get("hostname", ""),
        "executions": sum(execution.kind == "measured" for execution in analysis.executions),
        "complete": analysis.complete,
        "amplification": analysis.overall.read,
    }


def _is_sqlite(path: Path) -> bool:
    """Traces are SQLite files, whatever their name; hidden ones are traces still being written."""
    if path.name.startswith(".") or not path.is_file():
        return False
    with open(path, "rb") as file:
        return file.read(16) == b"SQLite format 3\0"


def _shorten(text: str, width: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= width else text[: width - 1] + "…"


@click.command("traces")
@click.option(
    "--dir",
    "directory",
    type=click.Path(file_okay=False, path_type=Path),
    help="Directory of traces (default: the casstrace data directory).",
)
def command(directory: Path | None) -> None:
    """List stored traces: date, node, measured executions, amplification (data read ÷ payload), query."""
    from casstrace.traces.writer import remove_stale_partials

    directory = directory or default_traces_dir()
    if directory.is_dir():
        for partial in remove_stale_partials(directory):
            click.echo(printable(f"removed {partial}: half a trace, left by a casstrace that was killed"), err=True)
    paths = [path for path in directory.iterdir() if _is_sqlite(path)] if directory.is_dir() else []
    if not paths:
        click.echo(printable(f"no traces in {directory}"))
        return
    summaries = sorted(
        (trace_summary(path) for path in paths), key=lambda s: s.get("date") or datetime.min, reverse=True
    )
    click.echo(f"{'DATE':<19}  {'NODE':<21}  {'EXEC':>4}  {'AMPLIF.':>8}  QUERY")
    for summary in summaries:
        if "problem" in summary:
            click.echo(
                f"{'?':<19}  {'':<21}  {'':>4}  {'':>8}  " + printable(f"{summary['path'].name}: {summary['problem']}")
            )
            continue
        flag = "" if summary["complete"] else " [incomplete]"
        amplification = summary["amplification"]
        shown = f"{amplification:,.0f}x" if amplification is not None else "-"
        click.echo(
            f"{summary['date']:%Y-%m-%d %H:%M:%S}  {_shorten(printable(summary['node']), 21):<21}  "
            f"{summary['executions']:>4}  {shown:>8}  {_shorten(printable(summary['query']), 70)}{flag}"
        )
        click.echo(f"{'':<19}  " + printable(str(summary["path"])))
