"""One interrupted `casstrace run`, as test_signals and test_signals_at_detach run and check it: the
real command (tests/helpers/signal_trial.py) sent a signal from inside one step of the capture → trace
routine, the BPF program ids it held read from its fdinfo while it runs."""

import re
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from bpf_programs import program_exists, program_ids
from casstrace.reports import beside_trace
from casstrace.traces import Trace
from casstrace_cli import CASSTRACE

TRIAL = Path(__file__).resolve().parent / "helpers" / "signal_trial.py"
STOP_WITHIN_S = 10  # from the signal to the exit, report included, on a busy 2-core machine
SENT = re.compile(r"signal-trial: sent (\w+) at (\d+)")
REASONS = {"SIGINT": "interrupted (Ctrl-C)", "SIGTERM": "terminated (SIGTERM)", "SIGHUP": "hung up (SIGHUP)"}


class Watched:
    """A command run, with the BPF program ids it held (read from its fdinfo while it runs)."""

    def __init__(self, argv: list[str]):
        self.process = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.program_ids: set[int] = set()
        self._watcher = threading.Thread(target=self._watch)
        self._watcher.start()

    def _watch(self) -> None:
        while self.process.poll() is None:
            self.program_ids |= program_ids(self.process.pid)
            time.sleep(0.01)

    def finish(self, timeout: float = 120) -> tuple[int, str, str, int]:
        """(exit status, stdout, stderr, monotonic ns at the exit)."""
        stdout, stderr = self.process.communicate(timeout=timeout)
        ended = time.monotonic_ns()
        self._watcher.join()
        return self.process.returncode, stdout, stderr, ended


@dataclass
class Trial:
    """One interrupted `casstrace run`, finished."""

    moment: str
    signame: str
    out: Path
    status: int
    stdout: str
    stderr: str
    ended_ns: int
    program_ids: set[int]


def trial_command(
    moment: str, signame: str, seed: int, query: str, node_args: list[str], out: Path, again: bool = False
) -> list[str]:
    """signal_trial.py running `casstrace run` of `query` (two executions, no warm-up) into `out`."""
    return [
        sys.executable,
        str(TRIAL),
        moment,
        signame,
        str(seed),
        *(["--again"] if again else []),
        "--",
        "run",
        query,
        *node_args,
        "--repeat",
        "2",
        "--warmup",
        "0",
        "--out",
        str(out),
    ]


def run_trial(
    directory: Path, node_args: list[str], query: str, moment: str, signame: str, seed: int, again: bool = False
) -> Trial:
    out = directory / "t.trace"
    watched = Watched(trial_command(moment, signame, seed, query, node_args, out, again))
    status, stdout, stderr, ended = watched.finish()
    return Trial(moment, signame, out, status, stdout, stderr, ended, watched.program_ids)


def check(trial: Trial) -> None:
    moment, signame, out = trial.moment, trial.signame, trial.out
    context = f"{moment} {signame}:\n{trial.stdout}\n{trial.stderr}"
    sent = SENT.search(trial.stderr)
    assert sent and sent.group(1) == signame, context
    assert trial.status == 128 + signal.Signals[signame], context
    assert "Traceback" not in trial.stderr, context
    assert (trial.ended_ns - int(sent.group(2))) / 1e9 < STOP_WITHIN_S, context
    assert trial.program_ids, context  # the probes were attached ...
    assert not any(program_exists(i) for i in trial.program_ids), context  # ... and are gone
    # The command's last word (a second signal may still be acknowledged after it).
    said = [
        line for line in trial.stderr.splitlines() if line.startswith(f"casstrace: {REASONS[signame]}: the trace, ")
    ]
    assert len(said) == 1 and said[0].endswith(f", is at {out}"), context
    last = said[0]
    with Trace(out) as trace:
        if "marked incomplete" in last:
            assert not trace.complete and trace.meta["incomplete_reason"] == REASONS[signame], context
        else:  # the signal came once the trace was finished: whole, and said so
            assert trace.complete and moment in ("trace", "report"), context
        assert trace.rows("SELECT count(*) FROM windows")[0][0] >= 1
        executions = trace.rows("SELECT count(*) FROM executions")[0][0]
        if moment in ("detach", "maps", "collect", "trace", "report"):
            assert executions == 3, context  # the two measured ones and the tracing one, all kept
    assert f"report: {beside_trace(out, 'html')}" in trial.stdout, context
    assert sorted(p.name for p in out.parent.iterdir()) == sorted([out.name, beside_trace(out, "html").name]), context


@dataclass
class Killed:
    """A `casstrace run` killed (SIGKILL) while writing its trace, and the run after it in the same
    directory."""

    status: int
    stderr: str
    program_ids: set[int]
    still_loaded: list[int]  # of those, the kernel's, once the killed run has exited
    left: list[str]  # the directory's names then
    rerun: subprocess.CompletedProcess[str]
    left_by_rerun: list[str]


def kill_and_rerun(directory: Path, node_args: list[str], query: str) -> Killed:
    killed = Watched(trial_command("trace", "SIGKILL", 26, query, node_args, directory / "killed.trace"))
    status, _, stderr, _ = killed.finish()
    still_loaded = [i for i in killed.program_ids if program_exists(i)]
    left = [p.name for p in directory.iterdir()]
    rerun = subprocess.run(
        [
            *CASSTRACE,
            "run",
            query,
            *node_args,
            "--repeat",
            "1",
            "--warmup",
            "0",
            "--no-html",
            "--out",
            str(directory / "rerun.trace"),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    return Killed(status, stderr, killed.program_ids, still_loaded, left, rerun, [p.name for p in directory.iterdir()])
