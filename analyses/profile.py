"""Which code read the bytes: the Java stacks of a profiled run (run --profile), from the trace.

Two views of the measured executions:
- bytes: every read call on the queried table's Data files, joined with the Java stack that made
  it (the probes' per-call log x async-profiler's stack of each call of the JDK's read method),
  weighted by the bytes the call returned plus the bytes the page cache filled while it ran; and
  the fills no read holds (faults on mapped files) on the stack of the faulting thread's nearest
  wall-clock sample. Fill bytes with no stack are undetermined, counted by why, never dropped;
- CPU: wall-clock samples of the threads that served the query, taken while they were running
  (state RUNNABLE): the threads that read those files, the native-transport request threads and the
  read stage's.
"""

from collections import defaultdict
from typing import Any

from casstrace.analyses.model import FrameShare, OtherThreads, Profile, StackBytes, WeightedStack
from casstrace.traces import Trace, queries
from casstrace.traces.schema import PAGE_BYTES
from casstrace.traces.serving import ServingSpans
from casstrace.traces.thread_roles import Role, role_of

CASSANDRA_PACKAGE = "org.apache.cassandra."
RUNNING_STATE = "STATE_RUNNABLE"
# The threads that take CQL requests and answer them, and those that run the local reads: a warm read
# of mapped files leaves no call or fill to find its thread by. Not the event loops (their sockets only).
SERVING_ROLES = frozenset({Role.CLIENT_REQUESTS, Role.LOCAL_READ})
MIN_EVIDENCE_SHARE = 0.01  # frames carrying less are not worth a line of evidence
IO_PLUMBING = ("org.apache.cassandra.io.util.", "org.apache.cassandra.utils.")
UNDETERMINED_READS = "in read calls with no Java stack"
UNDETERMINED_FAULTS = "fills no read holds (faults on mapped files) with no wall-clock sample of the thread that near"
UNDETERMINED_UNLOGGED = "fills neither the per-call nor the fill log holds (kernel totals only)"


def has_cassandra_frame(stack: tuple[str, ...]) -> bool:
    return any(frame.startswith(CASSANDRA_PACKAGE) for frame in stack)


def reading_frame(stack: tuple[str, ...]) -> str | None:
    """The Cassandra method that asked for the bytes: the one closest to the read outside the I/O
    plumbing every read goes through (readers, rebufferers, byte-buffer helpers), else the
    Cassandra frame closest to the read."""
    cassandra = [frame for frame in stack if frame.startswith(CASSANDRA_PACKAGE)]
    asking = [frame for frame in cassandra if not frame.startswith(IO_PLUMBING)]
    chosen = asking or cassandra
    return chosen[-1] if chosen else None


def profile(trace: Trace, window_ids: list[int], data_file_ids: list[int]) -> Profile | None:
    """The profile of the measured windows, None when the run was not profiled (or the trace
    predates profiles: format 1)."""
    meta = trace.meta.get("profile")
    if not meta:
        return None
    # Only windows the profiler was active in: elsewhere no read has a stack to find.
    profiled = set(meta.get("window_ids") or [])
    window_ids = [window_id for window_id in window_ids if window_id in profiled]
    frames = queries.stacks(trace)

    with_fills = "fill_join_ns" in meta
    by_stack: dict[int, list[int]] = defaultdict(lambda: [0, 0, 0])  # syscall, fill in calls, fill by faults
    for stack_id, read, calls_fill, faults_fill in queries.stack_read_bytes(trace, window_ids, data_file_ids):
        by_stack[stack_id] = [read, calls_fill, faults_fill]
    stacks_bytes = sorted(
        (
            StackBytes(frames[s], read + calls + faults, read, calls + faults)
            for s, (read, calls, faults) in by_stack.items()
        ),
        key=lambda w: -w.value,
    )
    joined = sum(w.syscall_bytes for w in stacks_bytes)
    cassandra = sum(w.syscall_bytes for w in stacks_bytes if has_cassandra_frame(w.stack))
    # One pass over the windows' calls on the files: what they read, by thread (the readers below).
    left_out = meta.get("other_threads")
    read_by_thread = (
        queries.thread_reads(trace, window_ids, data_file_ids)
        if left_out is None
        else _served_reads(trace, window_ids, data_file_ids)
    )
    data_read = sum(thread.read_bytes for thread in read_by_thread)
    call_fill_pages = sum(thread.fill_pages for thread in read_by_thread)
    fills = (
        _fills(trace, stacks_bytes, by_stack, call_fill_pages, meta["fill_join_ns"], window_ids, data_file_ids)
        if with_fills
        else {}
    )

    on_stacks = sum(w.value for w in stacks_bytes)
    frame_bytes: dict[str, int] = defaultdict(int)
    for weighted in stacks_bytes:
        frame = reading_frame(weighted.stack)
        if frame:
            frame_bytes[frame] += weighted.value
    top_frames = [
        FrameShare(frame, size, size / on_stacks if on_stacks else 0.0)
        for frame, size in sorted(frame_bytes.items(), key=lambda item: -item[1])
    ]

    names = queries.thread_names(trace)
    readers = {thread.tid for thread in read_by_thread}
    if with_fills:  # the threads that faulted on the mapped files read them too
        readers |= queries.faulting_threads(trace, window_ids, data_file_ids)
    serving = sorted(readers | {tid for tid, name in names.items() if role_of(name) in SERVING_ROLES})
    by_cpu_stack: dict[int, int] = defaultdict(int)
    for stack_id, samples in queries.stack_samples(trace, window_ids, serving, RUNNING_STATE):
        by_cpu_stack[stack_id] += samples
    stacks_cpu = sorted((WeightedStack(frames[s], n) for s, n in by_cpu_stack.items()), key=lambda w: -w.value)
    sampled = queries.sampled_threads(trace, window_ids, serving, RUNNING_STATE)

    return Profile(
        profiler=meta.get("profiler", "async-profiler"),
        read_method=meta.get("read_method", ""),
        cpu_samples=sum(w.value for w in stacks_cpu),
        threads=sorted(names.get(tid, f"tid {tid}") for tid in sampled | readers),
        stacks_cpu=stacks_cpu,
        stacks_bytes=stacks_bytes,
        data_read_bytes=data_read,
        joined_bytes=joined,
        cassandra_bytes=cassandra,
        top_frames=top_frames,
        other_threads=OtherThreads(**left_out) if left_out is not None else None,
        **fills,
    )


def _served_reads(trace: Trace, window_ids: list[int], data_file_ids: list[int]) -> list[queries.ThreadRead]:
    """By thread, the windows' calls on the files that the threads serving the executions made while
    they served them: what a profile of the serving threads kept (java_stacks.write_profile's rule)."""
    served = ServingSpans((span.tid, span.first_ns, span.last_ns) for span in queries.session_threads(trace))
    by_thread: dict[int, list[int]] = defaultdict(lambda: [0, 0])
    for call in queries.window_calls(trace, window_ids, data_file_ids):
        if served.holds(call.tid, call.ts_ns):
            by_thread[call.tid][0] += call.returned
            by_thread[call.tid][1] += call.fill_pages
    return [queries.ThreadRead(tid, read, pages) for tid, (read, pages) in by_thread.items()]


def _fills(
    trace: Trace,
    stacks_bytes: list[StackBytes],
    by_stack: dict[int, list[int]],
    call_fill_pages: int,
    fill_join_ns: int,
    window_ids: list[int],
    data_file_ids: list[int],
) -> dict[str, Any]:
    """The Profile's fill fields: the kernel's fill bytes of the files in the windows, those on stacks
    (in read calls; faults, by nearest sample), and the rest, undetermined, by why."""
    kernel = queries.fill_bytes(trace, window_ids, data_file_ids)
    fault_pages = queries.fault_fill_pages(trace, window_ids, data_file_ids)
    in_calls = sum(calls for _, calls, _ in by_stack.values())
    by_faults = sum(faults for _, _, faults in by_stack.values())
    logged = (call_fill_pages + fault_pages) * PAGE_BYTES
    undetermined = {
        UNDETERMINED_READS: call_fill_pages * PAGE_BYTES - in_calls,
        UNDETERMINED_FAULTS: fault_pages * PAGE_BYTES - by_faults,
        UNDETERMINED_UNLOGGED: kernel - logged,
    }
    return {
        "data_fill_bytes": kernel,
        "fill_call_bytes": in_calls,
        "fill_fault_bytes": by_faults,
        "fill_cassandra_bytes": sum(w.fill_bytes for w in stacks_bytes if has_cassandra_frame(w.stack)),
        "fill_join_ns": fill_join_ns,
        "fill_undetermined": {why: size for why, size in undetermined.items() if size},
    }


def bytes_measures(profile: Profile) -> str:
    """Which measures a stack's bytes add up."""
    if profile.data_fill_bytes is None:
        return "bytes read syscalls returned"
    return "bytes read syscalls returned + page-cache fill bytes"


def evidence(profile: Profile, limit: int = 3) -> list[str]:
    """Evidence lines for the findings: the Cassandra frames that carry most of the bytes read."""
    if not profile.top_frames:
        return []
    lines = []
    for top in [t for t in profile.top_frames if t.share >= MIN_EVIDENCE_SHARE][:limit]:
        caller = next((w.stack for w in profile.stacks_bytes if reading_frame(w.stack) == top.frame), ())
        chain = [frame for frame in caller if frame.startswith(CASSANDRA_PACKAGE)]
        below = chain[: chain.index(top.frame)] if top.frame in chain else []
        path = " <- ".join(reversed(below[-3:]))
        lines.append(
            f"Java stacks (async-profiler): {top.share:.1%} of the Data bytes on a known stack "
            f"({bytes_measures(profile)}) were asked for by {top.frame}"
            + (f", called from {path}" if path else "")
            + "."
        )
    return lines
