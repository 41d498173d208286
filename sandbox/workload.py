"""A bounded background workload on a sandbox node: statements at fixed rates, ending by itself.

For `casstrace watch` to have something to find (its tests, its overhead benchmark): each statement
runs on its own thread, one request at a time, started on a fixed schedule (a late start does not
make the next ones come faster), until the duration is over. Each records what it achieved: how
many ran, how long each took as the client saw it, how many failed.
"""

import threading
import time
from dataclasses import dataclass, field
from typing import Any


@dataclass
class Load:
    """One statement of the workload: `cql` with `values` (a prepared statement when there are any)."""

    name: str
    cql: str
    rate_per_s: float
    values: tuple = ()
    started_s: list[float] = field(default_factory=list)  # time.monotonic() of each start
    latencies_s: list[float] = field(default_factory=list)
    errors: int = 0

    @property
    def executions(self) -> int:
        return len(self.latencies_s)


class Workload:
    """Start with start(); it ends by itself after `duration_s` (join() waits for it)."""

    def __init__(self, session: Any, loads: list[Load], duration_s: float):
        self.session = session
        self.loads = loads
        self.duration_s = duration_s
        self.started: float | None = None
        self.ended: float | None = None
        self._threads: list[threading.Thread] = []

    def start(self) -> "Workload":
        statements = [self.session.prepare(load.cql) if load.values else load.cql for load in self.loads]
        self.started = time.monotonic()
        for load, statement in zip(self.loads, statements):
            thread = threading.Thread(
                target=self._run, args=(load, statement), name=f"workload-{load.name}", daemon=True
            )
            thread.start()
            self._threads.append(thread)
        return self

    def join(self) -> "Workload":
        for thread in self._threads:
            thread.join()
        self.ended = time.monotonic()
        return self

    @staticmethod
    def executions_between(load: Load, start_s: float, end_s: float) -> int:
        """How many of the load's executions started in [start_s, end_s] (time.monotonic())."""
        return sum(start_s <= began <= end_s for began in load.started_s)

    def _run(self, load: Load, statement: Any) -> None:
        assert self.started is not None
        interval = 1 / load.rate_per_s
        deadline = self.started + self.duration_s
        number = 0
        while True:
            due = self.started + number * interval
            if due >= deadline:
                return
            now = time.monotonic()
            if due > now:
                time.sleep(due - now)
            number += 1
            began = time.monotonic()
            try:
                self.session.execute(statement, load.values or None)
            except Exception:  # a timeout on a busy machine: counted, the schedule goes on
                load.errors += 1
                continue
            load.started_s.append(began)
            load.latencies_s.append(time.monotonic() - began)
            # Late beyond the next start: skip the starts already missed rather than burst.
            number = max(number, int((time.monotonic() - self.started) / interval))
