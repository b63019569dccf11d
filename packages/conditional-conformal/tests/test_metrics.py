"""Metrics: binned coverage, the WSC bisection == the O(n²) search, WSC behaviour (spec §9.7 on small n)."""

from __future__ import annotations

import numpy as np
import pytest

from iclr25.conditional_conformal import reference as ref
from iclr25.conditional_conformal.metrics import binned_coverage, coverage, min_window_mean, set_size, wsc
from iclr25.conditional_conformal.sets import UnionOfBalls


@pytest.mark.parametrize("seed", range(6))
def test_min_window_mean_matches_quadratic_search(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(20, 120))
    hits = rng.random((3, n)) < rng.uniform(0.3, 0.95)
    min_len = int(rng.integers(1, n // 2))
    lo, hi = min_window_mean(hits, min_len)
    for d in range(3):
        best = min(hits[d, i : j + 1].mean() for i in range(n) for j in range(i + min_len - 1, n))
        assert lo[d] - 1e-9 <= best <= hi[d] + 1e-9 and hi[d] - lo[d] < 1e-9


def test_wsc_selection_matches_reference_slab():
    rng = np.random.default_rng(4)
    x = rng.standard_normal((400, 2))
    hit = np.where(x[:, 0] > 0.3, True, rng.random(400) < 0.6)
    v = np.array([[1.0, 0.0]])
    _, slab = wsc(x, hit, 0.1, directions=v, split=0.5, seed=1, return_slab=True)
    perm = np.random.default_rng(1).permutation(400)[:200]
    cov_ref, _, _ = ref.worst_slab_on_points(x[perm, 0], hit[perm], 0.1)
    assert abs(slab["selection_coverage"] - cov_ref) < 1e-8


def test_wsc_detects_bad_region_and_needs_the_split():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((3000, 5))
    bad = np.where(x[:, 0] > 0, True, rng.random(3000) < 0.5)
    iid = rng.random(3000) < 0.9
    assert wsc(x, bad, n_dirs=300, seed=0) < 0.7
    honest = wsc(x, iid, n_dirs=300, seed=0)
    biased = wsc(x, iid, n_dirs=300, seed=0, evaluate_on="selection")
    assert honest > biased + 0.03
    with pytest.raises(ValueError, match="evaluate_on"):
        wsc(x, iid, evaluate_on="all")


def test_binned_coverage_and_size():
    x = np.linspace(-4, 4, 800, endpoint=False)
    hit = x >= 0
    cov, counts = binned_coverage(hit, None, x, 8)
    np.testing.assert_array_equal(cov, [0, 0, 0, 0, 1, 1, 1, 1])
    assert counts.sum() == 800 and coverage(hit) == 0.5
    s = UnionOfBalls(np.array([[[0.0], [0.5], [3.0]]]), np.array([0.5]))
    assert set_size(s) == pytest.approx(2.5) and set_size(s, scale=2.0) == pytest.approx(1.25)
    assert s.intervals(0) == [(-0.5, 1.0), (2.5, 3.5)]
