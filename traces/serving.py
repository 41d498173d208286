"""When a thread served a traced request: the spans of its events on each thread, as the trace holds
them (session_threads), and the margin either side the events' times need.

Cassandra's trace events are timed to ~0.2 ms (node.tracing.session_start_ns): a read, or a
profiler's sample, this near outside a session's events on its thread may still be the session's
(measured: a sampled narrow read's own calls fell up to 214 µs outside its events).
`analyses.attribution` charges a session the read calls of its threads within this margin; `run
--profile` keeps the profiler's samples and the reads it puts on stacks by the same rule.
"""

import bisect
from collections import defaultdict
from collections.abc import Iterable

CALL_MARGIN_NS = 250_000


class ServingSpans:
    """The threads' serving stretches (spans widened by CALL_MARGIN_NS, merged where they meet),
    asked whether a thread served any of those requests at a moment. `spans`: (tid, first_ns, last_ns)
    of one node's threads (tid None: no thread found, left out)."""

    def __init__(self, spans: Iterable[tuple[int | None, int, int]], margin_ns: int = CALL_MARGIN_NS):
        by_tid: dict[int, list[tuple[int, int]]] = defaultdict(list)
        for tid, first_ns, last_ns in spans:
            if tid is not None:
                by_tid[tid].append((first_ns - margin_ns, last_ns + margin_ns))
        self._starts: dict[int, list[int]] = {}
        self._ends: dict[int, list[int]] = {}
        for tid, stretches in by_tid.items():
            merged: list[list[int]] = []
            for start, end in sorted(stretches):
                if merged and start <= merged[-1][1]:
                    merged[-1][1] = max(merged[-1][1], end)
                else:
                    merged.append([start, end])
            self._starts[tid] = [start for start, _ in merged]
            self._ends[tid] = [end for _, end in merged]

    def holds(self, tid: int, ts_ns: int) -> bool:
        """Whether thread `tid` was serving one of the requests at `ts_ns`."""
        starts = self._starts.get(tid)
        if not starts:
            return False
        index = bisect.bisect_right(starts, ts_ns) - 1
        return index >= 0 and ts_ns <= self._ends[tid][index]

    def meets(self, tid: int, start_ns: int, width_ns: int) -> bool:
        """Whether thread `tid` was serving one of the requests at some moment of [start_ns, start_ns + width_ns)."""
        starts = self._starts.get(tid)
        if not starts:
            return False
        index = bisect.bisect_left(starts, start_ns + width_ns) - 1
        return index >= 0 and self._ends[tid][index] >= start_ns
