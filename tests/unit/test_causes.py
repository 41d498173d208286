"""Cause names are one list (analyses.model.Cause): every one has a finder, and the JSON schema doc
and docs/measurement.md name exactly these."""

import re
from pathlib import Path

import synthetic_traces as synthetic
from casstrace.analyses import analyse
from casstrace.analyses.causes import CAUSE_FINDERS
from casstrace.analyses.compare import compare
from casstrace.analyses.model import CAUSES
from casstrace.reports import run as run_report

PACKAGE = Path(__file__).resolve().parents[2]


def test_every_cause_has_one_finder():
    assert tuple(CAUSE_FINDERS) == CAUSES


def test_the_json_schema_doc_lists_every_cause():
    doc = run_report.__doc__ or ""
    listed = doc[doc.index('"cause":') : doc.index('"title": str')]
    assert set(re.findall(r'"(\w+)"', listed)) - {"cause"} == set(CAUSES)


def test_the_measurement_doc_lists_every_cause():
    doc = (PACKAGE / "docs" / "measurement.md").read_text()
    listed = doc[doc.index("### Causes") :]
    listed = listed[: listed.index("Below the threshold")]
    assert set(re.findall(r"^\| `(\w+)` \|", listed, re.MULTILINE)) == set(CAUSES)


def test_compare_s_amplification_gate_is_the_verdict_s_rule(tmp_path):
    """--max-amplification X fails the second query when it would be flagged at threshold X: the narrow
    read (1.6x its payload, 0.87x its necessary read) passes at 1.5, the wide read fails at 1,000."""
    narrow = analyse(synthetic.wide_select_c0(tmp_path / "narrow.trace", data_read=32_084))
    wide = analyse(synthetic.wide_select_c0(tmp_path / "wide.trace"))
    assert narrow.overall.read is not None and narrow.overall.over_necessary is not None
    assert narrow.overall.read > 1.5 and narrow.overall.over_necessary < 1
    [passed] = compare(wide, narrow, max_amplification=1.5).gates
    assert passed.passed, passed.reason
    [failed] = compare(narrow, wide, max_amplification=1_000).gates
    assert not failed.passed and "1,697x its necessary read" in failed.reason


def test_tombstones_and_many_sstables_from_cassandras_query_trace(tmp_path):
    query_trace = [
        {
            "session_id": "1",
            "duration_us": 5,
            "events": [
                {
                    "activity": "Merged data from memtables and 7 sstables",
                    "source_elapsed_us": 1,
                    "thread": "ReadStage-1",
                },
                {
                    "activity": "Read 12 live rows and 4500 tombstone cells",
                    "source_elapsed_us": 2,
                    "thread": "ReadStage-1",
                },
            ],
        }
    ]
    analysis = analyse(synthetic.wide_select_c0(tmp_path / "t.trace", query_trace=query_trace))
    found = {f.cause: f for f in analysis.findings}
    assert "4,500 tombstone cells" in found["tombstones"].evidence[0]
    assert "up to 7 SSTables" in found["many_sstables"].evidence[-1]


def test_chunk_overhead_named_only_when_one_chunk_per_row_explains_the_read(tmp_path):
    # 200 rows x 64 KiB chunks = 12.5 MiB against 20 MiB read: chunks explain it
    analysis = analyse(
        synthetic.wide_select_c0(
            tmp_path / "c.trace", table_schema=synthetic.wide_table_schema(chunk_kb="64"), data_read=20 << 20
        )
    )
    assert "compression_chunk_overhead" in [finding.cause for finding in analysis.findings]
    # the wide demo: 3.1 MiB of 16 KiB chunks against 59.7 MiB read: they do not
    wide = analyse(synthetic.wide_select_c0(tmp_path / "w.trace"))
    assert "compression_chunk_overhead" not in [finding.cause for finding in wide.findings]


def test_a_filtering_scan_is_a_filter_without_the_whole_partition_key():
    """What is judged as a scan that grows with the table (no --threshold, no read-ahead floor)."""
    from casstrace.analyses.necessary import filtering_scan
    from casstrace.analyses.query import TableSchema, parse_select

    schema = TableSchema("ks", "t", {}, ["k"], [], {}, [])
    scan = parse_select("SELECT a FROM ks.t WHERE a = 777 ALLOW FILTERING")
    first_rows = parse_select("SELECT * FROM ks.t LIMIT 10")
    by_key = parse_select("SELECT a FROM ks.t WHERE k = 1 AND a = 7 ALLOW FILTERING")
    assert scan is not None and first_rows is not None and by_key is not None
    assert filtering_scan(scan, schema)
    assert not filtering_scan(first_rows, schema) and not filtering_scan(by_key, schema)
