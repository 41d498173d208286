"""reports/__init__.py and formats.py: render, write, the registry of formats and their contract, and
`casstrace report` on the command line. Each format has its own file (test_text.py, test_md.py,
test_json_report.py, test_html_report.py)."""

import json
from pathlib import Path

import pytest

import synthetic_traces as synthetic
from casstrace.reports import FORMATS, ReportOptions, beside_trace, default_output, render, report_format, write
from casstrace_cli import casstrace


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
        assert chosen.suffix.startswith(".") and beside_trace("t.trace", name).suffix == chosen.suffix
        assert callable(chosen.render)
    # where each writes without --output is the format's: html a file beside the input, the rest stdout
    assert {name: default_output(name, Path(f"t{report_format(name).suffix}")) for name in FORMATS} == {
        "text": None,
        "md": None,
        "json": None,
        "html": Path("t.html"),
    }
    with pytest.raises(TypeError, match="colour"):
        ReportOptions(colour=True)  # type: ignore[call-arg]  # the misspelling under test
