"""The capture protocol: what every capture backend does, and what may ride along its windows.

A `Capture` watches one process between start() and stop(). Its time is cut into consecutive
*windows* (casstrace.traces.schema): window 1 is open from start(); each begin_window() closes the
current one and opens the next; stop() closes the last. The window rules live once, in `WindowLog`.
stop() hands back a `CaptureResult`: everything captured, public and typed, which writes itself
into a trace. Backends are registered in casstrace.probes.backends, each with the capabilities
(casstrace.traces.capabilities) its captures have.

A `WindowSource` is a measurement that is not a backend but shares its windows (mapped pages
touched, a profiler, a setting switched on for the capture): the capture → trace routine
(casstrace.probes.recording.record) tells it where each window starts and ends, asks it to write
its rows after the backend's, and calls its stop() on every way out, to undo what it changed.

Nothing here raises on a signal: casstrace.interrupts decides when one may cut in.
"""

from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import NamedTuple, Protocol, runtime_checkable

from casstrace.traces.capabilities import Capability
from casstrace.traces.writer import TraceWriter

FIRST_WINDOW = "capture"  # the whole capture, while it is the only window
GAP_WINDOW = "between"  # what the first window becomes once a second one begins, and the gaps
MEASURED_WINDOW = "execution"  # the label of a run's measured execution's window


class Window(NamedTuple):
    """One window of a capture, on the capture's clock; its window_id is its position + 1."""

    label: str
    execution: int | None
    start_ns: int
    end_ns: int


class WindowLog:
    """The windows of one capture, by the protocol's rules: `open` is the capture's window 1."""

    def __init__(self, start_ns: int):
        self._labels: list[tuple[str, int | None]] = [(FIRST_WINDOW, None)]
        self._starts: list[int] = [start_ns]
        self._end_ns: int | None = None

    @property
    def current(self) -> int:
        """The window_id of the open window."""
        return len(self._starts)

    @property
    def start_ns(self) -> int:
        return self._starts[0]

    def begin(self, label: str, execution: int | None, now_ns: int) -> int:
        """Close the open window at now_ns and open the next; returns its window_id."""
        if self._end_ns is not None:
            raise RuntimeError("begin_window() after the capture stopped")
        if self._labels == [(FIRST_WINDOW, None)]:
            self._labels[0] = (GAP_WINDOW, None)
        self._labels.append((label, execution))
        self._starts.append(now_ns)
        return self.current

    def close(self, end_ns: int) -> tuple[Window, ...]:
        """Close the last window (the first close wins); returns every window in order."""
        if self._end_ns is None:
            self._end_ns = end_ns
        return self.windows()

    def windows(self) -> tuple[Window, ...]:
        """Every window; the open one ends now as far as anyone can tell: at its start."""
        ends = [*self._starts[1:], self._end_ns if self._end_ns is not None else self._starts[-1]]
        return tuple(
            Window(label, execution, start, end)
            for (label, execution), start, end in zip(self._labels, self._starts, ends)
        )


class CaptureResult(Protocol):
    """What a stopped capture holds, to be written into a trace once (by the routine in recording)."""

    @property
    def windows(self) -> Sequence[Window]: ...

    @property
    def ended_early(self) -> str | None:
        """Why the capture ended before it was stopped (e.g. the process exited), or None."""
        ...

    def write(self, writer: TraceWriter) -> None:
        """Write windows (the first rows of the trace: window_id i is windows[i - 1]), files,
        measurements and meta (backend, source, pid, measures, capture_start_ns/_end_ns ...)."""
        ...


class Capture(Protocol):
    """A capture backend at work on one process. start() and stop() are idempotent; stop() is safe
    after a failed or missing start() (returns None then: nothing was captured)."""

    pid: int

    @property
    def ended_early(self) -> str | None:
        """Set while capturing when the capture cannot go on (the process exited, the tracer died)."""
        ...

    def now_ns(self) -> int:
        """The capture's clock (windows and events are on it)."""
        ...

    def start(self) -> None: ...

    def begin_window(self, label: str, execution: int | None = None) -> int:
        """Close the open window, open one labelled `label`; returns its window_id (2, 3, ...)."""
        ...

    def stop(self) -> CaptureResult | None:
        """Detach everything and close the last window; the result of the first stop() every time."""
        ...


class ThreadIOCapture(Capture, Protocol):
    """A capture asked for file bytes per thread (CaptureOptions.thread_slot_ns, Capability.THREAD_IO),
    read while it runs: casstrace watch's live table."""

    @property
    def start_ns(self) -> int:
        """When the capture started, on now_ns()'s clock (slots count from it)."""
        ...

    @property
    def thread_names(self) -> dict[int, str]:
        """tid -> name of the threads seen so far."""
        ...

    def thread_io_so_far(self) -> list[tuple[int, int, str | None, int, int, int, int | None]]:
        """(tid, slot, path or None, read_bytes, cache_miss_pages, write_bytes, dirtied_pages or None: not
        measured) as they stand now."""
        ...

    def socket_reads_so_far(self) -> list[tuple[str, str, int]]:
        """(local 'ip:port', remote 'ip:port', bytes read) of each TCP connection as they stand now."""
        ...

    def drain_thread_io(self) -> int:
        """Move the complete slots out of the kernel's map (a full map refuses updates); the entries moved."""
        ...

    def complete_until_ns(self) -> int:
        """Slots that end by this time (now_ns()'s clock) are complete: no read still running adds to them."""
        ...

    def take_slots(self, until_ns: int, label: str) -> CaptureResult:
        """The per-thread counts (and the other per-slot figures) of slots ending by `until_ns` that no
        earlier call took, moved out of the capture as a result of their own (one window, `label`):
        one stretch of a long watch, written as its own trace. The capture's final result holds the rest."""
        ...


class CaptureOptions(NamedTuple):
    """What a capture may be asked beyond watching one process: each needs a capability. (A NamedTuple:
    dataclasses would load inspect on `casstrace import`'s start path.)"""

    # The pid is this command's (its words, redacted), which casstrace started: the capture follows
    # every process it starts, and ends when it exits (Capability.FOLLOW_CHILDREN).
    command: str | None = None
    # The command's line is whole, as the user gave it (not redacted): the trace says so.
    command_kept_whole: bool = False
    # > 0: file bytes counted per thread and time slot of this many ns (Capability.THREAD_IO).
    thread_slot_ns: int = 0
    # What the trace says was captured (meta source; None: 'pid PID', or the command's).
    source: str | None = None
    # The latency spectrogram of every syscall the process makes, not only of the calls captured
    # (a program at every syscall of every process on the machine: `--spectrogram all`).
    all_syscalls: bool = False

    def needs(self) -> frozenset[Capability]:
        return frozenset(
            {
                *([Capability.FOLLOW_CHILDREN] if self.command is not None else []),
                *([Capability.THREAD_IO] if self.thread_slot_ns else []),
            }
        )


class CaptureFactory(Protocol):
    """How the routine's callers make a backend's capture of a process (casstrace.probes.backends):
    stream_limit None keeps the backends' DEFAULT_STREAM_LIMIT per-call records; `options` may ask only for what
    the backend's `capabilities` hold (ValueError otherwise). A caller that needs a capability asks
    for it in `capabilities`, never for a backend by its name."""

    @property
    def capabilities(self) -> frozenset[Capability]: ...

    def __call__(
        self,
        pid: int,
        *,
        extra_dirs: Iterable[str | Path] = (),
        stream_limit: int | None = None,
        options: CaptureOptions | None = None,
    ) -> Capture: ...


class WindowSource(Protocol):
    """A measurement taken at the capture's window boundaries, beside the backend.

    A source acts outside the windows it measures, so that its own work (reading /proc, loading
    an agent) never lands inside them: on_window_start(id, label, execution) just before the backend
    opens window `id`, on_window_end(id) just after it closed it. At a boundary the order is
    therefore on_window_start(new), the backend's switch, on_window_end(previous): a source that
    measures only some windows (those of executions, say) keeps track of the ones it began. Calls,
    all from the main thread: on_window_start(1, 'capture', None) before the backend starts; one
    start and one end per window the capture begins; on_window_end(last) after the backend stopped;
    write(writer) after the backend wrote its rows (windows and files exist then:
    see TraceWriter.file_id). stop() comes on every way out — success, failure, signal — even when no
    window ever started, and more than once: it undoes whatever the source changed, and must not
    raise for having nothing to undo. A failure in any call other than stop() and write() ends the
    capture as a failure (nothing is kept); a failure in write() does too."""

    def on_window_start(self, window_id: int, label: str, execution: int | None) -> None: ...

    def on_window_end(self, window_id: int) -> None: ...

    def write(self, writer: TraceWriter) -> None: ...

    def stop(self) -> None: ...


@runtime_checkable
class RequestSpans(Protocol):
    """A window source that sees the node take and answer the measured client's requests (the node's
    time, casstrace.probes.bcc.node_time): for `run` to place each traced session within them."""

    def request_spans(self) -> dict[int, tuple[int, int]]:
        """window_id -> (the read that took the window's first request, the exit of its last answering
        write), CLOCK_MONOTONIC ns, for the measured windows with an answered request."""
        ...


# What a caller's body returns: why the capture ended before its plan was done (None: it was not).
EndReason = str | None
Body = Callable[["Windows"], EndReason]


class Windows(Protocol):
    """What the routine hands a body: the running capture's windows and clock."""

    @property
    def ended_early(self) -> str | None: ...

    def now_ns(self) -> int: ...

    def begin_window(self, label: str, execution: int | None = None) -> int: ...
