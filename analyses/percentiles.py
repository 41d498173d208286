"""Nearest-rank percentiles, of a list of values or of a histogram's buckets."""

import math
from collections.abc import Mapping
from typing import TypeVar

Value = TypeVar("Value", int, float)


def percentile(values: list[float], fraction: float) -> float | None:
    """Nearest-rank percentile: the smallest value with at least `fraction` of the values at or below it."""
    if not values:
        return None
    ordered = sorted(values)
    return ordered[max(0, math.ceil(fraction * len(ordered)) - 1)]


def histogram_percentile(histogram: Mapping[Value, int], fraction: float) -> Value | None:
    """The bucket holding the nearest-rank percentile of a histogram (bucket -> count); None when it is empty."""
    total = sum(histogram.values())
    if not total:
        return None
    rank = math.ceil(fraction * total)
    seen = 0
    for bucket in sorted(histogram):
        seen += histogram[bucket]
        if seen >= rank:
            return bucket
    return max(histogram)
