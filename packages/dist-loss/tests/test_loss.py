"""DistLoss (spec 9.4): reductions, weights, zero cases, reference parity; baselines and metrics (spec 9.5)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from iclr25.dist_loss.baselines import FDS, BMCLoss, label_weights, lds_kernel, ranksim_regularizer
from iclr25.dist_loss.loss import DistLoss, FocalL1, HuberLoss
from iclr25.dist_loss.metrics import balanced_mae, shot_metrics, wasserstein1
from iclr25.dist_loss.reference import reference_dist_loss


@pytest.fixture
def batch() -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    gen = torch.Generator().manual_seed(0)
    pred = (torch.randn(16, generator=gen, dtype=torch.float64) * 10 + 40).requires_grad_(True)
    target = torch.randn(16, generator=gen, dtype=torch.float64) * 10 + 40
    pseudo = torch.sort(torch.randn(16, generator=gen, dtype=torch.float64) * 12 + 40).values
    return pred, target, pseudo


@pytest.mark.parametrize("base", ["l1", "l2", "focal_l1", "huber"])
def test_lam_zero_is_base_loss(batch, base: str) -> None:
    pred, target, pseudo = batch
    loss = DistLoss(base, lam=0.0)(pred, target, pseudo)
    plain = DistLoss(base).base(pred, target).mean()
    torch.testing.assert_close(loss, plain)


def test_unit_weights_equal_unweighted(batch) -> None:
    pred, target, pseudo = batch
    fn = DistLoss("l1", lam=1.0)
    torch.testing.assert_close(fn(pred, target, pseudo, weights=torch.ones(16)), fn(pred, target, pseudo))


def test_zero_when_predictions_match(batch) -> None:
    _, _target, pseudo = batch
    pred = pseudo[torch.randperm(16)].clone().requires_grad_(True)
    loss = DistLoss("l1", eps=1e-3)(pred, pred.detach(), pseudo)
    assert float(loss.detach()) == pytest.approx(0.0, abs=1e-9)


def test_matches_reference_and_gradients(batch) -> None:
    pred, target, pseudo = batch
    weights = torch.rand(16, dtype=torch.float64, generator=torch.Generator().manual_seed(3)) + 0.5
    for eps in (0.1, 2.0):  # hard-sort and pooled regimes
        fast = DistLoss("l1", lam=0.7, eps=eps)(pred, target, pseudo, weights=weights)
        (g_fast,) = torch.autograd.grad(fast, pred)
        ref = reference_dist_loss(pred, target, pseudo, lam=0.7, eps=eps, weights=weights)
        (g_ref,) = torch.autograd.grad(ref, pred)
        torch.testing.assert_close(fast, ref)
        torch.testing.assert_close(g_fast, g_ref)


def test_sum_reduction_and_parts(batch) -> None:
    pred, target, pseudo = batch
    total, dist, sample = DistLoss("l2", lam=2.0, reduction="sum")(pred, target, pseudo, return_parts=True)
    torch.testing.assert_close(total, 2.0 * dist + sample)
    torch.testing.assert_close(sample, ((pred - target) ** 2).sum())


def test_dist_weighting_modes(batch) -> None:
    pred, target, pseudo = batch
    w = torch.linspace(0.5, 2.0, 16, dtype=torch.float64)
    official = DistLoss(dist_weighting="official")(pred, target, pseudo, weights=w, return_parts=True)
    none = DistLoss(dist_weighting="none")(pred, target, pseudo, weights=w, return_parts=True)
    pseudo_w = DistLoss(dist_weighting="pseudo")(pred, target, pseudo, weights=w, pseudo_weights=w, return_parts=True)
    torch.testing.assert_close(official[2], none[2])  # sample term weighted the same way
    assert not torch.allclose(official[1], none[1])
    torch.testing.assert_close(pseudo_w[1], official[1])  # same weight vector at the same positions here


def test_bad_arguments(batch) -> None:
    pred, target, pseudo = batch
    with pytest.raises(ValueError, match="same length"):
        DistLoss()(pred, target, pseudo[:8])
    with pytest.raises(ValueError, match="base loss"):
        DistLoss("l3")
    with pytest.raises(ValueError, match="dist_weighting"):
        DistLoss(dist_weighting="random")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="eps"):
        DistLoss(eps=0)
    with pytest.raises(ValueError, match="needs pseudo_weights"):
        DistLoss(dist_weighting="pseudo")(pred, target, pseudo)
    with pytest.raises(ValueError, match="one entry per pseudo-label"):
        DistLoss(dist_weighting="pseudo")(pred, target, pseudo, pseudo_weights=torch.ones(3))


def test_focal_and_huber_values() -> None:
    p, t = torch.tensor([0.0, 3.0]), torch.tensor([0.5, 0.0])
    torch.testing.assert_close(HuberLoss(1.0)(p, t), torch.tensor([0.125, 2.5]))
    expected = torch.tensor([0.5, 3.0]) * (2 * torch.sigmoid(0.2 * torch.tensor([0.5, 3.0])) - 1)
    torch.testing.assert_close(FocalL1()(p, t), expected)


def test_shot_metrics_hand_computed() -> None:
    # train counts: age 10 -> 150 (many), age 20 -> 50 (median), age 30 -> 5 (few)
    train = np.repeat([10.0, 20.0, 30.0], [150, 50, 5])
    target = np.array([10, 10, 10, 10, 20, 20, 20, 30, 30, 30], dtype=float)
    pred = target + np.array([1, -1, 2, 0, 3, -3, 6, 10, -5, 5], dtype=float)
    m = shot_metrics(pred, target, train, many=100, few=20)
    assert m["many"]["mae"] == pytest.approx(1.0) and m["many"]["n"] == 4
    assert m["median"]["mae"] == pytest.approx(4.0)
    assert m["few"]["mae"] == pytest.approx(20 / 3)
    assert m["all"]["mae"] == pytest.approx(3.6)
    assert m["many"]["gm"] == 0.0  # one exact prediction
    assert m["few"]["gm"] == pytest.approx((10 * 5 * 5) ** (1 / 3))
    assert balanced_mae(pred, target) == pytest.approx((1 + 4 + 20 / 3) / 3)


def test_wasserstein1() -> None:
    assert wasserstein1([0.0, 1.0], [2.0, 3.0]) == pytest.approx(2.0)


def test_label_weights_inverse_and_lds() -> None:
    labels = np.repeat([1.0, 2.0, 3.0], [10, 40, 1000])
    inv = label_weights(labels, "inverse")
    assert inv.mean() == pytest.approx(1.0)
    assert inv[0] / inv[-1] == pytest.approx(100.0)  # counts clipped to [5, 1000]
    sq = label_weights(labels, "sqrt_inv")
    assert sq[0] / sq[-1] == pytest.approx(10.0)
    lds = label_weights(labels, "sqrt_inv", lds=True)
    assert 1.0 < lds[0] / lds[-1] < 10.0  # smoothing narrows the ratio
    np.testing.assert_allclose(lds_kernel(5, 2.0).max(), 1.0)
    with pytest.raises(ValueError, match="LDS"):
        label_weights(labels, "none", lds=True)


def test_bmc_matches_formula() -> None:
    pred, target = torch.tensor([1.0, 2.0, 4.0]), torch.tensor([1.5, 2.0, 3.0])
    loss = BMCLoss(init_noise_sigma=1.0)(pred, target)
    logits = -((pred[:, None] - target[None]) ** 2) / 2
    expected = torch.nn.functional.cross_entropy(logits, torch.arange(3)) * 2
    torch.testing.assert_close(loss, expected)


def test_fds_calibration_identity_before_smoothing_and_shift_after() -> None:
    torch.manual_seed(0)
    fds = FDS(feature_dim=4, num_buckets=10, bucket_start=0, ks=3, sigma=1.0)
    labels = torch.arange(10.0).repeat_interleave(20)
    feats = torch.randn(200, 4) + labels[:, None]
    assert torch.equal(fds(feats, labels, epoch=0), feats)
    fds.update_running_stats(feats, labels, epoch=0)
    fds.update_last_epoch_stats(1)
    out = fds(feats, labels, epoch=1)
    assert out.shape == feats.shape and not torch.allclose(out, feats)
    # The middle buckets' smoothed mean of a linear trend equals their own mean.
    mid = labels == 5
    torch.testing.assert_close(out[mid].mean(0), feats[mid].mean(0), atol=0.3, rtol=0)


def test_ranksim_is_zero_for_perfectly_ranked_features_and_has_gradient() -> None:
    labels = torch.tensor([0.0, 1.0, 3.0, 7.0])  # no ties in |y_i - y_j|
    angles = labels * 0.2
    feats = torch.stack([torch.cos(angles), torch.sin(angles)], 1).requires_grad_(True)
    loss = ranksim_regularizer(feats, labels, generator=torch.Generator().manual_seed(0))
    assert float(loss.detach()) == pytest.approx(0.0, abs=1e-6)
    shuffled = feats.detach()[[2, 0, 3, 1]].clone().requires_grad_(True)
    loss = ranksim_regularizer(shuffled, labels, generator=torch.Generator().manual_seed(0))
    loss.backward()
    assert float(loss.detach()) > 0 and shuffled.grad is not None and shuffled.grad.abs().sum() > 0
