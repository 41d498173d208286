"""Reports: the same analysis as text, Markdown, JSON and HTML; names escaped; `casstrace report` on
the command line. The HTML opened offline in headless Chromium: tests/integration/test_html_in_a_browser.py."""

import html
import json
import re
from pathlib import Path

import pytest

import synthetic_traces as synthetic
from casstrace.analyses import analyse
from casstrace.reports import FORMATS, ReportOptions, beside_trace, render, report_format, write
from casstrace_cli import casstrace

REPO = Path(__file__).resolve().parents[2]
ARTIFACTS = REPO / "test-artifacts"
HOSTILE = "<img src=x onerror=alert(1)>"


@pytest.fixture
def wide(tmp_path):
    return analyse(synthetic.wide_select_c0(tmp_path / "wide.trace"))


@pytest.fixture
def hostile(tmp_path):
    """A table and query whose names carry HTML (quoted CQL identifiers may hold anything)."""
    table = f"wide{HOSTILE}"
    schema = synthetic.wide_table_schema(table=table)
    return analyse(
        synthetic.wide_select_c0(
            tmp_path / "hostile.trace",
            table_schema=schema,
            query=f'SELECT c0 FROM demo."{table}" WHERE id = 1 -- </script><script>alert(2)</script>',
            query_trace=[
                {
                    "session_id": "s",
                    "duration_us": 1,
                    "events": [
                        {
                            "activity": f"Read 1 live rows and 0 tombstone cells {HOSTILE}",
                            "source_elapsed_us": 1,
                            "thread": "t",
                        }
                    ],
                }
            ],
        )
    )


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
    }
    assert document["findings"][0]["excess_share"] == 1.0 and document["findings"][1]["excess_share"] is None
    assert document["amplification"]["necessary_bytes"] == 36_864
    assert document["amplification"]["over_necessary"] == 62_574_072 / 36_864
    assert document["necessary"]["units"] == 2 and document["min_excess"] == 65_536
    assert document["latency_notes"] == []


def test_markdown_is_a_ticket_comment(wide, hostile):
    md = render(wide, "md")
    assert md.startswith("### 🔴 casstrace: flagged")
    assert "| Amplification (data read ÷ basis) | 3,129x |" in md
    assert "**Full-row read" in md
    outside_code = re.sub(r"```sql\n.*?\n```", "", render(hostile, "md"), flags=re.S)
    assert HOSTILE not in outside_code
    assert "\\<img src=x onerror=alert(1)\\>" in outside_code


def test_html_escapes_every_name(hostile):
    page = render(hostile, "html")
    assert HOSTILE not in page
    assert "<script>alert(2)</script>" not in page
    assert html.escape(f"wide{HOSTILE}") in page  # the table, as text
    # inside plotly's figure JSON '<' is written \u003c, so no tag can close the script
    assert "\\u003cimg src=x onerror" in page or "&lt;img src=x onerror" in page


def test_html_is_self_contained(wide):
    page = render(wide, "html")
    assert not re.search(r"<script[^>]+src=", page)
    assert not re.search(r"<link[^>]+href=", page)
    assert page.count("Plotly.newPlot") == 4  # 2 offset maps + 2 spectrograms
    assert page.index("FLAGGED") < page.index("<h2>Files")  # the verdict first


def test_write_is_whole_or_nothing(tmp_path, wide):
    target = tmp_path / "r.json"
    assert write(wide, "json", target) == target
    assert json.loads(target.read_text())["version"] == 2
    assert not list(tmp_path.glob(".*.partial"))
    assert beside_trace(tmp_path / "x.trace", "html") == tmp_path / "x.html"
    with pytest.raises(ValueError, match="unknown report format"):
        render(wide, "pdf")
    assert FORMATS == ("text", "md", "json", "html")


def test_report_command(tmp_path):
    trace = synthetic.wide_select_c0(tmp_path / "wide.trace")
    text = casstrace("report", str(trace))
    assert text.returncode == 0, text.stderr
    assert "VERDICT: FLAGGED" in text.stdout and "\033[" not in text.stdout
    out = casstrace(
        "report", str(trace), "--format", "json", "--output", str(tmp_path / "r.json"), "--threshold", "5000"
    )
    assert out.returncode == 0, out.stderr
    assert json.loads((tmp_path / "r.json").read_text())["verdict"] == "not flagged"
    assert "report: " in out.stdout
    page = casstrace("report", str(trace), "--format", "html")
    assert page.returncode == 0 and (tmp_path / "wide.html").is_file()


def test_report_command_on_a_bad_trace(tmp_path):
    bad = tmp_path / "bad.trace"
    bad.write_bytes(b"SQLite format 3\x00" + b"\x00" * 100)
    result = casstrace("report", str(bad))
    assert result.returncode == 2
    [line] = result.stderr.splitlines()
    assert line.startswith("casstrace: error:") and "(fix: " in line
    missing = casstrace("report", str(tmp_path / "missing.trace"))
    assert missing.returncode == 2 and "no trace file" in missing.stderr


def test_every_format_implements_the_contract_and_options_are_checked(wide):
    for name in FORMATS:
        chosen = report_format(name)
        assert chosen.SUFFIX.startswith(".") and beside_trace("t.trace", name).suffix == chosen.SUFFIX
        assert callable(chosen.render) and callable(chosen.render_document)
    with pytest.raises(TypeError, match="colour"):
        ReportOptions(colour=True)  # type: ignore[call-arg]  # the misspelling under test


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
