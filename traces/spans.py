"""Spans of time in ns, [start, end): made disjoint, and how much of an interval they cover. A JVM is
paused once at a time, but its log can give two pauses that overlap: what a window holds of them is
their union's, never more than the window."""


def union(spans: list[tuple[int, int]] | None) -> list[tuple[int, int]]:
    """The spans as disjoint spans, in order."""
    merged: list[tuple[int, int]] = []
    for start, end in sorted(spans or ()):
        if merged and start <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], end))
        else:
            merged.append((start, end))
    return merged


def covered_ns(start: int, end: int, disjoint: list[tuple[int, int]]) -> int:
    """ns of [start, end) inside the disjoint spans (union's)."""
    return sum(max(0, min(end, stop) - max(start, begin)) for begin, stop in disjoint)
