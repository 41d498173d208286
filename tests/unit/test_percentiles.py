"""analyses/percentiles.py: percentiles by nearest rank."""

from casstrace.analyses.compare import percentile


def test_percentiles_by_nearest_rank():
    values = [float(v) for v in range(10, 0, -1)]
    assert percentile(values, 0.5) == 5.0 and percentile(values, 0.99) == 10.0
    assert percentile(list(range(1, 201)), 0.99) == 198
    assert percentile([], 0.5) is None
