"""The registry of per-window measures: the one list of what the `window_measures` table may hold.

A per-window measure is one number per node and window (the node's CPU time in an execution, say),
taken by a window source (casstrace.probes.protocol.WindowSource) beside the capture backend and
written as window_measures rows (casstrace.traces.schema). Its entry here says what the number is:

- `unit`: 'ns' (a duration), 'bytes' or 'count': how every report prints it;
- `merge`: how the values of one window combine when several rows hold it (several captured nodes
  of one run, merged by casstrace.traces.merge, or one node's rows of one window; the sessions of one
  execution, one a page): 'sum' (work that adds up: CPU time, pauses) or 'max' (a span the slowest one
  sets);
- `label`: the column heading and item label every report gives it;
- `whose`: 'node' (taken on the node: the analyses' figures are the node's unless they say
  otherwise) or 'client' (taken by casstrace's client, e.g. its own decoding);
- `derived`: the analyses compute it per execution from other tables (the serving threads' CPU, from
  thread_cpu and the executions' traced sessions; Cassandra's own traced time and a write's time in
  the commit log, from its sessions' records: casstrace.analyses.session_measures, which gives a
  watch's sampled executions the same figures): no window_measures row ever holds it;
- `at_most`: what one node's value of one window cannot exceed, checked when a trace is opened
  (casstrace.traces.validation): 'window' (a span within the window: at most its length), 'threads'
  (time of the node's threads: at most their number times the capture's span) or None (a count, or
  the node's time answering, which adds up the requests of every client connection open at once).

Adding a measure is a window source and an entry here (CONTRIBUTING.md, "A per-execution
measure"); the writer refuses a row of a measure that has no entry, and tests/unit/test_measures.py
checks every entry is merged, analysed and rendered in every format.
"""

from typing import Literal, NamedTuple

Unit = Literal["ns", "bytes", "count"]
Merge = Literal["sum", "max"]
Whose = Literal["node", "client"]
Bound = Literal["window", "threads"] | None


class Measure(NamedTuple):
    """One registered measure. (A NamedTuple: the writer imports this module on `casstrace import`'s
    start path, where dataclasses would load inspect, ~10 ms.)"""

    name: str  # the window_measures.measure value, and the JSON key
    unit: Unit
    merge: Merge
    label: str
    at_most: Bound
    whose: Whose = "node"
    derived: bool = False

    def combine(self, values: list[float]) -> float:
        """The values of one window as one figure, by the merge rule."""
        return sum(values) if self.merge == "sum" else max(values)


# In the order reports list them.
MEASURES: dict[str, Measure] = {
    measure.name: measure
    for measure in (
        Measure("node_ns", "ns", "max", "Node time", None),
        Measure("node_requests", "count", "sum", "Requests answered", None),
        # the node's time split by its request threads' condition (casstrace.probes.bcc.request_states)
        Measure("running_ns", "ns", "max", "Running", "threads"),
        Measure("cpu_wait_ns", "ns", "max", "Waiting for a CPU", "threads"),
        Measure("io_wait_ns", "ns", "max", "I/O wait", "threads"),
        Measure("traced_ns", "ns", "sum", "Cassandra's traced time", "window", derived=True),
        # a write's time from each commit-log append to its thread's next event: the append and the sync's wait
        Measure("commitlog_ns", "ns", "sum", "Commit log", "window", derived=True),
        Measure("serving_cpu_ns", "ns", "sum", "Serving threads' CPU", "threads", derived=True),
        Measure("request_cpu_ns", "ns", "sum", "Request pools' CPU", "threads"),
        Measure("jvm_cpu_ns", "ns", "sum", "JVM CPU (all threads)", "threads"),
        Measure("gc_pause_ns", "ns", "max", "GC pauses", "window"),
        Measure("client_decode_ns", "ns", "sum", "Decoding", "window", whose="client"),
        # the EXECUTE requests' frames a write sent the node (node.query.MeasuringProtocolHandler; run of a write)
        Measure("client_request_bytes", "bytes", "sum", "Sent to the node", None, whose="client"),
        Measure("safepoint_ns", "ns", "max", "Safepoints", "window"),
    )
}


def measure(name: str) -> Measure:
    """The registered measure `name` (ValueError for one without an entry: a row nobody could read)."""
    try:
        return MEASURES[name]
    except KeyError:
        raise ValueError(f"{name!r} is not a registered measure (casstrace.traces.measures.MEASURES)") from None


def recorded(name: str) -> Measure:
    """The registered measure `name` that a window source may record (ValueError for one without an
    entry, or one the analyses derive)."""
    entry = measure(name)
    if entry.derived:
        raise ValueError(f"{name!r} is derived by the analyses, never recorded (casstrace.traces.measures)")
    return entry
