"""The least a syscall capture can cost, to measure casstrace's probes against (probe_overhead.py
--floor, probe_call_cost.py): two lesser raw_syscalls pairs, an empty program on the syscall
tracepoints capture.c uses, and the kernel's own accounting of the time BPF programs run.

- EMPTY_PAIR: each program returns at once. What any capture that times calls from entry to exit
  costs before it does any work: the syscall tracepoints' slow path and two program runs a call.
- TIMED_PAIR: the least such a capture does, as capture.c does it: the process's TGID in an array,
  the entry time in the thread's task storage, the latency added up at exit.
- empty_programs_attached(calls): EMPTY_PROGRAM on the syscalls:sys_enter_/sys_exit_ tracepoints of
  `calls`. With casstrace's own calls (syscalls.CAPTURED): what its default capture costs before it
  does any work. With a call no one makes (UNMADE_CALL): the kernel's floor for an enabled syscall
  tracepoint, which every syscall of every process pays (the slow syscall path, the check of whether
  the call's tracepoint has a program), and which no per-syscall capture can go below.
"""

import contextlib
import ctypes
from collections.abc import Iterator
from pathlib import Path

# (Its `traced` array, which it never reads, lets every pair be attached alike.)
EMPTY_PAIR = """
BPF_ARRAY(traced, u64, 1);
RAW_TRACEPOINT_PROBE(sys_enter) { return 0; }
RAW_TRACEPOINT_PROBE(sys_exit) { return 0; }
"""

TIMED_PAIR = r"""
BPF_ARRAY(traced, u64, 1);
struct call { u64 entered_ns; u64 latency_ns; };
BPF_TASK_STORAGE(calls, struct call);

static __always_inline bool is_traced(void) {
    u32 first = 0;
    u64 *tgid = traced.lookup(&first);
    return tgid && *tgid == bpf_get_current_pid_tgid() >> 32;
}

RAW_TRACEPOINT_PROBE(sys_enter) {
    if (!is_traced())
        return 0;
    struct call *c = calls.task_storage_get((void *)bpf_get_current_task_btf(), 0, BPF_LOCAL_STORAGE_GET_F_CREATE);
    if (c)
        c->entered_ns = bpf_ktime_get_ns();
    return 0;
}

RAW_TRACEPOINT_PROBE(sys_exit) {
    if (!is_traced())
        return 0;
    struct call *c = calls.task_storage_get((void *)bpf_get_current_task_btf(), 0, 0);
    if (c && c->entered_ns) {
        c->latency_ns += bpf_ktime_get_ns() - c->entered_ns;
        c->entered_ns = 0;
    }
    return 0;
}
"""


@contextlib.contextmanager
def pair_attached(text: str, pid: int) -> Iterator[None]:
    """A raw_syscalls pair attached (as it loads), with `pid` written into its `traced` array."""
    from bcc import BPF

    pair = BPF(text=text.encode())
    try:
        pair[b"traced"][ctypes.c_int(0)] = ctypes.c_ulonglong(pid)
        yield
    finally:
        pair.cleanup()


EMPTY_PROGRAM = """
BPF_ARRAY(traced, u64, 1);
int empty(void *ctx) { return 0; }
"""
UNMADE_CALL = "vhangup"  # a call no process here makes: its tracepoints enabled, its program never runs


@contextlib.contextmanager
def empty_programs_attached(calls: tuple[str, ...], pid: int) -> Iterator[None]:
    """EMPTY_PROGRAM attached to the entry and exit tracepoints of each of `calls` (pid: unused, so
    that every floor is attached alike)."""
    from bcc import BPF

    from casstrace.probes.bcc.syscalls import tracepoint_name

    programs = BPF(text=EMPTY_PROGRAM.encode())
    try:
        for call in calls:
            name = tracepoint_name(call)
            if Path(f"/sys/kernel/tracing/events/syscalls/sys_enter_{name}").is_dir():
                for side in ("enter", "exit"):
                    programs.attach_tracepoint(tp=f"syscalls:sys_{side}_{name}".encode(), fn_name=b"empty")
        yield
    finally:
        programs.cleanup()


@contextlib.contextmanager
def bpf_stats() -> Iterator[None]:
    """The kernel counts each BPF program's runs and time while this is on (two clock reads a run,
    so time taken meanwhile is not a figure)."""
    switch = Path("/proc/sys/kernel/bpf_stats_enabled")
    before = switch.read_text().strip()
    switch.write_text("1")
    try:
        yield
    finally:
        switch.write_text(before)


def programs_run_time_ns(pid: int | str = "self") -> int:
    """The time the BPF programs this process holds have run, in all, as the kernel counted it."""
    return programs_runs(pid)[0]


def programs_runs(pid: int | str = "self") -> tuple[int, int]:
    """(ns, runs) of the BPF programs this process holds, in all, as the kernel counted them (a
    program's fd says; the fd of its attachment names it too, without the figures)."""
    runs: dict[str, tuple[int, int]] = {}
    for fdinfo in Path(f"/proc/{pid}/fdinfo").iterdir():
        try:
            fields = dict(line.split(":\t", 1) for line in fdinfo.read_text().splitlines() if ":\t" in line)
        except OSError:
            continue
        if "prog_id" in fields and "run_time_ns" in fields:
            runs[fields["prog_id"]] = (int(fields["run_time_ns"]), int(fields.get("run_cnt", 0)))
    return sum(ns for ns, _ in runs.values()), sum(count for _, count in runs.values())
