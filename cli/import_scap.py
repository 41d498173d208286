"""`casstrace import FILE.scap`: turn a sysdig capture into a casstrace trace.

`command` is the click command; cli/main.py runs plain invocations through `fast_call` instead,
without loading click (import is measured against sysdig's own run, which is shorter than click's
start-up). fast_call accepts exactly the options `command` declares (tests/unit/test_costs.py checks)
and leaves everything else to click: --help, a value click would refuse, a path that is a directory.
"""

import os
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import click

from casstrace.cli.ranges import PID_RANGE, STREAM_LIMIT_RANGE
from casstrace.terminal import printable

# option -> (parameter, range of a number; None for text, `True` for a flag)
FAST_OPTIONS: dict[str, tuple[str, tuple[int, int] | bool | None]] = {
    "--pid": ("pid", PID_RANGE),
    "--proc": ("proc", None),
    "--out": ("out", None),
    "--force": ("force", True),
    "--query": ("query", None),
    "--stream-limit": ("stream_limit", STREAM_LIMIT_RANGE),
}


def run_import(
    scap: Path,
    pid: int | None,
    proc: str | None,
    out: Path | None,
    force: bool,
    query: str | None,
    stream_limit: int | None,
) -> None:
    """What `casstrace import` does, however its arguments were parsed (stream_limit None: the
    default, DEFAULT_STREAM_LIMIT)."""
    from casstrace.paths import default_traces_dir
    from casstrace.probes.backends import DEFAULT_STREAM_LIMIT
    from casstrace.probes.sysdig.sysdig_import import import_scap
    from casstrace.traces.writer import TraceWriter

    out = out or default_traces_dir() / f"{scap.stem}.trace"
    writer = TraceWriter(out, force=force, inputs=[scap])
    # The capture was taken on some other node: this machine's name and kernel say nothing about it.
    writer.set_meta(hostname=None, kernel=None)
    if query:
        writer.set_meta(query=query)
    with writer.writing():
        summary = import_scap(scap, writer, pid=pid, proc=proc, event_limit=stream_limit or DEFAULT_STREAM_LIMIT)
        path = writer.finish()
    latency = "with" if summary.latency else "without (the capture has no enter events)"
    print(
        f"imported pid {summary.pid} ({printable(summary.process)}), chosen by {summary.chosen_by}:"
        f" {summary.events} syscalls, {summary.file_bytes} bytes of file I/O, {latency} latency",
        flush=True,
    )
    if summary.unstreamed:
        print(
            f"per-call records: {summary.records} kept, {summary.unstreamed} not kept (over --stream-limit);"
            " every figure counts them all",
            flush=True,
        )
    print(printable(f"trace: {path}"), flush=True)


def _plain_path(value: str) -> bool:
    """What click.Path(dir_okay=False) takes as it is: not empty, not a directory, readable if it exists."""
    return bool(value) and not os.path.isdir(value) and (not os.path.exists(value) or os.access(value, os.R_OK))


def fast_parse(args: list[str]) -> dict[str, Any] | None:
    """The arguments of `casstrace import` as `command` would pass them, or None where click must
    judge them (anything but FILE and the options, each once, with plain values in range)."""
    values: dict[str, Any] = {
        "pid": None,
        "proc": None,
        "out": None,
        "force": False,
        "query": None,
        "stream_limit": None,
    }
    scap: str | None = None
    seen: set[str] = set()
    at = 0
    while at < len(args):
        arg = args[at]
        at += 1
        if not arg.startswith("-"):
            if scap is not None:
                return None
            scap = arg
            continue
        name, has_value, value = arg.partition("=")
        option = FAST_OPTIONS.get(name)
        if option is None or name in seen:
            return None
        seen.add(name)
        parameter, kind = option
        if kind is True:
            if has_value:
                return None
            values[parameter] = True
            continue
        if not has_value:
            if at == len(args):
                return None
            value = args[at]
            at += 1
        if not value or value.startswith("-"):
            return None
        if isinstance(kind, tuple):
            if not (value.isascii() and value.isdecimal()) or not kind[0] <= int(value) <= kind[1]:
                return None
            values[parameter] = int(value)
        else:
            values[parameter] = value
    if scap is None or not _plain_path(scap) or (values["out"] is not None and not _plain_path(values["out"])):
        return None
    if values["pid"] is not None and values["proc"] is not None:
        return None  # click says to give one of them
    if values["out"] is not None:
        values["out"] = Path(values["out"])
    return {"scap": Path(scap), **values}


def fast_call(args: list[str]) -> Callable[[], None] | None:
    """`casstrace import` with these arguments, ready to run without click, or None."""
    parsed = fast_parse(args)
    if parsed is None:
        return None
    return lambda: run_import(**parsed)


def _command() -> "click.Command":
    import click

    from casstrace.cli.options import PID, stream_limit_option
    from casstrace.cli.output import force_option

    @click.command(name="import")
    @click.argument("scap", type=click.Path(dir_okay=False, path_type=Path))
    @click.option("--pid", type=PID, help="The process to import (default: the one with the most file I/O).")
    @click.option("--proc", "proc", metavar="NAME", help="Import the process whose executable is NAME, e.g. java.")
    @click.option(
        "--out",
        type=click.Path(dir_okay=False, path_type=Path),
        help="Trace file to write (default: <traces dir>/<capture name>.trace).",
    )
    @force_option
    @click.option(
        "--query",
        metavar="CQL",
        help="The query the capture was taken for; lets the report name causes such as a full-row read.",
    )
    @stream_limit_option()
    def command(
        scap: Path,
        pid: int | None,
        proc: str | None,
        out: Path | None,
        force: bool,
        query: str | None,
        stream_limit: int | None,
    ) -> None:
        """Read a sysdig capture (.scap) and write a trace of one process (no sysdig needed)."""
        if pid is not None and proc is not None:
            raise click.UsageError("give --pid or --proc, not both")
        run_import(scap, pid, proc, out, force, query, stream_limit)

    return command


def __getattr__(name: str) -> Any:
    # cli/group.py asks each command module for `command`: made (and click loaded) on that request.
    if name == "command":
        return _command()
    raise AttributeError(name)
