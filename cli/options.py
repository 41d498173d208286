"""Value types for the options the commands share: every number a user gives is range-checked
by click, so that a bad one is refused as one line before anything runs (never wrapped, never
an overflow, never a run that cannot end)."""

import math
import os
import stat
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click

from casstrace.cli.ranges import PID_RANGE, STREAM_LIMIT_RANGE
from casstrace.errors import CasstraceError, not_utf8


def _refuse_other_digits(
    kind: click.ParamType, value: object, param: click.Parameter | None, ctx: click.Context | None
) -> None:
    """int() and float() take any script's digits ('١٢' is 12): a number is given in ASCII."""
    if isinstance(value, str) and not value.isascii():
        kind.fail(f"{value!r} is not a number in ASCII digits", param, ctx)


class IntRange(click.IntRange):
    """click.IntRange in ASCII digits only."""

    def convert(self, value: object, param: click.Parameter | None, ctx: click.Context | None) -> int:
        _refuse_other_digits(self, value, param, ctx)
        number: int = super().convert(value, param, ctx)  # type: ignore[arg-type]   # click converts any value
        return number


PORT = IntRange(1, 65535)
# A JMX port whose storage port (JMX - 199) is still a port.
JMX_PORT = IntRange(200, 65535)
PID = IntRange(*PID_RANGE)
EXECUTIONS = IntRange(1, 10_000)  # measured executions of one query: 10,000 is hours already
WARMUPS = IntRange(0, 1_000)
PAGE_SIZE = IntRange(0, 1_000_000)
CQL_PAGE_BYTES = IntRange(1024, 1 << 40)  # --page-bytes: the byte budget of one CQL page
STREAM_LIMIT = IntRange(*STREAM_LIMIT_RANGE)

# Tables the sandbox commands build (demo, sweep): bounded by what a sandbox node can hold.
COLUMNS = IntRange(1, 1_000)
TABLES = IntRange(1, 1_000)  # sweep --tables: the study's largest point
WRITES = IntRange(1, 100_000_000)
ROWS = IntRange(1, 1_000_000)
CELL_BYTES = IntRange(1, 100_000_000)
VALUE_BYTES = IntRange(0, 100_000_000)
DAY_S = 86_400.0
MIN_EXCESS = click.IntRange(0, 1 << 40)


SPECTROGRAMS = ("captured", "all")  # --spectrogram's choices: the first is the default


def spectrogram_option() -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """--spectrogram, as the commands that capture with the bcc probes take it."""
    return click.option(
        "--spectrogram",
        type=click.Choice(SPECTROGRAMS),
        default=SPECTROGRAMS[0],
        show_default=True,
        help="The syscalls whose latency the spectrogram shows. 'captured': those the probes handle "
        "(reads, writes, seeks, opens, closes, socket and mapping calls). 'all': every call of the "
        "process (futex and epoll waits too); the probes then run at every syscall of every process on "
        "the machine, which costs the node's other calls and its neighbours (docs/performance.md).",
    )


def stream_limit_option() -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """--stream-limit, as the commands that capture or import take it (None: the protocol's default)."""
    from casstrace.probes.backends import DEFAULT_STREAM_LIMIT  # here: only those commands load the probes

    return click.option(
        "--stream-limit",
        type=STREAM_LIMIT,
        default=None,
        show_default=f"{DEFAULT_STREAM_LIMIT:,}",
        help="Per-call read/lseek records to keep; the calls past it are counted, and every "
        "aggregate (bytes per file, latency, heat map) holds them all.",
    )


class Seconds(click.ParamType):
    """A duration in seconds: a finite number above 0 and at most `limit`."""

    name = "seconds"

    def __init__(self, limit: float = DAY_S):
        self.limit = limit

    def convert(self, value: object, param: click.Parameter | None, ctx: click.Context | None) -> float:
        _refuse_other_digits(self, value, param, ctx)
        try:
            seconds = float(value)  # type: ignore[arg-type]
        except (TypeError, ValueError):
            self.fail(f"{value!r} is not a number of seconds", param, ctx)
        if not math.isfinite(seconds) or not 0 < seconds <= self.limit:
            self.fail(f"{value} is not a duration between 0 and {self.limit:g} seconds", param, ctx)
        return seconds


class FiniteFloat(click.FloatRange):
    """click.FloatRange that also refuses nan and inf (which compare false with any bound)."""

    def convert(self, value: object, param: click.Parameter | None, ctx: click.Context | None) -> float:
        _refuse_other_digits(self, value, param, ctx)
        number: float = super().convert(value, param, ctx)  # type: ignore[arg-type]   # click converts any value
        if not math.isfinite(number):
            self.fail(f"{value} is not a finite number", param, ctx)
        return number


def read_statements(path: Path) -> str:
    """The CQL in a file the user named (--file): a regular file (never a device or a FIFO, which may
    never end), no longer than a statement may be."""
    from casstrace.node.statements import STATEMENT_LIMIT_BYTES

    fix = "give a regular file of CQL text"
    try:
        with open(path, "rb", opener=lambda name, flags: os.open(name, flags | os.O_NONBLOCK)) as file:
            mode = os.fstat(file.fileno()).st_mode
            if not stat.S_ISREG(mode):
                raise CasstraceError(f"{path} is not a regular file: casstrace reads CQL from regular files only", fix)
            data = file.read(STATEMENT_LIMIT_BYTES + 1)
    except OSError as error:
        raise CasstraceError(f"cannot read {path} ({error.strerror})", fix) from None
    if len(data) > STATEMENT_LIMIT_BYTES:
        raise CasstraceError(
            f"{path} is larger than {STATEMENT_LIMIT_BYTES // 2**20} MiB, the most a node accepts in one message",
            fix + " holding one statement",
        )
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as error:
        raise CasstraceError(f"{path} is {not_utf8(error)}", f"save {path} as UTF-8, the encoding of CQL") from None


def container_option(function: Callable[..., Any]) -> Callable[..., Any]:
    """--container: the JVM given by its container, as --pid gives it by its pid (see watched_jvm)."""
    return click.option(
        "--container",
        metavar="ID|NAME",
        help="The container the Cassandra JVM runs in (docker, podman, containerd, CRI-O: found by "
        "its cgroup), instead of --pid; its network is joined to reach the node.",
    )(function)


def watched_jvm(pid: int | None, container: str | None) -> int | None:
    """The pid of the JVM --pid or --container names (None: neither), this process joined in its
    network namespace, so that a node with nothing published is reached where it listens."""
    if pid is None and container is None:
        return None
    from casstrace.node.namespaces import node_pid  # here: only a command given the JVM loads it

    return node_pid(pid, container)


def verdict_options(function: Callable[..., Any]) -> Callable[..., Any]:
    """--threshold and --min-excess: the verdict's rule (analyses.verdict_rule.VerdictRule), as run, report,
    compare, watch and sweep take it."""
    from casstrace.analyses.verdict_rule import DEFAULT_MIN_EXCESS, DEFAULT_THRESHOLD

    function = click.option(
        "--min-excess",
        type=MIN_EXCESS,
        default=DEFAULT_MIN_EXCESS,
        show_default=True,
        metavar="BYTES",
        help="Bytes per execution past the necessary read below which the query is not flagged, whatever the ratio.",
    )(function)
    return click.option(
        "--threshold",
        type=FiniteFloat(min=0, min_open=True),
        default=DEFAULT_THRESHOLD,
        show_default=True,
        help="Data read ÷ necessary read at or above which (with --min-excess past it) the query is flagged.",
    )(function)
