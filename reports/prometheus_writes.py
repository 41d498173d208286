"""A watch's write statements on its Prometheus page (reports.prometheus): their bytes and node time,
beside the reads' bytes, from the figures the report gives them (analyses.statement_writes).

  casstrace_statement_write_bytes_total{statement, measure}   counter: what the sampled executions of a
      write statement moved, measure="wire" (the bytes of its requests the node read from its clients'
      connections) or "commit_log" (the commit-log bytes they appended); the report's figure per
      execution times its sampled executions
  casstrace_statement_write_node_seconds_per_execution{statement, part}   gauge: a write's node time per
      sampled execution, part="total" (the session's duration), "commit_log" (appending, and waiting for
      the sync), "pauses" (GC and safepoint pauses it overlapped), "cpu" (the CPU its threads ran while
      they served it, outside those two), "rest"; the four parts add up to the total

A figure not measured has no series, as on the rest of the page; statements summed into one label
(statement="other") give a series only when every write among them has the figure, so that a sum is
never a part passed off as the whole.
"""

from collections.abc import Callable

from casstrace.analyses.statement_writes import StatementWrites
from casstrace.analyses.units import ns_to_s
from casstrace.analyses.watch import StatementIO

Labels = tuple[tuple[str, str], ...]
Samples = dict[str, list[tuple[Labels, float]]]

WRITE_BYTES = "casstrace_statement_write_bytes_total"
WRITE_NODE_SECONDS = "casstrace_statement_write_node_seconds_per_execution"
HELP = {
    WRITE_BYTES: (
        "counter",
        "Bytes the sampled executions of a write statement moved: on the wire (read from its clients) "
        "or appended to the commit log",
    ),
    WRITE_NODE_SECONDS: (
        "gauge",
        "A write statement's node time per sampled execution: total, in the commit log, in JVM pauses, "
        "on its threads' CPU, the rest",
    ),
}

Figure = Callable[[StatementWrites], float | None]
BYTES: tuple[tuple[str, Figure], ...] = (
    ("wire", lambda w: w.wire_bytes_per_execution),
    ("commit_log", lambda w: w.commitlog_bytes_per_execution),
)
NODE_NS: tuple[tuple[str, Figure], ...] = (
    ("total", lambda w: w.node_ns_per_execution),
    ("commit_log", lambda w: w.commitlog_ns_per_execution),
    ("pauses", lambda w: w.pause_ns_per_execution),
    ("cpu", lambda w: w.cpu_ns_per_execution),
    ("rest", lambda w: w.rest_ns_per_execution),
)


def write_samples(samples: Samples, label: str, statements: list[StatementIO]) -> None:
    """The write figures of the statements under one label, into `samples` (none for reads)."""
    writes = [(s.write, s.sampled_executions) for s in statements if s.write is not None and s.sampled_executions]
    if not writes:
        return
    sampled = sum(count for _, count in writes)
    statement = (("statement", label),)
    for measure, figure in BYTES:
        total = _sum(writes, figure)
        if total is not None:
            samples[WRITE_BYTES].append(((*statement, ("measure", measure)), total))
    for part, figure in NODE_NS:
        total = _sum(writes, figure)
        if total is not None:
            samples[WRITE_NODE_SECONDS].append(((*statement, ("part", part)), ns_to_s(total / sampled)))


def _sum(writes: list[tuple[StatementWrites, int]], figure: Figure) -> float | None:
    """The figure per execution times the sampled executions, summed (None: one write lacks it)."""
    values = [(figure(write), count) for write, count in writes]
    if any(value is None for value, _ in values):
        return None
    return sum((value or 0.0) * count for value, count in values)
