"""Putting back what a killed casstrace left changed on a node (casstrace.ledger says what, and why).

Every command that touches a node calls restore_left_behind first: a change whose owner is gone is
put back, and said on one line. The trace probability is put back only if it still holds the value
casstrace set: a value someone set since is theirs, and left alone (said too).
"""

import sys
from collections.abc import Callable

from casstrace.errors import CasstraceError
from casstrace.ledger import PROFILER, TRACE_PROBABILITY, Change, Ledger
from casstrace.node.jvm import CassandraProcess
from casstrace.node.tracing import Nodetool, format_probability
from casstrace.probes.jvm.async_profiler import AsyncProfiler


def say(line: str) -> None:
    print(f"casstrace: {line}", file=sys.stderr)


def restore_left_behind(
    process: CassandraProcess, nodetool: Callable[[], Nodetool], tell: Callable[[str], None] = say
) -> list[str]:
    """Put back this node's changes whose casstrace is gone; `nodetool` is called only when one is the
    trace probability. Returns the lines told (one per change). A change that cannot be put back
    raises CasstraceError, and stays written down for the next try."""
    told = []
    for change in Ledger(process.pid).left_behind():
        line = (
            _restore_trace_probability(change, nodetool())
            if change.what == TRACE_PROBABILITY
            else _stop_profiler(change, process.pid)
            if change.what == PROFILER
            else None
        )
        if line is not None:
            tell(line)
            told.append(line)
    return told


def _left_by(change: Change) -> str:
    return f"casstrace pid {change.owner_pid} (gone since {change.recorded_at} without putting it back)"


def _restore_trace_probability(change: Change, nodetool: Nodetool) -> str | None:
    original, set_to = float(change.original), float(change.changed_to)
    now = nodetool.trace_probability()
    if now == set_to and now != original:
        nodetool.set_trace_probability(original)
        line = (
            f"put the node's trace probability back to {format_probability(original)}: "
            f"{_left_by(change)} had set it to {format_probability(set_to)}"
        )
    elif now == original:
        line = None  # killed before it changed it, or after it put it back
    else:
        line = (
            f"left the node's trace probability at {format_probability(now)}: {_left_by(change)} had set it "
            f"from {format_probability(original)} to {format_probability(set_to)}, and someone changed it since"
        )
    Ledger(change.node_pid).forget(TRACE_PROBABILITY)
    return line


def _stop_profiler(change: Change, pid: int) -> str | None:
    try:
        stopped = AsyncProfiler(pid, progress=say).stop_left_behind()
    except CasstraceError as error:
        raise CasstraceError(
            f"cannot stop the async-profiler session {_left_by(change)} left in JVM {pid}: {error.message}", error.fix
        ) from None
    return f"stopped the async-profiler session {_left_by(change)} left in JVM {pid}" if stopped else None
