"""Several runs in one process with one capture kept attached across them.

A command that makes several `run`s (compare's variants, the demo's queries, a sweep's points) or a
test module that runs many queries on its node pays the capture's detach at each: closing each of the
bcc program's ~145 tracepoints waits for two RCU grace periods, one close after another, ~5.8 s of a
~10 s `run` (docs/performance.md). Through a KeptCapture the program is compiled and attached once,
lent to each run's capture in turn, and detached once, at close(). Each run writes its trace exactly
as a run alone does: the program is idle and emptied between two runs
(casstrace.probes.bcc.bcc_capture.KeptProgram), so a trace holds nothing of the run before.

A backend that cannot keep its capture (sysdig) captures each run on its own; so does a run that
captures through agents (several nodes, or one over ssh: each agent compiles its own program), and the
kept program is detached before it.
"""

from pathlib import Path

from casstrace.orchestration.runner import RunOptions, run
from casstrace.phases import Phases
from casstrace.probes.backends import DEFAULT_BACKEND, StartedBackend, backend


class KeptCapture:
    """The capture of backend `backend_name` kept across the runs made through run(); a with block
    closes it (the one detach)."""

    def __init__(self, backend_name: str = DEFAULT_BACKEND):
        self.backend_name = backend_name
        self._started = StartedBackend(backend(backend_name), kept=True)  # compiling from now on

    def __enter__(self) -> "KeptCapture":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def run(self, options: RunOptions, phases: Phases | None = None) -> Path:
        """orchestration.runner.run through the kept capture; the path of the trace written."""
        if options.backend != self.backend_name:
            raise ValueError(f"a run with backend {options.backend} through a kept {self.backend_name} capture")
        return run(options, phases, self._started)

    def close(self) -> None:
        """Detach the capture (a program still compiling is given up without waiting for it)."""
        self._started.release()
