"""The CPU of the threads that served an execution (analyses.attribution.serving_cpu_ns), on a real node:
within the request pools' CPU of its window, itself within the JVM's; and, while another client keeps the
node busy, a point read's serving CPU stays near the idle node's while the pools' CPU grows with the other
client's requests.

The other client is real (sandbox.workload.BackgroundReads, as in test_busy_node), its achieved rate
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


def median(analysis: Analysis, name: str) -> float:
    return statistics.median(measured(analysis, name))


def total(analysis: Analysis, name: str) -> float:
    return sum(measured(analysis, name))


def test_a_point_reads_serving_cpu_is_its_own_under_load(sandbox, point_table, tmp_path):
    idle = traced(sandbox, point_table.point_query(KEY), tmp_path / "idle.trace", repeat=REPEAT)
    with other_client(sandbox, point_table.by_key, point_table.keys_except(KEY)) as load:
        busy = traced(sandbox, point_table.point_query(KEY), tmp_path / "busy.trace", repeat=REPEAT)
    reached(load)

    for analysis in (idle, busy):
        for e in analysis.executions:
            if e.kind == "measured":
                figures = e.measures
                assert 0 < figures["request_cpu_ns"] <= figures["jvm_cpu_ns"], figures
                assert figures["serving_cpu_ns"] <= figures["request_cpu_ns"] + SLOT_SLACK_NS, figures
        assert all(cpu > 0 for cpu in measured(analysis, "serving_cpu_ns")), measured(analysis, "serving_cpu_ns")
        cpu = analysis.cpu_per_result
        assert cpu is not None and cpu.measure == "serving_cpu_ns" and cpu.rows == 1
        assert cpu.per_row_ns == pytest.approx(median(analysis, "serving_cpu_ns"))

    assert median(busy, "serving_cpu_ns") <= WITHIN * median(idle, "serving_cpu_ns"), (
        measured(idle, "serving_cpu_ns"),
        measured(busy, "serving_cpu_ns"),
    )
    # the pools served the other client meanwhile: their CPU grew more than the serving threads'. A
    # window of a point read is a millisecond or two: at a few hundred requests/s most hold none of the other
    # client's, so the growth is of the total over the executions, not of a median.
    grew_pool = total(busy, "request_cpu_ns") / total(idle, "request_cpu_ns")
    grew_serving = total(busy, "serving_cpu_ns") / total(idle, "serving_cpu_ns")
    print(f"pools grew {grew_pool:.2f}x, serving threads {grew_serving:.2f}x")
    assert grew_pool > 1.2 and grew_pool > 1.5 * grew_serving, (grew_pool, grew_serving)
