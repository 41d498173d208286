"""Syscall latency over time, like csysdig's spectro_file: 100 ms rows, log-scale latency columns, counts as colour.

The latency table holds bucket b for latencies in [10^(b/10), 10^((b+1)/10)) ns, so the spectrogram
spans 1 ns (bucket 0) to 10 s (bucket 100) at 10 buckets a decade.
"""

import math

from casstrace.analyses.model import Spectrogram, SyscallLatency
from casstrace.analyses.percentiles import histogram_percentile
from casstrace.analyses.units import ns_to_s
from casstrace.traces import Trace, queries
from casstrace.traces.schema import LATENCY_BUCKETS_PER_DECADE

FIRST_BUCKET, LAST_BUCKET = 0, 100  # 1 ns .. 10 s


def bucket_upper_ns(bucket: int) -> float:
    return 10 ** ((bucket + 1) / LATENCY_BUCKETS_PER_DECADE)


def bucket_lower_ns(bucket: int) -> float:
    return 10 ** (bucket / LATENCY_BUCKETS_PER_DECADE)


def spectrograms(trace: Trace) -> list[Spectrogram]:
    """File I/O (syscalls on file descriptors of regular files) and all syscalls; [] when latency was not measured."""
    if not trace.measured("latency"):
        return []
    meta = trace.meta
    slot_ns = meta.get("slot_ns") or 100_000_000
    duration = (meta.get("capture_end_ns") or 0) - (meta.get("capture_start_ns") or 0)
    capture_slots = math.ceil(duration / slot_ns) if duration > 0 else 0
    found = []
    for title, file_only in (("File I/O syscalls", True), ("All syscalls", False)):
        counts: dict[tuple[int, int], int] = {}
        for slot, bucket, calls in queries.latency_by_slot(trace, file_only):
            bucket = min(max(bucket, FIRST_BUCKET), LAST_BUCKET - 1)
            counts[(slot, bucket)] = counts.get((slot, bucket), 0) + calls
        slots = max([capture_slots] + [slot + 1 for slot, _ in counts])
        found.append(
            Spectrogram(title=title, slot_s=ns_to_s(slot_ns), counts=counts, slots=slots, total=sum(counts.values()))
        )
    return found


def _percentile_upper_ns(histogram: dict[int, int], fraction: float) -> float:
    bucket = histogram_percentile(histogram, fraction)
    assert bucket is not None  # only histograms that hold calls get here
    return bucket_upper_ns(bucket)


def latency_percentiles(trace: Trace) -> list[SyscallLatency]:
    """Per syscall and target: count and p50/p90/p99/max (upper edges of buckets), most calls first."""
    if not trace.measured("latency"):
        return []
    histograms: dict[tuple[str, str], dict[int, int]] = {}
    for syscall, target, bucket, calls in queries.latency_by_syscall(trace):
        histograms.setdefault((syscall, target), {})[bucket] = calls
    found = []
    for (syscall, target), histogram in histograms.items():
        total = sum(histogram.values())
        if not total:
            continue
        found.append(
            SyscallLatency(
                syscall=syscall,
                target=target,
                count=total,
                p50_ns=_percentile_upper_ns(histogram, 0.50),
                p90_ns=_percentile_upper_ns(histogram, 0.90),
                p99_ns=_percentile_upper_ns(histogram, 0.99),
                max_ns=bucket_upper_ns(max(histogram)),
            )
        )
    found.sort(key=lambda latency: latency.count, reverse=True)
    return found
