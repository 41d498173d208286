"""The fold of the request threads' transitions into the node's time split (probes/bcc/request_states.py),
on transitions written by hand: each part is the time of the request's segments in that condition, and
the parts never pass the segments' sum; what is not known counts in no part."""

from casstrace.probes.bcc.request_states import Kind, State, Transition, request_spans, split_request_time

WINDOW = 7


def switched_out(ts, tid, state, since=0):
    """A switch out; `since`: when the slice began (0: not known)."""
    return Transition(ts, since, tid, WINDOW, Kind.SWITCHED_OUT, state)


def switched_in(ts, tid):
    return Transition(ts, 0, tid, WINDOW, Kind.SWITCHED_IN, 0)


def woken(ts, tid):
    return Transition(ts, 0, tid, WINDOW, Kind.WOKEN, 0)


def answered(start, end):
    return Transition(end, start, 0, WINDOW, Kind.ANSWERED, 0)


def test_a_request_handed_from_thread_to_thread():
    """Thread 1 is switched in at 100 and runs to 130, when it wakes thread 2 and sleeps; thread 2 waits
    for a CPU until 150, runs to 170, faults on the disk to 200, runs to 210 and answers. The request
    began at 90, before thread 1's first transition: not known, so in no part."""
    transitions = [
        switched_in(100, 1),
        woken(130, 2),
        switched_out(130, 1, State.SLEEPING, since=100),
        switched_in(150, 2),
        switched_out(170, 2, State.IO, since=150),
        woken(200, 2),
        switched_in(200, 2),
        answered(90, 210),
        switched_out(215, 2, State.SLEEPING, since=200),
    ]
    # 100-130 runs; 130-150 thread 2 waits; 150-170 runs; 170-200 disk; 200-210 runs
    assert split_request_time(transitions) == {WINDOW: {"running_ns": 60, "cpu_wait_ns": 20, "io_wait_ns": 30}}


def test_io_wait_goes_first_and_sleep_is_the_rest():
    """While thread 1 waits on the disk, thread 2 runs: the request waits on the disk. When both sleep,
    nothing is counted (the rest). A thread that ran across the window's start runs from its slice's
    start, which its switch out carries."""
    transitions = [
        switched_out(10, 1, State.IO, since=2),  # it ran from 2, with no switch in sent
        switched_in(12, 2),
        switched_out(20, 2, State.SLEEPING, since=12),
        woken(30, 1),  # 10-30 disk; runnable from 30
        switched_in(35, 1),
        switched_out(40, 1, State.SLEEPING, since=35),  # 40-50 all asleep
        answered(0, 50),
    ]
    assert split_request_time(transitions) == {WINDOW: {"running_ns": 13, "cpu_wait_ns": 5, "io_wait_ns": 20}}


def test_segments_are_the_requests_time_only():
    """A request's time is its segments (read to first write, write to write): the threads' time between
    requests, and a window with no answered request, count nothing."""
    transitions = [
        switched_out(10, 1, State.RUNNABLE, since=3),  # preempted: runs before 10, waits after
        switched_in(20, 1),
        answered(5, 15),
        answered(15, 25),
        switched_out(30, 1, State.SLEEPING, since=20),
        switched_in(40, 1),
        Transition(45, 40, 1, WINDOW + 1, Kind.SWITCHED_OUT, State.SLEEPING),
    ]
    assert split_request_time(transitions) == {WINDOW: {"running_ns": 10, "cpu_wait_ns": 10, "io_wait_ns": 0}}


def test_a_thread_that_left_the_pools_serves_no_more():
    """A worker switched in under a request pool's name and out under another's stops counting at its
    switch out, and its slice before is not known to have served: in no part."""
    transitions = [
        switched_out(20, 2, State.LEFT, since=15),
        switched_in(30, 1),
        switched_out(40, 1, State.LEFT, since=30),
        answered(10, 50),
    ]
    assert split_request_time(transitions) == {WINDOW: {"running_ns": 10, "cpu_wait_ns": 0, "io_wait_ns": 0}}


def test_a_windows_request_span_runs_from_its_first_read_to_its_last_answering_write():
    """Two pages in window 7 (read at 100, answered by writes ending 150 and 170; read at 300, answered at
    360), one request in window 8: each window's span, and none for a window with no answer."""
    other = Transition(520, 500, 0, 8, Kind.ANSWERED, 0)
    transitions = [answered(100, 150), answered(150, 170), switched_in(200, 1), answered(300, 360), other]
    assert request_spans(transitions) == {WINDOW: (100, 360), 8: (500, 520)}
    assert request_spans([switched_in(200, 1)]) == {}
