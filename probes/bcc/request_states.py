"""Where a request's time on the node went, from its threads' states: the fold of node_time.c's
`transitions` into per-window measures (casstrace.traces.measures) `running_ns`, `cpu_wait_ns` and
`io_wait_ns`.

The node's time of a request (`node_ns`) runs from the read that takes it to the last write of its
answer. At every moment of it, the threads that serve requests (node_time.py REQUEST_ROLES)
are in one of four conditions, taken in this order:

- one of them sleeps uninterruptibly (`io_wait_ns`: a read of the disk, a fault on a mapped page not
  in memory; first, because a request thread waits so only for a request's data, and the others'
  work meanwhile does not shorten the wait);
- else one of them is on a CPU (`running_ns`; the pools' idle workers spin a little before they park,
  which counts here);
- else one is runnable and waits for a CPU (`cpu_wait_ns`: other threads of the JVM, the compiler's
  and the collector's, or other processes hold the CPUs);
- else all sleep: they wait on each other, on a lock or on the JVM (a GC pause's safepoint); the
  analyses give that rest (node_ns less the three), and the GC pauses within it.

So the three add up to no more than the node's time, each request's segments (node_time.c: from the
request's read to its answer's first write, then write to write) folded against the one timeline
of the threads' states. On a node that serves other clients the threads' states are theirs too: the
split is then of the node's request threads while casstrace's request was open.

Only the measured windows' transitions are sent; each window opens with the transitions that began
its request threads' conditions then (node_time.py opening_conditions: on a CPU, waiting for one or on
the disk since before the window), so a thread that runs through the whole window, or waits for a CPU
from before it, is not taken for asleep. A switch out carries the moment the thread began to serve
(its slice's start, or its rename into a request pool within the slice). A shared-pool worker's
renames as it runs are transitions too (node_time.c): into a request pool's name, a switch in; out
of it, having left the pools. A worker that waited for its CPU under another stage's name before such a
rename comes with its wake-up, and its slice's start as having left the pools (it waited for the
request, then served none until the rename); a thread a request thread starts, with its start as its
wake-up. A thread with no condition known counts as asleep: what is not known is left in the rest,
never given to a part.
"""

from bisect import bisect_right
from collections import defaultdict
from collections.abc import Iterable
from enum import IntEnum
from typing import NamedTuple


class Kind(IntEnum):
    """A transition's kind (node_time.c's KIND_* defines)."""

    SWITCHED_OUT = 1  # the thread left its CPU or its pool, in `state`; `from_ns`: when it began to serve (0: unknown)
    SWITCHED_IN = 2  # on a CPU under a request pool's name, or renamed into one as it ran
    WOKEN = 3
    ANSWERED = 4  # an answering write's exit: the request's time from `from_ns` to `ts_ns` is the node's


class State(IntEnum):
    """A request thread's condition (node_time.c's STATE_* defines for a switched-out thread)."""

    RUNNABLE = 0  # preempted, or yielded: it waits for a CPU
    SLEEPING = 1
    IO = 2  # uninterruptible sleep: the disk, or a fault on a mapped page
    RUNNING = 3
    LEFT = 4  # renamed into another pool's name (a shared-pool worker moving as it runs): serves none


class Transition(NamedTuple):
    ts_ns: int  # CLOCK_MONOTONIC
    from_ns: int  # ANSWERED: the segment's start; SWITCHED_OUT: the slice's start; 0 otherwise
    tid: int  # the thread (0 for ANSWERED)
    window_id: int
    kind: int
    state: int  # SWITCHED_OUT's


# The measures, by the condition the request threads were in (the first that holds, in this order).
MEASURE_OF = {State.IO: "io_wait_ns", State.RUNNING: "running_ns", State.RUNNABLE: "cpu_wait_ns"}


def _with_slice_starts(transitions: list[Transition]) -> list[Transition]:
    """The transitions, with a switch in at each switched-out slice's start (the same as the one sent
    when the thread was switched in under a request pool's name; the only one when it was not), sorted.
    A thread that left the pools gets none: whether it served in that slice is not known."""
    starts = [
        Transition(t.from_ns, 0, t.tid, t.window_id, Kind.SWITCHED_IN, 0)
        for t in transitions
        if t.kind == Kind.SWITCHED_OUT and t.from_ns and t.state != State.LEFT
    ]
    return sorted(transitions + starts)


def _state_after(kind: int, state: int, before: State) -> State:
    if kind == Kind.SWITCHED_OUT:
        return State.SLEEPING if state == State.LEFT else State(state)
    if kind == Kind.SWITCHED_IN:
        return State.RUNNING
    # woken: a thread that had not yet left its CPU, or already waits for one, stays as it is
    return State.RUNNABLE if before in (State.SLEEPING, State.IO) else before


def _condition(counts: dict[State, int]) -> State:
    for state in MEASURE_OF:
        if counts[state]:
            return state
    return State.SLEEPING


class _Timeline:
    """The request threads' condition over one window: piecewise constant, with the time spent in each
    condition up to each change."""

    def __init__(self, changes: list[Transition]):
        threads = dict.fromkeys((change.tid for change in changes), State.SLEEPING)  # not known yet
        counts: dict[State, int] = defaultdict(int)
        counts[State.SLEEPING] = len(threads)
        self.times: list[int] = []
        self.conditions: list[State] = []
        self.spent: list[dict[State, int]] = []  # time per condition from the first change to each
        spent: dict[State, int] = defaultdict(int)
        condition = State.SLEEPING
        for change in changes:
            if self.times:
                spent[condition] += change.ts_ns - self.times[-1]
            before = threads[change.tid]
            after = _state_after(change.kind, change.state, before)
            counts[before] -= 1
            counts[after] += 1
            threads[change.tid] = after
            condition = _condition(counts)
            self.times.append(change.ts_ns)
            self.conditions.append(condition)
            self.spent.append(dict(spent))

    def _spent_until(self, ts: int) -> dict[State, int]:
        """Time per condition from the first change to `ts` (before it every thread counts as asleep: the
        time is the rest's, in no part)."""
        i = bisect_right(self.times, ts) - 1
        if i < 0:
            return {}
        spent = dict(self.spent[i])
        spent[self.conditions[i]] = spent.get(self.conditions[i], 0) + ts - self.times[i]
        return spent

    def spent_between(self, start: int, end: int) -> dict[State, int]:
        until_end, until_start = self._spent_until(end), self._spent_until(start)
        return {
            state: until_end.get(state, 0) - until_start.get(state, 0) for state in set(until_end) | set(until_start)
        }


def request_spans(transitions: Iterable[Transition]) -> dict[int, tuple[int, int]]:
    """window_id -> (the entry of the read that took its first request, the exit of its last answering
    write), CLOCK_MONOTONIC, for each window with an answered request: where the node held the measured
    client's requests, to the microsecond."""
    spans: dict[int, tuple[int, int]] = {}
    for t in transitions:
        if t.kind == Kind.ANSWERED:
            start, end = spans.get(t.window_id, (t.from_ns, t.ts_ns))
            spans[t.window_id] = (min(start, t.from_ns), max(end, t.ts_ns))
    return spans


def split_request_time(transitions: Iterable[Transition]) -> dict[int, dict[str, int]]:
    """window_id -> {measure: ns} for each window with an answered request: its requests' time on the node
    split by the request threads' condition (the module's docstring). The rest (all asleep) is not
    returned: it is the window's node_ns less these."""
    per_window: dict[int, list[Transition]] = defaultdict(list)
    for transition in transitions:
        per_window[transition.window_id].append(transition)
    split: dict[int, dict[str, int]] = {}
    for window_id, listed in per_window.items():
        timeline = _Timeline(_with_slice_starts([t for t in listed if t.kind != Kind.ANSWERED]))
        answered = [t for t in listed if t.kind == Kind.ANSWERED]
        if not answered:
            continue
        totals = dict.fromkeys(MEASURE_OF.values(), 0)
        for segment in answered:
            for state, ns in timeline.spent_between(segment.from_ns, segment.ts_ns).items():
                if state in MEASURE_OF:
                    totals[MEASURE_OF[state]] += ns
        split[window_id] = totals
    return split
