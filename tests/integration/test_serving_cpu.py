"""The CPU of the threads that served an execution (analyses.attribution.serving_cpu_ns), on a real node:
within the request pools' CPU of its window, itself within the JVM's; and, while another client keeps the
node busy, a point read's serving CPU stays near the idle node's.

The other client is real (sandbox.workload.BackgroundRequests, as in test_busy_node), its achieved rate
asserted, and its requests' own times show they were out during the measured windows. The independent
truths: the idle node's figures for the same query, and the kernel's own accounting of the request pools
and the whole JVM in each window (node_time.c, by thread name as each slice ran), which the serving
threads' slots are a part of.
"""

import statistics

import pytest

from casstrace.analyses.model import Analysis
from casstrace.analyses.units import ns_to_s
from casstrace.sandbox.workload import BackgroundRequests
from casstrace.traces import Trace
from casstrace.traces.schema import THREAD_SLOT_NS
from test_busy_node import KEY, other_client, point_table, reached  # noqa: F401 (point_table: a fixture)
from verdict_tables import traced

pytestmark = pytest.mark.integration

REPEAT = 15
# The other client's requests/s. A point read's window is 0.7-1 ms on the faster 2-core machine: at 500/s
# a request of the other client's was out in about half of them (6 and 5 of 15 in two suite runs, where
# the premise below asks two in three); at 1,500/s about 2 are expected in each. The busy run is also taken
# again, at most BUSY_RUNS times in all, until they were out in two windows in three.
SERVING_RATE = 1500
BUSY_RUNS = 3
# A busy node's serving threads' CPU against the idle node's, median over the executions: a serving
# thread may run another client's request in the same 1 ms slot as its own (the slots are what it is
# charged by), so some growth is allowed; the pools' CPU grows with every request in the window.
WITHIN = 2.0


def measured(analysis: Analysis, name: str) -> list[float]:
    return [e.measures[name] for e in analysis.executions if e.kind == "measured"]


# The serving threads' CPU is kept per 1 ms slot and a span's first and last slots count whole; the
# pools' CPU is cut at the window's ends. So a serving thread may show up to two slots of CPU that
# the window does not hold: a point read is served by at most three (event loop, request, read stage).
SLOT_SLACK_NS = 3 * 2 * THREAD_SLOT_NS


def measured_windows_s(analysis: Analysis) -> list[tuple[float, float]]:
    """The measured executions' windows, in seconds of the trace's clock."""
    with Trace(analysis.trace_path) as trace:
        rows = trace.rows(
            "SELECT start_ns, end_ns FROM windows WHERE window_id IN"
            " (SELECT window_id FROM executions WHERE kind = 'measured') ORDER BY start_ns"
        )
    return [(ns_to_s(start), ns_to_s(end)) for start, end in rows]


def out_during_windows(load: BackgroundRequests, analysis: Analysis) -> list[int]:
    """How many of the other client's answered requests were out during each measured window."""
    return [load.answered_during(start_s, end_s) for start_s, end_s in measured_windows_s(analysis)]


def loaded(overlapped: list[int]) -> bool:
    """The other client had a request out during at least two windows in three."""
    return sum(count > 0 for count in overlapped) >= len(overlapped) * 2 / 3


def test_a_point_reads_serving_cpu_is_its_own_under_load(sandbox, point_table, kept_capture, tmp_path):
    # The idle baseline is measured before and after the busy run and pooled: one idle run alone, first
    # on a node that has just served other tests, may stand well above the node's usual (CI saw it at
    # 1.35x the busy run's serving CPU), and a baseline that high hides the load it is there to show.
    query = point_table.point_query(KEY)
    idle_before = traced(sandbox, query, tmp_path / "idle-before.trace", kept_capture, repeat=REPEAT)
    with other_client(sandbox, point_table.by_key, point_table.keys_except(KEY), rate=SERVING_RATE) as load:
        for attempt in range(BUSY_RUNS):
            busy = traced(sandbox, query, tmp_path / f"busy-{attempt}.trace", kept_capture, repeat=REPEAT)
            if loaded(out_during_windows(load, busy)):
                break
    reached(load)
    idle_after = traced(sandbox, query, tmp_path / "idle-after.trace", kept_capture, repeat=REPEAT)

    for analysis in (idle_before, busy, idle_after):
        for e in analysis.executions:
            if e.kind == "measured":
                figures = e.measures
                assert 0 < figures["request_cpu_ns"] <= figures["jvm_cpu_ns"], figures
                assert figures["serving_cpu_ns"] <= figures["request_cpu_ns"] + SLOT_SLACK_NS, figures
        assert all(cpu > 0 for cpu in measured(analysis, "serving_cpu_ns")), measured(analysis, "serving_cpu_ns")
        cpu = analysis.cpu_per_result
        assert cpu is not None and cpu.measure == "serving_cpu_ns" and cpu.rows == 1
        assert cpu.per_row_ns == pytest.approx(statistics.median(measured(analysis, "serving_cpu_ns")))

    idle_serving = measured(idle_before, "serving_cpu_ns") + measured(idle_after, "serving_cpu_ns")
    busy_serving = measured(busy, "serving_cpu_ns")
    grew_serving = statistics.median(busy_serving) / statistics.median(idle_serving)
    print(f"the serving threads' CPU: busy/idle {grew_serving:.2f}x")
    assert statistics.median(busy_serving) <= WITHIN * statistics.median(idle_serving), (idle_serving, busy_serving)
    # The load reached the windows, by the other client's own clock (the trace's too: CLOCK_MONOTONIC):
    # at SERVING_RATE about two of its requests are out during a 1 ms window, so without them a serving
    # CPU that stayed put would show nothing. (The pools' CPU beyond the serving threads cannot show it:
    # the shared pool's idle workers spin for work, about 1 ms a window on an idle node, and a busy node
    # answers faster, in shorter windows.)
    overlapped = out_during_windows(load, busy)
    print(f"the other client's requests out during each measured window: {overlapped}")
    assert loaded(overlapped), overlapped
