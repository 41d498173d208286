"""Wall and CPU time of a command's phases: what `casstrace run --timings` prints, and what the
benchmarks read, so a slow run says where its seconds went. CPU time (this process's, user +
system) is what a busy machine does not inflate: wall far above it means waiting (for the node,
the disk, or other processes)."""

import time
from collections.abc import Iterator
from contextlib import contextmanager


class Phases:
    def __init__(self) -> None:
        self.started = time.perf_counter()
        self.started_cpu = time.process_time()
        self.spans: list[tuple[str, float, float]] = []  # name, wall, CPU seconds

    @contextmanager
    def __call__(self, name: str) -> Iterator[None]:
        began, began_cpu = time.perf_counter(), time.process_time()
        try:
            yield
        finally:
            self.spans.append((name, time.perf_counter() - began, time.process_time() - began_cpu))

    def summary(self) -> str:
        spans = [
            *self.spans,
            ("total (since start)", time.perf_counter() - self.started, time.process_time() - self.started_cpu),
        ]
        return "timings:\n" + "\n".join(f"  {name:<24} {wall:7.3f} s  cpu {cpu:7.3f} s" for name, wall, cpu in spans)
