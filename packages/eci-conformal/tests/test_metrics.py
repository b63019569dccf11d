"""Metrics (metrics.py)."""

from __future__ import annotations

import numpy as np
import pytest

from iclr25.eci_conformal import metrics


def test_coverage_width_and_runs():
    y = np.array([0.0, 1.0, 5.0, 5.0, 5.0, 0.0, 0.5])
    lo, hi = np.full(7, -1.0), np.full(7, 1.0)
    assert metrics.coverage(lo, hi, y) == pytest.approx(4 / 7)
    assert metrics.coverage(lo, hi, y, burn_in=1) == pytest.approx(2 / 5)  # t > 1
    assert metrics.longest_miss_run(lo, hi, y) == 3
    assert metrics.longest_miss_run(lo, hi, np.zeros(7)) == 0
    assert metrics.longest_miss_run(lo, hi, np.full(7, 9.0)) == 7
    assert metrics.longest_miss_run(lo, hi, np.array([9.0, 0, 9, 9, 0, 9, 9])) == 2  # a run at the end
    hi2 = hi.copy()
    hi2[3] = np.inf
    assert metrics.width_stats(lo, hi2)["avg_width"] == np.inf
    assert metrics.width_stats(lo, hi2)["median_width"] == 2.0
    with pytest.raises(ValueError, match="burn_in"):
        metrics.coverage(lo, hi, y, burn_in=10)
    with pytest.raises(ValueError, match="1-D"):
        metrics.coverage(lo[:3], hi, y)


def test_rolling_coverage_and_recovery():
    cov = np.ones(400)
    np.testing.assert_array_equal(metrics.rolling_coverage(cov, 50), 1.0)
    assert metrics.recovery_time(cov, 100) == 0
    cov[100:130] = 0  # 30 misses right after tau = 100
    rc = metrics.rolling_coverage(cov, 50)
    assert rc[129] == pytest.approx(20 / 50)
    rec = metrics.recovery_time(cov, 100)
    back = np.flatnonzero(rc[100:] >= 0.85)
    assert rec == back[back > 10][0]
    assert rc[100 + rec] >= 0.85 > rc[100 + rec - 1]
