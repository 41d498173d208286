"""Joining the probes' per-call read log with the profiler's stack of each read method call, and the
profile analysis on a trace written with it (no JVM, no probes)."""

import json

from casstrace.analyses import analyse
from casstrace.analyses.profile import UNDETERMINED_FAULTS, UNDETERMINED_READS, UNDETERMINED_UNLOGGED, bytes_measures
from casstrace.probes.jvm.java_stacks import (
    FILL_JOIN_NS,
    LoggedFill,
    LoggedRead,
    join_reads,
    nearest_samples,
    up_to,
    write_profile,
)
from casstrace.probes.jvm.jfr import Sample
from casstrace.reports import render
from casstrace.traces import Trace, TraceWriter
from casstrace.traces.serving import ServingSpans

READ = (
    "java.lang.Thread.run",
    "org.apache.cassandra.db.ReadCommand.executeLocally",
    "org.apache.cassandra.db.marshal.AbstractType.skipValue",
    "org.apache.cassandra.io.util.ChannelProxy.read",
    "sun.nio.ch.FileDispatcherImpl.pread",
)
INDEX = (
    "java.lang.Thread.run",
    "org.apache.cassandra.io.sstable.format.SSTableReader.getFileDataInput",
    "org.apache.cassandra.io.util.ChannelProxy.read",
    "sun.nio.ch.FileDispatcherImpl.pread",
)


def method(ts: int, tid: int, stack=READ) -> Sample:
    return Sample("jdk.ExecutionSample", ts, tid, "ReadStage-1", stack, "STATE_DEFAULT", 1)


def test_a_read_joins_the_latest_call_of_its_thread_since_its_previous_read():
    reads = [
        LoggedRead(110, 7, 1, 100),
        LoggedRead(210, 7, 1, 200),
        LoggedRead(215, 7, 1, 50),
        LoggedRead(112, 8, 1, 10),
    ]
    samples = [method(100, 7), method(200, 7, INDEX), method(111, 8), method(300, 8)]
    joined = {(read.tid, read.ts_ns): sample for read, sample in join_reads(reads, samples)}
    assert joined[(7, 110)].ts_ns == 100
    assert joined[(7, 210)].stack == INDEX
    assert joined[(7, 215)] is None  # its thread made no method call since the previous read
    assert joined[(8, 112)].ts_ns == 111  # the later call on thread 8 (ts 300) belongs to no logged read


def test_a_read_never_joins_a_call_of_another_thread_or_from_the_future():
    joined = join_reads([LoggedRead(100, 7, 1, 1)], [method(99, 8), method(101, 7)])
    assert joined[0][1] is None


def _trace(path, fills=False, serving=None):
    """A profiled trace; with fills, one that measured page-cache fills: in read calls, by faults, and
    some that neither log holds."""
    writer = TraceWriter(path)
    for label, start, end, execution in [
        ("warmup", 0, 1000, 1),
        ("execution", 1000, 2000, 2),
        ("between", 2000, 2100, None),
        ("execution", 2100, 3000, 3),
    ]:
        writer.add_window(label, start, end, execution)
    data = writer.file_id("/data/demo/wide-0805d1e0e73811f19d682fbd3fb6712b/nb-5-big-Data.db", "file")
    writer.set_meta(
        query="SELECT c0 FROM demo.wide WHERE id = 1",
        keyspace="demo",
        backend="bcc",
        measures={
            "syscalls": True,
            "offsets": True,
            "page_cache": True,
            "latency": True,
            "wire": True,
            **({"call_fills": True} if fills else {}),
        },
        capture_start_ns=0,
        capture_end_ns=3000,
    )
    for window_id, execution in [(1, 1), (2, 2), (4, 3)]:
        writer.add_execution(
            execution=execution,
            kind="warmup" if execution == 1 else "measured",
            window_id=window_id,
            latency_s=0.001,
            rows=1,
            payload_bytes=100,
        )
    # Warmup read (not profiled), two big reads under skipValue, one small index read, one read with no call.
    reads = [(500, 0, 4096, 0), (1100, 0, 16384, 4), (2200, 16384, 16384, 2), (2300, 0, 1000, 0), (2400, 0, 24, 1)]
    writer.add_events(
        [
            (ts, 7, "pread64", 5, data, offset, size, size, 10, pages if fills else None)
            for ts, offset, size, pages in reads
        ]
    )
    if fills:
        writer.add_page_cache_fills(
            [
                {"ts_ns": 1500, "tid": 7, "file_id": data, "pages": 3, "syscall": None},
                {"ts_ns": 1650, "tid": 7, "file_id": data, "pages": 1, "syscall": None},
                {"ts_ns": 2500, "tid": 11, "file_id": data, "pages": 5, "syscall": None},
            ]
        )
        # The kernel's counts: 2 pages of window 4 are in neither log (the fill log was full).
        writer.add_file_io(
            [
                {"window_id": 2, "file_id": data, "cache_miss_pages": 8, "cache_miss_bytes": 8 * 4096},
                {"window_id": 4, "file_id": data, "cache_miss_pages": 10, "cache_miss_bytes": 10 * 4096},
            ]
        )
    samples = [
        method(1090, 7),
        method(2190, 7),
        method(2290, 7, INDEX),
        Sample("profiler.WallClockSample", 1500, 7, "ReadStage-1", READ, "STATE_RUNNABLE", 3),
        Sample("profiler.WallClockSample", 1600, 9, "CompactionExecutor:1", INDEX, "STATE_RUNNABLE", 1),
        Sample("profiler.WallClockSample", 1700, 7, "ReadStage-1", INDEX, "STATE_SLEEPING", 5),
    ]
    write_profile(
        writer,
        samples,
        window_ids=[2, 4],
        profiler="async-profiler 4.1",
        read_method="sun.nio.ch.FileDispatcherImpl.pread",
        wall_interval_ns=1_000_000,
        serving=serving,
    )
    return writer.finish()


def test_the_profile_weights_stacks_by_bytes_and_counts_what_has_no_stack(tmp_path):
    profile = analyse(_trace(tmp_path / "t.trace")).profile
    assert profile.data_read_bytes == 16384 * 2 + 1000 + 24  # the warmup's read is out of scope
    assert profile.joined_bytes == profile.cassandra_bytes == 16384 * 2 + 1000
    assert [(w.stack, w.value) for w in profile.stacks_bytes] == [(READ, 32768), (INDEX, 1000)]
    assert profile.top_frames[0].frame == "org.apache.cassandra.db.marshal.AbstractType.skipValue"
    # CPU: running samples of the threads that read the table's files; not the compaction thread's,
    # not the sleeping ones.
    assert profile.cpu_samples == 3
    assert profile.threads == ["ReadStage-1"]


def test_a_trace_without_a_profile_has_none(tmp_path):
    writer = TraceWriter(tmp_path / "plain.trace")
    writer.set_meta(backend="bcc", measures={})
    assert analyse(writer.finish()).profile is None


def test_a_fault_takes_the_stack_of_its_threads_nearest_wall_sample_within_the_bound():
    wall = [
        Sample("profiler.WallClockSample", ts, 7, "ReadStage-1", stack, "STATE_RUNNABLE", 1)
        for ts, stack in ((1000, READ), (4000, INDEX))
    ]
    fills = [
        LoggedFill(2400, 7, 1, 1),
        LoggedFill(2600, 7, 1, 1),
        LoggedFill(1000 + FILL_JOIN_NS + 1, 8, 1, 1),
        LoggedFill(4000 + FILL_JOIN_NS + 1, 7, 1, 1),
    ]
    joined = [sample.stack if sample else None for _, sample in nearest_samples(fills, wall)]
    assert joined == [READ, INDEX, None, None]  # another thread's sample, or one too far, lends nothing


def test_fill_bytes_go_on_the_stack_of_their_read_or_of_the_faulting_threads_sample_and_the_rest_is_undetermined(
    tmp_path,
):
    profile = analyse(_trace(tmp_path / "t.trace", fills=True)).profile
    page = 4096
    assert profile.data_fill_bytes == 18 * page
    assert profile.fill_call_bytes == 6 * page  # the reads at 1100 and 2200, on their call's stack
    assert profile.fill_fault_bytes == 4 * page  # faults at 1500 (sample 1500) and 1650 (sample 1700)
    assert profile.fill_undetermined == {
        UNDETERMINED_READS: 1 * page,
        UNDETERMINED_FAULTS: 5 * page,
        UNDETERMINED_UNLOGGED: 2 * page,
    }
    assert profile.fill_on_stacks_bytes + profile.fill_undetermined_bytes == profile.data_fill_bytes
    assert [(w.stack, w.syscall_bytes, w.fill_bytes, w.value) for w in profile.stacks_bytes] == [
        (READ, 32768, 9 * page, 32768 + 9 * page),
        (INDEX, 1000, 1 * page, 1000 + page),
    ]
    assert profile.fill_cassandra_bytes == 10 * page
    assert profile.top_frames[0].bytes == 32768 + 9 * page


def test_a_profile_from_before_fills_says_its_bytes_are_syscall_bytes_only(tmp_path):
    profile = analyse(_trace(tmp_path / "t.trace")).profile
    assert profile is not None
    assert profile.data_fill_bytes is None and not profile.fill_undetermined
    assert bytes_measures(profile) == "bytes read syscalls returned"
    assert all(w.fill_bytes == 0 and w.value == w.syscall_bytes for w in profile.stacks_bytes)


def test_a_recorded_call_loses_the_profilers_own_frames_above_the_read_method():
    recorded = ("clone3", "start_thread", *READ, "one.profiler.Instrument.recordSample", "Instrument::recordSample")
    assert up_to(recorded, "sun.nio.ch.FileDispatcherImpl.pread") == ("clone3", "start_thread", *READ)
    assert up_to(INDEX, "sun.nio.ch.UnixFileDispatcherImpl.pread") == INDEX


def test_reports_say_which_measures_a_stacks_bytes_add_up_and_what_stays_undetermined(tmp_path):
    analysis = analyse(_trace(tmp_path / "t.trace", fills=True))
    profile = json.loads(render(analysis, "json"))["profile"]
    assert profile["bytes_measures"] == "bytes read syscalls returned + page-cache fill bytes"
    assert [(s["syscall_bytes"], s["fill_bytes"], s["bytes"]) for s in profile["stacks_bytes"]] == [
        (32768, 9 * 4096, 32768 + 9 * 4096),
        (1000, 4096, 1000 + 4096),
    ]
    assert profile["data_fill_bytes"] == 18 * 4096 and profile["fill_undetermined_bytes"] == 8 * 4096
    assert {u["why"]: u["bytes"] for u in profile["fill_undetermined"]} == {
        UNDETERMINED_READS: 4096,
        UNDETERMINED_FAULTS: 5 * 4096,
        UNDETERMINED_UNLOGGED: 2 * 4096,
    }
    text = render(analysis, "text")
    assert "Page-cache fills of the Data files: 40.0 KiB of 72.0 KiB on a Java stack" in text
    assert "undetermined: 32.0 KiB" in text
    assert "68.0 KiB (32.0 KiB read + 36.0 KiB filled)" in text
    assert "Data bytes by Java stack: bytes read syscalls returned + page-cache fill bytes" in render(analysis, "html")


def test_serving_spans_hold_a_thread_while_it_served_within_the_margin():
    spans = ServingSpans(
        [(7, 1_000_000, 2_000_000), (7, 2_300_000, 2_400_000), (8, 5_000_000, 5_000_000), (None, 0, 9)]
    )
    assert spans.holds(7, 750_000) and spans.holds(7, 2_100_000)  # merged: 2,000,000 + 250 µs meets 2,300,000 - 250 µs
    assert not spans.holds(7, 749_999) and not spans.holds(7, 2_650_001) and not spans.holds(9, 1_500_000)
    assert spans.holds(8, 5_250_000) and not spans.holds(8, 5_250_001)


def test_a_profile_of_the_serving_threads_leaves_the_others_out_and_counts_them(tmp_path):
    """Thread 7 served the executions from 1050 to 2250: thread 9's sample, and 7's reads after, are left out."""
    path = _trace(tmp_path / "t.trace", serving=ServingSpans([(7, 1050, 2250)], margin_ns=0))
    with Trace(path) as trace:
        profile = trace.meta["profile"]
        assert profile["other_threads"] == {"samples": 1, "read_calls": 2, "read_bytes": 1024}
        assert (profile["read_calls"], profile["read_bytes"]) == (2, 2 * 16384)
        assert {row["tid"] for row in trace.rows("SELECT tid FROM profile_samples")} == {7}
