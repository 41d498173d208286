"""analyses/sweep.py without a node: the linear fit (tests/integration/test_sweep.py runs a sweep)."""

import json

import pytest

import synthetic_traces as synthetic
from casstrace.analyses import analyse
from casstrace.analyses.sweep import linear_fit, summarise_layouts
from casstrace.reports import render
from casstrace.reports.sweep import layout_document


def test_linear_fit_recovers_a_line():
    fit = linear_fit([10, 20, 30], [5.0, 7.0, 9.0])
    assert (fit.slope, fit.intercept, fit.r2) == pytest.approx((0.2, 3.0, 1.0))
    assert linear_fit([10, 10], [1.0, 2.0]) is None
    assert linear_fit([1, 2, 3], [4.0, 4.0, 4.0]).r2 is None


def test_the_layouts_as_n_grows(tmp_path):
    """The columns' CPU and p99 grow with N (1 ms of CPU per 10 columns), the UDT's stay flat."""
    measured = []
    for n in (10, 50, 100):
        for layout, cpu in (("columns", n * 100_000), ("udt", 1_000_000)):
            trace = synthetic.timed_run(tmp_path / f"{layout}-{n}.trace", 2 * cpu, cpu)
            measured.append((layout, n, analyse(trace)))
    sweep = summarise_layouts(measured, rows=200, row_bytes=1500)
    udt = sweep.series("udt")
    assert [(p.layout, p.columns, p.cpu_ns) for p in udt] == [("udt", n, 1e6) for n in (10, 50, 100)]
    assert [p.node_p99_s for p in udt] == pytest.approx([2e-3] * 3)
    columns, flat, versus = sweep.findings
    assert "node CPU per execution: grows linearly with N" in columns and "node time p99: grows linearly" in columns
    assert "node CPU per execution: flat" in flat
    assert "At N=100" in versus and "columns 10 ms (10.0x udt)" in versus
    data = json.loads(render(layout_document(sweep), "json"))
    assert data["kind"] == "layout sweep" and len(data["points"]) == 6
    assert {p["cpu_ns"] for p in data["points"] if p["layout"] == "udt"} == {1e6}
    for fmt in ("text", "md", "html"):
        assert "CPU per value" in render(layout_document(sweep), fmt)
