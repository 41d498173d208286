"""How casstrace ends when it is told to: SIGINT (Ctrl-C), SIGTERM and SIGHUP alike.

Each of the three signals raises `Interrupted` (a KeyboardInterrupt) in the main thread, so a command
unwinds through its `finally` blocks whatever signal ended it. Around steps that must not be cut in
half — attaching or detaching probes, reading the kernel's maps, writing a trace or a report — the
signal is only noted (`with INTERRUPTS.deferred():`) and raised when the step is done: cut in the
middle, they would leave a probe attached or lose what was captured.

Once one signal has been raised, the command is ending: it detaches, keeps what it captured and
says where, and later signals are noted, never raised (a second Ctrl-C must not throw away the
capture the first one asked to keep). Only SIGKILL ends it at once; the `.partial` file that leaves
is cleaned by the next run (casstrace.traces.writer).
"""

import os
import signal
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from types import FrameType
from typing import Any

SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
REASONS = {
    signal.SIGINT: "interrupted (Ctrl-C)",
    signal.SIGTERM: "terminated (SIGTERM)",
    signal.SIGHUP: "hung up (SIGHUP)",
}


class Interrupted(KeyboardInterrupt):
    """A signal asked casstrace to stop. `trace` is the incomplete trace kept, once there is one."""

    def __init__(self, signum: int):
        super().__init__(signum)
        self.signum = signum
        self.trace: Path | None = None  # the trace kept, once written
        self.trace_complete = False  # whether it is marked complete (the signal came after it was)

    @property
    def reason(self) -> str:
        return REASONS.get(signal.Signals(self.signum), f"stopped by signal {self.signum}")

    def __str__(self) -> str:
        """What casstrace says as it exits: why, and where the trace it kept is."""
        if self.trace is None:
            return self.reason
        state = "complete" if self.trace_complete else "so far, marked incomplete"
        return f"{self.reason}: the trace, {state}, is at {self.trace}"

    @property
    def exit_code(self) -> int:
        return 128 + self.signum  # what a shell reports for a process the signal ended


class Interrupts:
    """The process's handling of SIGINT, SIGTERM and SIGHUP (one instance: INTERRUPTS)."""

    def __init__(self) -> None:
        self.received: Interrupted | None = None  # the first signal since reset()
        self._raised = False  # the first signal was raised: the command is ending
        self._pending = False  # noted inside a deferred step, to raise when it ends
        self._deferring = 0
        self._told = False
        self._replaced: dict[int, Any] = {}  # signal -> the handler install() replaced

    def install(self) -> None:
        """Take over the three signals (idempotent; only the main thread can)."""
        if self._replaced:
            return
        try:
            self._replaced = {signum: signal.signal(signum, self._on_signal) for signum in SIGNALS}
        except ValueError:  # another thread: signal.signal says so (threading costs casstrace import's start)
            return

    def uninstall(self) -> None:
        """Give the signals back to the handlers install() found (for a program embedding casstrace)."""
        for signum, handler in self._replaced.items():
            signal.signal(signum, handler)
        self._replaced = {}
        self.reset()

    def reset(self) -> None:
        """Forget earlier signals: a new capture begins (several in one process: compare, demo, tests)."""
        self.received, self._raised, self._pending, self._told = None, False, False, False

    def _on_signal(self, signum: int, _frame: FrameType | None) -> None:
        first = self.received is None
        received = self.received = self.received or Interrupted(signum)
        if not first or self._raised:  # the command is ending already: noted, said once
            if not self._told:  # os.write: print() could be in the middle of writing stderr
                self._told = True
                os.write(
                    2,
                    b"casstrace: stopping: detaching the probes and keeping what was captured"
                    b" (only SIGKILL stops this, and loses it)\n",
                )
            return
        if self._deferring:
            self._pending = True
            return
        self._raised = True
        raise received

    @contextmanager
    def deferred(self, raise_after: bool = True) -> Iterator[None]:
        """A step that must finish once begun: a signal during it is raised when it ends (or, with
        raise_after=False, left for the caller to take()). The handlers are installed first: without
        them Ctrl-C would cut the step at once and SIGTERM end the process in it."""
        self.install()
        self._deferring += 1
        try:
            yield
        finally:
            self._deferring -= 1
        if raise_after:
            self.raise_pending()

    def raise_pending(self) -> None:
        """Raise a signal noted while deferring, unless deferring still, or one was raised already."""
        if self._pending and not self._deferring:
            self._pending = False
            if not self._raised and self.received is not None:
                self._raised = True
                raise self.received

    def note(self, error: KeyboardInterrupt) -> Interrupted:
        """An interruption that was caught: the signal raised, or a KeyboardInterrupt that did not
        come through these handlers (raised by hand, or while they were not installed)."""
        if self.received is None:
            self.received = error if isinstance(error, Interrupted) else Interrupted(signal.SIGINT)
        self._raised, self._pending = True, False
        return self.received

    def expected(self) -> None:
        """The signal received was the expected way to end (an open-ended watch): the capture is
        whole. Later signals are still only noted: the command is ending."""
        self._raised = True
        self.received, self._pending = None, False

    def take(self) -> Interrupted | None:
        """The signal received, if any, now handled by the caller (who raises it in the end)."""
        if self.received is not None:
            self._pending, self._raised = False, True
        return self.received

    @property
    def ending(self) -> bool:
        """A signal arrived: what runs now is the way out."""
        return self.received is not None


INTERRUPTS = Interrupts()


def interrupted_by(error: BaseException | None) -> Interrupted | None:
    """The Interrupted behind an exception: itself, or what it was raised from (click turns a
    KeyboardInterrupt into Abort)."""
    while error is not None and not isinstance(error, Interrupted):
        error = error.__cause__ or error.__context__
    return error
