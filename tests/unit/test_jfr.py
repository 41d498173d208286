"""The JFR reader on a real async-profiler recording kept in the repository (tests/data/jfr)."""

from collections import Counter
from pathlib import Path

import pytest

from casstrace.errors import CasstraceError
from casstrace.probes.jvm.jfr import read_samples

RECORDING = Path(__file__).resolve().parents[1] / "data" / "jfr" / "preadloop.jfr"
READ_PATH = (
    "PreadLoop.main",
    "sun.nio.ch.FileChannelImpl.read",
    "sun.nio.ch.FileChannelImpl.readInternal",
    "sun.nio.ch.IOUtil.read",
    "sun.nio.ch.IOUtil.read",
    "sun.nio.ch.IOUtil.readIntoNativeBuffer",
    "sun.nio.ch.FileDispatcherImpl.pread",
)


def test_every_sample_of_the_recording_is_read_as_the_jdks_jfr_tool_counts_them():
    samples = list(read_samples(RECORDING))
    # `jfr summary tests/data/jfr/preadloop.jfr` (OpenJDK 17.0.15): 90 jdk.ExecutionSample,
    # 124 profiler.WallClockSample.
    assert Counter(s.event for s in samples) == {"jdk.ExecutionSample": 90, "profiler.WallClockSample": 124}


def test_method_samples_carry_the_stack_root_first_the_thread_and_the_time():
    calls = [s for s in read_samples(RECORDING) if s.event == "jdk.ExecutionSample"]
    assert {s.stack for s in calls} == {READ_PATH}
    assert {s.thread for s in calls} == {"main"} and len({s.tid for s in calls}) == 1
    times = [s.ts_ns for s in calls]
    assert times == sorted(times) and times[-1] - times[0] < 2_000_000_000  # CLOCK_MONOTONIC ns, one session


def test_wall_clock_samples_carry_the_thread_state_and_their_weight():
    wall = [s for s in read_samples(RECORDING) if s.event == "profiler.WallClockSample"]
    assert {s.state for s in wall} == {"STATE_RUNNABLE", "STATE_SLEEPING"}
    assert all(s.weight >= 1 for s in wall) and sum(s.weight for s in wall) > len(wall)  # idle batches
    assert any(s.stack and s.stack[0] == "PreadLoop.main" for s in wall if s.state == "STATE_RUNNABLE")


def test_a_file_that_is_not_a_recording_is_one_clear_error(tmp_path):
    damaged = tmp_path / "profile.jfr"
    damaged.write_bytes(RECORDING.read_bytes()[:2000])
    with pytest.raises(CasstraceError, match="not a readable JFR file"):
        list(read_samples(damaged))
    with pytest.raises(CasstraceError, match="cannot read the profiler's recording"):
        list(read_samples(tmp_path / "missing.jfr"))
