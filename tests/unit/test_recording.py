"""The capture → trace routine (probes.recording), its window rules and its signal handling, with a
capture that needs no BPF: the order of every call, what is kept or discarded on each way out, and
stale `.partial` files."""

import fcntl
import os
import signal
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from casstrace.errors import CasstraceError
from casstrace.interrupts import INTERRUPTS, Interrupted
from casstrace.probes.protocol import Capture, CaptureResult, Window, WindowLog, Windows, WindowSource
from casstrace.probes.recording import record
from casstrace.traces import Trace, TraceWriter
from casstrace.traces.writer import remove_stale_partials


@pytest.fixture(autouse=True)
def own_signal_handlers():
    """record() takes SIGINT, SIGTERM and SIGHUP over: give them back to pytest after each test."""
    yield
    INTERRUPTS.uninstall()


@dataclass
class FakeResult:
    windows: tuple[Window, ...]
    ended_early: str | None = None

    def write(self, writer: TraceWriter) -> None:
        for window in self.windows:
            writer.add_window(window.label, window.start_ns, window.end_ns, window.execution)
        writer.set_meta(
            backend="fake", capture_start_ns=self.windows[0].start_ns, capture_end_ns=self.windows[-1].end_ns
        )


class FakeCapture:
    """A Capture on a clock that ticks once per reading; `log` holds what was called."""

    def __init__(self, log: list[str], fail_start: bool = False):
        self.pid = 1
        self.ended_early: str | None = None
        self.log = log
        self.fail_start = fail_start
        self.clock = 0
        self._windows: WindowLog | None = None
        self.result: FakeResult | None = None

    def now_ns(self) -> int:
        self.clock += 10
        return self.clock

    def start(self) -> None:
        self.log.append("start")
        if self.fail_start:
            raise CasstraceError("cannot attach", "fix it")
        self._windows = WindowLog(self.now_ns())

    def begin_window(self, label: str, execution: int | None = None) -> int:
        assert self._windows is not None
        window_id = self._windows.begin(label, execution, self.now_ns())
        self.log.append(f"backend window {window_id}")
        return window_id

    def stop(self) -> FakeResult | None:
        self.log.append("stop")
        if self._windows is not None and self.result is None:
            self.result = FakeResult(self._windows.close(self.now_ns()))
        return self.result


@dataclass
class FakeSource:
    log: list[str]
    name: str = "source"
    rows: list[int] = field(default_factory=list)

    def on_window_start(self, window_id: int, label: str, execution: int | None) -> None:
        self.log.append(f"{self.name} start {window_id} {label}")

    def on_window_end(self, window_id: int) -> None:
        self.log.append(f"{self.name} end {window_id}")

    def write(self, writer: TraceWriter) -> None:
        self.log.append(f"{self.name} write")
        writer.set_meta(**{f"{self.name}_wrote": True})

    def stop(self) -> None:
        self.log.append(f"{self.name} stop")


def test_fakes_follow_the_protocols():
    log: list[str] = []
    capture: Capture = FakeCapture(log)
    source: WindowSource = FakeSource(log)
    capture.start()
    result: CaptureResult | None = capture.stop()
    assert result is not None and source is not None


def test_windows_follow_one_set_of_rules():
    windows = WindowLog(100)
    assert windows.current == 1
    assert windows.begin("execution", 1, 200) == 2
    assert windows.begin("between", None, 300) == 3
    assert windows.close(400) == (
        Window("between", None, 100, 200),
        Window("execution", 1, 200, 300),
        Window("between", None, 300, 400),
    )
    assert windows.close(500)[-1].end_ns == 400  # the first close wins
    with pytest.raises(RuntimeError):
        windows.begin("execution", 2, 600)
    assert WindowLog(7).close(9) == (Window("capture", None, 7, 9),)


def test_sources_see_every_boundary_and_write_after_the_backend(tmp_path):
    log: list[str] = []

    def body(windows: Windows) -> None:
        windows.begin_window("execution", 1)
        windows.begin_window("between")

    path = record(
        FakeCapture(log),
        TraceWriter(tmp_path / "t.trace"),
        body,
        sources=[FakeSource(log)],
        annotate=lambda writer: log.append("annotate"),
    )
    assert log == [
        "source start 1 capture",
        "start",
        "source start 2 execution",
        "backend window 2",
        "source end 1",
        "source start 3 between",
        "backend window 3",
        "source end 2",
        "stop",
        "source end 3",
        "source stop",
        "source write",
        "annotate",
    ]
    with Trace(path) as trace:
        assert trace.complete and dict(trace.meta)["source_wrote"]  # a test source's own key
        assert [row["label"] for row in trace.rows("SELECT label FROM windows")] == ["between", "execution", "between"]


def test_a_body_that_says_why_it_ended_early_marks_the_trace_incomplete(tmp_path):
    path = record(FakeCapture([]), TraceWriter(tmp_path / "t.trace"), lambda windows: "execution 1 failed: x")
    with Trace(path) as trace:
        assert not trace.complete and trace.meta["incomplete_reason"] == "execution 1 failed: x"


@pytest.mark.parametrize("fail_in", ["start", "body", "source"])
def test_a_failure_keeps_nothing_and_stops_every_source(tmp_path, fail_in):
    log: list[str] = []

    class FailingSource(FakeSource):
        def on_window_start(self, window_id: int, label: str, execution: int | None) -> None:
            raise CasstraceError("source broke", "fix it")

    def body(windows: Windows) -> None:
        raise CasstraceError("body broke", "fix it")

    sources = [FailingSource(log, "bad")] if fail_in == "source" else [FakeSource(log)]
    with pytest.raises(CasstraceError):
        record(
            FakeCapture(log, fail_start=fail_in == "start"),
            TraceWriter(tmp_path / "t.trace"),
            body,
            sources=[*sources, FakeSource(log, "other")],
        )
    assert list(tmp_path.iterdir()) == []
    assert log[-2:] == [f"{sources[0].name} stop", "other stop"] and "stop" in log


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM, signal.SIGHUP])
def test_a_signal_in_the_body_keeps_the_capture_marked_incomplete(tmp_path, signum):
    log: list[str] = []

    def body(windows: Windows) -> None:
        windows.begin_window("execution", 1)
        os.kill(os.getpid(), signum)
        raise AssertionError("the signal did not interrupt the body")

    with pytest.raises(Interrupted) as raised:
        record(
            FakeCapture(log),
            TraceWriter(tmp_path / "t.trace"),
            body,
            sources=[FakeSource(log)],
            collect=lambda interrupted: log.append(f"collect {interrupted}"),
        )
    assert raised.value.signum == signum and raised.value.exit_code == 128 + signum
    assert raised.value.trace == tmp_path / "t.trace" and not raised.value.trace_complete
    assert "collect True" in log and "source stop" in log and "source write" in log
    assert raised.value.trace is not None
    with Trace(raised.value.trace) as trace:
        assert not trace.complete and trace.meta["incomplete_reason"] == raised.value.reason
        assert trace.rows("SELECT count(*) FROM windows")[0][0] == 2


def test_a_signal_while_attaching_waits_until_attached_then_detaches(tmp_path):
    log: list[str] = []

    class SignalledWhileStarting(FakeCapture):
        def start(self) -> None:
            os.kill(os.getpid(), signal.SIGINT)
            log.append("still starting")  # not cut: the signal waits
            super().start()

    with pytest.raises(Interrupted) as raised:
        record(
            SignalledWhileStarting(log),
            TraceWriter(tmp_path / "t.trace"),
            lambda windows: log.append("body"),
            sources=[FakeSource(log)],
        )
    assert log == [
        "source start 1 capture",
        "still starting",
        "start",
        "stop",
        "source end 1",
        "source stop",
        "source write",
    ]
    assert raised.value.trace is not None and raised.value.trace.exists()


def test_a_deferred_step_holds_sigterm_though_nothing_installed_the_handlers():
    """A step deferred outside record() (page_out, a library's own use) is not cut, and SIGTERM does
    not end the process in its middle: deferred() installs the handlers itself."""
    INTERRUPTS.uninstall()
    INTERRUPTS.reset()
    log: list[str] = []
    with pytest.raises(Interrupted) as raised:
        with INTERRUPTS.deferred():
            os.kill(os.getpid(), signal.SIGTERM)
            log.append("the step ended")
    assert log == ["the step ended"] and raised.value.signum == signal.SIGTERM


def test_only_the_main_thread_takes_the_signals_over():
    """install() from another thread (a library's worker) leaves the handlers as they were, then the
    main thread takes them over."""
    import threading

    INTERRUPTS.uninstall()
    before = signal.getsignal(signal.SIGTERM)
    errors: list[BaseException] = []

    def install() -> None:
        try:
            INTERRUPTS.install()
        except BaseException as error:
            errors.append(error)

    worker = threading.Thread(target=install)
    worker.start()
    worker.join()
    assert errors == [] and signal.getsignal(signal.SIGTERM) is before
    INTERRUPTS.install()
    assert signal.getsignal(signal.SIGTERM) is not before


def test_signals_while_writing_are_noted_and_raised_once_the_trace_is_whole(tmp_path, capfd):
    def annotate(writer: TraceWriter) -> None:
        os.kill(os.getpid(), signal.SIGTERM)
        os.kill(os.getpid(), signal.SIGINT)  # a second signal: noted, said, never raised
        writer.set_meta(annotated=True)

    with pytest.raises(Interrupted) as raised:
        record(FakeCapture([]), TraceWriter(tmp_path / "t.trace"), lambda windows: None, annotate=annotate)
    assert raised.value.signum == signal.SIGTERM
    with Trace(tmp_path / "t.trace") as trace:
        assert dict(trace.meta)["annotated"] and not trace.complete  # the test's own key
        assert trace.meta["incomplete_reason"] == "terminated (SIGTERM)"
    assert "only SIGKILL stops this" in capfd.readouterr().err


def test_stale_partials_are_removed_and_live_ones_kept(tmp_path):
    stale = tmp_path / ".old.trace.partial"
    stale.write_bytes(b"half a trace")
    live = TraceWriter(tmp_path / "live.trace")
    assert not stale.exists()  # the new writer removed what nobody held
    held = tmp_path / ".held.trace.partial"
    with open(held, "wb") as holder:
        fcntl.flock(holder, fcntl.LOCK_EX)
        assert remove_stale_partials(tmp_path) == []
        with pytest.raises(CasstraceError, match="another casstrace is writing"):
            TraceWriter(tmp_path / "held.trace")
    assert remove_stale_partials(tmp_path) == [held]
    assert live.partial_path.exists()
    live.finish()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["live.trace"]


def test_a_writer_replaces_its_own_stale_partial(tmp_path):
    Path(tmp_path / ".t.trace.partial").write_bytes(b"left by a killed run")
    path = TraceWriter(tmp_path / "t.trace").finish()
    with Trace(path) as trace:
        assert trace.complete


def test_casstrace_traces_removes_what_a_killed_run_left(tmp_path):
    (tmp_path / ".killed.trace.partial").write_bytes(b"half a trace")
    listed = subprocess.run(
        [sys.executable, "-m", "casstrace", "traces", "--dir", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert listed.returncode == 0, listed.stderr
    assert "left by a casstrace that was killed" in listed.stderr
    assert list(tmp_path.iterdir()) == []
