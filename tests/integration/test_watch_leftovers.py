"""Nothing left changed on the node, whatever ends a watch: SIGKILL at random moments (the owner gone
without a word: the next casstrace puts it back), Ctrl-C at random moments of its start (exit 130,
no misleading error). Real node (the test sandbox), real probes, the node's trace probability read
back through nodetool as the truth."""

import contextlib
import json
import os
import random
import signal
import subprocess
import sys
import time

import pytest

from casstrace.errors import CasstraceError
from casstrace.ledger import GC_LOG, TRACE_PROBABILITY, VERSION, Change, Ledger, process_start
from casstrace.node.gc_pauses import LOG_DIRECTORY_PREFIX, set_log_output
from casstrace.node.jvm import jcmd_command, run_tool
from casstrace.probes.jvm.async_profiler import IDLE, AsyncProfiler
from casstrace_cli import casstrace
from watching import PREVIOUS, SAMPLE, nodetool, previous_probability, start_watch, watch_command  # noqa: F401 (fixtures)

pytestmark = pytest.mark.integration

PUT_BACK = f"put the node's trace probability back to {PREVIOUS:g}"


def _restore(sandbox, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """`watch --restore`; `env`: the environment a killed casstrace had (its TMPDIR holds its GC log)."""
    return casstrace("watch", "--restore", "--port", sandbox.native_port, "--pid", sandbox.pid(), timeout=120, env=env)


@pytest.mark.parametrize("seed", [1, 2, 3, 4])
def test_sigkill_at_any_moment_is_put_back_by_the_next_casstrace(
    sandbox, previous_probability, nodetool, tmp_path, seed
):
    """Killed anywhere from its start (connecting, reading the probability, setting it, attaching the
    probes, watching): `watch --restore` leaves the node at its own probability (and the JVM without the
    watch's pause log output), and says so exactly when there was something to put back."""
    moment = random.Random(seed).uniform(0.5, 9.0)
    temporary = tmp_path / "tmp"  # the watch's own: where its pause log's directory goes
    temporary.mkdir()
    environment = {**os.environ, "TMPDIR": str(temporary)}
    watcher = subprocess.Popen(
        watch_command(sandbox, tmp_path / "killed.trace", "--duration", "60"),
        env=environment,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    time.sleep(moment)
    watcher.kill()
    watcher.wait()
    left = nodetool.trace_probability()  # the truth: what the killed watch left
    assert left in (PREVIOUS, SAMPLE)
    restored = _restore(sandbox, environment)
    assert restored.returncode == 0, restored.stderr
    assert nodetool.trace_probability() == PREVIOUS
    lines = restored.stderr.strip().splitlines()
    # the watch's pause log output, when it was on (turned off: its own line); else one line of the probability
    gc_log = [line for line in lines if "GC log output" in line]
    others = [line for line in lines if line not in gc_log]
    assert len(gc_log) <= 1 and len(others) == (0 if gc_log and left != SAMPLE else 1), restored.stderr
    assert any(PUT_BACK in line for line in others) == (left == SAMPLE), (moment, lines)
    # and the log's file is gone with its output
    assert not list(temporary.glob(f"{LOG_DIRECTORY_PREFIX}*"))


def test_the_next_watch_puts_it_back_and_takes_the_nodes_own_value(sandbox, previous_probability, nodetool, tmp_path):
    killed = start_watch(watch_command(sandbox, tmp_path / "killed.trace", "--duration", "60"))
    killed.kill()
    killed.wait()
    assert nodetool.trace_probability() == SAMPLE
    out = tmp_path / "next.trace"
    done = subprocess.run(
        watch_command(sandbox, out, "--duration", "2", "--format", "json"), capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr
    assert sum(PUT_BACK in line for line in done.stderr.splitlines()) == 1, done.stderr
    assert json.loads(done.stdout)["context"]["previous_trace_probability"] == PREVIOUS
    assert nodetool.trace_probability() == PREVIOUS


@pytest.mark.parametrize("seed", [5, 6, 7])
def test_ctrl_c_in_the_first_seconds_exits_130_without_error(sandbox, previous_probability, nodetool, tmp_path, seed):
    """The first seconds: connecting, finding the JVM, nodetool gettraceprobability (a JVM of its own,
    which a Ctrl-C used to kill, reported as 'nodetool gettraceprobability failed: … io.netty …')."""
    moment = random.Random(seed).uniform(0.3, 3.0)
    watcher = subprocess.Popen(
        watch_command(sandbox, tmp_path / "interrupted.trace", "--duration", "60"),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    time.sleep(moment)
    watcher.send_signal(signal.SIGINT)
    _, errors = watcher.communicate(timeout=120)
    assert watcher.returncode == 130, errors
    assert "error" not in errors and "failed" not in errors, errors
    assert nodetool.trace_probability() == PREVIOUS


def test_a_profiler_left_running_is_stopped(sandbox, previous_probability, nodetool, tmp_path):
    killed = start_watch(watch_command(sandbox, tmp_path / "profiled.trace", "--duration", "60", "--profile"))
    killed.kill()
    killed.wait()
    profiler = AsyncProfiler(sandbox.pid())
    assert IDLE not in profiler.status()  # the killed watch left it recording
    restored = _restore(sandbox)
    assert restored.returncode == 0, restored.stderr
    assert "stopped the async-profiler session" in restored.stderr
    assert PUT_BACK in restored.stderr
    assert profiler.status() == IDLE
    assert nodetool.trace_probability() == PREVIOUS


def test_a_truncated_record_with_the_node_left_tracing_cannot_tell(sandbox, previous_probability, nodetool, tmp_path):
    """A watch SIGKILLed with the node at 0.25, its record then cut short (what a crash of the machine
    or a full disk leaves): `watch --restore` cannot tell, and says how to check and fix, never
    "nothing was left changed"; the next watch refuses rather than take 0.25 for the node's own value."""
    killed = start_watch(watch_command(sandbox, tmp_path / "killed.trace", "--duration", "60", sample=0.25))
    killed.kill()
    killed.wait()
    assert nodetool.trace_probability() == 0.25
    record = Ledger(sandbox.pid()).read(TRACE_PROBABILITY)
    assert isinstance(record, Change) and record.original == PREVIOUS
    path = Ledger(sandbox.pid()).path(TRACE_PROBABILITY)
    whole = path.read_text()
    path.write_text(whole[: len(whole) // 2])
    try:
        restored = _restore(sandbox)
        assert restored.returncode == 2, restored.stderr
        assert "cannot tell" in restored.stderr and str(path) in restored.stderr, restored.stderr
        assert "gettraceprobability" in restored.stderr and "settraceprobability 0" in restored.stderr
        assert "nothing was left changed" not in restored.stderr
        refused = subprocess.run(
            watch_command(sandbox, tmp_path / "next.trace", "--duration", "2"),
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert refused.returncode == 2 and "cannot tell" in refused.stderr, refused.stderr
        assert not (tmp_path / "next.trace").exists()
        assert nodetool.trace_probability() == 0.25  # untouched: never taken for, nor put back as, the original
        nodetool.set_trace_probability(0)  # the fix the error gave: the node at its own value, 0
        cleared = _restore(sandbox)
        assert cleared.returncode == 0, cleared.stderr
        assert "removed the ledger's record" in cleared.stderr and not path.exists()
    finally:
        path.unlink(missing_ok=True)


# A run's GC log (node.gc_pauses) added to the node's JVM and written down, held until killed.
GC_LOG_HOLDER = """
import sys, time
from casstrace.node.gc_pauses import GcPauses
print("measured" if GcPauses(int(sys.argv[1]), print).measured else "not measured", flush=True)
time.sleep(600)
"""


def _log_outputs(pid: int) -> str:
    """The JVM's own list of its log outputs: the truth of which are on."""
    return run_tool([*jcmd_command(pid), "VM.log", "list"], "jcmd VM.log list", 30.0, cannot_run_fix="", failed_fix="")


def test_a_gc_log_record_is_acted_on_only_when_it_names_casstraces_own(sandbox, tmp_path):
    """A hand-written record naming a directory outside the GC-log root (with casstrace's prefix) is
    refused: the directory and its file stay, the record too, one line says so. A genuine one (a run's
    pause log, its casstrace SIGKILLed) is turned off in the JVM and its directory removed."""
    temporary = tmp_path / "tmp"  # the killed casstrace's TMPDIR, where its GC log goes
    temporary.mkdir()
    environment = {**os.environ, "TMPDIR": str(temporary)}
    pid = sandbox.pid()
    ledger = Ledger(pid)
    record = ledger.path(GC_LOG)
    outside = tmp_path / "elsewhere" / f"{LOG_DIRECTORY_PREFIX}precious"
    outside.mkdir(parents=True)
    (outside / "gc.log").write_text("not casstrace's\n")
    forged = {
        "version": VERSION,
        "what": GC_LOG,
        "node_pid": pid,
        "node_start": ledger.node_start,
        "original": "off",
        "changed_to": str(outside / "gc.log"),
        "owner_pid": os.getpid(),
        "owner_start": (process_start(os.getpid()) or 0) + 1,  # another process than this one: gone
        "recorded_at": "2026-11-29T07:00:00Z",
    }
    assert not record.exists()  # no other run holds a GC log on the node
    ledger.directory.mkdir(parents=True, exist_ok=True)
    record.write_text(json.dumps(forged))
    genuine = None
    try:
        refused = _restore(sandbox, environment)
        assert refused.returncode == 0, refused.stderr
        assert refused.stderr.splitlines() == [
            f"casstrace: warning: refused the ledger's record {record}: the GC log {outside}/gc.log is not where "
            f"casstrace places one ({temporary}/{LOG_DIRECTORY_PREFIX}…/gc.log); nothing it names was touched and "
            f"the record stays: list the JVM's log outputs (jcmd {pid} VM.log list) and turn off one casstrace "
            f"added (jcmd {pid} VM.log output=#N what=all=off), then remove the record"
        ]
        assert (outside / "gc.log").read_text() == "not casstrace's\n" and record.exists()
        record.unlink()

        holder = subprocess.Popen(
            [sys.executable, "-c", GC_LOG_HOLDER, str(pid)], env=environment, stdout=subprocess.PIPE, text=True
        )
        assert holder.stdout is not None and holder.stdout.readline() == "measured\n"
        (directory,) = temporary.glob(f"{LOG_DIRECTORY_PREFIX}*")
        genuine = str(directory / "gc.log")
        assert f"file={genuine}" in _log_outputs(pid)
        holder.kill()
        holder.wait()
        restored = _restore(sandbox, environment)
        assert restored.returncode == 0, restored.stderr
        (line,) = restored.stderr.splitlines()
        assert line.startswith(f"casstrace: turned off the GC log output casstrace pid {holder.pid} (gone since ")
        assert line.endswith(f"added to JVM {pid}"), line
        assert f"file={genuine}" not in _log_outputs(pid)
        assert not directory.exists() and not record.exists()
    finally:
        record.unlink(missing_ok=True)
        if genuine is not None:  # a failed test leaves no output on the node
            with contextlib.suppress(CasstraceError):
                set_log_output(pid, jcmd_command(pid), genuine, "all=off")
