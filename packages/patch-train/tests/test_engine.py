"""The plain-torch stage loop trains as the Lightning stage does; the engines and the scale-out plan of the presets."""

from __future__ import annotations

import copy

import numpy as np
import pytest
import torch

from iclr25.patch_train.config import PRESETS, Config
from iclr25.patch_train.data import TokenStream
from iclr25.patch_train.estimate import scale_plan
from iclr25.patch_train.plan import plan_two_stage
from iclr25.patch_train.train import train_two_stage
from iclr25.shared.fabric import ScaleOut


def test_torch_loop_equals_lightning_stage(tiny_model, tmp_path):
    plans = plan_two_stage(4, 0.5, 8, 64, compute_budget=6, lr=1e-2, warmup=0.25)
    ids = np.random.default_rng(0).integers(1, 64, 2000)
    a, b = copy.deepcopy(tiny_model), copy.deepcopy(tiny_model)
    ra = train_two_stage(a, TokenStream(ids), plans, tmp_path / "a", device="cpu", threads=1, engine="torch")
    rb = train_two_stage(b, TokenStream(ids), plans, tmp_path / "b", device="cpu", threads=1, engine="lightning")
    for sa, sb in zip(ra, rb, strict=True):
        np.testing.assert_allclose(sa.losses, sb.losses, rtol=0, atol=1e-5)
        assert sa.probe["lrs"] == pytest.approx(sb.probe["lrs"], abs=1e-12)
        assert (sa.stream_start, sa.stream_end) == (sb.stream_start, sb.stream_end)
    for p, q in zip(a.parameters(), b.parameters(), strict=True):
        torch.testing.assert_close(p, q, rtol=0, atol=1e-4)  # float32 sums in a different order


def test_torch_engine_refuses_scale_out_options(tiny_model, tmp_path):
    plans = plan_two_stage(4, 0.5, 8, 64, compute_budget=6)
    stream = TokenStream(np.arange(2000) % 64)
    with pytest.raises(ValueError, match="engine 'torch' trains on one process"):
        train_two_stage(tiny_model, stream, plans, tmp_path, engine="torch", scale_out=ScaleOut(devices=2))
    with pytest.raises(ValueError, match="engine must be one of"):
        train_two_stage(tiny_model, stream, plans, tmp_path, engine="jax")
    with pytest.raises(ValueError, match="engine must be one of"):
        Config(engine="jax")
    with pytest.raises(ValueError, match="impl must be one of"):
        Config(impl="keras")


@pytest.mark.parametrize("scale", ["full", "full-125m"])
def test_full_presets_split_over_one_to_eight_gpus(scale):
    plan = scale_plan(PRESETS[scale])
    for run in plan["runs"].values():
        assert {1, 2, 4, 8} <= set(run["devices_ok"])  # every stage's micro-batches divide by the process count
    token, patch = plan["runs"]["token"], plan["runs"]["patch"]
    assert patch["flops"] == pytest.approx(token["flops"], rel=1e-3)  # equal compute
    hours = {"full": 64.4, "full-125m": 3.57}[scale]  # 6 N + 6 L T d FLOPs per position at 150 TFLOP/s per GPU
    assert token["gpu_hours"] == pytest.approx(hours, rel=0.01)


def test_step_breakdown_times_every_part(tiny_model):
    from iclr25.patch_train.train import step_breakdown

    parts = step_breakdown(tiny_model, 4, 16, 256, steps=2, warmup=1)
    for name in ("token", "patch"):
        assert set(parts[name]) == {"forward", "backward", "clip", "optimizer", "total"}
        assert parts[name]["total"] == pytest.approx(sum(v for k, v in parts[name].items() if k != "total"))


def test_flat_buffers_update_as_per_parameter_adamw(tiny_model):
    from iclr25.patch_train.patch import patch_forward
    from iclr25.patch_train.plan import StagePlan
    from iclr25.patch_train.stage import OptimConfig, clip_grad_norm_buffers_, make_optimizer

    plan = StagePlan("patch", 4, 64, 2, 3, 1, 1e-2)
    a, b = copy.deepcopy(tiny_model), copy.deepcopy(tiny_model)
    before = [p.detach().clone() for p in b.parameters()]
    opt_a, sched_a = make_optimizer(a, plan, OptimConfig())
    opt_b, sched_b = make_optimizer(b, plan, OptimConfig(), flat=True)
    flat = [p for g in opt_b.param_groups for p in g["params"]]
    assert [p.dim() for p in flat] == [1, 1] and sum(p.numel() for p in flat) == sum(p.numel() for p in before)
    for p, q in zip(b.parameters(), before, strict=True):  # values kept; every parameter is a view of a buffer
        assert torch.equal(p, q) and any(p.untyped_storage().data_ptr() == f.untyped_storage().data_ptr() for f in flat)
    ids = torch.randint(0, 64, (3, 2, 64), generator=torch.Generator().manual_seed(0))
    for batch in ids:
        for model, opt, sched, params in ((a, opt_a, sched_a, list(a.parameters())), (b, opt_b, sched_b, flat)):
            patch_forward(model, batch, 4, labels=batch)[1].backward()
            if model is a:
                norm = torch.nn.utils.clip_grad_norm_(params, 0.05)  # small: clipping is active
            else:
                torch.testing.assert_close(clip_grad_norm_buffers_([f.grad for f in flat], 0.05), norm)
            opt.step()
            sched.step()
            opt.zero_grad(set_to_none=model is a)
        assert all(g.abs().sum() == 0 for g in (p.grad for p in b.parameters()))  # zeroed in place, still views
    for p, q in zip(a.parameters(), b.parameters(), strict=True):
        torch.testing.assert_close(p, q, rtol=0, atol=1e-6)
    assert opt_b.state[flat[0]]["step"] == 3
