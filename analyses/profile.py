"""Which code read the bytes: the Java stacks of a profiled run (run --profile), from the trace.

Two views of the measured executions:
- bytes: every read call on the queried table's Data files, joined with the Java stack that made
  it (the probes' per-call log x async-profiler's stack of each call of the JDK's read method),
  weighted by the bytes the call returned;
- CPU: wall-clock samples of the threads that served the query, taken while they were running
  (state RUNNABLE): the threads that read those files, and the native-transport request threads.
"""

import json
from collections import defaultdict

from casstrace.analyses.file_io import sql_in
from casstrace.analyses.model import FrameShare, Profile, WeightedStack
from casstrace.traces import Trace

CASSANDRA_PACKAGE = "org.apache.cassandra."
RUNNING_STATE = "STATE_RUNNABLE"
REQUEST_THREAD_PREFIX = "Native-Transport"   # the threads that take CQL requests and answer them
MIN_EVIDENCE_SHARE = 0.01   # frames carrying less are not worth a line of evidence
IO_PLUMBING = ("org.apache.cassandra.io.util.", "org.apache.cassandra.utils.")


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
    windows, window_params = sql_in("window_id", window_ids)
    files, file_params = sql_in("file_id", data_file_ids)
    frames = {row["stack_id"]: tuple(json.loads(row["frames"])) for row in trace.rows("SELECT * FROM stacks")}

    by_stack: dict[int, int] = defaultdict(int)
    for row in trace.rows(f"SELECT stack_id, SUM(bytes) AS bytes FROM profile_reads WHERE {windows} AND {files}"
                          " GROUP BY stack_id", window_params + file_params):
        by_stack[row["stack_id"]] += row["bytes"]
    stacks_bytes = sorted((WeightedStack(frames[s], n) for s, n in by_stack.items()), key=lambda w: -w.value)
    joined = sum(w.value for w in stacks_bytes)
    cassandra = sum(w.value for w in stacks_bytes if has_cassandra_frame(w.stack))
    ((data_read,),) = trace.rows(
        "SELECT COALESCE(SUM(MAX(e.returned, 0)), 0) FROM events e JOIN windows w"
        " ON e.ts_ns >= w.start_ns AND e.ts_ns < w.end_ns"
        f" WHERE e.syscall != 'lseek' AND w.{windows} AND e.{files}", window_params + file_params)

    frame_bytes: dict[str, int] = defaultdict(int)
    for weighted in stacks_bytes:
        frame = reading_frame(weighted.stack)
        if frame:
            frame_bytes[frame] += weighted.value
    top_frames = [FrameShare(frame, size, size / joined if joined else 0.0)
                  for frame, size in sorted(frame_bytes.items(), key=lambda item: -item[1])]

    names = {row["tid"]: row["name"] for row in trace.rows("SELECT tid, name FROM threads")}
    readers = {row["tid"] for row in trace.rows(
        "SELECT DISTINCT e.tid FROM events e JOIN windows w ON e.ts_ns >= w.start_ns AND e.ts_ns < w.end_ns"
        f" WHERE w.{windows} AND e.{files}", window_params + file_params)}
    serving = readers | {tid for tid, name in names.items() if name.startswith(REQUEST_THREAD_PREFIX)}
    tids, tid_params = sql_in("tid", sorted(serving))
    by_cpu_stack: dict[int, int] = defaultdict(int)
    for row in trace.rows(f"SELECT stack_id, SUM(samples) AS samples FROM profile_samples WHERE {windows}"
                          f" AND {tids} AND state = ? GROUP BY stack_id", window_params + tid_params + [RUNNING_STATE]):
        by_cpu_stack[row["stack_id"]] += row["samples"]
    stacks_cpu = sorted((WeightedStack(frames[s], n) for s, n in by_cpu_stack.items()), key=lambda w: -w.value)
    sampled = {row["tid"] for row in trace.rows(
        f"SELECT DISTINCT tid FROM profile_samples WHERE {windows} AND {tids} AND state = ?",
        window_params + tid_params + [RUNNING_STATE])}

    return Profile(
        profiler=meta.get("profiler", "async-profiler"), read_method=meta.get("read_method", ""),
        cpu_samples=sum(w.value for w in stacks_cpu),
        threads=sorted(names.get(tid, f"tid {tid}") for tid in sampled | readers),
        stacks_cpu=stacks_cpu, stacks_bytes=stacks_bytes,
        data_read_bytes=data_read, joined_bytes=joined, cassandra_bytes=cassandra, top_frames=top_frames,
    )


def evidence(profile: Profile, limit: int = 3) -> list[str]:
    """Evidence lines for the findings: the Cassandra frames that carry most of the bytes read."""
    if not profile.joined_bytes:
        return []
    lines = []
    for top in [t for t in profile.top_frames if t.share >= MIN_EVIDENCE_SHARE][:limit]:
        caller = next((w.stack for w in profile.stacks_bytes if reading_frame(w.stack) == top.frame), ())
        chain = [frame for frame in caller if frame.startswith(CASSANDRA_PACKAGE)]
        below = chain[:chain.index(top.frame)] if top.frame in chain else []
        path = " <- ".join(reversed(below[-3:]))
        lines.append(f"Java stacks (async-profiler): {top.share:.1%} of the Data bytes with a known stack were read "
                     f"by {top.frame}" + (f", called from {path}" if path else "") + ".")
    return lines
