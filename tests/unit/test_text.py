"""reports/text.py: the terminal report (verdict, tables, spectrogram); what was not measured is never a zero."""

import json
import re

import synthetic_traces as synthetic
from casstrace.analyses import analyse
from casstrace.reports import ReportOptions, render


def test_text_report_verdict_tables_and_spectrogram(wide):
    text = render(wide, "text")
    assert text.splitlines()[0] == f"casstrace report: {wide.trace_path}"
    assert "!! 7,606 per-call records were not streamed" in text
    assert (
        "VERDICT: FLAGGED  Read 59.7 MiB from demo.wide's Data files; the necessary read of its result is 36.0 KiB per "
        "execution (2 compressed chunks of 16.0 KiB"
    ) in text
    assert (
        "1,697x the necessary read (threshold 10x and 64.0 KiB per execution), 3,129x the 19.5 KiB of payload" in text
    )
    assert "once fixed: about 36.0 KiB read per execution instead of 59.7 MiB (100.0% of the excess)" in text
    assert "* [likely] Full-row read" in text
    assert re.search(r"Data\.db\s+Data\s+59\.7 MiB\s+59\.7 MiB\s+3,803\s+0 B", text)
    assert "not measured" in text  # the socket's page-cache misses
    assert "\033[" not in text
    coloured = render(wide, "text", ReportOptions(color=True))
    assert "\033[48;5;160m" in coloured  # 3,000 calls in one cell: red, like csysdig
    assert "\033[48;5;178m" in coloured  # 803 calls: yellow
    brief = render(wide, "text", ReportOptions(brief=True))
    assert "VERDICT: FLAGGED" in brief and "Full-row read" in brief and "== Executions ==" not in brief


def test_unmeasured_page_cache_is_never_a_zero(tmp_path):
    analysis = analyse(synthetic.sysdig_import(tmp_path / "sysdig.trace"))
    text = render(analysis, "text")
    assert re.search(r"Page-cache misses \(device reads\)\s+not measured", text)
    assert re.search(r"Device amplification\s+not measured", text)
    document = json.loads(render(analysis, "json"))
    assert document["amplification"]["device"] is None
    assert document["amplification"]["cache_miss_bytes"] is None
    assert all(f["cache_miss_bytes"] is None for f in document["files"])
    assert document["amplification"]["basis"] == "wire"
    assert document["executions"] == []


def test_a_query_trace_event_without_elapsed_time_is_shown_as_unknown(wide):
    wide.query_trace = [
        {
            "session_id": "s",
            "duration_us": None,
            "events": [
                {
                    "activity": "Merged data from memtables and 2 sstables",
                    "source_elapsed_us": None,
                    "thread": "ReadStage-1",
                }
            ],
        }
    ]
    assert "—" in render(wide, "text").split("Cassandra query trace")[1]
