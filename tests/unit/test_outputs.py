"""casstrace never destroys a file: an existing output needs --force, and even then only a regular
file is replaced; a report never replaces its trace; writes are whole or absent."""

import os
import stat
from pathlib import Path

import pytest

from casstrace import outputs
from casstrace.errors import CasstraceError
from casstrace.reports import beside_trace
from casstrace.traces import TraceWriter
from casstrace_cli import casstrace, one_error_line
from synthetic_traces import wide_select_c0


@pytest.fixture
def trace(tmp_path) -> Path:
    path = tmp_path / "t.trace"
    wide_select_c0(path)
    return path


def fingerprint(path: Path) -> tuple:
    """What must not change about a file casstrace refused to replace."""
    status = os.lstat(path)
    content = path.read_bytes() if stat.S_ISREG(status.st_mode) else None
    return status.st_mode, status.st_ino, status.st_rdev, content


# -- the policy itself ----------------------------------------------------------------------------


def test_an_existing_file_needs_force(tmp_path):
    target = tmp_path / "r.txt"
    target.write_text("mine")
    with pytest.raises(CasstraceError, match="the file exists"):
        outputs.write_text(target, "new", force=False)
    assert target.read_text() == "mine"
    outputs.write_text(target, "new", force=True)
    assert target.read_text() == "new"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r.txt"]


@pytest.mark.parametrize(
    "make, kind",
    [
        (lambda p: os.mkdir(p), "a directory"),
        (lambda p: os.mkfifo(p), "a FIFO"),
        (lambda p: os.symlink(p.parent / "elsewhere", p), "a symbolic link"),
    ],
)
def test_only_regular_files_are_ever_replaced(tmp_path, make, kind):
    (tmp_path / "elsewhere").write_text("the link's target")
    target = tmp_path / "out"
    make(target)
    before = fingerprint(target)
    with pytest.raises(CasstraceError, match=kind):
        outputs.write_text(target, "new", force=True)
    assert fingerprint(target) == before
    assert (tmp_path / "elsewhere").read_text() == "the link's target"


def test_a_device_is_never_replaced():
    before = fingerprint(Path("/dev/null"))
    with pytest.raises(CasstraceError, match="a device"):
        outputs.check_output("/dev/null", force=True)
    assert fingerprint(Path("/dev/null")) == before


def test_the_rename_checks_the_target_again(tmp_path):
    """A FIFO that appears at the path while the file is written is not replaced either."""
    partial, target = tmp_path / ".out.partial", tmp_path / "out"
    partial.write_text("whole")
    os.mkfifo(target)
    with pytest.raises(CasstraceError, match="a FIFO"):
        outputs.move_into_place(partial, target, force=True)
    assert stat.S_ISFIFO(os.lstat(target).st_mode)


def test_a_link_planted_at_the_partial_name_is_not_followed(tmp_path):
    victim = tmp_path / "victim"
    victim.write_text("keep me")
    os.symlink(victim, outputs.partial_path(tmp_path / "out"))
    outputs.write_text(tmp_path / "out", "report", force=False)
    assert victim.read_text() == "keep me" and (tmp_path / "out").read_text() == "report"


def test_the_trace_writer_follows_the_policy(tmp_path):
    target = tmp_path / "t.trace"
    target.write_text("an older trace")
    with pytest.raises(CasstraceError, match="the file exists"):
        TraceWriter(target)
    assert target.read_text() == "an older trace" and sorted(tmp_path.iterdir()) == [target]
    with pytest.raises(CasstraceError, match="a device"):
        TraceWriter("/dev/null", force=True)
    writer = TraceWriter(target, force=True)
    os.unlink(target)
    os.mkfifo(target)  # appears while the trace is written
    with pytest.raises(CasstraceError, match="a FIFO"):
        writer.finish()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["t.trace"]  # no partial left


def test_the_html_beside_a_trace_never_takes_its_name(tmp_path):
    assert beside_trace(tmp_path / "x.trace", "html") == tmp_path / "x.html"
    assert beside_trace(tmp_path / "x.html", "html") == tmp_path / "x.report.html"
    assert beside_trace(tmp_path / "x.json", "json") == tmp_path / "x.report.json"


# -- the commands ---------------------------------------------------------------------------------


def test_report_refuses_to_write_over_its_trace_even_with_force(trace, tmp_path):
    before = fingerprint(trace)
    for args in (["-o", trace], ["-o", trace, "--force"], ["-o", tmp_path / "." / "t.trace", "--force"]):
        line = one_error_line(casstrace("report", trace, "--format", "md", *args))
        assert "it is one of this command's inputs" in line
    link = tmp_path / "link.md"
    os.symlink(trace, link)
    assert "refusing to write over" in one_error_line(
        casstrace("report", trace, "--format", "md", "-o", link, "--force")
    )
    assert fingerprint(trace) == before


def test_report_output_needs_force_to_replace(trace, tmp_path):
    out = tmp_path / "r.md"
    out.write_text("my notes")
    assert "--force" in one_error_line(casstrace("report", trace, "--format", "md", "-o", out))
    assert out.read_text() == "my notes"
    done = casstrace("report", trace, "--format", "md", "-o", out, "--force")
    assert done.returncode == 0, done.stderr
    assert out.read_text().startswith("#")


def test_report_of_a_trace_named_html_writes_beside_it(tmp_path):
    trace = tmp_path / "x.html"
    wide_select_c0(trace)
    before = fingerprint(trace)
    done = casstrace("report", trace, "--format", "html")
    assert done.returncode == 0, done.stderr
    assert fingerprint(trace) == before and (tmp_path / "x.report.html").is_file()


@pytest.mark.parametrize(
    "command",
    [
        ["report", "{trace}", "--format", "json", "-o", "/dev/full", "--force"],
        ["compare", "{trace}", "{trace}", "--format", "md", "-o", "/dev/full", "--force"],
        ["capture", "--out", "/dev/full", "--force", "--", "true"],
        ["run", "SELECT * FROM ks.t", "--out", "/dev/full", "--force"],
        ["import", "{trace}", "--out", "/dev/full", "--force"],
    ],
)
def test_no_command_replaces_a_device(command, trace):
    before = fingerprint(Path("/dev/full"))
    line = one_error_line(casstrace(*(word.format(trace=trace) for word in command)))
    assert "a device" in line
    assert fingerprint(Path("/dev/full")) == before


def test_run_refuses_an_existing_out_and_its_html_before_connecting(tmp_path):
    out = tmp_path / "t.trace"
    out.write_text("an older trace")
    # port 1: nothing listens there; the refusal must come before any connection is tried
    assert "the file exists" in one_error_line(casstrace("run", "SELECT * FROM ks.t", "--out", out, "--port", 1))
    out.unlink()
    (tmp_path / "t.html").write_text("an older report")
    line = one_error_line(casstrace("run", "SELECT * FROM ks.t", "--out", out, "--port", 1))
    assert "t.html" in line and "the file exists" in line
    assert sorted(p.name for p in tmp_path.iterdir()) == ["t.html"]


# -- no command's output is one of its inputs --------------------------------------------------------

SCAP = Path(__file__).resolve().parents[1] / "data" / "scap" / "curl_google.scap"

# (command line, the input its output is aimed at). {victim} is replaced by that input under one of
# the names of INPUT_NAMES; the other inputs by their own paths.
OVER_AN_INPUT = [
    (["import", "{scap}", "--out", "{victim}", "--force"], "scap"),
    (["capture", "--out", "{victim}", "--force", "--", "cat", "{data}"], "data"),
    (["capture", "--out", "{victim}", "--force", "--", "dd", "if={data}", "of=/dev/null"], "data"),
    (["capture", "--out", "{victim}", "--force", "--", "{script}"], "script"),
    (["run", "--file", "{query}", "--out", "{victim}", "--force", "--port", "1"], "query"),
    (["run", "SELECT k FROM ks.t", "--cqlshrc", "{cqlshrc}", "--out", "{victim}", "--force", "--port", "1"], "cqlshrc"),
    (["report", "{trace}", "--format", "md", "-o", "{victim}", "--force"], "trace"),
    (["compare", "{trace}", "{other}", "--format", "md", "-o", "{victim}", "--force"], "other"),
    (["watch", "--cqlshrc", "{cqlshrc}", "--out", "{victim}", "--force", "--port", "1"], "cqlshrc"),
    (["watch", "--cqlshrc", "{cqlshrc}", "--format", "md", "-o", "{victim}", "--force", "--port", "1"], "cqlshrc"),
]
INPUT_NAMES = {
    "itself": lambda path: path,
    "through ./": lambda path: path.parent / "." / path.name,
    "a hard link": lambda path: (os.link(path, path.with_name("hard-link")), path.with_name("hard-link"))[1],  # type: ignore[func-returns-value]
}


@pytest.mark.parametrize("name", INPUT_NAMES)
@pytest.mark.parametrize(
    "command, victim", OVER_AN_INPUT, ids=[" ".join(c[:2]) + f" over {v}" for c, v in OVER_AN_INPUT]
)
def test_no_command_writes_over_one_of_its_inputs(tmp_path, command, victim, name):
    """import X.scap --out X.scap --force once replaced the capture it was importing with its trace."""
    files = {
        "scap": tmp_path / "x.scap",
        "data": tmp_path / "data.bin",
        "script": tmp_path / "script.sh",
        "query": tmp_path / "q.cql",
        "cqlshrc": tmp_path / "cqlshrc",
        "trace": tmp_path / "a.trace",
        "other": tmp_path / "b.trace",
    }
    files["scap"].write_bytes(SCAP.read_bytes())
    files["data"].write_bytes(os.urandom(4096))
    files["script"].write_text("#!/bin/sh\ntrue\n")
    files["script"].chmod(0o755)
    files["query"].write_text("SELECT k FROM ks.t")
    files["cqlshrc"].write_text("[connection]\nport = 1\n")
    wide_select_c0(files["trace"])
    wide_select_c0(files["other"])
    before = {path: fingerprint(path) for path in files.values()}
    words = {key: str(path) for key, path in files.items()} | {"victim": str(INPUT_NAMES[name](files[victim]))}
    line = one_error_line(casstrace(*(word.format(**words) for word in command), cwd=tmp_path))
    assert "one of this command's inputs" in line
    assert {path: fingerprint(path) for path in files.values()} == before
    assert not [path for path in tmp_path.iterdir() if path.suffix in (".partial", ".html")]


def test_watch_never_reports_over_its_own_trace(tmp_path):
    out = tmp_path / "w.trace"
    line = one_error_line(casstrace("watch", "--out", out, "--format", "md", "-o", out, "--force", "--port", 1))
    assert "one of this command's inputs" in line and list(tmp_path.iterdir()) == []


def test_a_partial_file_an_input_is_never_removed_nor_written_through(tmp_path):
    """A writer removes the .partial files a killed casstrace left; one that is this command's input is kept."""
    partial = tmp_path / ".t.trace.partial"
    partial.write_bytes(SCAP.read_bytes())
    line = one_error_line(casstrace("import", partial, "--out", tmp_path / "t.trace"))
    assert "written through" in line and "one of this command's inputs" in line
    done = casstrace("import", partial, "--out", tmp_path / "u.trace")
    assert done.returncode == 0, done.stderr
    assert partial.read_bytes() == SCAP.read_bytes()


def test_a_series_is_refused_when_any_of_its_outputs_is_there(tmp_path):
    """A watch --interval writes NAME-0001.trace, NAME-0001.txt, NAME-0002.trace ...: any one of them
    there already (a report, a later interval, a link) is refused before it starts."""
    series = tmp_path / "w.trace"
    outputs.check_series(series, force=False)  # nothing there
    (tmp_path / "w.txt").write_text("not in the series")
    (tmp_path / "w-extra.trace").write_text("nor this")
    outputs.check_series(series, force=False)
    for name in ("w-0001.json", "w-0002.trace", "w-0013.report.html", "w-12345.txt"):
        (tmp_path / name).write_text("an earlier watch's")
        with pytest.raises(CasstraceError, match=f"{name} exists"):
            outputs.check_series(series, force=False)
        outputs.check_series(series, force=True)
        (tmp_path / name).unlink()
    (tmp_path / "w-0002.trace").symlink_to(tmp_path / "w.txt")
    with pytest.raises(CasstraceError, match="symbolic link"):
        outputs.check_series(series, force=True)  # --force replaces regular files only


def test_in_series_names_the_outputs_of_a_series(tmp_path):
    series = tmp_path / "w.trace"
    assert outputs.in_series(series, tmp_path / "w-0002.txt") and outputs.in_series(series, tmp_path / "w-0001.trace")
    assert outputs.in_series(series, tmp_path / "sub" / ".." / "w-0002.report.html")
    assert not outputs.in_series(series, tmp_path / "sub" / "w-0002.txt")
    assert not outputs.in_series(series, tmp_path / "w.txt") and not outputs.in_series(series, tmp_path / "w-2.txt")
    assert outputs.numbered(series, 2) == tmp_path / "w-0002.trace"
