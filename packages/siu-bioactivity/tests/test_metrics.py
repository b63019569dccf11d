"""Spec §9.1-9.2: per-pocket correlation == a brute-force scipy loop; pocket-only -> NaN, exactly."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from iclr25.siu_bioactivity.metrics import (
    evaluate_bioactivity,
    masked_mse,
    per_pocket_correlation,
    per_pocket_values,
    pooled_correlation,
)
from iclr25.siu_bioactivity.reference import per_pocket_correlation_loop


def _random_groups(rng, n_groups=25):
    sizes = rng.integers(1, 31, size=n_groups)
    ids = np.repeat([f"p{i:02d}" for i in range(n_groups)], sizes)
    pred = rng.normal(size=len(ids))
    target = rng.normal(size=len(ids)) + 0.5 * pred
    # constant-prediction groups and a constant-label group, plus ties for Spearman
    for g in ("p03", "p07"):
        pred[ids == g] = 4.2
    target[ids == "p11"] = 7.0
    pred[ids == "p13"] = np.round(pred[ids == "p13"], 0)
    perm = rng.permutation(len(ids))
    return pred[perm], target[perm], ids[perm]


@pytest.mark.parametrize("method", ["pearson", "spearman"])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_equals_bruteforce_scipy(method, seed):
    pred, target, ids = _random_groups(np.random.default_rng(seed))
    for nan0 in (False, True):
        fast = per_pocket_correlation(pred, target, ids, method=method, nan_as_zero=nan0)
        slow = per_pocket_correlation_loop(pred, target, ids, method=method, nan_as_zero=nan0)
        assert abs(fast - slow) < 1e-12, (fast, slow)


def test_min_size_and_empty():
    assert np.isnan(per_pocket_correlation([1.0, 2.0], [1.0, 3.0], ["a", "b"]))
    assert per_pocket_correlation([1.0, 2.0, 0.0], [1.0, 3.0, 5.0], ["a", "a", "b"]) == pytest.approx(1.0)
    _, vals, _ = per_pocket_values([1, 2, 3, 4], [1, 2, 4, 3], ["x", "x", "y", "y"], min_size=3)
    assert len(vals) == 0


def test_pocket_only_is_nan_with_inexact_mean():
    """37 copies of 6.123456789 + 0.1 have an inexact float mean: sum((x - mean)(y - mean)) is finite, but the
    group is constant, so the correlation is undefined (spec §9.2)."""
    v = 6.123456789 + 0.1
    x = np.full(37, v)
    assert np.any(x - x.mean() != 0)  # the float mean is inexact: centring leaves non-zero residues
    rng = np.random.default_rng(0)
    n_p = 30
    offsets = rng.normal(scale=1.5, size=n_p) + 6
    ids = np.repeat(np.arange(n_p), 37)
    target = offsets[ids] + rng.normal(scale=0.4, size=len(ids))
    pred = (offsets + 0.1)[ids]  # a perfect pocket-only model: a function of the pocket id
    pred[ids == 0] = v
    assert per_pocket_values(pred, target, ids)[1].shape == (n_p,)
    assert np.isnan(per_pocket_correlation(pred, target, ids))
    assert per_pocket_correlation(pred, target, ids, nan_as_zero=True) == 0.0
    assert pooled_correlation(pred, target) > 0.9
    # the naive formula gives a finite (wrong) value on that group; the metric gives NaN
    g, t = pred[ids == 0], target[ids == 0]
    naive = np.sum((g - g.mean()) * (t - t.mean())) / np.sqrt(np.sum((g - g.mean()) ** 2) * np.sum((t - t.mean()) ** 2))
    assert np.isfinite(naive)
    assert np.isnan(per_pocket_values(g, t, np.zeros(37))[1][0])


def test_noise_of_1e16_is_not_constant():
    """A pocket-only model that computes rows separately can differ by rounding: that is NOT constant (the metric
    reports the noise), which is why PocketOnlyModel broadcasts one prediction per pocket."""
    ids = np.repeat([0, 1], 10)
    pred = np.full(20, 6.0)
    pred[::3] += 9e-16
    target = np.random.default_rng(1).normal(size=20)
    assert np.isfinite(per_pocket_correlation(pred, target, ids))


def test_evaluate_bioactivity_fields_and_masks():
    rng = np.random.default_rng(3)
    N = 200
    ids = rng.integers(0, 10, size=N)
    target = np.full((N, 5), -1.0)
    target[: N // 2, 0] = rng.normal(6, 1, N // 2)
    target[N // 2 :, 1] = rng.normal(7, 1, N // 2)
    pred = target + rng.normal(scale=0.5, size=target.shape)
    ev = evaluate_bioactivity(pred, target, ids)
    assert set(ev) == {"ic50", "ki", "kd", "ec50", "potency"}
    assert ev["ic50"]["n"] == N // 2 and ev["kd"]["n"] == 0 and np.isnan(ev["kd"]["pearson_star"])
    m = target[:, 0] > 0
    assert ev["ic50"]["rmse"] == pytest.approx(np.sqrt(np.mean((pred[m, 0] - target[m, 0]) ** 2)))
    assert ev["ic50"]["pearson_star"] == pytest.approx(per_pocket_correlation_loop(pred[m, 0], target[m, 0], ids[m]))
    with pytest.raises(ValueError, match="must be"):
        evaluate_bioactivity(pred[:, :3], target, ids)


def test_masked_mse_numpy_and_torch():
    pred = np.array([[1.0, 2.0], [3.0, 4.0]])
    target = np.array([[2.0, -1.0], [3.0, 6.0]])
    assert masked_mse(pred, target) == pytest.approx((1 + 0 + 4) / 3)
    p = torch.tensor(pred, requires_grad=True)
    loss = masked_mse(p, torch.tensor(target))
    loss.backward()
    assert loss.item() == pytest.approx((1 + 0 + 4) / 3)
    assert p.grad[0, 1] == 0 and p.grad[0, 0] == pytest.approx(2 * (1 - 2) / 3)
