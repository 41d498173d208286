"""Runs one casstrace command in this process and sends itself a signal at a chosen moment.

    python signal_trial.py MOMENT SIGNAL SEED [--again] -- casstrace arguments...

MOMENT names the step of the capture → trace routine to interrupt: `attach` (compiling and loading
the BPF program), `execute` (a query execution), `detach` (between two tracepoints being
detached), `maps` (between two BPF maps being read), `collect` (reading the node's query trace),
`trace` (one of the trace writer's steps), `report` (analysing and writing the HTML report).
SEED picks where inside that step and how long after it began. --again sends a second signal
(SIGINT) shortly after the first. The moment the first signal is sent goes to stderr as
`signal-trial: sent SIG at MONOTONIC_NS`, so the test can time how long stopping takes.

The command runs exactly as `casstrace` would (cli.main.main); only the named step is wrapped, to
fire the signal from inside it, or from a timer thread while it runs.
"""

import os
import random
import signal
import sys
import threading
import time
from collections.abc import Callable
from typing import Any

from casstrace.cli import main as cli_main
from casstrace.orchestration import runner
from casstrace.probes.bcc import bcc_capture, bcc_trace
from casstrace.traces import writer as trace_writer

TRACE_STEPS = (
    "add_window",
    "add_file_io",
    "add_coverage",
    "add_heatmap",
    "add_latency",
    "add_events",
    "add_threads",
    "add_execution",
    "set_meta",
    "finish",
)


def main() -> None:
    moment, signame, seed = sys.argv[1:4]
    again = "--again" in sys.argv[4 : sys.argv.index("--")]
    argv = sys.argv[sys.argv.index("--") + 1 :]
    chance = random.Random(int(seed))
    signum = signal.Signals[signame]
    fired = threading.Event()

    def fire() -> None:
        if fired.is_set():
            return
        fired.set()
        print(f"signal-trial: sent {signum.name} at {time.monotonic_ns()}", file=sys.stderr, flush=True)
        os.kill(os.getpid(), signum)
        if again:
            threading.Timer(0.2, os.kill, (os.getpid(), signal.SIGINT)).start()

    def fire_after(seconds: float) -> None:
        threading.Timer(seconds, fire).start()

    def wrap(owner: Any, name: str, before: Callable[[int], None]) -> None:
        """Call before(n) on the n-th call (from 1) of owner.name, then the real thing."""
        original = getattr(owner, name)
        calls = 0

        def wrapped(*args: Any, **kwargs: Any) -> Any:
            nonlocal calls
            calls += 1
            before(calls)
            return original(*args, **kwargs)

        setattr(owner, name, wrapped)

    if moment == "attach":  # the compile takes seconds: land anywhere in it, or as it ends at the latest
        original_load = bcc_capture.BccCapture._load

        def load(self: bcc_capture.BccCapture) -> None:
            fire_after(chance.uniform(0, 2.0))
            try:
                original_load(self)
            finally:
                fire()  # a quiet machine compiles in ~1.2 s: a later timer would land after the whole run

        bcc_capture.BccCapture._load = load  # type: ignore[method-assign]
    elif moment == "execute":
        nth = chance.randint(1, 3)
        wrap(runner, "execute", lambda n: fire_after(chance.uniform(0, 0.05)) if n == nth else None)
    elif moment == "detach":  # between two of the tracepoints being detached
        nth = chance.randint(1, 8)
        original_detach = bcc_capture.BccCapture._detach

        def detach(self: bcc_capture.BccCapture) -> None:
            wrap(self._bpf, "detach_tracepoint", lambda n: fire() if n == nth else None)
            wrap(self._bpf, "detach_raw_tracepoint", lambda n: fire() if n == 1 else None)
            original_detach(self)

        bcc_capture.BccCapture._detach = detach  # type: ignore[method-assign]
    elif moment == "maps":
        nth = chance.randint(1, 5)  # the five aggregate maps
        wrap(bcc_capture, "read_hash", lambda n: fire() if n == nth else None)
    elif moment == "collect":
        wrap(runner, "query_traces", lambda _n: fire())
    elif moment == "trace":  # the writer is made before the capture: only its steps after it count
        step = chance.choice(TRACE_STEPS)
        writing = threading.Event()
        wrap(bcc_trace.TraceBuilder, "write", lambda _n: writing.set())
        wrap(trace_writer.TraceWriter, step, lambda _n: fire() if writing.is_set() else None)
    elif moment == "report":
        from casstrace import analyses, reports

        if chance.random() < 0.5:
            wrap(analyses, "analyse", lambda _n: fire())
        else:
            wrap(reports, "write", lambda _n: fire())
    else:
        sys.exit(f"unknown moment {moment}")
    cli_main.main(argv)


if __name__ == "__main__":
    main()
