"""analyses/spectrogram.py: the latency spectrograms and percentiles of a trace."""

import pytest


def test_spectrograms_and_latency_percentiles(wide):
    file_io, all_calls = wide.spectrograms
    assert file_io.counts == {(6, 45): 3_000, (7, 50): 803}
    assert file_io.total == 3_803 and file_io.slots == 15 and file_io.slot_s == 0.1
    assert all_calls.total == 3_814
    pread = wide.latencies[0]
    assert (pread.syscall, pread.target, pread.count) == ("pread64", "file", 3_803)
    # p50 lies in bucket 45 [10^4.5, 10^4.6) ns; p90 and max in bucket 50 [10^5, 10^5.1)
    assert pread.p50_ns == pytest.approx(10**4.6)
    assert pread.p90_ns == pread.p99_ns == pread.max_ns == pytest.approx(10**5.1)
