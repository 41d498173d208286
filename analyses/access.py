"""How a file was read: the offset map over time, which tells a full scan from index-driven seeks.

The map comes from the per-call events when every call on the file was streamed, else from the
heat map the kernel aggregated (calls per time slot and offset bucket), and says which. Page-cache
fills (mmap, readahead) only exist in the heat map, under source 'page_cache'.
"""

import itertools

from casstrace.analyses.model import AccessPattern, FileIO, OffsetPoint
from casstrace.analyses.percentiles import histogram_percentile
from casstrace.analyses.units import human_bytes, ns_to_ms, ns_to_s
from casstrace.traces import Trace, queries

MAX_POINTS = 20_000  # per file: enough to see the shape, small enough for a browser


def access_patterns(trace: Trace, files: list[FileIO], limit: int = 6) -> list[AccessPattern]:
    """Offset maps of the `limit` regular files with the most bytes read or filled that have one."""
    candidates = [f for f in files if f.kind == "file" and (f.read_calls or f.lseek_calls or f.cache_miss_bytes)]
    candidates.sort(key=lambda f: f.read_bytes + (f.cache_miss_bytes or 0), reverse=True)
    meta = trace.meta
    start_ns = meta.get("capture_start_ns", 0)
    slot_ns = meta.get("slot_ns") or 100_000_000
    patterns = (_access_pattern(trace, f, start_ns, slot_ns, meta.get("heatmap_offset_bytes")) for f in candidates)
    # Lazily: a read of 5,000 SSTables has 10,000 candidates, whose maps all took 4 s to build.
    return list(itertools.islice((pattern for pattern in patterns if pattern.points), limit))


def _access_pattern(trace: Trace, file: FileIO, start_ns: int, slot_ns: int, bucket_bytes: int | None) -> AccessPattern:
    calls = queries.file_call_count(trace, file.file_id)
    streamed = queries.streamed_call_count(trace, file.file_id)
    points: list[OffsetPoint] = []
    if calls and streamed >= calls:
        source, note = "events", f"every call streamed ({streamed:,} reads and lseeks)"
        for ts_ns, syscall, offset, returned in queries.offset_events(trace, file.file_id):
            is_lseek = syscall in ("lseek", "llseek")
            points.append(
                OffsetPoint(
                    time_s=ns_to_s(ts_ns - start_ns),
                    offset=returned if is_lseek and returned is not None and returned >= 0 else offset,
                    length=0 if is_lseek else max(returned or 0, 0),
                    calls=1,
                    kind="lseek" if is_lseek else "read",
                )
            )
    else:
        points.extend(_heatmap_points(trace, file.file_id, "syscall", "read", slot_ns, bucket_bytes))
        if points:
            source = "heatmap"
            note = (
                f"{streamed:,} of {calls:,} calls streamed (rate cap or lost events): heat map of "
                f"{human_bytes(bucket_bytes)} offset buckets x {ns_to_ms(slot_ns):g} ms slots"
            )
        elif calls:
            source, note = "none", f"{streamed:,} of {calls:,} calls streamed and no heat map: no offset map"
        else:
            source, note = "none", "no read syscalls"
    page_cache = _heatmap_points(trace, file.file_id, "page_cache", "page_cache", slot_ns, bucket_bytes)
    if page_cache:
        note += f"; page-cache fills from the heat map ({sum(p.length for p in page_cache):,} bytes)"
    points.extend(page_cache)
    if len(points) > MAX_POINTS:
        step = len(points) / MAX_POINTS
        points = [points[int(i * step)] for i in range(MAX_POINTS)]
        note += f"; one point in {step:.1f} shown"
    return AccessPattern(
        file=file,
        source=source,
        source_note=note,
        points=points,
        bucket_bytes=bucket_bytes,
        slot_s=ns_to_s(slot_ns),
        read_size_median=_median_read_size(file.read_sizes),
    )


def _heatmap_points(
    trace: Trace, file_id: int, source: str, kind: str, slot_ns: int, bucket_bytes: int | None
) -> list[OffsetPoint]:
    if not bucket_bytes:
        return []
    return [
        OffsetPoint(
            time_s=ns_to_s(cell.slot * slot_ns),
            offset=cell.offset_bucket * bucket_bytes,
            length=cell.bytes,
            calls=cell.calls,
            kind=kind,
        )
        for cell in queries.heatmap_cells(trace, file_id, source)
    ]


def _median_read_size(read_sizes: dict[int, int]) -> int | None:
    """Lower edge of the read-size bucket holding the median read (bucket -1 holds reads of 0 bytes)."""
    bucket = histogram_percentile(read_sizes, 0.5)
    if bucket is None:
        return None
    return 0 if bucket < 0 else 1 << bucket
