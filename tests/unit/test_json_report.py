"""reports/json_report.py: the JSON report against its documented schema."""

import json

import pytest

import synthetic_traces as synthetic
from casstrace.reports import render


def test_json_schema(wide):
    document = json.loads(render(wide, "json"))
    assert document["version"] == 2
    assert document["query"] == "SELECT c0 FROM demo.wide WHERE id = 1"
    assert document["verdict"] == "flagged"
    assert document["amplification"]["syscall"] == 62_574_072 / 20_000
    assert document["amplification"]["device"] == 0.0
    assert document["amplification"]["wire"] == 62_574_072 / 26_000
    measured = document["executions"][1]
    assert {k: measured[k] for k in ("latency_s", "rows", "payload_bytes", "wire_bytes")} == {
        "latency_s": 0.9,
        "rows": 200,
        "payload_bytes": 20_000,
        "wire_bytes": 26_000,
    }
    data = document["files"][0]
    assert {
        k: data[k]
        for k in (
            "path",
            "keyspace",
            "table",
            "component",
            "read_bytes",
            "write_bytes",
            "read_calls",
            "cache_miss_bytes",
            "seeks",
            "generation",
        )
    } == {
        "path": synthetic.DATA_PATH,
        "keyspace": "demo",
        "table": "wide",
        "component": "Data",
        "read_bytes": 62_574_072,
        "write_bytes": 0,
        "read_calls": 3_803,
        "cache_miss_bytes": 0,
        "seeks": 1,
        "generation": 13,
    }
    assert data["coverage"] == pytest.approx(0.3278, abs=1e-4)
    assert [f["cause"] for f in document["findings"]] == ["full_row_read", "whole_partition_scan"]
    assert set(document["findings"][0]) == {
        "cause",
        "title",
        "certainty",
        "evidence",
        "suggestion",
        "read_after_fix_bytes",
        "excess_share",
        "saves_ns",
    }
    assert document["findings"][0]["excess_share"] == 1.0 and document["findings"][1]["excess_share"] is None
    assert document["amplification"]["necessary_bytes"] == 36_864
    assert document["amplification"]["over_necessary"] == 62_574_072 / 36_864
    assert document["necessary"]["units"] == 2 and document["min_excess"] == 65_536
    assert document["latency_notes"] == []
