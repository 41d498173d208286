"""The node's time of an execution is its own, on a node another client keeps busy: never more than the
execution's round trip, or undetermined with why.

The other client is real (sandbox.workload.BackgroundRequests: its own driver Cluster, async, ~300
requests/s of point reads of the demo table's other rows), and its achieved rate is asserted. The
independent truth is the client's round trip of each execution (the driver's send to its answer): the
node takes and answers the execution's requests inside it, so a node's time above it holds other
requests. Before, every connection on the native port was timed: in 19 of 60 executions such a figure
passed the round trip, up to 4.7x, and the report's p99 held it.
"""

import json

import pytest

from casstrace.analyses import analyse
from casstrace.analyses.percentiles import percentile
from casstrace.node.connection import resolve_settings
from casstrace.orchestration.runner import RunOptions, run
from casstrace.reports import render
from casstrace.sandbox.workload import BackgroundRequests

pytestmark = pytest.mark.integration

RATE = 300  # the other client's requests/s
MIN_RATE = 200  # what it must reach for the node to count as busy (a 2-core machine shared with other work)
REPEAT = 20
KEY_TS = 7  # the measured point read's row; the other client reads every other one


def test_a_point_reads_node_time_stays_within_its_round_trip_under_load(sandbox, demo_tables, tmp_path):
    spec = demo_tables.spec
    point = f"SELECT c0 FROM {spec.keyspace}.{spec.table} WHERE stream_id = {spec.stream_id} AND ts = {KEY_TS}"
    others = [(spec.stream_id, ts) for ts in range(spec.rows) if ts != KEY_TS]
    by_key = f"SELECT c0 FROM {spec.keyspace}.{spec.table} WHERE stream_id = ? AND ts = ?"
    options = RunOptions(
        query=point,
        connection=resolve_settings(sandbox.host, sandbox.native_port),
        out=tmp_path / "busy.trace",
        repeat=REPEAT,
    )
    with sandbox.connect() as session:
        with BackgroundRequests(session, by_key, others, RATE, duration_s=120, in_flight=32) as load:
            path = run(options)
    assert load.errors == 0
    print(f"the other client: {load.achieved_rate:.0f} requests/s answered")
    assert load.achieved_rate >= MIN_RATE

    analysis = analyse(path)
    measured = [e for e in analysis.executions if e.kind == "measured"]
    assert len(measured) == REPEAT and all(e.latency_s is not None for e in measured)
    # the other client was there in the executions' windows (the node's own count)
    assert sum(e.other_requests or 0 for e in measured) > 0
    for e in measured:
        assert e.latency_s is not None
        if "node_ns" in e.measures:
            assert 0 < e.measures["node_ns"] <= e.latency_s * 1e9, e
        else:
            assert "exceeds the execution's round trip" in e.undetermined["node_ns"], e
    determined = [e for e in measured if "node_ns" in e.measures]
    print(f"node's time determined in {len(determined)} of {REPEAT} executions")
    # Only casstrace's own connections are timed, so every execution has its own (with every client's
    # connections timed, 8 of 20 were undetermined here, past their round trip)
    assert len(determined) == REPEAT

    report = json.loads(render(analysis, "json"))
    round_trips = [e["latency_s"] * 1e9 for e in report["executions"] if e["kind"] == "measured"]
    (node,) = [m for m in report["measures_per_execution"] if m["name"] == "node_ns"]
    assert node["p99"] <= percentile(round_trips, 0.99)
    if len(determined) < REPEAT:  # said, with why
        assert any("undetermined in" in warning for warning in analysis.warnings)
