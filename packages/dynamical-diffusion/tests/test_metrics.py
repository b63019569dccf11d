"""Acceptance check 5: the fair/PWM CRPS against scoringrules and brute force; the official RMSE; CSI; CRPS_sum."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from iclr25.dynamical_diffusion.baselines import persistence, persistence_mse
from iclr25.dynamical_diffusion.metrics import (
    crps_pwm,
    crps_pwm_map,
    crps_sum,
    csi,
    ensemble_mse,
    official_rmse,
    pooled_crps,
    pooled_csi,
)


def _brute_crps(ens: np.ndarray, y: np.ndarray) -> np.ndarray:
    M = ens.shape[0]
    mae = np.abs(ens - y).mean(0)
    spread = np.abs(ens[:, None] - ens[None, :]).sum((0, 1)) / (2 * M * (M - 1))
    return mae - spread


@pytest.mark.parametrize("M", [2, 5, 8])
def test_crps_matches_brute_force_and_scoringrules(M: int) -> None:
    sr = pytest.importorskip("scoringrules")
    rng = np.random.default_rng(M)
    ens, y = rng.normal(size=(M, 3, 4, 5)), rng.normal(size=(3, 4, 5))
    ours = crps_pwm_map(torch.from_numpy(ens), torch.from_numpy(y)).numpy()
    np.testing.assert_allclose(ours, _brute_crps(ens, y), atol=1e-10)
    theirs = sr.crps_ensemble(y, np.moveaxis(ens, 0, -1), estimator="pwm")
    np.testing.assert_allclose(ours, theirs, atol=1e-6)
    np.testing.assert_allclose(float(crps_pwm(ens, y)), ours.mean(), atol=1e-12)


def test_crps_member_dim() -> None:
    rng = np.random.default_rng(0)
    ens, y = rng.normal(size=(3, 6, 4)), rng.normal(size=(3, 4))
    np.testing.assert_allclose(float(crps_pwm(ens, y, member_dim=1)), float(crps_pwm(np.moveaxis(ens, 1, 0), y)))


def test_crps_one_member_is_mae() -> None:
    rng = np.random.default_rng(1)
    ens, y = rng.normal(size=(1, 10)), rng.normal(size=10)
    np.testing.assert_allclose(float(crps_pwm(ens, y)), np.abs(ens[0] - y).mean())


def test_crps_nonneg_mask_ignores_negative_truth() -> None:
    rng = np.random.default_rng(2)
    ens, y = rng.normal(size=(4, 50)), rng.normal(size=50)
    mask = y >= 0
    expected = _brute_crps(ens, y)[mask].mean()
    np.testing.assert_allclose(float(crps_pwm(ens, y, nonneg_mask=True)), expected, atol=1e-10)
    assert abs(float(crps_pwm(ens, y)) - expected) > 1e-4


def test_crps_shape_mismatch_raises() -> None:
    with pytest.raises(ValueError, match="does not match"):
        crps_pwm(np.zeros((3, 4)), np.zeros(5))


def test_perfect_ensemble_scores_zero() -> None:
    y = torch.randn(3, 4)
    assert float(crps_pwm(y[None].repeat(4, 1, 1), y)) == pytest.approx(0.0, abs=1e-7)
    assert float(ensemble_mse(y[None].repeat(4, 1, 1), y)) == 0.0


def test_official_rmse_is_sqrt_of_mean_over_members_and_pixels() -> None:
    rng = np.random.default_rng(3)
    ens, y = rng.normal(size=(4, 2, 3, 2, 5, 5)), rng.normal(size=(2, 3, 2, 5, 5))
    out = official_rmse(ens, y).numpy()
    assert out.shape == (3, 2)
    expected = np.zeros((3, 2))
    for b in range(2):
        for s in range(3):
            for c in range(2):
                expected[s, c] += np.sqrt(((ens[:, b, s, c] - y[b, s, c]) ** 2).mean()) / 2
    np.testing.assert_allclose(out, expected, atol=1e-12)
    mean_member_rmse = np.sqrt(((ens - y) ** 2).mean((-1, -2))).mean(0).mean(0)
    assert np.abs(out - mean_member_rmse).max() > 1e-6  # differs from the mean of per-member RMSEs


def test_pooled_crps_avg_kernel_one_equals_crps() -> None:
    rng = np.random.default_rng(4)
    ens, y = rng.normal(size=(4, 2, 8, 8)), rng.normal(size=(2, 8, 8))
    np.testing.assert_allclose(float(pooled_crps(ens, y, 1)), float(crps_pwm(ens, y)), rtol=1e-5)


def test_pooled_crps_stride_and_max() -> None:
    ens = torch.zeros(2, 1, 8, 8)
    y = torch.zeros(1, 8, 8)
    y[0, 0, 0] = 1.0
    # max pooling with k = 8 keeps the single spike: both members miss it by 1 -> CRPS = 1 at the one window
    assert float(pooled_crps(ens, y, 8, mode="max")) == pytest.approx(1.0)
    # average pooling k = 2, stride 1 -> 7 x 7 windows, one containing the spike with mean 0.25
    assert float(pooled_crps(ens, y, 2, mode="avg")) == pytest.approx(0.25 / 49)
    with pytest.raises(ValueError, match="pooling mode"):
        pooled_crps(ens, y, 2, mode="median")


def test_csi_counts() -> None:
    pred = torch.tensor([1.0, 1.0, 0.0, 0.0, 1.0])
    obs = torch.tensor([1.0, 0.0, 1.0, 0.0, 1.0])
    assert float(csi(pred, obs, 0.5)) == pytest.approx(2 / 4)
    assert float(csi(torch.zeros(5), torch.zeros(5), 0.5)) == 0.0


def test_pooled_csi_forgives_small_displacements() -> None:
    pred, obs = torch.zeros(1, 8, 8), torch.zeros(1, 8, 8)
    pred[0, 2, 2], obs[0, 2, 3] = 1.0, 1.0
    assert float(csi(pred, obs, 0.5)) == 0.0
    assert float(pooled_csi(pred, obs, 0.5, kernel=4)) > 0.0


def test_crps_sum_perfect_and_worse() -> None:
    rng = np.random.default_rng(5)
    y = rng.normal(size=(2, 10, 3)) + 5
    perfect = np.repeat(y[None], 20, axis=0)
    assert float(crps_sum(perfect, y)) == pytest.approx(0.0, abs=1e-12)
    noisy = perfect + rng.normal(size=perfect.shape)
    assert float(crps_sum(noisy, y)) > float(crps_sum(perfect + 0.1 * rng.normal(size=perfect.shape), y))


def test_persistence_baseline() -> None:
    seq = torch.arange(5.0).reshape(1, 5, 1, 1).repeat(1, 1, 1, 3)
    pred = persistence(seq[:, :2], 3)
    assert pred.shape == (1, 3, 1, 3)
    assert torch.equal(pred, torch.ones(1, 3, 1, 3))
    assert float(persistence_mse(seq, 2)) == pytest.approx((1 + 4 + 9) / 3)
