"""TSC-Net forward/predict: losses, gradients, shapes, no leakage (spec §9.5), scene-blind, quirk flags."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
import torch

from iclr25.tsc_net import SceneCrop, TSCConfig, TSCNet
from iclr25.tsc_net.model import group_index

CFG = TSCConfig.quick(d_model=32)


def test_forward_gives_five_finite_losses_and_gradients(tiny_batch):
    torch.manual_seed(0)
    model = TSCNet(CFG)
    losses = model(tiny_batch)
    assert set(losses) == {"goal_conf", "goal_offset", "kl", "step_conf", "step_offset", "total"}
    assert all(torch.isfinite(v) for v in losses.values())
    losses["total"].backward()
    for name in ("cnn.pre.0.weight", "encoder.pedestrian.layers.0.q.weight", "cvae_enc.0.weight", "step_head.0.weight"):
        assert dict(model.named_parameters())[name].grad.abs().sum() > 0, name


def test_predict_shapes_and_no_leak(tiny_batch):
    torch.manual_seed(0)
    model = TSCNet(CFG).eval()
    torch.manual_seed(1)
    out = model.predict(tiny_batch, n_cvae=5, n_cell=4)
    assert out["traj"].shape == (20, 6, 12, 2) and out["goals"].shape == (20, 6, 2)
    leaked = dict(tiny_batch, pos=tiny_batch["pos"].clone())
    leaked["pos"][:, 8:] = float("nan")
    torch.manual_seed(1)
    again = model.predict(leaked, n_cvae=5, n_cell=4)
    assert torch.equal(out["traj"], again["traj"]) and torch.equal(out["goals"], again["goals"])
    assert torch.isfinite(out["traj"]).all()


def test_goals_are_cell_centres_plus_clamped_offsets(tiny_batch):
    torch.manual_seed(0)
    model = TSCNet(CFG).eval()
    out = model.predict(tiny_batch, n_cvae=2, n_cell=3)
    shift = out["goals"] - tiny_batch["pos"][None, :, 7]
    idx, off = CFG.goal_grid.encode(shift)
    assert (off.abs() <= CFG.goal_grid.cell / 2 + 1e-4).all()
    assert idx.view(2, 3, 6).transpose(1, 2).reshape(2, 6, 3).unique(dim=-1).shape[-1] >= 1


def test_scene_blind_ignores_the_map_and_scene_aware_does_not(tiny_batch):
    other = dict(tiny_batch, scenes=SceneCrop([np.zeros((64, 64), int), np.full((64, 64), 3)], 6))
    for use_scene, same in ((False, True), (True, False)):
        torch.manual_seed(0)
        model = TSCNet(replace(CFG, use_scene=use_scene))
        a, b = model(tiny_batch), model(other)
        torch.manual_seed(0)
        a = TSCNet(replace(CFG, use_scene=use_scene))._goal_condition(
            tiny_batch["pos"][:, :8], torch.cat([tiny_batch["pos"][:, 7], torch.full((6, 1), 7.0)], -1),
            torch.zeros(6, 8, CFG.d_model), tiny_batch["scenes"], tiny_batch["scene"])  # fmt: skip
        torch.manual_seed(0)
        b = TSCNet(replace(CFG, use_scene=use_scene))._goal_condition(
            tiny_batch["pos"][:, :8], torch.cat([tiny_batch["pos"][:, 7], torch.full((6, 1), 7.0)], -1),
            torch.zeros(6, 8, CFG.d_model), other["scenes"], other["scene"])  # fmt: skip
        assert torch.allclose(a, b) == same


@pytest.mark.parametrize("quirk", ["keys_are_inputs", "softmax_then_divide", "ln_gain_normal", "step_crop_at_target"])
def test_each_official_quirk_changes_the_losses(tiny_batch, quirk):
    cfg = replace(CFG, layers=2)  # keys = inputs only matters from the second layer on
    torch.manual_seed(0)
    base = TSCNet(cfg)(tiny_batch)["total"]
    torch.manual_seed(0)
    quirky = TSCNet(replace(cfg, **{quirk: True}))(tiny_batch)["total"]
    assert torch.isfinite(quirky) and not torch.equal(base, quirky)


def test_history_is_causal_and_pedestrians_attend_within_their_clip(tiny_batch):
    torch.manual_seed(0)
    enc = TSCNet(CFG).encoder.eval()
    x = torch.randn(6, 20, CFG.d_model)
    group = tiny_batch["group"]
    y = enc(x, group)
    x2 = x.clone()
    x2[:, 15:] += 1.0  # later frames change
    assert torch.allclose(enc(x2, group)[:, :15], y[:, :15], atol=1e-6)
    x3 = x.clone()
    x3[3:] += 1.0  # the other clip changes
    assert torch.allclose(enc(x3, group)[:3], y[:3], atol=1e-6)
    x4 = x.clone()
    x4[:, 2] += 1.0  # an observed frame changes: every observed frame sees it
    assert not torch.allclose(enc(x4, group)[:, 0], y[:, 0])


def test_group_index():
    idx = group_index(torch.tensor([5, 2, 5, 5, 2]))
    assert idx.tolist() == [[1, 4, -1], [0, 2, 3]]


def test_sdd_configuration_values():
    cfg = TSCConfig.sdd()
    assert cfg.d_model == 256 and cfg.goal_grid.cell == 80 and cfg.step_grid.cell == 20 and cfg.goal_crop == 300
    assert cfg.latent == 64 and cfg.heads == 8 and cfg.layers == 2
