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
"""

import contextlib
import os
import re
import shutil
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from casstrace.errors import CasstraceError
from casstrace.ledger import GC_LOG, Ledger
from casstrace.node.jvm import jcmd_command, run_tool
from casstrace.probes.proc.proc_fds import root_prefix
from casstrace.traces.meta import JvmPause
from casstrace.traces.rows import WindowMeasureRow
from casstrace.traces.writer import TraceWriter

JCMD_TIMEOUT_S = 30.0
LOG_DIRECTORY_PREFIX = "casstrace-gc-"  # the log's own temporary directory (removed with the output)
UNITS = {"B": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
# "[1672364269096ns] GC(11) Pause Full (Diagnostic Command) 418M->57M(1024M) 1110.588ms"
GC_PAUSE = re.compile(
    r"^\[(?P<end>\d+)ns\] GC\(\d+\) (?P<collector>Pause .*?) "
    r"(?P<before>\d+)(?P<bu>[BKMG])->(?P<after>\d+)(?P<au>[BKMG])\((?P<heap>\d+)(?P<hu>[BKMG])\) (?P<ms>[\d.]+)ms$"
)
# '[1672368670265ns] Safepoint "G1CollectFull", Time since last: ..., Total: 1115043100 ns'
SAFEPOINT = re.compile(r'^\[(?P<end>\d+)ns\] Safepoint "(?P<operation>[^"]+)".*\bTotal: (?P<total>\d+) ns')


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
            directory = Path(tempfile.mkdtemp(prefix=LOG_DIRECTORY_PREFIX))
            os.chown(directory, os.stat(f"/proc/{pid}").st_uid, -1)  # the JVM's user writes the log
            self._directory = directory
            self._ledger.record(GC_LOG, "off", str(self.log))
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
        return self._directory / "gc.log"

    def _configure(self, what: str, decorators: str | None = None) -> None:
        run_tool(
            [*self._command, "VM.log", f"output=file={self.log}", f"what={what}"]
            + ([f"decorators={decorators}"] if decorators else []),
            f"jcmd {self.pid} VM.log",
            JCMD_TIMEOUT_S,
            cannot_run_fix="install a JDK matching the node's Java (its jcmd attaches to the JVM)",
            failed_fix="run casstrace as the node's user or root, with a JDK matching the node's Java",
        )

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
        for start, end, window_id in writer.window_spans(self._windows):
            for kind, name in (("gc", "gc_pause_ns"), ("safepoint", "safepoint_ns")):
                rows.append(
                    {
                        "window_id": window_id,
                        "measure": name,
                        "value": sum(overlap(p, start, end) for p in pauses if p.kind == kind),
                    }
                )
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
