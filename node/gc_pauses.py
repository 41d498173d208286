"""GC and safepoint pauses per window, from the JVM's own unified logging: the per-window measures
`gc_pause_ns` and `safepoint_ns` (casstrace.traces.measures), and meta `gc_pauses` (each pause that
overlapped an execution: its collector, length and heap before and after). A watch takes every pause
of its stretch as meta `jvm_pauses` (pause_meta), to tell the requests a pause overlapped.

A window source (casstrace.probes.protocol.WindowSource). No restart: before the capture,
`jcmd PID VM.log` adds a log output of its own to a file casstrace owns, with the `gc` and
`safepoint` tags at info, each line stamped with the JVM's nanosecond clock (`timenanos`:
os::javaTimeNanos, CLOCK_MONOTONIC on Linux, the trace's clock). stop() turns that output off on every
way out (and the ledger holds it for a casstrace killed before: node.leftovers). The JVM writes one
line at the end of each pause; a pause is [end - length, end], and each window gets the time of the
pauses that overlap it, cut to the window.

The log is paths.gc_log_root()/casstrace-gc-XXXXXXXX/gc.log. A path goes to jcmd only when it can go
whole (node.jvm.jcmd_value_problem); a path the ledger holds is acted on only when it is such a log
(own_log_problem): a record naming anything else is refused (node.leftovers).
"""

import contextlib
import os
import re
import secrets
import shutil
import stat
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from casstrace import paths
from casstrace.errors import CasstraceError
from casstrace.ledger import GC_LOG, Ledger
from casstrace.node.jvm import jcmd_command, jcmd_value_problem, run_tool
from casstrace.probes.proc.proc_fds import root_prefix
from casstrace.traces.meta import JvmPause
from casstrace.traces.rows import WindowMeasureRow
from casstrace.traces.spans import covered_ns, union
from casstrace.traces.writer import TraceWriter

JCMD_TIMEOUT_S = 30.0
LOG_DIRECTORY_PREFIX = "casstrace-gc-"  # the log's own temporary directory (removed with the output)
LOG_FILE_NAME = "gc.log"
UNITS = {"B": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
# "[1672364269096ns] GC(11) Pause Full (Diagnostic Command) 418M->57M(1024M) 1110.588ms"
GC_PAUSE = re.compile(
    r"^\[(?P<end>\d+)ns\] GC\(\d+\) (?P<collector>Pause .*?) "
    r"(?P<before>\d+)(?P<bu>[BKMG])->(?P<after>\d+)(?P<au>[BKMG])\((?P<heap>\d+)(?P<hu>[BKMG])\) (?P<ms>[\d.]+)ms$"
)
# '[1672368670265ns] Safepoint "G1CollectFull", Time since last: ..., Total: 1115043100 ns'
SAFEPOINT = re.compile(r'^\[(?P<end>\d+)ns\] Safepoint "(?P<operation>[^"]+)".*\bTotal: (?P<total>\d+) ns')


KINDS = {"gc": "gc_pause_ns", "safepoint": "safepoint_ns"}  # a pause's kind -> the window measure of it


@dataclass(frozen=True)
class Pause:
    kind: Literal["gc", "safepoint"]
    what: str  # the collector's pause ('Pause Young (Normal) (G1 Evacuation Pause)') or the VM operation
    start_ns: int
    end_ns: int
    heap_before_bytes: int | None = None
    heap_after_bytes: int | None = None
    heap_bytes: int | None = None  # the heap's committed size after it


def parse_log(text: str) -> list[Pause]:
    """The pauses of a VM.log output with the timenanos decorator only."""
    pauses = []
    for line in text.splitlines():
        if gc := GC_PAUSE.match(line):
            end = int(gc["end"])
            pauses.append(
                Pause(
                    "gc",
                    gc["collector"],
                    end - round(float(gc["ms"]) * 1e6),
                    end,
                    int(gc["before"]) * UNITS[gc["bu"]],
                    int(gc["after"]) * UNITS[gc["au"]],
                    int(gc["heap"]) * UNITS[gc["hu"]],
                )
            )
        elif safepoint := SAFEPOINT.match(line):
            end = int(safepoint["end"])
            pauses.append(Pause("safepoint", safepoint["operation"], end - int(safepoint["total"]), end))
    return pauses


def overlap(pause: Pause, start_ns: int, end_ns: int) -> int:
    return max(0, min(pause.end_ns, end_ns) - max(pause.start_ns, start_ns))


def pause_meta(pauses: list[Pause], start_ns: int, end_ns: int) -> list[JvmPause]:
    """The pauses that overlap [start_ns, end_ns], as meta `jvm_pauses` holds them."""
    return [
        {"kind": p.kind, "what": p.what, "start_ns": p.start_ns, "end_ns": p.end_ns}
        for p in pauses
        if overlap(p, start_ns, end_ns)
    ]


def own_log_problem(log: str, pid: int) -> str | None:
    """Why `log` is not a GC log casstrace places for the JVM `pid`, None when it is: a path that goes
    whole into jcmd, named as paths.gc_log_root()/casstrace-gc-…/gc.log (resolved: no '..', no link
    out), whose directory, if it is still there, is a real directory (no symbolic link) of casstrace's
    user or the JVM's (the log's directory is given to the JVM's user)."""
    problem = jcmd_value_problem(log)
    if problem is not None:
        return f"the GC log {log!r} cannot be passed whole to jcmd: {problem}"
    path = Path(log)
    root = paths.gc_log_root()
    directory = path.parent
    if (
        not path.is_absolute()
        or os.path.normpath(log) != log
        or path.name != LOG_FILE_NAME
        or not directory.name.startswith(LOG_DIRECTORY_PREFIX)
        or directory.name == LOG_DIRECTORY_PREFIX
        or os.path.realpath(directory.parent) != os.path.realpath(root)
    ):
        return f"the GC log {log} is not where casstrace places one ({root}/{LOG_DIRECTORY_PREFIX}…/{LOG_FILE_NAME})"
    try:
        status = os.lstat(directory)
    except FileNotFoundError:  # removed since (a cleaned /tmp): the output is still turned off by its name
        return None
    except OSError as error:
        return f"the GC log's directory, {directory}, cannot be checked ({error.strerror})"
    if stat.S_ISLNK(status.st_mode):
        return f"the GC log's directory, {directory}, is a symbolic link"
    if not stat.S_ISDIR(status.st_mode):
        return f"the GC log's directory, {directory}, is not a directory"
    try:
        owners = {os.geteuid(), os.stat(f"/proc/{pid}").st_uid}
    except OSError:
        owners = {os.geteuid()}
    if status.st_uid not in owners:
        return f"the GC log's directory, {directory}, belongs to another user (uid {status.st_uid})"
    return None


def set_log_output(pid: int, command: list[str], log: str, what: str, decorators: str | None = None) -> None:
    """`jcmd PID VM.log` on the output to the file `log` (`command`: jcmd and its pid, jcmd_command);
    CasstraceError, before jcmd runs, when `log` cannot go whole into one option."""
    problem = jcmd_value_problem(log)
    if problem is not None:
        raise CasstraceError(
            f"the GC log's path {log!r} cannot be given to jcmd {pid} VM.log: {problem}",
            "set TMPDIR to a directory whose path has no space, quote, '%' or control character",
        )
    run_tool(
        [*command, "VM.log", f"output=file={log}", f"what={what}"]
        + ([f"decorators={decorators}"] if decorators else []),
        f"jcmd {pid} VM.log",
        JCMD_TIMEOUT_S,
        cannot_run_fix="install a JDK matching the node's Java (its jcmd attaches to the JVM)",
        failed_fix="run casstrace as the node's user or root, with a JDK matching the node's Java",
    )


class GcPauses:
    """The JVM `pid`'s pauses per window. Made before the capture: the log output is added then."""

    def __init__(self, pid: int, warn: Callable[[str], None]):
        self.pid = pid
        self.measured = False  # the JVM logs its pauses for us
        self._directory: Path | None = None
        self._text = ""
        self._windows: set[int] = set()
        self._ledger = Ledger(pid)
        try:
            if root_prefix(pid):
                raise CasstraceError("the JVM runs in a container of its own", "")
            self._command = jcmd_command(pid)
            directory = paths.gc_log_root() / f"{LOG_DIRECTORY_PREFIX}{secrets.token_hex(4)}"
            log = str(directory / LOG_FILE_NAME)
            problem = own_log_problem(log, pid)  # never written down to be refused later
            if problem is not None:
                raise CasstraceError(problem, "")
            # Written down before the directory is made: a SIGKILL from here on leaves a record that
            # removes it, never a directory no record names.
            self._ledger.record(GC_LOG, "off", log)
            try:
                directory.mkdir(mode=0o700)  # fails when it is there: never another's directory
            except OSError:
                self._ledger.forget(GC_LOG)
                raise
            self._directory = directory
            os.chown(directory, os.stat(f"/proc/{pid}").st_uid, -1)  # the JVM's user writes the log
            self._configure("gc=info,safepoint=info", decorators="timenanos")
            self.measured = True
        except (CasstraceError, OSError) as error:
            warn(f"GC and safepoint pauses are not measured: {getattr(error, 'message', error)}")
            with contextlib.suppress(CasstraceError, OSError):
                self.stop()
        except BaseException:  # a Ctrl-C while jcmd ran: the output it may have added goes too
            with contextlib.suppress(CasstraceError, OSError):
                self.stop()
            raise

    @property
    def log(self) -> Path:
        assert self._directory is not None
        return self._directory / LOG_FILE_NAME

    def _configure(self, what: str, decorators: str | None = None) -> None:
        set_log_output(self.pid, self._command, str(self.log), what, decorators)

    def pauses(self) -> list[Pause]:
        """Every pause the JVM logged so far (all of them, once stopped)."""
        if self._directory is None:
            return parse_log(self._text)
        try:
            return parse_log(self.log.read_text(errors="replace"))
        except OSError:
            return []

    def on_window_start(self, window_id: int, label: str, execution: int | None) -> None:
        self._windows.add(window_id)

    def on_window_end(self, window_id: int) -> None:
        pass

    def write(self, writer: TraceWriter) -> None:
        if not self._text:
            return
        pauses = parse_log(self._text)
        rows: list[WindowMeasureRow] = []
        overlapping = []
        spans = {kind: union([(p.start_ns, p.end_ns) for p in pauses if p.kind == kind]) for kind in KINDS}
        for start, end, window_id in writer.window_spans(self._windows):
            rows += [
                {"window_id": window_id, "measure": name, "value": covered_ns(start, end, spans[kind])}
                for kind, name in KINDS.items()
            ]
            overlapping += [
                {
                    "window_id": window_id,
                    "collector": p.what,
                    "pause_ns": p.end_ns - p.start_ns,
                    "overlap_ns": overlap(p, start, end),
                    "end_ns": p.end_ns,
                    "heap_before_bytes": p.heap_before_bytes,
                    "heap_after_bytes": p.heap_after_bytes,
                    "heap_bytes": p.heap_bytes,
                }
                for p in pauses
                if p.kind == "gc" and overlap(p, start, end)
            ]
        writer.add_window_measures(rows)
        writer.set_meta(gc_pauses=overlapping)

    def stop(self) -> None:
        """Turn the log output off, keep what it wrote, and remove its file (idempotent)."""
        directory, self._directory = self._directory, None
        if directory is None:
            return
        self._directory = directory
        try:
            if self._ledger.node_alive:  # a JVM that went away took its log output with it
                self._configure("all=off")
            self._ledger.forget(GC_LOG)
        finally:
            try:
                self._text = self.log.read_text(errors="replace")
            except OSError:
                pass
            self._directory = None
            shutil.rmtree(directory, ignore_errors=True)
