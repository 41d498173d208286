"""The CPU of the threads that served an execution (analyses.attribution.serving_cpu_ns), on a real node:
within the request pools' CPU of its window, itself within the JVM's; and, while another client keeps the
node busy, a point read's serving CPU stays near the idle node's while the pools' CPU grows with the other
client's requests.

The other client is real (sandbox.workload.BackgroundRequests, as in test_busy_node), its achieved rate
asserted. The independent truths: the idle node's figures for the same query, and the kernel's own
accounting of the request pools and the whole JVM in each window (node_time.c, by thread name as each
slice ran), which the serving threads' slots are a part of.
"""

import statistics

import pytest

from casstrace.analyses.model import Analysis
from casstrace.traces.schema import THREAD_SLOT_NS
from test_busy_node import KEY, other_client, point_table, reached, traced  # noqa: F401 (point_table: a fixture)

pytestmark = pytest.mark.integration

REPEAT = 15
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


def beyond_serving(analysis: Analysis) -> list[float]:
    """The pools' CPU in each window beyond the serving threads': other requests' and the pools' own."""
    return [
        pools - serving
        for pools, serving in zip(measured(analysis, "request_cpu_ns"), measured(analysis, "serving_cpu_ns"))
    ]


def test_a_point_reads_serving_cpu_is_its_own_under_load(sandbox, point_table, tmp_path):
    # The idle baseline is measured before and after the busy run and pooled: one idle run alone, first
    # on a node that has just served other tests, may stand well above the node's usual (CI saw it at
    # 1.35x the busy run's serving CPU), and a baseline that high hides the load it is there to show.
    idle_before = traced(sandbox, point_table.point_query(KEY), tmp_path / "idle-before.trace", repeat=REPEAT)
    with other_client(sandbox, point_table.by_key, point_table.keys_except(KEY)) as load:
        busy = traced(sandbox, point_table.point_query(KEY), tmp_path / "busy.trace", repeat=REPEAT)
    reached(load)
    idle_after = traced(sandbox, point_table.point_query(KEY), tmp_path / "idle-after.trace", repeat=REPEAT)

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
    assert statistics.median(busy_serving) <= WITHIN * statistics.median(idle_serving), (idle_serving, busy_serving)
    # The load reached the windows: the pools' CPU beyond the serving threads' grew. Without it, a
    # serving CPU that stayed put would show nothing.
    idle_others = beyond_serving(idle_before) + beyond_serving(idle_after)
    busy_others = beyond_serving(busy)
    grew_others = statistics.median(busy_others) / statistics.median(idle_others)
    grew_serving = statistics.median(busy_serving) / statistics.median(idle_serving)
    print(f"beyond the serving threads the pools' CPU grew {grew_others:.2f}x, theirs {grew_serving:.2f}x")
    assert grew_others > 1.3, (idle_others, busy_others)
