"""A ledger record is acted on only when everything it names is casstrace's own: its JVM (pid and start
time), a GC log where casstrace places one (paths.gc_log_root()/casstrace-gc-…/gc.log, no link out),
passed whole to jcmd. Anything else is refused: the directory it names is still there, the record too,
jcmd never runs, and one line names the record and why. This test process stands for the node's JVM;
jcmd is replaced by a recorder of the commands it would have run."""

import json
import os
import tempfile
from pathlib import Path

import pytest

from casstrace.errors import CasstraceError
from casstrace.ledger import GC_LOG, VERSION, Ledger, process_start
from casstrace.node import gc_pauses
from casstrace.node.gc_pauses import GcPauses, set_log_output
from casstrace.node.jvm import CassandraProcess, jcmd_value_problem
from casstrace.node.leftovers import restore_left_behind

START = process_start(os.getpid())


@pytest.fixture
def jcmd(monkeypatch) -> list[list[str]]:
    """The jcmd commands run (none is: they are recorded)."""
    ran: list[list[str]] = []

    def run_tool(command: list[str], *args: object, **options: object) -> str:
        ran.append(command)
        return ""

    monkeypatch.setattr(gc_pauses, "run_tool", run_tool)
    monkeypatch.setattr("casstrace.node.leftovers.jcmd_command", lambda pid: ["jcmd", str(pid)])
    return ran


@pytest.fixture
def root(tmp_path, monkeypatch) -> Path:
    """casstrace's GC-log root ($TMPDIR) and its state directory, both the test's own."""
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    directory = tmp_path / "tmp"
    directory.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(directory))
    return directory


def _log_directory(parent: Path, name: str = "casstrace-gc-k3xq9a1z") -> Path:
    """A directory as a run makes for its GC log, with the log in it."""
    directory = parent / name
    directory.mkdir(parents=True)
    (directory / "gc.log").write_text("[1ns] GC(0) Pause Young\n")
    return directory


def _record(log: str, **fields: object) -> Path:
    """A GC-log record of this process's JVM whose casstrace is gone (another start time)."""
    ledger = Ledger(os.getpid())
    ledger.directory.mkdir(parents=True, exist_ok=True)
    record = {
        "version": VERSION,
        "what": GC_LOG,
        "node_pid": os.getpid(),
        "node_start": START,
        "original": "off",
        "changed_to": log,
        "owner_pid": os.getpid(),
        "owner_start": (START or 0) + 1,  # this pid, another process: gone
        "recorded_at": "2026-11-29T07:00:00Z",
        **fields,
    }
    path = ledger.path(GC_LOG)
    path.write_text(json.dumps({name: value for name, value in record.items() if value is not None}))
    return path


def _restore() -> list[str]:
    def no_nodetool():
        raise AssertionError("a GC-log record needs no nodetool")

    return restore_left_behind(CassandraProcess(os.getpid(), ()), no_nodetool, tell=lambda line: None)


def _refused(record: Path, directory: Path, jcmd: list[list[str]], why: str) -> None:
    """Refused: one line naming the record and why; the directory, its log and the record untouched; no jcmd."""
    (line,) = _restore()
    assert line.startswith(f"warning: refused the ledger's record {record}: ") and why in line, line
    assert "nothing it names was touched" in line and f"jcmd {os.getpid()} VM.log list" in line, line
    assert "\n" not in line
    assert (directory / "gc.log").read_text() == "[1ns] GC(0) Pause Young\n"
    assert record.exists() and jcmd == []


def test_a_genuine_record_is_turned_off_whole_and_its_directory_removed(root, jcmd):
    directory = _log_directory(root)
    record = _record(str(directory / "gc.log"))
    (line,) = _restore()
    assert line.startswith("turned off the GC log output casstrace pid")
    # one argument for the output, whole: jcmd's parser splits at spaces
    assert jcmd == [["jcmd", str(os.getpid()), "VM.log", f"output=file={directory}/gc.log", "what=all=off"]]
    assert not directory.exists() and not record.exists()


def test_a_directory_outside_with_the_right_prefix_is_refused(root, jcmd, tmp_path):
    outside = _log_directory(tmp_path / "elsewhere")
    record = _record(str(outside / "gc.log"))
    _refused(record, outside, jcmd, f"is not where casstrace places one ({root}/casstrace-gc-…/gc.log)")


@pytest.mark.parametrize(
    "log",
    [
        "{root}/../elsewhere/casstrace-gc-k3xq9a1z/gc.log",
        "{root}/casstrace-gc-k3xq9a1z/other.log",
        "casstrace-gc-k3xq9a1z/gc.log",
    ],
)
def test_a_path_that_only_looks_inside_is_refused(root, jcmd, tmp_path, log):
    """'..' out of the root, another file than the log, a relative path (resolved against wherever casstrace runs)."""
    outside = _log_directory(tmp_path / "elsewhere")
    record = _record(log.format(root=root))
    _refused(record, outside, jcmd, "is not where casstrace places one")


def test_a_symbolic_link_inside_pointing_out_is_refused(root, jcmd, tmp_path):
    outside = _log_directory(tmp_path / "elsewhere", "precious")
    (root / "casstrace-gc-k3xq9a1z").symlink_to(outside)
    record = _record(str(root / "casstrace-gc-k3xq9a1z" / "gc.log"))
    _refused(record, outside, jcmd, "is a symbolic link")


def test_a_record_of_a_jvm_with_another_start_time_is_refused(root, jcmd):
    """The pid is the running JVM's; the start time the record holds is another's (a pid reused)."""
    directory = _log_directory(root)
    record = _record(str(directory / "gc.log"), node_start=(START or 0) - 1)
    _refused(record, directory, jcmd, f"about the JVM {os.getpid()} started at {(START or 0) - 1}, not the one running")


def test_a_record_without_a_start_time_is_refused(root, jcmd):
    directory = _log_directory(root)
    record = _record(str(directory / "gc.log"), node_start=None)
    _refused(record, directory, jcmd, f"it records no start time of JVM {os.getpid()}")
    with pytest.raises(CasstraceError, match="is refused") as held:  # and no run writes over it
        Ledger(os.getpid()).record(GC_LOG, "off", str(directory / "gc.log"))
    assert "watch --restore" in (held.value.fix or "")


def test_a_path_jcmd_would_split_is_refused(tmp_path, monkeypatch, jcmd):
    """A space: jcmd joins its arguments and the JVM splits them again at each space."""
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    spaced = tmp_path / "tmp dir"
    spaced.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(spaced))
    directory = _log_directory(spaced)
    record = _record(str(directory / "gc.log"))
    _refused(record, directory, jcmd, "cannot be passed whole to jcmd: it holds a space")


def test_a_path_with_a_leading_dash_is_refused(root, jcmd, monkeypatch):
    monkeypatch.chdir(root)
    directory = _log_directory(root, "-casstrace-gc-k3xq9a1z")
    record = _record("-casstrace-gc-k3xq9a1z/gc.log")
    _refused(record, directory, jcmd, "it begins with '-'")


@pytest.mark.parametrize(
    "value, why",
    [
        ("/tmp/a b/gc.log", "a space"),
        ("-f", "begins with '-'"),
        ("/tmp/a\nVM.flags/gc.log", "control"),  # a newline: jcmd runs each line as a command
        ("/tmp/a\tb", "control"),
        ('/tmp/"a"/gc.log', "a quote"),
        ("/tmp/'a'/gc.log", "a quote"),
        ("/tmp/a%p/gc.log", "'%'"),  # the JVM puts its pid there
        ("/tmp/é/gc.log", "non-ASCII"),
        ("", "empty"),
    ],
)
def test_what_jcmd_cannot_pass_whole_is_refused_before_it_runs(value, why, jcmd):
    assert why in (jcmd_value_problem(value) or "")
    with pytest.raises(CasstraceError, match="cannot be given to jcmd"):
        set_log_output(os.getpid(), ["jcmd", str(os.getpid())], value, "all=off")
    assert jcmd == []


def test_what_jcmd_passes_whole_is_let_through():
    assert jcmd_value_problem("/tmp/casstrace-gc-k3xq9a1z/gc.log") is None


def test_a_run_under_a_tmpdir_jcmd_would_split_measures_no_pauses_and_writes_nothing_down(tmp_path, monkeypatch, jcmd):
    """Refused before anything is written down or asked of the JVM: no record to refuse later, no directory left."""
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    spaced = tmp_path / "tmp dir"
    spaced.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(spaced))
    monkeypatch.setattr(gc_pauses, "jcmd_command", lambda pid: ["jcmd", str(pid)])
    warnings: list[str] = []
    pauses = GcPauses(os.getpid(), warnings.append)
    assert not pauses.measured
    (warning,) = warnings
    assert warning.startswith("GC and safepoint pauses are not measured: the GC log") and "a space" in warning
    assert Ledger(os.getpid()).read(GC_LOG) is None and jcmd == [] and list(spaced.iterdir()) == []


def test_a_directory_of_another_user_is_refused(root, jcmd):
    """Neither casstrace's user nor the JVM's (a run gives the log's directory to the JVM's user). The
    tests run as root, as casstrace's probes need."""
    directory = _log_directory(root)
    os.chown(directory, 65534, -1)  # nobody
    record = _record(str(directory / "gc.log"))
    _refused(record, directory, jcmd, "belongs to another user (uid 65534)")
