"""The Prometheus page of a watch (reports.prometheus), from figures made by hand: counters never go
down, a statement keeps its label, the label set stays bounded, and promtool accepts the page."""

import dataclasses
import subprocess
import urllib.request

import pytest

from casstrace.analyses.model import MeasureSummary
from casstrace.analyses.statement_writes import StatementWrites
from casstrace.analyses.watch import ComponentRead, StatementIO, Watch
from casstrace.analyses.watch_tables import TableRead
from casstrace.errors import CasstraceError
from casstrace.node.metrics_endpoint import MetricsEndpoint, bind_address
from casstrace.reports.prometheus import Exposition
from casstrace.reports.prometheus_measures import metric_name
from casstrace.traces.measures import MEASURES


def _statement(text: str, executions: int, bytes_per_execution: float) -> StatementIO:
    return StatementIO(
        statement=text,
        sampled_executions=executions,
        estimated_executions=executions * 100,
        sstable_bytes=round(executions * bytes_per_execution),
        estimated_sstable_bytes=executions * bytes_per_execution * 100,
        sstable_read_bytes_per_execution=bytes_per_execution,
        data_read_bytes_per_execution=bytes_per_execution,
        components=[ComponentRead("ks.t", "Data", bytes_per_execution, bytes_per_execution, 0.0)],
        rows_per_execution=1.0,
        bytes_per_row=bytes_per_execution,
        latency_p50_s=None,
        latency_p99_s=None,
        consistency=[],
        unmatched_threads=[],
        necessary_bytes_per_execution=bytes_per_execution / 4,
    )


def _watch(statements: list[StatementIO]) -> Watch:
    return Watch(
        trace_path="",
        complete=True,
        warnings=[],
        notes=[],
        duration_s=10.0,
        probability=0.01,
        statements=sorted(statements, key=lambda s: -s.estimated_sstable_bytes),
        sstable_bytes=0,
        explained_bytes=0,
        unexplained=[],
        context={},
    )


def _value(page: str, prefix: str) -> float:
    (line,) = [line for line in page.splitlines() if line.startswith(prefix)]
    return float(line.rsplit(" ", 1)[1])


def test_counters_never_go_down_and_labels_stay_bounded():
    exposition = Exposition(top=2)
    tables = [TableRead("ks.t", "Data", 4096, 4096, 0)]
    first = exposition.page(
        _watch(
            [
                _statement("SELECT a FROM ks.t WHERE k = ?", 10, 4096),
                _statement('SELECT "b\\" FROM ks.t', 5, 1024),
                _statement("SELECT c FROM ks.t", 1, 10),
            ]
        ),
        tables,
    )
    sampled = 'casstrace_statement_executions_total{statement="SELECT a FROM ks.t WHERE k = ?",kind="sampled"}'
    assert _value(first, sampled) == 10
    assert _value(first, 'casstrace_statement_executions_total{statement="other",kind="sampled"}') == 1
    assert 'statement="SELECT \\"b\\\\\\" FROM ks.t"' in first  # escaped as the format says
    assert _value(first, 'casstrace_statement_amplification_ratio{statement="SELECT a FROM ks.t WHERE k = ?"}') == 4
    # Recomputed a little lower (a shared slot shared anew), and a new statement outranking all:
    second = exposition.page(
        _watch([_statement("SELECT a FROM ks.t WHERE k = ?", 9, 4096), _statement("SELECT d FROM ks.t", 50, 8192)]),
        tables,
    )
    assert _value(second, sampled) == 10
    assert 'statement="SELECT d FROM ks.t"' not in second  # two labels taken: it is 'other'
    assert _value(second, 'casstrace_statement_executions_total{statement="other",kind="sampled"}') == 50
    assert _value(second, "casstrace_sessions_sampled_total") == 59
    checked = subprocess.run(["promtool", "check", "metrics"], input=second, capture_output=True, text=True)
    assert checked.returncode == 0, checked.stdout + checked.stderr


@pytest.mark.parametrize(
    "address, url",
    [
        ("::1", "http://[::1]:{port}/metrics"),
        ("[::1]", "http://[::1]:{port}/metrics"),
        ("127.0.0.1", "http://127.0.0.1:{port}/metrics"),
    ],
)
def test_the_endpoint_serves_on_ipv6_and_says_where(address, url):
    endpoint = MetricsEndpoint(0, address).start()
    try:
        endpoint.publish("casstrace_watch_sample_ratio 0.5\n")
        assert endpoint.describe() == url.format(port=endpoint.port)
        assert urllib.request.urlopen(endpoint.describe(), timeout=10).read() == b"casstrace_watch_sample_ratio 0.5\n"
    finally:
        endpoint.close()


def test_every_interface_is_said_so():
    endpoint = MetricsEndpoint(0, "::")
    try:
        assert endpoint.describe().startswith("http://[::]:") and endpoint.describe().endswith("(every interface)")
    finally:
        endpoint.close()


@pytest.mark.parametrize("address", ["", "  ", "[]", "1.2.3.4.5", "no such host.invalid", "a\x00b"])
def test_an_address_that_is_none_is_refused_naming_the_option(address):
    with pytest.raises(CasstraceError) as refused:
        bind_address(address)
    assert "--metrics-address" in (refused.value.fix or "")


def test_a_statements_p99_with_and_without_the_jvms_pauses():
    paused = dataclasses.replace(
        _statement("SELECT v FROM ks.t WHERE k = ?", 100, 4096),
        latency_p99_s=0.2,
        latency_p99_without_pauses_s=0.002,
        paused_executions=3,
    )
    unmeasured = dataclasses.replace(_statement("SELECT w FROM ks.t WHERE k = ?", 10, 4096), latency_p99_s=0.01)
    page = Exposition(top=2).page(_watch([paused, unmeasured]), [])
    p99 = 'casstrace_statement_latency_p99_seconds{statement="SELECT v FROM ks.t WHERE k = ?",pauses='
    assert _value(page, p99 + '"included"}') == 0.2
    assert _value(page, p99 + '"excluded"}') == 0.002
    assert 'statement="SELECT w FROM ks.t WHERE k = ?",pauses="excluded"' not in page  # pauses not measured


def _write(wire: float | None, commit_log: float | None, pause_ns: float | None, cpu_ns: float) -> StatementWrites:
    return StatementWrites(
        kind="INSERT",
        tables=["ks.t"],
        statements_per_execution=1,
        logged=None,
        rows_per_execution=1,
        cells_per_execution=1,
        estimated_rows=None,
        estimated_cells=None,
        partitions_per_execution=1.0,
        wire_bytes_per_execution=wire,
        wire_estimated=False,
        commitlog_bytes_per_execution=commit_log,
        node_ns_per_execution=400_000.0,
        commitlog_ns_per_execution=100_000.0,
        pause_ns_per_execution=pause_ns,
        cpu_ns_per_execution=cpu_ns,
        rest_ns_per_execution=300_000.0 - (pause_ns or 0.0) - cpu_ns,
        estimated_storage_bytes=0.0,
    )


def test_write_statements_bytes_and_node_time_beside_the_reads():
    """Two writes summed into 'other' (top=1 labels the read): their bytes add up, their node time is
    the mean per sampled execution; a figure one of them lacks has no series."""
    read = _statement("SELECT a FROM ks.t WHERE k = ?", 10, 4096)
    one = dataclasses.replace(
        _statement("INSERT INTO ks.t (k, v) VALUES (?, ?)", 30, 0), write=_write(1100.0, 2048.0, 100_000.0, 50_000.0)
    )
    other = dataclasses.replace(
        _statement("UPDATE ks.t SET v = ? WHERE k = ?", 10, 0), write=_write(900.0, 1024.0, None, 80_000.0)
    )
    page = Exposition(top=1).page(_watch([read, one, other]), [])
    assert (
        _value(page, 'casstrace_statement_write_bytes_total{statement="other",measure="wire"}') == 30 * 1100 + 10 * 900
    )
    assert (
        _value(page, 'casstrace_statement_write_bytes_total{statement="other",measure="commit_log"}')
        == 30 * 2048 + 10 * 1024
    )
    node = 'casstrace_statement_write_node_seconds_per_execution{statement="other",part='
    assert _value(page, node + '"total"}') == pytest.approx(400e-6)
    assert _value(page, node + '"commit_log"}') == pytest.approx(100e-6)
    assert _value(page, node + '"cpu"}') == pytest.approx((30 * 50e-6 + 10 * 80e-6) / 40)
    assert _value(page, node + '"rest"}') == pytest.approx((30 * 150e-6 + 10 * 220e-6) / 40)
    assert node + '"pauses"}' not in page  # the UPDATE's pauses not measured
    assert 'write_bytes_total{statement="SELECT' not in page  # a read has none
    alone = Exposition(top=3).page(_watch([read, one, other]), [])
    label = 'statement="INSERT INTO ks.t (k, v) VALUES (?, ?)"'
    assert _value(alone, f'{node.split("{")[0]}{{{label},part="pauses"}}') == pytest.approx(100e-6)
    for shown in (page, alone):
        checked = subprocess.run(["promtool", "check", "metrics"], input=shown, capture_output=True, text=True)
        assert checked.returncode == 0, checked.stdout + checked.stderr


def test_every_registered_measure_is_a_summary_family_of_its_statements():
    """A statement's per-execution measures (the registry's, as the report gives them) on the page: its
    median and p99 as quantiles, with their sum and count, in base units; statements summed into
    'other' give sum and count only; promtool accepts the page."""
    summaries = [
        MeasureSummary(entry.name, entry.label, entry.unit, entry.whose, 4, 2_000.0, 9_000.0, 15_000.0)
        for entry in MEASURES.values()
    ]
    first = dataclasses.replace(_statement("SELECT a FROM ks.t WHERE k = ?", 4, 4096), measures=summaries)
    second = dataclasses.replace(_statement("SELECT b FROM ks.t WHERE k = ?", 2, 1024), measures=summaries[:1])
    page = Exposition(top=1).page(_watch([first, second]), [])
    label = 'statement="SELECT a FROM ks.t WHERE k = ?"'
    for entry in MEASURES.values():
        name, scale = metric_name(entry.name, entry.unit), 1e-9 if entry.unit == "ns" else 1
        assert f"# TYPE {name} summary" in page
        assert _value(page, f'{name}{{{label},quantile="0.5"}}') == pytest.approx(2_000 * scale)
        assert _value(page, f'{name}{{{label},quantile="0.99"}}') == pytest.approx(9_000 * scale)
        assert _value(page, f"{name}_sum{{{label}}}") == pytest.approx(15_000 * scale)
        assert _value(page, f"{name}_count{{{label}}}") == 4
    name = metric_name(summaries[0].name, summaries[0].unit)
    assert _value(page, f'{name}_count{{statement="other"}}') == 4
    assert f'{name}{{statement="other",quantile' not in page
    checked = subprocess.run(["promtool", "check", "metrics"], input=page, capture_output=True, text=True)
    assert checked.returncode == 0, checked.stdout + checked.stderr
