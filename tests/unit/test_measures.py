"""The per-window measures seam (casstrace.traces.measures): every registered measure, once recorded by a
node's window source, survives the merge of several nodes' traces, reaches the analysis and is rendered
in every report format; and no table of the schema is forgotten by the merge."""

import dataclasses
import json
import re
import sqlite3

import pytest

import synthetic_traces as synthetic
from casstrace.analyses import analyse
from casstrace.analyses.measures import time_split
from casstrace.reports import common, render
from casstrace.reports.formats import FORMATS
from casstrace.traces import Trace, TraceWriter, queries
from casstrace.traces import merge as trace_merge
from casstrace.traces.measures import MEASURES
from casstrace.traces.schema import SCHEMA

RECORDED = [name for name, entry in MEASURES.items() if not entry.derived]  # by a window source
MEASURED_WINDOW = 3  # synthetic._run_windows: warmup (1), between (2), the measured execution (3)
NODE_VALUES = (3_000_000, 5_000_000)  # each node's value of a measure in the measured execution


def partial(path, values):
    """One node's trace as its agent writes it: the run's three windows and `values` (measure -> value
    in the measured window, 1 in the warmup's)."""
    writer = TraceWriter(path)
    synthetic._base_meta(writer)
    for label, execution in (("warmup", 1), ("between", None), ("execution", 2)):
        writer.add_window(label, synthetic.START_NS, synthetic.START_NS, execution)
    writer.add_window_measures(
        [{"window_id": MEASURED_WINDOW, "measure": name, "value": value} for name, value in values.items()]
        + [{"window_id": 1, "measure": name, "value": 1} for name in values]
    )
    return writer.finish()


@pytest.fixture(scope="module")
def merged(tmp_path_factory):
    """Two nodes' traces, each with every registered measure, merged into one run trace."""
    directory = tmp_path_factory.mktemp("measures")
    parts = [
        partial(directory / f"{node}.trace", dict.fromkeys(RECORDED, value))
        for node, value in enumerate(NODE_VALUES, start=1)
    ]
    writer = TraceWriter(directory / "merged.trace")
    synthetic._base_meta(writer, query="SELECT c0 FROM demo.wide WHERE id = 1", keyspace="demo")
    synthetic._run_windows(writer, {"latency_s": 0.01, "rows": 20, "payload_bytes": 2000})
    for node, part in enumerate(parts, start=1):
        trace_merge.merge_node(writer, part, node, 0, synthetic.START_NS)
    return writer.finish()


def test_every_table_of_the_schema_is_merged_or_the_whole_traces():
    tables = set(re.findall(r"CREATE TABLE (\w+)", SCHEMA))
    copied, whole = set(trace_merge._COPIED), set(trace_merge.NOT_COPIED)
    assert not copied & whole
    assert tables == copied | whole, "a table in neither list is dropped from multi-node traces"


@pytest.mark.parametrize("name", RECORDED)
def test_a_registered_measure_is_merged_analysed_and_rendered(merged, name):
    entry = MEASURES[name]
    with Trace(merged) as trace:
        rows = [row for row in queries.window_measures(trace) if row.measure == name]
        assert sorted((row.node_id, row.window_id, row.value) for row in rows if row.window_id == MEASURED_WINDOW) == [
            (1, MEASURED_WINDOW, NODE_VALUES[0]),
            (2, MEASURED_WINDOW, NODE_VALUES[1]),
        ]
        analysis = analyse(trace)
    expected = entry.combine(list(NODE_VALUES))
    measured = [e for e in analysis.executions if e.kind == "measured"]
    assert [e.measures[name] for e in measured] == [expected]
    assert [e.measures[name] for e in analysis.executions if e.kind == "warmup"] == [entry.combine([1, 1])]
    (summary,) = [s for s in analysis.measure_summaries if s.name == name]
    assert (summary.executions, summary.median, summary.p99, summary.total) == (1, expected, expected, expected)
    for fmt in FORMATS:
        text = render(analysis, fmt)
        if fmt == "json":
            report = json.loads(text)
            (execution,) = [e for e in report["executions"] if e["kind"] == "measured"]
            assert execution["measures"][name] == expected
            assert {m["name"]: m["p99"] for m in report["measures_per_execution"]}[name] == expected
        else:
            assert text.count(entry.label.replace("'", "&#x27;" if fmt == "html" else "'")) >= 2, fmt  # item + column


def test_a_trace_without_the_table_took_no_measure(tmp_path):
    path = synthetic.wide_select_c0(tmp_path / "c0.trace")
    with sqlite3.connect(path) as db:
        db.execute("DROP TABLE window_measures")
        db.execute("UPDATE meta SET value = '3' WHERE key = 'format_version'")
    with Trace(path) as trace:
        assert queries.window_measures(trace) == []
        analysis = analyse(trace)
    assert analysis.measure_summaries == [] and all(e.measures == {} for e in analysis.executions)


def test_the_writer_refuses_a_measure_with_no_entry(tmp_path):
    writer = TraceWriter(tmp_path / "t.trace")
    writer.add_window("capture", 0, 1)
    with pytest.raises(ValueError, match="not a registered measure"):
        writer.add_window_measures([{"window_id": 1, "measure": "cpu_time_typo", "value": 1}])
    writer.discard()


def test_the_writer_refuses_a_derived_measure(tmp_path):
    (derived, *_) = [name for name, entry in MEASURES.items() if entry.derived]
    writer = TraceWriter(tmp_path / "t.trace")
    writer.add_window("capture", 0, 1)
    with pytest.raises(ValueError, match="derived"):
        writer.add_window_measures([{"window_id": 1, "measure": derived, "value": 1}])
    writer.discard()


def test_the_first_screen_splits_the_nodes_time_in_md_and_html(merged):
    analysis = analyse(merged)
    assert analysis.time_split is not None
    row = common.first_screen_row(analysis)
    for fmt in ("md", "html"):
        text = render(analysis, fmt)
        assert all(column in text for column in common.FIRST_SCREEN_COLUMNS), fmt
        assert row[3] in text  # the node's time
        first_table = text.index(common.FIRST_SCREEN_COLUMNS[0])
        assert first_table < text.index("Findings" if fmt == "html" else "| Measure |"), fmt  # above the tables


def _split_of(analysis, per_execution):
    (measured,) = [e for e in analysis.executions if e.kind == "measured"]
    return time_split([dataclasses.replace(measured, measures=figures) for figures in per_execution])


def test_the_time_split_adds_up_to_the_nodes_time(merged):
    """Each execution's GC pauses come out of what its measured parts leave, never past it; the rest is
    what remains; the means add up to the mean node's time."""
    analysis = analyse(merged)
    split = _split_of(
        analysis,
        [
            {"node_ns": 10, "io_wait_ns": 1, "running_ns": 5, "cpu_wait_ns": 2, "gc_pause_ns": 1},
            {"node_ns": 20, "io_wait_ns": 0, "running_ns": 10, "cpu_wait_ns": 0, "gc_pause_ns": 30},
            {"node_ns": 6, "io_wait_ns": 0, "running_ns": 6, "cpu_wait_ns": 0},
        ],
    )
    assert split is not None and split.executions == 3 and split.node_ns == 12
    assert split.parts_ns == {
        "I/O wait": pytest.approx(1 / 3),
        "Running": 7,
        "Waiting for a CPU": pytest.approx(2 / 3),
        "GC pauses": pytest.approx(11 / 3),
        "The rest": pytest.approx(1 / 3),
    }
    assert sum(split.parts_ns.values()) == pytest.approx(split.node_ns)
    assert split.measured_share == pytest.approx(1 - 1 / 36)
    assert _split_of(analysis, [{"node_ns": 10, "running_ns": 5}]) is None  # a part not measured: no split


def _one_node(path, latency_s, node_ns):
    """A run trace of one measured execution whose round trip is `latency_s` and whose window counted
    `node_ns` of the node's time, split into running 2 ms and waiting for a CPU 1 ms."""
    writer = TraceWriter(path)
    synthetic._base_meta(writer, query="SELECT c0 FROM demo.wide WHERE id = 1", keyspace="demo")
    _, window = synthetic._run_windows(writer, {"latency_s": latency_s, "rows": 20, "payload_bytes": 2000})
    figures = {"node_ns": node_ns, "running_ns": 2e6, "cpu_wait_ns": 1e6, "io_wait_ns": 0, "jvm_cpu_ns": 9e6}
    writer.add_window_measures([{"window_id": window, "measure": name, "value": v} for name, v in figures.items()])
    return writer.finish()


def test_a_nodes_time_past_the_round_trip_is_undetermined_with_its_reason(tmp_path):
    """The node answers an execution's requests within its round trip: a window that counted more (another
    client's requests) gives no node's time, no split of it and no summary, but says undetermined and why,
    in every format; the other measures of the window stay."""
    with Trace(_one_node(tmp_path / "over.trace", latency_s=0.010, node_ns=47e6)) as trace:
        analysis = analyse(trace)
    (measured,) = [e for e in analysis.executions if e.kind == "measured"]
    why = (
        "the node's time counted (47.0 ms) exceeds the execution's round trip (10.0 ms): its window counted "
        "other requests than the execution's, which cannot be told apart"
    )
    assert measured.undetermined == {"node_ns": why, "running_ns": why, "cpu_wait_ns": why, "io_wait_ns": why}
    assert measured.measures == {"jvm_cpu_ns": 9e6}
    assert {s.name for s in analysis.measure_summaries} == {"jvm_cpu_ns"}
    assert analysis.time_split is None
    assert [(u.name, u.executions, u.of, u.why) for u in analysis.undetermined_measures] == [
        (name, 1, 1, why) for name in ("node_ns", "running_ns", "cpu_wait_ns", "io_wait_ns")
    ]
    columns = common.execution_columns(analysis)
    (row,) = [row for row in common.execution_rows(analysis) if row[1] == "measured"]
    shown = dict(zip(columns, row, strict=True))
    assert [shown[label] for label in ("Node time", "Running", "Waiting for a CPU", "I/O wait")] == ["undetermined"] * 4
    assert shown["JVM CPU (all threads)"] == "9 ms"
    assert (
        f"Node time, Running, Waiting for a CPU, I/O wait per execution: undetermined in 1 of 1 executions: {why}."
        in analysis.warnings
    )
    assert common.first_screen_row(analysis)[3:] == ("undetermined",) * 6
    assert ("Node time per execution", f"undetermined in 1 of 1 executions: {why}") in common.measure_items(analysis)
    report = json.loads(render(analysis, "json"))
    assert [e["undetermined"]["node_ns"] for e in report["executions"] if e["kind"] == "measured"] == [why]
    assert "node_ns" not in {m["name"] for m in report["measures_per_execution"]}
    for fmt in ("text", "md", "html"):
        assert "47.0 ms" in render(analysis, fmt), fmt  # the reason, with both figures


def test_a_nodes_time_within_the_round_trip_is_the_executions(tmp_path):
    with Trace(_one_node(tmp_path / "within.trace", latency_s=0.010, node_ns=9e6)) as trace:
        analysis = analyse(trace)
    (measured,) = [e for e in analysis.executions if e.kind == "measured"]
    assert measured.undetermined == {} and measured.measures["node_ns"] == 9e6
    assert analysis.undetermined_measures == [] and analysis.time_split is not None
    assert analysis.time_split.node_ns == 9e6


def test_a_nodes_pause_over_its_later_window_is_cut_to_the_traces_window(tmp_path):
    """A node opens and closes its windows at the run's commands, a little after the run: a GC pause that
    held its whole (longer) window is cut to the trace's window, and the merged trace opens."""
    window_ns = 1_000_000_000  # _run_windows' measured window
    part = partial(tmp_path / "node.trace", {"gc_pause_ns": window_ns + 1_900_000, "node_ns": 900_000_000})
    writer = TraceWriter(tmp_path / "merged.trace")
    synthetic._base_meta(writer, query="SELECT c0 FROM demo.wide WHERE id = 1", keyspace="demo")
    synthetic._run_windows(writer, {"latency_s": 0.01, "rows": 20, "payload_bytes": 2000})
    trace_merge.merge_node(writer, part, 1, 0, synthetic.START_NS)
    with Trace(writer.finish()) as trace:
        values = {row.measure: row.value for row in queries.window_measures(trace) if row.window_id == MEASURED_WINDOW}
    assert values == {"gc_pause_ns": window_ns, "node_ns": 900_000_000}
