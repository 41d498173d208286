"""Wall time of a command's phases: what `casstrace run --timings` prints, and what the
turnaround benchmark reads, so a slow run says where its seconds went."""

import time
from collections.abc import Iterator
from contextlib import contextmanager


class Phases:
    def __init__(self) -> None:
        self.started = time.perf_counter()
        self.spans: list[tuple[str, float]] = []

    @contextmanager
    def __call__(self, name: str) -> Iterator[None]:
        began = time.perf_counter()
        try:
            yield
        finally:
            self.spans.append((name, time.perf_counter() - began))

    def summary(self) -> str:
        total = time.perf_counter() - self.started
        lines = [f"  {name:<24} {seconds:7.3f} s" for name, seconds in self.spans]
        lines.append(f"  {'total (since start)':<24} {total:7.3f} s")
        return "timings:\n" + "\n".join(lines)
