"""analyses/sweep.py without a node: the linear fit (tests/integration/test_sweep.py runs a sweep)."""

import json

import pytest

import synthetic_traces as synthetic
from casstrace.analyses import analyse
from casstrace.analyses.sweep import linear_fit, summarise_layouts, summarise_tables, tables_point
from casstrace.analyses.table_writes import TableWrites
from casstrace.reports import render
from casstrace.reports.sweep import layout_document, tables_document


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


def _written(table: str, flushes: list[int], compaction: tuple[int, int], received: int) -> TableWrites:
    return TableWrites(table, len(flushes), sum(flushes), sorted(flushes), *compaction, received, 0, 0, 0, None)


def test_a_tables_point_adds_up_its_tables():
    """Two tables' flushes, compactions and received bytes make the point's; the node's counts beside."""
    point = tables_point(
        2,
        (10_000, 5, 4.0, 300 << 20),
        [
            _written("ks.n2_t0000", [3 << 20, 1 << 20], (4 << 20, 3 << 20), 5 << 20),
            _written("ks.n2_t0001", [2 << 20], (0, 0), 3 << 20),
        ],
        [("ks.n2_t0000", 2), ("ks.n2_t0001", 1)],
        [("ks.n2_t0000", 4 << 20, 3 << 20)],
        "t.trace",
    )
    assert point.throughput == 2_500
    assert point.flush_sizes == [1 << 20, 2 << 20, 3 << 20] and point.flushes == 3 == point.node_flushes
    assert point.mean_flush_bytes == 2 << 20
    assert (point.compaction_read_bytes, point.compaction_written_bytes) == (4 << 20, 3 << 20)
    assert (point.node_compactions, point.node_compaction_in_bytes, point.node_compaction_out_bytes) == (
        1,
        4 << 20,
        3 << 20,
    )
    assert point.write_amplification == pytest.approx((6 + 3) / 8)  # flushed 6 MiB, compacted 3, received 8
    unmeasured = tables_point(
        1,
        (10, 0, 1.0, None),
        [TableWrites("ks.n1_t0000", None, None, None, None, None, None, 0, 0, 0, None)],
        None,
        None,
    )
    assert (unmeasured.flushes, unmeasured.write_amplification, unmeasured.node_flushes) == (None, None, None)


def test_the_tables_sweep_as_n_grows():
    """The same 100 MiB over 1, 10 and 100 tables: flushes N times more, N times smaller; throughput down 23 %."""
    points = []
    for n, throughput in ((1, 10_000), (10, 9_500), (100, 7_700)):
        tables = [_written(f"ks.n{n}_t{i:04d}", [(100 << 20) // n], (0, 0), (100 << 20) // n) for i in range(n)]
        points.append(
            tables_point(
                n, (100_000, 0, 100_000 / throughput, (200 + n) << 20), tables, [(t.table, 1) for t in tables], []
            )
        )
    points[1].node_flushes = 11  # one switch the capture did not see
    sweep = summarise_tables(list(reversed(points)), 100_000, 1_000)
    assert [p.tables for p in sweep.points] == [1, 10, 100]
    moves, forced = sweep.findings
    assert moves == (
        "From N=1 to N=100 tables: throughput 10,000 writes/s → 7,700 writes/s (0.77x); flushes 1 → 100 (100.00x); "
        "mean flush 100.0 MiB → 1.0 MiB (0.01x); compaction writes 0 B → 0 B; heap used 201.0 MiB → 300.0 MiB "
        "(1.49x); write amplification 1.00x → 1.00x (1.00x)."
    )
    assert "1 of the 1 flushes at N=1, 100 of the 100 at N=100" in forced
    assert sweep.warnings == [
        "N=10: the capture saw 10 flushes, the node counted 11 memtable switches (nodetool tablestats): "
        "a flush ran outside the capture, or one switched an empty memtable."
    ]
    data = json.loads(render(tables_document(sweep), "json"))
    assert data["kind"] == "tables sweep" and [p["flushes"] for p in data["points"]] == [1, 10, 100]
    assert data["points"][2]["write_amplification"] == 1.0 and data["points"][0]["throughput"] == 10_000
    for fmt in ("text", "md", "html"):
        shown = render(tables_document(sweep), fmt)
        assert "Node flushes" in shown and "7,700/s" in shown
    assert "Write amplification (disk writes" in render(tables_document(sweep), "html")
