"""Bad input, to every command, as a hostile new user would give it: each case exits non-zero with
one line `casstrace: error: … (fix: …)`, no traceback, and leaves no file behind.

None of CASES needs a node, BPF or root privileges for what it checks: every case is refused
before anything connects or attaches. The tests marked integration at the end need the test node
or root (a full disk); the statements a node must refuse are in test_read_only.py.
"""

import os
import sqlite3
import subprocess
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import pytest

from casstrace_cli import CASSTRACE
from synthetic_traces import sysdig_import, wide_select_c0

SCAP = Path(__file__).resolve().parents[1] / "data" / "scap" / "curl_google.scap"
NOWHERE = "/nonexistent/casstrace"  # a sandbox data directory that does not exist
# A port nothing listens on: a case that got as far as connecting would fail differently.
CLOSED_PORT = "1"

# (command line, text the one error line must contain). {dir} is the case's scratch directory
# (must stay empty), {trace} a good trace, {broken} a trace whose meta JSON is broken,
# {truncated} a trace cut short, {text} a text file, {existing} an existing regular file.
CASES = [
    # the command itself
    (["frob"], "No such command"),
    (["--nope"], "No such option"),
    # run
    (["run"], "give the query"),
    (["run", "SELECT 1", "--file", "{text}"], "not both"),
    (["run", "--file", "{dir}/missing.cql"], "does not exist"),
    (["run", "DROP TABLE ks.t", "--port", CLOSED_PORT], "refusing to run a DROP TABLE statement"),
    (["run", "INSERT INTO ks.t (k) VALUES (1)", "--port", CLOSED_PORT], "refusing to run a INSERT"),
    (["run", "delete from ks.t where k = 1", "--port", CLOSED_PORT], "refusing to run a DELETE"),
    (["run", "TRUNCATE ks.t", "--port", CLOSED_PORT], "TRUNCATE"),
    (["run", "SELECT k FROM ks.t; DROP TABLE ks.t", "--port", CLOSED_PORT], "found 2"),
    (["run", "/* SELECT */ UPDATE ks.t SET v = 1 WHERE k = 1", "--port", CLOSED_PORT], "UPDATE"),
    (["run", "SELECT 'unclosed FROM t", "--port", CLOSED_PORT], "never closed"),
    (["run", "SELECT k FROM ks.t", "--port", "70000"], "'--port': 70000 is not in the range 1<=x<=65535"),
    (["run", "SELECT k FROM ks.t", "--port", "0"], "'--port'"),
    (["run", "SELECT k FROM ks.t", "--port", "abc"], "'--port'"),
    (["run", "SELECT k FROM ks.t", "--repeat", "99999999999999999999"], "'--repeat'"),
    (["run", "SELECT k FROM ks.t", "--repeat", "1000000000000000"], "'--repeat'"),
    (["run", "SELECT k FROM ks.t", "--repeat", "0"], "'--repeat'"),
    (["run", "SELECT k FROM ks.t", "--warmup", "-1"], "'--warmup'"),
    (["run", "SELECT k FROM ks.t", "--page-size", "-1"], "'--page-size'"),
    (["run", "SELECT k FROM ks.t", "--page-bytes", "0"], "'--page-bytes'"),
    (
        ["compare", "--before", "SELECT k FROM ks.t", "--after", "SELECT k FROM ks.t", "--page-bytes", "1e6"],
        "'--page-bytes'",
    ),
    (["run", "SELECT k FROM ks.t", "--connect-timeout", "nan"], "'--connect-timeout'"),
    (["run", "SELECT k FROM ks.t", "--request-timeout", "inf"], "'--request-timeout'"),
    (["run", "SELECT k FROM ks.t", "--connect-timeout", "-5"], "'--connect-timeout'"),
    (["run", "SELECT k FROM ks.t", "--pid", "0"], "'--pid'"),
    (["run", "SELECT k FROM ks.t", "--consistency", "THREEE"], "'--consistency'"),
    (["run", "SELECT k FROM ks.t", "--backend", "dtrace"], "'--backend'"),
    (["run", "SELECT k FROM ks.t", "--host", "no-such-host.invalid"], "cannot resolve the host"),
    (["run", "SELECT k FROM ks.t", "--out", "/proc/casstrace.trace", "--port", CLOSED_PORT], "cannot write"),
    (["run", "SELECT k FROM ks.t", "--out", "/dev/full", "--force"], "it is a device"),
    (["run", "SELECT k FROM ks.t", "--out", "{existing}", "--port", CLOSED_PORT], "the file exists"),
    (["run", "SELECT k FROM ks.t", "--out", "{dir}", "--port", CLOSED_PORT], "is a directory"),
    # capture
    (["capture", "--out", "{dir}/c.trace"], "give either --pid PID or -- COMMAND"),
    (["capture", "--pid", "1", "--out", "{dir}/c.trace"], "--pid needs --duration"),
    (
        ["capture", "--pid", "1", "--duration", "1", "--keep-command-line", "--out", "{dir}/c.trace"],
        "--keep-command-line keeps the words of a command casstrace starts",
    ),
    (["capture", "--pid", "1", "--duration", "nan", "--out", "{dir}/c.trace"], "'--duration'"),
    (["capture", "--pid", "1", "--duration", "inf", "--out", "{dir}/c.trace"], "'--duration'"),
    (["capture", "--pid", "1", "--duration", "-1", "--out", "{dir}/c.trace"], "'--duration'"),
    (["capture", "--pid", "99999999", "--duration", "1", "--out", "{dir}/c.trace"], "'--pid'"),
    (["capture", "--stream-limit", "-1", "--out", "{dir}/c.trace", "--", "true"], "'--stream-limit'"),
    (["capture", "--pid", "1", "--duration", "1"], "Missing option '--out'"),
    (["capture", "--out", "{dir}/c.trace", "--", "no-such-program-casstrace"], "command not found"),
    # report
    (["report", "{dir}/missing.trace"], "no trace file"),
    (["report", "{text}"], "not a readable casstrace trace"),
    (["report", "{broken}"], "not a readable casstrace trace"),
    (["report", "{truncated}"], "not a readable casstrace trace"),
    (["report", "{trace}", "--format", "md", "-o", "{trace}"], "one of this command's inputs"),
    (["report", "{trace}", "--format", "md", "-o", "{trace}", "--force"], "one of this command's inputs"),
    (["report", "{trace}", "--format", "md", "-o", "{existing}"], "the file exists"),
    (["report", "{trace}", "--format", "md", "-o", "/proc/casstrace.md"], "cannot write"),
    (["report", "{trace}", "--format", "md", "-o", "{dir}/no/such/dir/r.md"], "cannot write"),
    (["report", "{trace}", "--threshold", "nan"], "'--threshold'"),
    (["report", "{trace}", "--threshold", "-1"], "'--threshold'"),
    (["report", "{trace}", "--format", "pdf"], "'--format'"),
    # import
    (["import", "{dir}/missing.scap", "--out", "{dir}/i.trace"], "no capture file"),
    (["import", "{text}", "--pid", "1", "--proc", "java", "--out", "{dir}/i.trace"], "not both"),
    (["import", "{text}", "--pid", "-5", "--out", "{dir}/i.trace"], "'--pid'"),
    (["import", "{text}", "--stream-limit", "0", "--out", "{dir}/i.trace"], "'--stream-limit'"),
    (["import", "{text}", "--out", "/dev/null", "--force"], "it is a device"),
    # compare
    (["compare"], "give either two traces or both --before and --after"),
    (["compare", "{trace}"], "give either two traces"),
    (["compare", "--before", "SELECT k FROM ks.t"], "give either two traces"),
    (
        ["compare", "--before", "DROP TABLE ks.t", "--after", "SELECT k FROM ks.t", "--port", CLOSED_PORT],
        "refusing to run a DROP TABLE",
    ),
    (
        ["compare", "--before", "SELECT k FROM ks.t", "--after", "BEGIN BATCH APPLY BATCH", "--port", CLOSED_PORT],
        "BEGIN BATCH",
    ),
    (["compare", "{trace}", "{trace}", "--tolerance", "nan"], "'--tolerance'"),
    (["compare", "{trace}", "{trace}", "--max-amplification", "inf"], "'--max-amplification'"),
    (["compare", "{trace}", "{trace}", "--format", "md", "-o", "{trace}", "--force"], "one of this command's inputs"),
    (["compare", "{trace}", "{broken}"], "not a readable casstrace trace"),
    # sandbox
    (["sandbox", "start", "--data-dir", NOWHERE, "--native-port", "70000"], "'--native-port'"),
    (["sandbox", "start", "--data-dir", NOWHERE, "--jmx-port", "100"], "'--jmx-port'"),
    (["sandbox", "cql", "--data-dir", NOWHERE, "SELECT 1"], "no sandbox has been started"),
    (["sandbox", "cql", "--data-dir", NOWHERE], "give either a STATEMENT or --file"),
    (["sandbox", "nodetool", "--data-dir", NOWHERE, "status"], "no sandbox has been started"),
    # demo and sweep
    (["demo", "--data-dir", NOWHERE, "--rows", "0"], "'--rows'"),
    (["demo", "--data-dir", NOWHERE, "--columns", "99999999999999999999"], "'--columns'"),
    (["sweep", "--data-dir", NOWHERE, "--min-columns", "10", "--max-columns", "5"], "below --min-columns"),
    (["sweep", "--data-dir", NOWHERE, "--repeat", "0"], "'--repeat'"),
    (["sweep", "--data-dir", NOWHERE], "is not running"),
    (["sweep", "--data-dir", NOWHERE, "--tables", "1001"], "'--tables'"),
    (["sweep", "--data-dir", NOWHERE, "--tables", "30", "--writes", "10"], "cannot reach each of 30 tables"),
    (["sweep", "--data-dir", NOWHERE, "--tables", "1", "--value-bytes", "20000000"], "more than Cassandra takes"),
    (["sweep", "--data-dir", NOWHERE, "--tables", "1"], "is not running"),
    (["sweep", "--data-dir", NOWHERE, "--format", "md", "-o", "/dev/full", "--force"], "it is a device"),
    (["traces", "--dir", "{text}"], "'--dir'"),
    # watch
    (["watch", "--port", "70000"], "'--port'"),
    (["watch", "--duration", "inf"], "'--duration'"),
    (["watch", "--sample", "nan"], "'--sample'"),
    (["watch", "--out", "/dev/full", "--force"], "it is a device"),
    (["watch", "--out", "{existing}"], "the file exists"),
    (["watch", "--interval", "5", "--port", CLOSED_PORT], "--interval must be at least 10 s, got 5"),
    (["watch", "--interval", "60", "--profile", "--port", CLOSED_PORT], "--profile cannot be given with --interval"),
    # wrong or internal errors, each now one line with the right diagnosis
    (["capture", "--out", "{dir}/c.trace", "--", "{noexec}"], "it is not executable"),
    (["capture", "--out", "{dir}/c.trace", "--", "{odd}"], "it is a directory"),
    (["report", "{partial}"], "not a whole trace yet"),
    (["report", "{unformatted}"], "not a whole trace yet"),
    (["run", "SELECT \udcff FROM ks.t", "--port", CLOSED_PORT], "not UTF-8 (byte 0xff at character 7)"),
    (
        ["compare", "--before", "SELECT \udcff FROM ks.t", "--after", "SELECT k FROM ks.t", "--port", CLOSED_PORT],
        "not UTF-8 (byte 0xff",
    ),
    (["run", 'SELECT k AS "' + "a" * 70_000 + '" FROM ks.t', "--port", CLOSED_PORT], "at most 65,535 bytes"),
    (["run", "--file", "/dev/zero", "--port", CLOSED_PORT], "not a regular file"),
    (["run", "--file", "{fifo}", "--port", CLOSED_PORT], "not a regular file"),
    (["run", "--file", "{huge}", "--port", CLOSED_PORT], "larger than 16 MiB"),
    (["compare", "{trace}", "{imported}", "--fail-if-worse"], "has no measured executions"),
    # a watch's every output checked before it starts; none of its own outputs replaced, --force or not
    (["watch", "--interval", "60", "--out", "{series}", "--port", CLOSED_PORT], "series-0002.json exists"),
    (["watch", "--interval", "60", "--out", "{linked}", "--force", "--port", CLOSED_PORT], "is a symbolic link"),
    (
        [
            "watch",
            "--interval",
            "60",
            "--out",
            "{dir}/w.trace",
            "-o",
            "{dir}/w-0002.txt",
            "--force",
            "--port",
            CLOSED_PORT,
        ],
        "--force or not",
    ),
    (["watch", "--out", "{paged}", "--format", "html", "--port", CLOSED_PORT], "page.html: the file exists"),
    (["watch", "--metrics-port", "9", "--metrics-address", "", "--port", CLOSED_PORT], "--metrics-address is empty"),
    (
        ["watch", "--metrics-port", "9", "--metrics-address", "not an address", "--port", CLOSED_PORT],
        "'not an address'",
    ),
    (["watch", "--metrics-port", "9", "--metrics-address", "::ffff:10.9.9.9", "--port", CLOSED_PORT], "metrics on"),
    # files that are not what they should be: not UTF-8, malformed, empty, a trace's meta of the wrong type
    (["run", "--file", "{latin1}", "--port", CLOSED_PORT], "is not UTF-8 text (byte 0xe9 at offset 22)"),
    (["run", "--file", "{empty}", "--port", CLOSED_PORT], "found 0"),
    (["sandbox", "cql", "--data-dir", NOWHERE, "--file", "{latin1}"], "is not UTF-8 text"),
    (["run", "SELECT k FROM ks.t", "--cqlshrc", "{no_section}"], "line 1, 'port = 1', comes before any [section]"),
    (["run", "SELECT k FROM ks.t", "--cqlshrc", "{no_value}"], "line 3, 'hostname', is not KEY = VALUE"),
    (["run", "SELECT k FROM ks.t", "--cqlshrc", "{latin1}"], "not UTF-8 text (byte 0xe9"),
    (["watch", "--cqlshrc", "{no_section}"], "comes before any [section]"),
    (["report", "{wrong_number}"], "not a readable casstrace trace (meta slot_ns: 'a hundred' is not an int)"),
    (["report", "{wrong_measure}"], "not a readable casstrace trace (meta measures.offsets: 'yes' is not a bool)"),
    (["report", "{wrong_nested}"], "not a readable casstrace trace (meta cassandra.tables: 7 is not a list)"),
    (["report", "{wrong_nested}", "--format", "json", "-o", "{dir}/r.json"], "not a readable casstrace trace"),
    (["compare", "{trace}", "{wrong_number}"], "not a readable casstrace trace"),
    (["report", "{empty}"], "not a readable casstrace trace"),
    (["import", "{empty}", "--out", "{dir}/i.trace"], "not a sysdig capture"),
    # numbers in digits other than ASCII: int() would read '١٢' as 12
    (["run", "SELECT k FROM ks.t", "--port", "٩٠٤٢"], "not a number in ASCII digits"),
    (["run", "SELECT k FROM ks.t", "--request-timeout", "٣"], "not a number in ASCII digits"),
    (["import", "{text}", "--pid", "١٢", "--out", "{dir}/i.trace"], "not a number in ASCII digits"),
    (["run", "SELECT k FROM ks.t", "--cqlshrc", "{arabic_port}"], "port '١٢' is not a number"),
    # an output that is one of the command's inputs, --force or not
    (["import", "{scap}", "--out", "{scap}", "--force"], "one of this command's inputs"),
    (["run", "--file", "{text}", "--out", "{text}", "--force", "--port", CLOSED_PORT], "one of this command's inputs"),
    (["capture", "--out", "{text}", "--force", "--", "cat", "{text}"], "one of this command's inputs"),
    (
        ["watch", "--out", "{dir}/w.trace", "--format", "md", "-o", "{dir}/w.trace", "--port", CLOSED_PORT],
        "one of this command's inputs",
    ),
]


@pytest.fixture(scope="module")
def files(tmp_path_factory) -> dict[str, str]:
    """The files the cases name, in a directory of their own (the case's {dir} starts empty)."""
    base = tmp_path_factory.mktemp("inputs")
    trace = base / "good.trace"
    wide_select_c0(trace)
    broken = base / "broken.trace"
    wide_select_c0(broken)
    with sqlite3.connect(broken) as db:
        db.execute("UPDATE meta SET value = '{not json' WHERE key = 'query'")
    truncated = base / "truncated.trace"
    truncated.write_bytes(trace.read_bytes()[: trace.stat().st_size // 3])
    text = base / "notes.txt"
    text.write_text("not a trace\n")
    existing = base / "existing.trace"
    existing.write_text("keep me")
    named = {"trace": trace, "broken": broken, "truncated": truncated, "text": text, "existing": existing}
    for name, key, value in (
        ("wrong_number", "slot_ns", '"a hundred"'),
        ("wrong_measure", "measures", '{"offsets": "yes"}'),
        ("wrong_nested", "cassandra", '{"release_version": "5.0", "tables": 7}'),
    ):
        named[name] = base / f"{name}.trace"
        wide_select_c0(named[name])
        with sqlite3.connect(named[name]) as db:
            db.execute("UPDATE meta SET value = ? WHERE key = ?", (value, key))
    for name, content in (
        ("latin1", "SELECT k FROM ks.t -- \xe9t\xe9\n".encode("latin-1")),
        ("empty", b""),
        ("no_section", b"port = 1\n[connection]\n"),
        ("no_value", b"[connection]\nport = 1\nhostname\n"),
        ("arabic_port", "[connection]\nport = ١٢\n".encode()),
    ):
        named[name] = base / name
        named[name].write_bytes(content)
    (base / "series-0002.json").write_text("an earlier watch's interval report")
    (base / "linked-0001.trace").symlink_to(text)
    (base / "page.html").write_text("a report")
    named |= {"series": base / "series.trace", "linked": base / "linked.trace", "paged": base / "page.trace"}
    named["noexec"] = base / "script.sh"
    named["noexec"].write_text("echo never run\n")  # mode 0644: not executable
    named["unformatted"] = base / "unformatted.trace"
    wide_select_c0(named["unformatted"])
    with sqlite3.connect(named["unformatted"]) as db:
        db.execute("DELETE FROM meta WHERE key = 'format_version'")
    named["imported"] = base / "imported.trace"
    sysdig_import(named["imported"])
    special = tmp_path_factory.mktemp("special")  # not read by the snapshot of the inputs: a FIFO would block
    named["fifo"], named["huge"], named["odd"] = special / "fifo", special / "huge.cql", special / "dir"
    os.mkfifo(named["fifo"])
    with open(named["huge"], "wb") as huge:
        huge.truncate(17 * 2**20)  # sparse: larger than a node accepts, nothing on disk
    named["odd"].mkdir()
    named["partial"] = special / ".half.trace.partial"  # what a casstrace writing half.trace holds (a
    named["partial"].write_bytes(trace.read_bytes())  # TraceWriter removes it as stale in its directory)
    named["scap"] = base / "x.scap"
    named["scap"].write_bytes(SCAP.read_bytes())
    return {name: str(path) for name, path in named.items()}


def snapshot(directory: Path) -> dict[str, bytes]:
    return {path.name: path.read_bytes() for path in directory.iterdir()}


@dataclass
class Outcome:
    done: subprocess.CompletedProcess
    scratch: Path  # the case's {dir}, and its XDG data home below it
    data_home: Path


@pytest.fixture(scope="module")
def outcomes(files, tmp_path_factory) -> dict[int, Outcome]:
    """Every case run at once (each a casstrace process, most of their time spent starting Python),
    with the inputs checked untouched after all of them."""
    inputs = Path(files["trace"]).parent
    before = snapshot(inputs)

    def run(number: int) -> Outcome:
        base = tmp_path_factory.mktemp(f"case{number}")
        scratch, data_home = base / "scratch", base / "data"
        scratch.mkdir()
        argv = [word.format(dir=scratch, **files) for word in CASES[number][0]]
        done = subprocess.run(
            [*CASSTRACE, *argv],
            capture_output=True,
            text=True,
            timeout=120,
            cwd=scratch,
            env={**os.environ, "XDG_DATA_HOME": str(data_home)},
        )
        return Outcome(done, scratch, data_home)

    with ThreadPoolExecutor(max_workers=4) as pool:
        results = dict(enumerate(pool.map(run, range(len(CASES)))))
    assert snapshot(inputs) == before  # the inputs are untouched
    return results


@pytest.mark.parametrize(
    "number",
    range(len(CASES)),
    ids=[" ".join(args)[:60].encode("ascii", "backslashreplace").decode() for args, _ in CASES],
)
def test_bad_input_is_one_line_with_a_fix(number, outcomes):
    said = CASES[number][1]
    outcome = outcomes[number]
    assert outcome.done.returncode != 0
    lines = outcome.done.stderr.splitlines()
    assert len(lines) == 1, outcome.done.stderr
    assert lines[0].startswith("casstrace: error: ") and "(fix: " in lines[0], lines[0]
    assert said in lines[0]
    assert list(outcome.scratch.iterdir()) == []  # no trace, no partial, no report
    assert not outcome.data_home.exists() or not any(p.is_file() for p in outcome.data_home.rglob("*"))


def test_there_are_enough_cases_over_every_command():
    commands = {args[0] for args, _ in CASES}
    assert len(CASES) >= 40
    assert {"run", "capture", "report", "import", "compare", "sandbox", "demo", "sweep", "traces", "watch"} <= commands


def test_debug_shows_the_traceback_and_still_ends_in_one_line(files):
    done = subprocess.run([*CASSTRACE, "--debug", "report", files["broken"]], capture_output=True, text=True)
    assert done.returncode == 2
    assert "Traceback (most recent call last)" in done.stderr
    assert done.stderr.splitlines()[-1].startswith("casstrace: error: ")


def test_one_unreadable_trace_does_not_break_the_listing(files, tmp_path):
    listing = tmp_path / "traces"
    listing.mkdir()
    for name in ("good", "broken", "truncated"):
        (listing / f"{name}.trace").write_bytes(Path(files[name if name != "good" else "trace"]).read_bytes())
    done = subprocess.run([*CASSTRACE, "traces", "--dir", listing], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert "SELECT c0 FROM demo.wide" in done.stdout  # the good one is listed ...
    for name in ("broken.trace", "truncated.trace"):  # ... and the others say why
        assert any(
            line.startswith("?") and name in line and "not a readable" in line for line in done.stdout.splitlines()
        ), done.stdout
