"""Cheap guards on costs that have regressed before: measured in this run, as ratios or as CPU time
of a fresh interpreter, so that a busy machine does not make them fail (wall time is not used).

The figures docs/performance.md states are checked by `scripts/bench` against benchmarks/figures.toml.
"""

import subprocess
import sys
from pathlib import Path

import click
import pytest

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"
SMALL_CAPTURE = Path(__file__).resolve().parents[1] / "data" / "scap" / "test_ipv6_client.scap"

# Modules `casstrace --help` and every command's start-up must not pay for: the driver, bcc, the
# trace database, the analyses and reports load only in the commands that use them.
HEAVY = (
    "sqlite3",
    "cassandra",
    "bcc",
    "plotly",
    "jinja2",
    "casstrace.traces",
    "casstrace.probes",
    "casstrace.analyses",
    "casstrace.reports",
    "casstrace.node",
)


def fresh(code: str) -> str:
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout


def test_the_cli_entry_point_imports_nothing_heavy():
    loaded = fresh("import sys, casstrace.cli.main; print(' '.join(sys.modules))").split()
    heavy = sorted(name for name in loaded if name.startswith(HEAVY))
    assert heavy == []


def test_the_virtualenv_starts_python_without_an_import_hook():
    """scripts/install puts casstrace on a plain path entry: setuptools' editable import hook loaded
    pathlib, re and urllib into every Python the virtualenv started (13 ms of each command's 22)."""
    loaded = fresh("import sys; print(' '.join(sys.modules))").split()
    hook = [name for name in loaded if name in ("pathlib", "re", "urllib.parse") or name.startswith("__editable__")]
    assert hook == [], "run scripts/install: a plain `pip install -e .` brings the editable import hook back"


def test_casstrace_import_starts_without_click_the_analyses_reports_or_drivers(tmp_path):
    """`casstrace import` competes with sysdig's whole run (tests/integration/test_sysdig.py): a whole import,
    then what it loaded."""
    code = (
        "import sys; from casstrace.cli.main import main\n"
        f"try: main(['import', {str(SMALL_CAPTURE)!r}, '--out', {str(tmp_path / 'small.trace')!r}])\n"
        "except SystemExit: print(' '.join(sys.modules), file=sys.stderr)"
    )
    loaded = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stderr.split()
    assert "casstrace.probes.sysdig.sysdig_import" in loaded and (tmp_path / "small.trace").is_file()
    heavy = sorted(
        name
        for name in loaded
        if name.startswith(
            (
                "click",
                "cassandra",
                "bcc",
                "plotly",
                "jinja2",
                "casstrace.analyses",
                "casstrace.reports",
                "casstrace.node",
                "tempfile",
                "platform",
                "traceback",
                "socket",
                "dataclasses",  # loads inspect, ast, dis and tokenize: ~10 ms (NamedTuple on this path)
                "inspect",
                "threading",  # casstrace.interrupts asks signal.signal, not threading, whether it may install
                "casstrace.traces.reader",  # a writer needs neither the reader nor its meta types
                "casstrace.traces.meta",
                "casstrace.traces.rows",  # TypedDicts for mypy: 4.4 M instructions of a 227 M sysdig run
                "casstrace.traces.measures",  # the registry: only where window measures are written
                "casstrace.probes.protocol",  # the capture protocol's Protocols: the import is no capture
            )
        )
    )
    assert heavy == []


def test_a_commands_help_loads_what_its_options_need_only():
    """`casstrace run --help` loaded every analysis (the package's __init__ imported analyse) for the one
    class its options use, VerdictRule: 582 M instructions, 315 M without."""
    code = (
        "import sys; from casstrace.cli.main import main\n"
        "try: main(['run', '--help'])\n"
        "except SystemExit: print(' '.join(sys.modules), file=sys.stderr)"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    loaded = done.stderr.split()
    assert "--repeat" in done.stdout and "casstrace.analyses.verdict_rule" in loaded
    other_commands = [f"casstrace.cli.{module}" for module in ("report", "watch", "compare", "sweep", "import_scap")]
    heavy = ("casstrace.analyses.analysis", "casstrace.analyses.model", "casstrace.reports", "bcc", "plotly", "jinja2")
    assert sorted(name for name in loaded if name.startswith(heavy) or name in other_commands) == []


def test_casstrace_import_starts_without_compiling_annotations():
    """A NamedTuple or TypedDict whose field types are strings (`from __future__ import annotations`)
    compiles each of them when its class is made: scap_reader's 23 cost as much as loading typing."""
    code = (
        "import builtins\n"
        "compiled = []\n"
        "compile_source = builtins.compile\n"
        "def counted(source, filename, mode, *rest, **named):\n"
        "    if mode == 'eval':  # a module's own source (no bytecode yet) is compiled in 'exec' mode\n"
        "        compiled.append(source)\n"
        "    return compile_source(source, filename, mode, *rest, **named)\n"
        "builtins.compile = counted\n"
        "import casstrace.cli.main, casstrace.cli.import_scap, casstrace.probes.sysdig.sysdig_import\n"
        "print(repr(compiled))"
    )
    assert fresh(code).strip() == "[]"


IMPORT_ARGS = [
    [str(SMALL_CAPTURE)],
    [str(SMALL_CAPTURE), "--pid", "42", "--out", "x.trace", "--force"],
    ["--pid=42", str(SMALL_CAPTURE), "--query", "SELECT * FROM ks.t WHERE k = 1"],
    [str(SMALL_CAPTURE), "--proc", "java", "--out=x.trace"],
    [str(SMALL_CAPTURE), "--force", "--query=SELECT 1"],
    [str(SMALL_CAPTURE), "--stream-limit", "1000", "--pid=7"],
    ["--stream-limit=100000000", str(SMALL_CAPTURE)],
]


@pytest.mark.parametrize("args", IMPORT_ARGS)
def test_import_parsed_without_click_as_click_parses_it(args):
    """cli/import_scap.py's fast_parse (click-free start-up) gives the command what click gives it,
    for the same options; whatever it does not take plainly goes to click."""
    from casstrace.cli import import_scap

    command = import_scap.command
    declared = {opt: param.is_flag for param in command.params if isinstance(param, click.Option) for opt in param.opts}
    assert declared == {name: kind is True for name, (_, kind) in import_scap.FAST_OPTIONS.items()}
    assert import_scap.fast_parse(args) == command.make_context("import", list(args)).params


@pytest.mark.parametrize(
    "args",
    [
        [],
        ["--help"],
        [str(SMALL_CAPTURE), "--pid", "0"],
        [str(SMALL_CAPTURE), "--pid", "x"],
        [str(SMALL_CAPTURE), "--pid", "1", "--proc", "java"],
        ["a.scap", "b.scap"],
        [str(SMALL_CAPTURE), "--out"],
        [str(SMALL_CAPTURE), "--force", "--force"],
        [str(SMALL_CAPTURE), "--out", str(SMALL_CAPTURE.parent)],
        ["-h"],
        [str(SMALL_CAPTURE), "--unknown"],
        [str(SMALL_CAPTURE), "--"],
        [str(SMALL_CAPTURE), "--stream-limit", "0"],
        [str(SMALL_CAPTURE), "--stream-limit=100000001"],
        [str(SMALL_CAPTURE), "--stream-limit", "1e6"],
    ],
)
def test_what_the_fast_parse_does_not_take_goes_to_click(args):
    from casstrace.cli import import_scap

    assert import_scap.fast_parse(args) is None


def test_bucketing_a_latency_costs_under_a_millisecond_at_start_up():
    """The first latency_bucket of a process builds the bucket table (it once took 0.62 s): CPU
    time of that first call in a fresh interpreter, best of three."""
    code = (
        "import time; from casstrace.traces.schema import latency_bucket;"
        " t = time.process_time(); latency_bucket(123_456_789); print(time.process_time() - t)"
    )
    assert min(float(fresh(code)) for _ in range(3)) < 1e-3


def test_the_stated_figures_are_complete_and_flag_what_is_worse():
    """benchmarks/figures.toml, which scripts/bench compares against: every figure names a
    benchmark that exists, a value, a noise and a direction; worse() flags past the noise only."""
    import figures

    stated = figures.expected()
    assert stated
    for name, figure in stated.items():
        assert (BENCHMARKS / figure["benchmark"]).is_file(), name
        assert figure["better"] in ("lower", "higher") and figure["noise"] > 0, name
        assert isinstance(figure["value"], (int, float)) and isinstance(figure["args"], list), name
    lower = {"value": 2.0, "noise": 0.1, "better": "lower"}
    assert not figures.worse(lower, 2.19) and figures.worse(lower, 2.21)
    higher = {"value": 50, "noise": 0.2, "better": "higher"}
    assert not figures.worse(higher, 40.5) and figures.worse(higher, 39.5)
    assert figures.parse("noise\nFIGURE a_b 1.5\nFIGURE c 2e-3 (goal <= 1.05)\n") == {"a_b": 1.5, "c": 0.002}
    assert all(isinstance(figure.get("goal", 0), (int, float)) for figure in stated.values())


def test_naming_a_mapped_file_by_its_inode_costs_what_adding_it_costs(tmp_path):
    """A run on a node of 5,000 SSTables names 10,000 mapped files by (dev, inode) (MappedPagesCapture.write):
    a query of the files table for each took 2.5 s there (quadratic). file_of_inode of every file
    against file_id of every file, in one run: 1.02-1.03 here; 93 with the query."""
    from casstrace.traces import TraceWriter
    from figures import cpu_seconds

    files = 10_000

    def add(by_inode: bool) -> None:
        writer = TraceWriter(tmp_path / f"{by_inode}.trace")
        for inode in range(files):
            if by_inode:
                writer.file_of_inode(f"/data/ks/t/nb-{inode}-big-Data.db", 2049, inode, 4096)
            else:
                writer.file_id(f"/data/ks/t/nb-{inode}-big-Data.db", "file", size_bytes=4096, dev=2049, inode=inode)
        writer.finish().unlink()

    assert cpu_seconds(lambda: add(True)) <= 2 * cpu_seconds(lambda: add(False))
