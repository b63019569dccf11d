"""Two-stage training through the shared Lightning trainer: stage switch (spec §9 check 4) and exact resume."""

from __future__ import annotations

import copy

import numpy as np
import pytest
import torch

from iclr25.patch_train.data import TokenStream, pack_blocks
from iclr25.patch_train.lit import weights_fingerprint
from iclr25.patch_train.plan import StagePlan, plan_two_stage
from iclr25.patch_train.train import train_stage, train_two_stage


def test_stage_switch(tiny_model, tmp_path):
    plans = plan_two_stage(4, 0.5, 8, 64, compute_budget=6, lr=1e-2, warmup=0.25)
    assert [(p.stage, p.steps, p.seqs_per_step, p.block_tokens) for p in plans] == [
        ("patch", 5, 2, 32),
        ("token", 5, 8, 8),
    ]  # 6 / C(1/2, 4) = 9.6 steps of data -> round(4.8) + round(4.8)
    ids = np.random.default_rng(0).integers(1, 64, 2000)
    stream = TokenStream(ids)
    before = weights_fingerprint(tiny_model)
    res = train_two_stage(tiny_model, stream, plans, tmp_path, device="cpu", threads=1)
    st1, st2 = res
    assert st1.start_info == {"global_step": 0, "optimizer_state_entries": 0, "lr": 0.0, "weights_fingerprint": before}
    assert st1.end_fingerprint != before  # stage 1 trained
    assert st2.start_info["weights_fingerprint"] == st1.end_fingerprint  # identical weights handed over
    assert st2.start_info["optimizer_state_entries"] == 0 and st2.start_info["lr"] == 0.0  # fresh AdamW, warmup from 0
    assert (st1.stream_start, st1.stream_end, st2.stream_start, st2.stream_end) == (0, 320, 320, 640)
    assert len(st1.losses) == 5 and len(st2.losses) == 5
    assert all(np.isfinite(st1.losses + st2.losses))


def test_resume_is_exact(tmp_path):
    from iclr25.patch_train.patch import make_llama

    plan = StagePlan("patch", 2, 32, 4, 8, 2, 1e-2)
    blocks = pack_blocks(np.random.default_rng(1).integers(1, 64, plan.tokens), plan.block_tokens)
    torch.manual_seed(0)
    init = make_llama("tiny", 64, 64)
    straight = copy.deepcopy(init)
    train_stage(straight, plan, blocks, tmp_path / "a", device="cpu", threads=1)

    first = copy.deepcopy(init)
    train_stage(first, plan, blocks, tmp_path / "b", device="cpu", threads=1, checkpoint=True, max_steps=4)
    ckpt = tmp_path / "b" / "checkpoints" / "last.ckpt"
    assert ckpt.is_file()
    resumed = copy.deepcopy(init)  # weights, optimizer, schedule and data position all come from the checkpoint
    module, _, _ = train_stage(resumed, plan, blocks, tmp_path / "c", device="cpu", threads=1, ckpt_path=ckpt)
    assert len(module.losses) == 4  # only the remaining steps ran
    for p, q in zip(straight.parameters(), resumed.parameters(), strict=True):
        torch.testing.assert_close(p, q, rtol=0, atol=1e-6)
    assert weights_fingerprint(first) != weights_fingerprint(resumed)


def test_accumulation_matches_full_batch(tmp_path):
    from iclr25.patch_train.patch import make_llama
    from iclr25.patch_train.train import OptimConfig

    plan = StagePlan("token", 1, 16, 4, 3, 1, 1e-2)
    blocks = pack_blocks(np.random.default_rng(2).integers(1, 64, plan.tokens), 16)
    torch.manual_seed(0)
    a = make_llama("tiny", 64, 64)
    b = copy.deepcopy(a)
    train_stage(a, plan, blocks, tmp_path / "a", device="cpu", threads=1)
    train_stage(b, plan, blocks, tmp_path / "b", device="cpu", threads=1, optim=OptimConfig(micro_batch=2))
    for p, q in zip(a.parameters(), b.parameters(), strict=True):
        torch.testing.assert_close(p, q, rtol=1e-4, atol=1e-5)


def test_stage_rejects_wrong_blocks(tiny_model, tmp_path):
    plan = StagePlan("patch", 4, 32, 2, 3, 1, 1e-3)
    with pytest.raises(ValueError, match="blocks"):
        train_stage(tiny_model, plan, np.zeros((6, 16), dtype=np.int64), tmp_path, device="cpu")


def test_step_throughput_measures_both_steps(tiny_model):
    from iclr25.patch_train.train import step_throughput

    before = weights_fingerprint(tiny_model)
    res = step_throughput(tiny_model, 4, 16, 256, steps=2, warmup=1)
    assert res["token_step_tokens_per_s"] > 0 and res["patch_step_tokens_per_s"] > 0
    assert res["patch_over_token_tokens_per_s"] == pytest.approx(res["token_step_ms"] / res["patch_step_ms"])
    assert weights_fingerprint(tiny_model) == before  # benchmarks a copy
    with pytest.raises(ValueError, match="multiple"):
        step_throughput(tiny_model, 4, 16, 100)
