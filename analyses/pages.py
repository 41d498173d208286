"""Sets of 4 KiB file pages, kept as sorted half-open runs [start, end): what the coverage table holds."""

from collections.abc import Iterable

from casstrace.traces.schema import PAGE_BYTES


def merge(runs: Iterable[tuple[int, int]]) -> list[tuple[int, int]]:
    """Union of (first_page, page_count) runs as sorted, disjoint [start, end) runs."""
    merged: list[list[int]] = []
    for start, count in sorted(runs):
        end = start + count
        if merged and start <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], end)
        else:
            merged.append([start, end])
    return [(start, end) for start, end in merged]


def subtract(runs: list[tuple[int, int]], removed: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """Pages of `runs` not in `removed` (both merged [start, end) runs)."""
    result = []
    index = 0
    for start, end in runs:
        while index < len(removed) and removed[index][1] <= start:
            index += 1
        cursor, scan = start, index
        while scan < len(removed) and removed[scan][0] < end:
            if removed[scan][0] > cursor:
                result.append((cursor, removed[scan][0]))
            cursor = max(cursor, removed[scan][1])
            scan += 1
        if cursor < end:
            result.append((cursor, end))
    return result


def page_count(runs: list[tuple[int, int]]) -> int:
    return sum(end - start for start, end in runs)


def bytes_within(runs: list[tuple[int, int]], size_bytes: int | None) -> int:
    """Bytes the pages cover, not counting any part beyond the end of the file."""
    if size_bytes is None:
        return page_count(runs) * PAGE_BYTES
    return sum(max(0, min(end * PAGE_BYTES, size_bytes) - start * PAGE_BYTES) for start, end in runs)
