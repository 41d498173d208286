"""On-CPU time of the captured JVM's threads per window (oncpu.c): the `jvm_cpu_ns` and
`request_cpu_ns` per-window measures (casstrace.traces.measures).

A window source (casstrace.probes.protocol.WindowSource) beside the capture backend: a small BPF
program on the scheduler's sched_switch tracepoint adds each slice a thread of the process ran to
(window, thread) in the kernel; on_window_start tells it the window. At the end the map is read
once, and each window's figure written: every thread's time (`jvm_cpu_ns`), and that of the threads
that serve CQL requests, by their pool's name (`request_cpu_ns`: the native transport's request
and event-loop threads and the read stage; their other work, on a busy node, counts too).
"""

import ctypes
import os
import threading
from collections import defaultdict
from collections.abc import Callable
from importlib import resources
from typing import Any

from casstrace.probes.bcc.bcc_capture import COMPILE_THREAD
from casstrace.traces.rows import WindowMeasureRow
from casstrace.traces.writer import TraceWriter

ONCPU_ENTRIES = 1 << 16  # (window, thread) pairs: 600 threads over 100 windows
# Thread names (comm: 15 characters) of the pools that serve a CQL read, as Cassandra 4.0-5.0 name them.
REQUEST_THREAD_PREFIXES = ("Native-Transpor", "ReadStage", "epollEventLoopG", "nioEventLoopGro")


def serves_requests(thread_name: str) -> bool:
    return thread_name.startswith(REQUEST_THREAD_PREFIXES)


class OnCpuTime:
    """CPU time per window of the process `pid`'s threads. Made before the capture: the program is
    compiled and attached then (a second or two of one core), idle until the first window."""

    def __init__(self, pid: int, warn: Callable[[str], None]):
        self.pid = pid
        self._bpf: Any = None
        # what the kernel counted, and the threads' names, taken when the source stops (before write)
        self._taken: dict[tuple[int, int], int] = {}
        self._names: dict[int, str] = {}
        self._overflows = 0
        try:
            from bcc import BPF  # imported here so `casstrace report` never needs bcc

            # bcc's compiler is not to be run from two threads at once (a crash): after the backend's.
            for thread in threading.enumerate():
                if thread.name == COMPILE_THREAD:
                    thread.join()
            source = resources.files("casstrace.probes.bcc").joinpath("oncpu.c").read_bytes()
            self._bpf = BPF(text=source, cflags=[f"-DTGID={pid}", f"-DONCPU_ENTRIES={ONCPU_ENTRIES}"])
        except Exception as error:  # no bcc, no privilege: the measure is not taken, and the run goes on
            warn(f"the node's CPU time per execution is not measured: {error}")

    def on_window_start(self, window_id: int, label: str, execution: int | None) -> None:
        if self._bpf is not None:
            self._bpf[b"window"][ctypes.c_int(0)] = ctypes.c_uint32(window_id)

    def on_window_end(self, window_id: int) -> None:
        pass

    def thread_ns(self) -> dict[tuple[int, int], int]:
        """(window_id, tid) -> on-CPU ns (window 0: before the first window): so far, or as the source
        stopped."""
        if self._bpf is None:
            return self._taken
        return {(key.window, key.tid): value.value for key, value in self._bpf[b"oncpu"].items()}

    def write(self, writer: TraceWriter) -> None:
        if not self._taken:
            return
        names = self._names
        totals: dict[str, dict[int, int]] = {"jvm_cpu_ns": defaultdict(int), "request_cpu_ns": defaultdict(int)}
        for (window_id, tid), ns in self.thread_ns().items():
            if window_id == 0:
                continue
            totals["jvm_cpu_ns"][window_id] += ns
            if serves_requests(names.get(tid, "")):
                totals["request_cpu_ns"][window_id] += ns
        rows: list[WindowMeasureRow] = [
            {"window_id": window_id, "measure": name, "value": ns}
            for name, per_window in totals.items()
            for window_id, ns in sorted(per_window.items())
        ]
        writer.add_window_measures(rows)
        if self._overflows:  # slices the full map refused: counted where every aggregate's refusals are
            meta = writer.meta()
            writer.set_meta(aggregate_overflows=int(meta.get("aggregate_overflows") or 0) + self._overflows)

    def stop(self) -> None:
        """Take what the kernel counted, then detach (idempotent)."""
        if self._bpf is not None:
            try:
                self._taken = self.thread_ns()
                self._names = _thread_names(self.pid)
                self._overflows = self._bpf[b"overflows"][ctypes.c_int(0)].value
            finally:
                bpf, self._bpf = self._bpf, None
                bpf.cleanup()


def _thread_names(pid: int) -> dict[int, str]:
    """tid -> name of the process's threads alive now (an exited thread has none)."""
    names: dict[int, str] = {}
    try:
        tids = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return names
    for tid in tids:
        try:
            with open(f"/proc/{pid}/task/{tid}/comm") as comm:
                names[int(tid)] = comm.read().strip()
        except OSError:
            continue
    return names
