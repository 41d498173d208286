"""analyses/sweep.py without a node: the linear fit (tests/integration/test_sweep.py runs a sweep)."""

import pytest

from casstrace.analyses.sweep import linear_fit


def test_linear_fit_recovers_a_line():
    fit = linear_fit([10, 20, 30], [5.0, 7.0, 9.0])
    assert (fit.slope, fit.intercept, fit.r2) == pytest.approx((0.2, 3.0, 1.0))
    assert linear_fit([10, 10], [1.0, 2.0]) is None
    assert linear_fit([1, 2, 3], [4.0, 4.0, 4.0]).r2 is None
