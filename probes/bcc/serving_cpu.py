"""The CPU of a watched node's request threads per thread and 1 ms slot (serving_cpu.c), from which a
watch takes each sampled write's serving CPU: the same slots `casstrace run` keeps in its measured
windows (node_time.py), of the threads a traced session's events can run on only
(traces.thread_roles.SESSION_ROLES, told apart in the kernel by their names as they ran).

A window source beside the watch's capture: it counts in the windows labelled `labels` (the watch's own).
The kernel's map holds the slots not yet drained: `drain()`, called as the watch drains its capture,
moves the complete ones into this process, so that the map never fills; `take(until_ns)` hands a
stretch's slots over for an interval's trace, and `slots()` what is left once stopped. The watch keeps
in its traces only the slots its sampled sessions' spans meet (traces.serving.ServingSpans.meets): a
trace holds P of the request threads' slots, not all of them.
"""

import ctypes
import time
from array import array
from collections import Counter
from collections.abc import Callable
from typing import Any

from casstrace.probes.bcc.bcc_capture import delete_keys, detach_all, read_hash, wait_for_compile
from casstrace.probes.bcc.node_time import SLICE_SLOTS, THREAD_SLOTS, program_text, starts_with_c
from casstrace.traces.schema import THREAD_SLOT_NS
from casstrace.traces.thread_roles import SESSION_ROLES, kernel_prefixes
from casstrace.traces.writer import TraceWriter

# A slot is complete this long after its end: a slice adds to the slots it spans when its thread leaves
# the CPU, at most SLICE_SLOTS slots back; a thread running longer puts its rest in the earliest of them.
COMPLETE_AFTER_NS = 2 * SLICE_SLOTS * THREAD_SLOT_NS

Slots = Counter[tuple[int, int]]  # (tid, slot of THREAD_SLOT_NS on the monotonic clock) -> on-CPU ns


class ServingCpu:
    """The request threads' CPU per slot of the process `pid`, counted in the windows labelled `labels`.
    Made before the capture (the program is compiled and attached then); a source that cannot attach
    warns once and measures nothing (`measured` False)."""

    def __init__(self, pid: int, labels: frozenset[str], warn: Callable[[str], None]):
        self.pid = pid
        self._labels = labels
        self._bpf: Any = None
        # drained from the kernel, not yet taken: tid, slot, on-CPU ns, one after another (24 bytes a slot;
        # a dict would take ~200: 2,750 slots a second at 1,000 writes/s, docs/performance.md)
        self._drained = array("q")
        self.overflows = 0  # slots the full map refused, as the source stopped
        self.measured = False
        try:
            from bcc import BPF  # imported here so `casstrace report` never needs bcc

            wait_for_compile()  # the backend's first
            cflags = [
                f"-DTGID={pid}",
                f"-DTHREAD_SLOTS={THREAD_SLOTS}",
                f"-DTHREAD_SLOT_NS={THREAD_SLOT_NS}",
                f"-DSLICE_SLOTS={SLICE_SLOTS}",
                f"-DSERVES_SESSIONS(c)={starts_with_c(kernel_prefixes(SESSION_ROLES))}",
            ]
            self._bpf = BPF(text=program_text("serving_cpu.c"), cflags=cflags)
            self.measured = True
        except Exception as error:  # no bcc, no privilege: the watch goes on without its writes' CPU
            warn(f"the CPU of the threads that served each write is not measured: {error}")
            self.stop()

    def on_window_start(self, window_id: int, label: str, execution: int | None) -> None:
        if self._bpf is not None:
            self._bpf[b"counting"][ctypes.c_int(0)] = ctypes.c_uint32(label in self._labels)

    def on_window_end(self, window_id: int) -> None:
        pass

    def write(self, writer: TraceWriter) -> None:
        """Nothing: the watch writes the slots its sampled sessions meet, with the sessions."""

    def drain(self, complete_until_ns: int | None = None) -> int:
        """Move the slots complete by `complete_until_ns` (monotonic; None: by now) out of the kernel's map
        (every slot, once stopped); returns how many. Not cut by a signal halfway: call it deferred."""
        if self._bpf is None:
            return 0
        until = (time.monotonic_ns() - COMPLETE_AFTER_NS) if complete_until_ns is None else complete_until_ns
        table = self._bpf[b"thread_slots"]
        done = [(key, ns) for key, ns in read_hash(table) if (key.slot + 1) * THREAD_SLOT_NS <= until]
        if not done:
            return 0
        delete_keys(table, b"".join(bytes(key) for key, _ in done))
        for key, ns in done:
            self._drained.extend((key.tid, key.slot, ns))
        return len(done)

    def take(self, until_ns: int) -> Slots:
        """The slots that end by `until_ns` (monotonic), moved out: one stretch of the watch."""
        self.drain(until_ns)
        taken: Slots = Counter()
        kept = array("q")
        drained = self._drained
        for at in range(0, len(drained), 3):
            tid, slot, ns = drained[at : at + 3]
            if (slot + 1) * THREAD_SLOT_NS <= until_ns:
                taken[(tid, slot)] += ns
            else:
                kept.extend((tid, slot, ns))
        self._drained = kept
        return taken

    def slots(self) -> Slots:
        """The slots not taken yet: those drained and, while it counts, those still in the kernel (a
        slot found twice, re-created by a late slice after it was drained, counts the sum)."""
        found: Slots = Counter()
        drained = self._drained
        for at in range(0, len(drained), 3):
            found[(drained[at], drained[at + 1])] += drained[at + 2]
        if self._bpf is not None:
            for key, ns in read_hash(self._bpf[b"thread_slots"]):
                found[(key.tid, key.slot)] += ns
        return found

    def stop(self) -> None:
        """Take every slot the kernel counted, then detach (idempotent)."""
        if self._bpf is None:
            return
        bpf = self._bpf
        try:
            self.drain(complete_until_ns=1 << 63)
            self.overflows = bpf[b"overflows"][ctypes.c_int(0)].value
        finally:
            self._bpf = None
            try:
                detach_all(bpf)
            finally:
                bpf.cleanup()
