"""Spec §9.3 (metrics) and §9.4 (losses, weight placement)."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from iclr25.tsc_net import goal_min_fde, kl_normal, min_ade_fde, obstacle_violation_rate, weighted_smooth_l1


def test_identical_perfect_predictions_give_zero():
    gt = np.random.default_rng(0).normal(size=(5, 12, 2))
    ade, fde = min_ade_fde(np.repeat(gt[None], 20, 0), gt)
    assert np.allclose(ade, 0) and np.allclose(fde, 0)
    assert np.allclose(goal_min_fde(np.repeat(gt[None, :, -1], 20, 0), gt[:, -1]), 0)


def test_ade_and_fde_minima_are_independent():
    gt = np.zeros((1, 2, 2))
    a = np.array([[[1.0, 0], [1.0, 0]]])  # ADE 1, FDE 1
    b = np.array([[[0.0, 0], [1.5, 0]]])  # ADE 0.75, FDE 1.5
    ade, fde = min_ade_fde(np.stack([a, b]), gt)
    assert ade[0] == pytest.approx(0.75) and fde[0] == pytest.approx(1.0)


def test_violation_rate_of_the_best_trajectory():
    mask = np.zeros((10, 10), np.uint8)
    mask[:, 5:] = 3  # building on the right half
    gt = np.array([[[1.5, 1.5], [2.5, 1.5]]])
    pred = np.stack([gt + np.array([0, 0.1]), gt + np.array([4.0, 0])])  # best one (first) is on pavement
    assert obstacle_violation_rate(pred, gt, [mask], np.array([0]))[0] == 0
    pred = np.stack([gt + np.array([4.0, 0]), gt + np.array([9.0, 0])])
    assert obstacle_violation_rate(pred, gt, [mask], np.array([0]))[0] == pytest.approx(1.0)


def test_perfect_predictions_have_zero_loss_and_zero_kl():
    t = F.one_hot(torch.tensor([3, 7]), 9).float()
    assert weighted_smooth_l1(t, t, 20 * torch.ones_like(t)) == 0
    assert kl_normal(torch.zeros(4, 16), torch.zeros(4, 16)) == 0


def test_goal_conf_weight_sits_inside_the_smooth_l1():
    target = F.one_hot(torch.tensor([112]), 225).double()
    pred = torch.full_like(target, 0.5)
    m = 1 + 14 * target
    inside = weighted_smooth_l1(pred, target, 400 * m)
    assert float(inside) == pytest.approx((224 * 199.5 + 2999.5) / 225)  # 211.944
    outside = 400 * weighted_smooth_l1(pred, target, m)
    assert float(outside) == pytest.approx(62.22, abs=0.01)


def test_step_conf_weight():
    target = F.one_hot(torch.tensor([4]), 9).double()
    assert float(weighted_smooth_l1(torch.full_like(target, 0.5), target, torch.full_like(target, 20.0))) == 9.5
