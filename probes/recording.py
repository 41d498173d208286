"""The one way from a capture to a trace, for every command that captures (run, capture, ...).

    path = record(capture, writer, body, sources=..., annotate=...)

1. start the window sources, then the backend (a signal meanwhile waits until they are attached);
2. `body(windows)` does the command's work, cutting windows (windows.begin_window); it returns
   None, or why the capture ended before its plan was done (the trace is then marked incomplete);
3. stop the backend, end the sources' last window, then stop the sources (undoing what they changed);
4. `collect(interrupted)`, if given, fetches what the trace needs from elsewhere once the probes
   are off (run: the node's own query trace, skipped when interrupted; watch: the sampled sessions,
   read whatever ended the watch); a signal during it only ends the collection;
5. write the backend's result, then each source's rows, then `annotate(writer)`, and finish the trace.

A failure (an exception) in steps 1-2 means nothing worth keeping: every probe is detached, every
source stopped, the trace discarded, and the failure raised. A signal (SIGINT, SIGTERM, SIGHUP:
casstrace.interrupts) at any moment keeps what was captured instead: probes detached, sources
stopped, the trace written whole and marked incomplete; then `Interrupted` is raised with `.trace`
set, for the command to report it and exit non-zero. Steps 1, 3 and 5 are never cut by a signal.
"""

from collections.abc import Callable, Sequence
from pathlib import Path

from casstrace.interrupts import INTERRUPTS
from casstrace.phases import Phases
from casstrace.probes.protocol import FIRST_WINDOW, Body, Capture, CaptureResult, WindowSource
from casstrace.traces.writer import TraceWriter


class Recording:
    """A running capture with its window sources: what a body cuts windows in."""

    def __init__(self, capture: Capture, sources: Sequence[WindowSource]):
        self.capture = capture
        self.sources = tuple(sources)
        self._window: int | None = None  # the open window, once the sources were told of it
        self._stopped = False

    @property
    def ended_early(self) -> str | None:
        return self.capture.ended_early

    def now_ns(self) -> int:
        return self.capture.now_ns()

    def start(self) -> None:
        for source in self.sources:  # before the backend opens window 1, as before every window
            source.on_window_start(1, FIRST_WINDOW, None)
        self._window = 1
        self.capture.start()

    def begin_window(self, label: str, execution: int | None = None) -> int:
        with INTERRUPTS.deferred():  # the backend and every source switch together, or none does
            if self._window is None or self._stopped:
                raise RuntimeError("begin_window() outside a running capture")
            # Sources act outside the windows they measure: starts before the backend opens the
            # window, ends after it closed it. Their own work (reading /proc, loading an agent) falls
            # in the neighbouring window, usually a gap between executions.
            ended, new = self._window, self._window + 1  # window ids count up by one (WindowLog)
            for source in self.sources:
                source.on_window_start(new, label, execution)
            self._window = self.capture.begin_window(label, execution)
            if self._window != new:
                raise RuntimeError(f"the backend opened window {self._window} where the protocol says {new}")
            for source in self.sources:
                source.on_window_end(ended)
        return self._window

    def stop(self) -> CaptureResult | None:
        """Detach the backend, end the last window, and stop every source, whatever fails first."""
        if self._stopped:
            return self.capture.stop()
        self._stopped = True
        try:
            result = self.capture.stop()
        finally:
            try:
                if self._window is not None:
                    for source in self.sources:
                        source.on_window_end(self._window)
            finally:
                self._stop_sources()
        return result

    def _stop_sources(self, index: int = 0) -> None:
        """Stop sources[index:], each even when one before it failed (the first failure is raised)."""
        if index < len(self.sources):
            try:
                self.sources[index].stop()
            finally:
                self._stop_sources(index + 1)


def record(
    capture: Capture,
    writer: TraceWriter,
    body: Body,
    *,
    sources: Sequence[WindowSource] = (),
    collect: Callable[[bool], None] | None = None,
    annotate: Callable[[TraceWriter], None] | None = None,
    phases: Phases | None = None,
) -> Path:
    """Capture while `body` runs and write the trace; returns its path (see the module's docstring).
    `writer` is discarded on failure and finished otherwise."""
    phases = phases or Phases()
    INTERRUPTS.install()
    INTERRUPTS.reset()
    recording = Recording(capture, sources)
    ended: str | None = None
    try:
        try:
            with phases("compile, attach probes"), INTERRUPTS.deferred():
                recording.start()
            ended = body(recording)
        except KeyboardInterrupt as error:
            INTERRUPTS.note(error)  # keep what was captured
        with phases("detach probes"), INTERRUPTS.deferred(raise_after=False):
            result = recording.stop()
        if result is None:
            raise RuntimeError("the capture stopped without a result after it started")
    except BaseException:
        with INTERRUPTS.deferred(raise_after=False):
            try:
                recording.stop()
            finally:
                writer.discard()
        raise

    if collect is not None:
        try:
            collect(INTERRUPTS.received is not None)
        except KeyboardInterrupt as error:
            INTERRUPTS.note(error)  # an interrupted collection only leaves the trace without what it collects
        except BaseException:
            writer.discard()
            raise
    interrupted = INTERRUPTS.received

    with phases("write trace"), INTERRUPTS.deferred(raise_after=False):
        with writer.writing():
            result.write(writer)
            for source in sources:
                source.write(writer)
            if annotate is not None:
                annotate(writer)
            interrupted = interrupted or INTERRUPTS.received
            reason = interrupted.reason if interrupted is not None else ended
            path = writer.finish(complete=reason is None, reason=reason)
        signal = INTERRUPTS.take()
        if signal is not None:
            signal.trace, signal.trace_complete = path, interrupted is None
            raise signal
    return path
