"""Putting back what a killed casstrace left changed on a node (casstrace.ledger says what, and why).

Every command that touches a node calls restore_left_behind first: a change whose owner is gone is
put back, and said on one line. The trace probability is put back only if it still holds the value
casstrace set: a value someone set since is theirs, and left alone (said too).

A record that cannot be read (casstrace.ledger.Unreadable) has lost the value to put back, so the
node's value is the evidence: at 0 (Cassandra's default, and a value casstrace never sets) nothing of
casstrace's is in effect and the record is removed; at any other value it cannot be told whether that
value is the node's own or a killed watch's. Then the commands that would change it or vouch for it
(watch, watch --restore) stop with the command that checks and the one that fixes, and never take
that value for the node's own; run, which changes no probability, warns and goes on.

A record is acted on only when everything it names is casstrace's own: its JVM (pid and start time,
casstrace.ledger), and a GC log's path (where casstrace places one, and fit for jcmd whole:
casstrace.node.gc_pauses.own_log_problem). Any other is refused: nothing it names is touched or passed
to a tool, the record stays, and one line names it, why, and what the user can do.
"""

import shutil
import sys
from collections.abc import Callable
from pathlib import Path

from casstrace.errors import CasstraceError
from casstrace.ledger import GC_LOG, PROFILER, TRACE_PROBABILITY, Change, Ledger, Refused, Unreadable
from casstrace.node.gc_pauses import own_log_problem, set_log_output
from casstrace.node.jvm import CassandraProcess, jcmd_command
from casstrace.node.tracing import Nodetool, format_probability
from casstrace.probes.jvm.async_profiler import AsyncProfiler
from casstrace.terminal import printable


def say(line: str) -> None:
    print(f"casstrace: {printable(line)}", file=sys.stderr)


def restore_left_behind(
    process: CassandraProcess,
    nodetool: Callable[[], Nodetool],
    tell: Callable[[str], None] = say,
    *,
    strict: bool = True,
) -> list[str]:
    """Put back this node's changes whose casstrace is gone; `nodetool` is called only when one is the
    trace probability. Returns the lines told (one per record). A change that cannot be put back
    raises CasstraceError, and stays written down for the next try. An unreadable record on a node
    that traces: CasstraceError when `strict`, else a warning told (the record is kept)."""
    told = []
    for record in Ledger(process.pid).left_behind():
        line = (
            _refused(record.what, record.node_pid, record.path, record.reason)
            if isinstance(record, Refused)
            else _restore_trace_probability(record, nodetool(), strict)
            if record.what == TRACE_PROBABILITY
            else _stop_profiler(record, process.pid)
            if record.what == PROFILER
            else _stop_gc_log(record, process.pid)
            if record.what == GC_LOG
            else None
        )
        if line is not None:
            tell(line)
            told.append(line)
    return told


def unchanged_evidence(process: CassandraProcess, nodetool: Nodetool) -> str:
    """What `watch --restore` says when it put nothing back: the node's trace probability now, read
    from the node, against what the ledger holds (a live casstrace's change, or none)."""
    held = Ledger(process.pid).read(TRACE_PROBABILITY)
    if isinstance(held, Change) and held.owner_alive:
        return (
            f"casstrace pid {held.owner_pid} (still running) holds the node's trace probability at "
            f"{format_probability(float(held.changed_to))} since {held.recorded_at}; it puts "
            f"{format_probability(float(held.original))} back when it ends"
        )
    now = nodetool.trace_probability()
    if now == 0:
        return "nothing was left changed on the node: it traces 0 of its requests, and no change is recorded"
    return (
        f"no change of casstrace's is recorded for the node; it traces {format_probability(now)} of its requests: "
        f"if that is not its own setting, put it back with `{nodetool.shown('settraceprobability', '0')}`"
    )


def _refused(what: str, pid: int, path: Path, reason: str) -> str:
    """The line for a record that is not acted on: its file, why, and what the user can do."""
    check = {
        TRACE_PROBABILITY: "check the node's trace probability (nodetool gettraceprobability; "
        "nodetool settraceprobability 0 puts Cassandra's default back)",
        PROFILER: f"check for an async-profiler session in JVM {pid} (jcmd {pid} JVMTI.agent_load "
        "<its libasyncProfiler.so> '\"status\"'; '\"stop\"' stops it)",
        GC_LOG: f"list the JVM's log outputs (jcmd {pid} VM.log list) and turn off one casstrace added "
        f"(jcmd {pid} VM.log output=#N what=all=off)",
    }.get(what, "check the node")
    return (
        f"warning: refused the ledger's record {path}: {reason}; nothing it names was touched and the "
        f"record stays: {check}, then remove the record"
    )


def _left_by(change: Change) -> str:
    return f"casstrace pid {change.owner_pid} (gone since {change.recorded_at} without putting it back)"


def _restore_trace_probability(record: Change | Unreadable, nodetool: Nodetool, strict: bool) -> str | None:
    if isinstance(record, Unreadable):
        return _unreadable_trace_probability(record, nodetool, strict)
    original, set_to = float(record.original), float(record.changed_to)
    now = nodetool.trace_probability()
    if now == set_to and now != original:
        nodetool.set_trace_probability(original)
        line = (
            f"put the node's trace probability back to {format_probability(original)}: "
            f"{_left_by(record)} had set it to {format_probability(set_to)}"
        )
    elif now == original:
        line = None  # killed before it changed it, or after it put it back
    else:
        line = (
            f"left the node's trace probability at {format_probability(now)}: {_left_by(record)} had set it "
            f"from {format_probability(original)} to {format_probability(set_to)}, and someone changed it since"
        )
    Ledger(record.node_pid).forget(TRACE_PROBABILITY)
    return line


def _unreadable_trace_probability(record: Unreadable, nodetool: Nodetool, strict: bool) -> str:
    now = nodetool.trace_probability()
    if now == 0:  # no probability casstrace sets (it sets more than 0) is in effect
        Ledger(record.node_pid).forget(TRACE_PROBABILITY)
        return (
            f"warning: removed the ledger's record {record.path}, which cannot be read ({record.reason}): "
            "the node traces 0 of its requests, so no trace probability casstrace sets is in effect"
        )
    shown = format_probability(now)
    cannot_tell = CasstraceError(
        f"cannot tell whether the node's trace probability, {shown}, is its own or left by a casstrace that "
        f"was killed: the ledger's record of it, {record.path}, cannot be read ({record.reason})",
        f"check with `{nodetool.shown('gettraceprobability')}`; if {shown} is not the node's own value, put it "
        f"back with `{nodetool.shown('settraceprobability', '0')}` (0 unless it was set on purpose); if it is, "
        f"remove {record.path}",
    )
    if strict:
        raise cannot_tell
    return f"warning: {cannot_tell}"


def _stop_profiler(record: Change | Unreadable, pid: int) -> str | None:
    """The JVM's profiler is asked whether it runs: the evidence, whether the record could be read or not."""
    by = _left_by(record) if isinstance(record, Change) else f"a casstrace (its record {record.path} unreadable)"
    try:
        stopped = AsyncProfiler(pid, progress=say).stop_left_behind()
    except CasstraceError as error:
        raise CasstraceError(
            f"cannot stop the async-profiler session {by} left in JVM {pid}: {error.message}", error.fix
        ) from None
    return f"stopped the async-profiler session {by} left in JVM {pid}" if stopped else None


def _stop_gc_log(record: Change | Unreadable, pid: int) -> str:
    """Turn off the pause log output a killed `casstrace run` added (casstrace.node.gc_pauses), and
    remove its directory; a record naming a log casstrace does not place is refused. An unreadable
    record does not say which output: said, and removed (the output only logs pauses)."""
    if not isinstance(record, Change):
        Ledger(record.node_pid).forget(GC_LOG)
        return f"warning: removed the ledger's record {record.path}, which cannot be read ({record.reason})"
    log = str(record.changed_to)
    problem = own_log_problem(log, pid)
    if problem is not None:
        return _refused(GC_LOG, pid, Ledger(pid).path(GC_LOG), problem)
    set_log_output(pid, jcmd_command(pid), log, "all=off")
    Ledger(record.node_pid).forget(GC_LOG)
    shutil.rmtree(Path(log).parent, ignore_errors=True)  # the directory the killed casstrace made for the log
    return f"turned off the GC log output {_left_by(record)} added to JVM {pid}"
