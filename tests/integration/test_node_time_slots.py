"""node_time.c's per-thread CPU slots, on this kernel, against a program's own clock and the kernel's
schedstat: a thread that spins 50 ms without leaving the CPU has the last SLICE_SLOTS milliseconds
of its slice counted slot by slot where its own clock says it ran, the earlier rest in the earliest
slot, and the slots add up to the CPU the kernel counted for it.

The spinner runs at a real-time priority so that it spins in one slice, and reads CLOCK_MONOTONIC
(time.monotonic_ns), the clock bpf_ktime_get_ns() reads too.
"""

import os
import subprocess
import sys
import time

import pytest

from casstrace.probes.protocol import MEASURED_WINDOW
from casstrace.traces.schema import THREAD_SLOT_NS

pytestmark = pytest.mark.integration

if os.geteuid() != 0:
    pytest.skip("BPF capture needs root", allow_module_level=True)

from casstrace.probes.bcc.node_time import SLICE_SLOTS, NodeTime  # noqa: E402

SPIN_NS = 50_000_000
# Real-time FIFO: no ordinary task preempts the spin, so it is one slice (interrupts do not switch).
SPINNER = f"""
import os, sys, time
os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(1))
print("ready", flush=True)
sys.stdin.readline()
start = time.monotonic_ns()
while time.monotonic_ns() - start < {SPIN_NS}:
    pass
print(start, time.monotonic_ns(), flush=True)
sys.stdin.readline()
"""


def schedstat_ns(pid: int) -> int:
    with open(f"/proc/{pid}/schedstat") as stat:
        return int(stat.read().split()[0])


@pytest.fixture(scope="module")
def spun():
    """(the spinner's own start and end of its spin, its CPU by schedstat over the window, its slots)"""
    spinner = subprocess.Popen(
        [sys.executable, "-c", SPINNER], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    try:
        assert spinner.stdout.readline().strip() == "ready"
        warnings: list[str] = []
        node_time = NodeTime(spinner.pid, native_port=0, warn=warnings.append)
        assert not warnings, warnings
        try:
            node_time.on_window_start(1, MEASURED_WINDOW, 0)
            before = schedstat_ns(spinner.pid)
            spinner.stdin.write("go\n")
            spinner.stdin.flush()
            start, end = map(int, spinner.stdout.readline().split())
            time.sleep(0.05)  # blocked on its stdin again: the slice has ended
            cpu = schedstat_ns(spinner.pid) - before
        finally:
            node_time.stop()
        slots = {slot: ns for (tid, slot), ns in node_time.thread_slots().items() if tid == spinner.pid}
        return start, end, cpu, slots
    finally:
        spinner.stdin.write("end\n")
        spinner.stdin.close()
        spinner.wait(timeout=10)


def test_the_slots_add_up_to_the_kernels_count_of_the_threads_cpu(spun):
    _, _, cpu, slots = spun
    assert sum(slots.values()) == pytest.approx(cpu, rel=0.02), (cpu, slots)


def test_the_spins_last_milliseconds_are_counted_where_its_clock_says_it_ran(spun):
    start, end, _, slots = spun
    last_full = end // THREAD_SLOT_NS - 1  # the last slot the spin filled (the one after holds its end)
    counted = range(last_full - (SLICE_SLOTS - 3), last_full + 1)  # well inside the slots cut exactly
    assert counted.start * THREAD_SLOT_NS > start
    for slot in counted:
        # the whole slot, but for what another task or an interrupt took of the core
        assert 0.8 * THREAD_SLOT_NS <= slots.get(slot, 0) <= THREAD_SLOT_NS, (slot, slots)


def test_a_slice_longer_than_the_slots_cut_puts_its_earlier_rest_in_the_earliest_slot(spun):
    start, end, _, slots = spun
    earliest = min(slots)
    # the slice is over 50 ms long, only its last SLICE_SLOTS slots are cut: the rest is one count
    assert slots[earliest] > (end - start - SLICE_SLOTS * THREAD_SLOT_NS) * 0.8, slots
    assert all(ns <= THREAD_SLOT_NS for slot, ns in slots.items() if slot != earliest), slots
