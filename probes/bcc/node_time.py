"""Where the node's time went per window (node_time.c): the per-window measures `node_ns` (the time the
node took to answer casstrace's requests), `node_requests`, `request_cpu_ns`, `jvm_cpu_ns`, and the
node's time split by its request threads' condition: `running_ns`, `cpu_wait_ns`, `io_wait_ns`
(casstrace.traces.measures; the split: request_states.py).

A window source (casstrace.probes.protocol.WindowSource) beside the capture backend. One small BPF
program: on sched_switch it adds each slice a thread of the JVM ran to (window, thread); on the
socket calls of the measuring client's connections (those on its native-transport port from the
client's addresses, open when the source is made: the run's driver connected before) it times each
request from the read that takes it to the last write of its answer, within the window.
on_window_start tells it the window. At the end the maps are read once and each window's figures
written: the node's time answering, the requests answered, every thread's CPU time (`jvm_cpu_ns`)
and that of the threads that serve CQL requests, by the name of their pool as they ran
(`request_cpu_ns`: the native transport's request and event-loop threads and the read stage, told
apart in the kernel by their names: casstrace.traces.thread_roles; on a busy node their work for other
clients counts too). In the measured executions' windows it also keeps every thread's CPU per 1 ms
slot (the thread_cpu table), from which the analyses take the CPU of the threads that served each
execution, while they served it.
"""

import ctypes
import os
import time
from collections import defaultdict
from collections.abc import Callable, Collection, Iterable
from importlib import resources
from typing import Any

from casstrace.probes.bcc.bcc_capture import detach_all, wait_for_compile
from casstrace.probes.bcc.request_states import Kind, State, Transition, request_spans, split_request_time
from casstrace.probes.proc import proc_fds
from casstrace.probes.protocol import MEASURED_WINDOW
from casstrace.traces.addresses import ClientSockets, parse_address
from casstrace.traces.rows import ThreadCpuRow, WindowMeasureRow
from casstrace.traces.schema import THREAD_SLOT_NS
from casstrace.traces.thread_roles import Role, kernel_prefixes
from casstrace.traces.writer import TraceWriter

ONCPU_ENTRIES = 1 << 16  # (window, thread) pairs: 600 threads over 100 windows
CLIENT_FDS = 1024  # client connections of the node
CALLS = 4096  # threads in a socket call at once
WINDOWS = 4096
# (thread, 1 ms slot) pairs in the measured windows: 10 threads busy for 13 s (preallocated: 11 MiB of
# kernel memory while the capture runs)
THREAD_SLOTS = 1 << 17
SLICE_SLOTS = 32  # slots one slice is cut into at most, from its end (a longer slice's earliest rest goes to
# the earliest of them): a request thread that runs 32 ms without a switch is rare, and each slot costs a map update
JVM_THREADS = 1 << 13  # the process's threads known by tid (a switched-in thread's process)
# The transitions ring (node_time.c), read at each window's end, not during it (reading costs a CPU
# the measured request would wait for): 16 MiB, 419,000 transitions of 40 bytes with their header, a
# measured window of about 9 s (docs/performance.md); a longer one's split is not measured, its lost
# transitions counted.
TRANSITION_PAGES = 1 << 12
# The threads that serve a CQL read: the native transport's sockets and requests, and the local read. Their
# names as the kernel has them (comm: 15 characters), of every series 4.0-5.0 (they name them alike).
REQUEST_ROLES = frozenset({Role.CLIENT_CONNECTIONS, Role.CLIENT_REQUESTS, Role.LOCAL_READ})
REQUEST_THREAD_PREFIXES = kernel_prefixes(REQUEST_ROLES)
# The shared pool's other stages (the local writes, the replicas' answers): a worker under one of their
# names may take a read's task next, renaming itself as it runs (node_time.c OTHER_STAGE).
OTHER_STAGE_PREFIXES = kernel_prefixes(frozenset(Role) - REQUEST_ROLES, shared_only=True)


def starts_with_c(prefixes: tuple[str, ...]) -> str:
    """A C expression of a thread's name `c` (a char array): whether it starts with one of the prefixes,
    unrolled (a BPF program has no string functions)."""
    tests = (" && ".join(f"(c)[{i}] == {ord(letter)}" for i, letter in enumerate(prefix)) for prefix in prefixes)
    return "(" + " || ".join(f"({test})" for test in tests) + ")"


def program_text(name: str) -> bytes:
    """A BPF program of this folder that counts CPU per thread slot: the slot code they share
    (thread_slots.c), then the program."""
    folder = resources.files("casstrace.probes.bcc")
    return folder.joinpath("thread_slots.c").read_bytes() + folder.joinpath(name).read_bytes()


def client_fds(pid: int, native_port: int, clients: Collection[tuple[str, int]] | None = None) -> list[int]:
    """The process's descriptors of TCP connections on its native-transport port (its CQL clients'): of
    those whose remote end is one of `clients` ((ip, port) of the measuring client's connections), when
    given."""
    rule = ClientSockets.of(native_port, clients)
    connections = {
        inode
        for inode, (local, remote) in proc_fds.tcp_sockets(pid).items()
        if rule.holds(parse_address(local), parse_address(remote))
    }
    found = []
    for fd in proc_fds.open_fds(pid):
        try:
            link = os.readlink(f"/proc/{pid}/fd/{fd}")
        except OSError:
            continue
        if link.startswith("socket:[") and int(link[len("socket:[") : -1]) in connections:
            found.append(fd)
    return found


class _Sent(ctypes.Structure):
    """node_time.c's struct transition."""

    _fields_ = [
        ("ts_ns", ctypes.c_uint64),
        ("from_ns", ctypes.c_uint64),
        ("tid", ctypes.c_uint32),
        ("window", ctypes.c_uint32),
        ("kind", ctypes.c_uint32),
        ("state", ctypes.c_uint32),
    ]


def opening_conditions(window_id: int, threads: Iterable[tuple[Any, Any]]) -> list[Transition]:
    """The request threads' conditions as window `window_id` opens (node_time.c's request_threads: tid ->
    condition since when), as the transitions that began them: a thread on a CPU since before the window,
    or waiting for one, or on the disk, is so from then, not asleep until its first transition in it."""
    began = {
        State.RUNNING: (Kind.SWITCHED_IN, 0),
        State.RUNNABLE: (Kind.WOKEN, 0),
        State.IO: (Kind.SWITCHED_OUT, State.IO),
    }
    opening = []
    for tid, condition in threads:
        if (transition := began.get(condition.state)) is not None:
            kind, state = transition
            opening.append(Transition(condition.since, 0, tid.value, window_id, kind, state))
    return opening


class NodeTime:
    """The node's time and CPU per window, for the process `pid` serving CQL on `native_port`. Made before
    the capture: the program is compiled and attached then (a second or two of one core), idle until
    the first window. The node's time is of the connections of `clients` ((ip, port) of the measuring
    client's ends: another client's requests are never its own), or of every client's when not given."""

    def __init__(
        self,
        pid: int,
        native_port: int,
        warn: Callable[[str], None],
        per_thread_labels: frozenset[str] = frozenset({MEASURED_WINDOW}),
        clients: Collection[tuple[str, int]] | None = None,
    ):
        self.pid = pid
        self._bpf: Any = None
        self._per_thread_labels = per_thread_labels  # the windows whose CPU is kept per thread and slot
        # what the kernel counted, taken when the source stops (before write)
        self._cpu: dict[tuple[int, int], int] = {}
        self._thread_slots: dict[tuple[int, int], int] = {}
        self._answering: dict[str, dict[int, int]] = {}
        self._transitions: list[Transition] = []
        self._transitions_lost: set[int] = set()  # windows the ring refused a transition of
        self._overflows = 0
        try:
            from bcc import BPF  # imported here so `casstrace report` never needs bcc

            wait_for_compile()  # the backend's first
            source = program_text("node_time.c")
            cflags = [f"-D{name}={value}" for name, value in self._defines().items()]
            cflags.append(f"-DSERVES_REQUESTS(c)={starts_with_c(REQUEST_THREAD_PREFIXES)}")
            cflags.append(f"-DOTHER_STAGE(c)={starts_with_c(OTHER_STAGE_PREFIXES)}")
            self._bpf = BPF(text=source, cflags=cflags)
            self._bpf[b"transitions"].open_ring_buffer(self._on_transition)
            # The threads there are now: one asleep since before the capture is woken, and waits for a
            # CPU, before it first leaves one (the pools' idle workers)
            known = self._bpf[b"jvm_threads"]
            for tid in proc_fds.thread_ids(pid):
                known[ctypes.c_uint32(tid)] = ctypes.c_uint8(1)
            fds = self._bpf[b"client_fds"]
            own = client_fds(pid, native_port, clients)
            if clients is not None and not own:  # a NAT between them: the node knows the client by other addresses
                warn(
                    "the node's time per execution counts every client's requests: none of the node's "
                    "connections comes from this client's addresses"
                )
                own = client_fds(pid, native_port)
            for fd in own:
                fds[ctypes.c_uint32(fd)] = ctypes.c_uint8(1)
        except Exception as error:  # no bcc, no privilege: the measures are not taken, and the run goes on
            warn(f"the node's time and CPU per execution are not measured: {error}")
            self.stop()

    def _defines(self) -> dict[str, int]:
        return {
            "TGID": self.pid,
            "ONCPU_ENTRIES": ONCPU_ENTRIES,
            "CLIENT_FDS": CLIENT_FDS,
            "CALLS": CALLS,
            "WINDOWS": WINDOWS,
            "THREAD_SLOTS": THREAD_SLOTS,
            "THREAD_SLOT_NS": THREAD_SLOT_NS,
            "SLICE_SLOTS": SLICE_SLOTS,
            "JVM_THREADS": JVM_THREADS,
            "TRANSITION_PAGES": TRANSITION_PAGES,
            **{f"KIND_{kind.name}": kind.value for kind in Kind},
            **{f"STATE_{state.name}": state.value for state in State},
        }

    def _on_transition(self, _context: Any, data: Any, _size: int) -> None:
        sent = ctypes.cast(data, ctypes.POINTER(_Sent)).contents
        self._transitions.append(Transition(sent.ts_ns, sent.from_ns, sent.tid, sent.window, sent.kind, sent.state))

    def on_window_start(self, window_id: int, label: str, execution: int | None) -> None:
        if self._bpf is not None:
            # CLOCK_MONOTONIC: bpf_ktime_get_ns()'s clock
            self._bpf[b"window_start_ns"][ctypes.c_int(0)] = ctypes.c_uint64(time.monotonic_ns())
            self._bpf[b"window"][ctypes.c_int(0)] = ctypes.c_uint32(window_id)
            per_thread = label in self._per_thread_labels
            self._bpf[b"per_thread"][ctypes.c_int(0)] = ctypes.c_uint32(per_thread)
            if per_thread:  # read after the switch: a change meanwhile is sent too, and sorts after
                self._transitions += opening_conditions(window_id, self._bpf[b"request_threads"].items())

    def on_window_end(self, window_id: int) -> None:
        if self._bpf is not None:
            self._bpf.ring_buffer_consume()

    def thread_ns(self) -> dict[tuple[int, int], int]:
        """(window_id, tid) -> on-CPU ns (window 0: before the first window): so far, or as the source
        stopped."""
        if self._bpf is None:
            return self._cpu
        return {(key.window, key.tid): value.value for key, value in self._bpf[b"oncpu"].items()}

    def thread_slots(self) -> dict[tuple[int, int], int]:
        """(tid, slot of THREAD_SLOT_NS on the monotonic clock) -> on-CPU ns, in the windows kept per
        thread: so far, or as the source stopped."""
        if self._bpf is None:
            return self._thread_slots
        return {(key.tid, key.slot): value.value for key, value in self._bpf[b"thread_slots"].items()}

    def transitions(self) -> list[Transition]:
        """The request threads' transitions read so far (node_time.c), in the order they were read."""
        return self._transitions

    def request_spans(self) -> dict[int, tuple[int, int]]:
        """RequestSpans: each measured window's span of the client's requests on the node."""
        return request_spans(self._transitions)

    def write(self, writer: TraceWriter) -> None:
        totals: dict[str, dict[int, int]] = {
            **self._answering,
            "jvm_cpu_ns": defaultdict(int),
        }
        for (window_id, _), ns in self._cpu.items():
            totals["jvm_cpu_ns"][window_id] += ns
        for window_id, split in split_request_time(self._transitions).items():
            if window_id in self._transitions_lost:
                continue  # a window's split with transitions missing would be wrong: not measured
            for name, ns in split.items():
                totals.setdefault(name, {})[window_id] = ns
        rows: list[WindowMeasureRow] = [
            {"window_id": window_id, "measure": name, "value": value}
            for name, per_window in totals.items()
            for window_id, value in sorted(per_window.items())
            if window_id != 0  # before the first window
        ]
        writer.add_window_measures(rows)
        # bpf_ktime_get_ns() is CLOCK_MONOTONIC: a live capture's clock (the trace writer's).
        slots: list[ThreadCpuRow] = [
            {"tid": tid, "ts_ns": slot * THREAD_SLOT_NS, "slot_ns": THREAD_SLOT_NS, "oncpu_ns": ns}
            for (tid, slot), ns in sorted(self._thread_slots.items())
        ]
        writer.add_thread_cpu(slots)
        if self._overflows:  # what the full maps refused: counted where every aggregate's refusals are
            meta = writer.meta()
            writer.set_meta(aggregate_overflows=int(meta.get("aggregate_overflows") or 0) + self._overflows)

    def stop(self) -> None:
        """Take what the kernel counted, then detach (idempotent)."""
        if self._bpf is None:
            return
        bpf = self._bpf
        try:
            bpf.ring_buffer_consume()
            self._cpu = self.thread_ns()
            self._thread_slots = self.thread_slots()
            self._answering = {
                name: {key.value: value.value for key, value in bpf[table].items()}
                for name, table in (
                    ("node_ns", b"answering_ns"),
                    ("node_requests", b"answered"),
                    ("request_cpu_ns", b"request_oncpu"),
                )
            }
            self._overflows = bpf[b"overflows"][ctypes.c_int(0)].value
            self._transitions_lost = {key.value for key in bpf[b"transitions_lost"]}
        finally:
            self._bpf = None
            try:
                detach_all(bpf)  # at once (bcc's cleanup detaches one by one: ~1.4 s on a busy node)
            finally:
                bpf.cleanup()
