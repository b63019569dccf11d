"""Eqs. 1-2, the cost accounting and the plan (spec §9 checks 1-3)."""

from __future__ import annotations

import math

import pytest
import torch

from iclr25.patch_train.patch import (
    count_params,
    flops_per_position,
    flops_per_position_dims,
    llama_params,
    make_llama,
    patch_forward,
    patch_lm_loss,
    patch_position_ids,
    patchify,
    token_lm_loss,
    training_cost,
)
from iclr25.patch_train.plan import hf_cosine_lr, plan_flops, plan_token_only, plan_two_stage
from iclr25.patch_train.reference import (
    hf_cosine_lr_loop,
    patch_lm_loss_global,
    patch_lm_loss_loop,
    patchify_loop,
)


@pytest.mark.parametrize(("lam", "K", "cost"), [(0.5, 4, 0.625), (2 / 3, 4, 0.5), (0.8, 4, 0.4), (0.0, 4, 1.0)])
def test_training_cost(lam, K, cost):
    assert training_cost(lam, K) == pytest.approx(cost, abs=1e-12)


def test_training_cost_rejects_bad_input():
    with pytest.raises(ValueError, match="lam"):
        training_cost(1.5, 4)
    with pytest.raises(ValueError, match="K"):
        training_cost(0.5, 0)


def test_official_step_counts():
    tps = 2**21
    data = plan_two_stage(4, 2 / 3, 2048, tps, total_tokens=135_000 * tps)
    assert [(p.stage, p.steps, p.seqs_per_step, p.block_tokens) for p in data] == [
        ("patch", 90_000, 256, 8192),
        ("token", 45_000, 1024, 2048),
    ]
    assert data[0].tokens_per_step == data[1].tokens_per_step == tps
    comp = plan_two_stage(4, 2 / 3, 2048, tps, compute_budget=135_000)
    assert [p.steps for p in comp] == [180_000, 90_000]  # int() would give 179,999 + 89,999


def test_equal_compute_flops_and_data():
    tps = 2**21
    comp = plan_two_stage(4, 2 / 3, 2048, tps, compute_budget=135_000)
    fpp = flops_per_position_dims(llama_params("370m", 32_000), 24, 1024, 2048)
    ratio = plan_flops(comp, fpp) / plan_flops(plan_token_only(2048, tps, 135_000), fpp)
    assert ratio == pytest.approx(1.0, abs=0.02)
    assert sum(p.tokens for p in comp) / (135_000 * tps) == pytest.approx(2.0, abs=1e-6)
    assert comp[0].positions_per_step * 4 == comp[0].tokens_per_step


def test_plan_rejects_bad_input():
    with pytest.raises(ValueError, match="exactly one"):
        plan_two_stage(4, 0.5, 64, 1024)
    with pytest.raises(ValueError, match="multiple"):
        plan_two_stage(4, 0.5, 64, 1000, total_tokens=10_000)


def test_analytic_params_match_model():
    model = make_llama("tiny", 256, 64)
    assert count_params(model) == llama_params("tiny", 256)
    assert flops_per_position(model, 64) == flops_per_position_dims(llama_params("tiny", 256), 2, 64, 64)


@pytest.mark.parametrize("K", [1, 2, 4], ids=lambda k: f"K{k}")
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64], ids=["f32", "f64"])
def test_patchify_matches_loop(K, dtype):
    x = torch.randn(2, 4 * K, 5, dtype=dtype, requires_grad=True)
    fast, slow = patchify(x, K), patchify_loop(x, K)
    torch.testing.assert_close(fast, slow)
    (g_fast,) = torch.autograd.grad((fast * torch.arange(5.0, dtype=dtype)).sum(), x)
    (g_slow,) = torch.autograd.grad((slow * torch.arange(5.0, dtype=dtype)).sum(), x)
    torch.testing.assert_close(g_fast, g_slow)


def test_patchify_rejects_indivisible_length():
    with pytest.raises(ValueError, match="multiple"):
        patchify(torch.zeros(1, 6, 3), 4)


def test_patch_loss_k1_is_cross_entropy():
    g = torch.Generator().manual_seed(0)
    logits, labels = torch.randn(3, 11, 13, generator=g), torch.randint(0, 13, (3, 11), generator=g)
    assert float((patch_lm_loss(logits, labels, 1) - token_lm_loss(logits, labels)).abs()) <= 1e-6


@pytest.mark.parametrize("K", [2, 4, 8], ids=lambda k: f"K{k}")
def test_patch_loss_matches_bruteforce_and_grad(K):
    g = torch.Generator().manual_seed(K)
    logits = torch.randn(2, 5, 11, generator=g, dtype=torch.float64, requires_grad=True)
    labels = torch.randint(0, 11, (2, 5 * K), generator=g)
    fast, slow = patch_lm_loss(logits, labels, K).double(), patch_lm_loss_loop(logits, labels, K)
    assert float((fast - slow).detach().abs()) <= 1e-6
    # no ignored labels: the per-k convention and the global mean agree
    assert float((fast - patch_lm_loss_global(logits, labels, K)).detach().abs()) <= 1e-6
    (g1,) = torch.autograd.grad(fast, logits)
    (g2,) = torch.autograd.grad(slow, logits)
    torch.testing.assert_close(g1, g2)


def test_patch_loss_ignored_labels_uses_per_column_means():
    g = torch.Generator().manual_seed(3)
    logits = torch.randn(2, 4, 9, generator=g, dtype=torch.float64)
    labels = torch.randint(0, 9, (2, 16), generator=g)
    labels[0, 4] = labels[1, 4] = labels[0, 9] = -100  # column 0 loses two targets, column 1 one
    fast = patch_lm_loss(logits, labels, 4).double()
    assert float((fast - patch_lm_loss_loop(logits, labels, 4)).abs()) <= 1e-9
    assert float((fast - patch_lm_loss_global(logits, labels, 4)).abs()) > 1e-4  # the conventions differ here


def test_patch_loss_targets_are_next_patch():
    # a distribution that puts all mass on token 3 is perfect iff every token of every next patch is 3
    V, K, T = 5, 2, 3
    logits = torch.full((1, T, V), -1e4)
    logits[..., 3] = 0.0
    labels = torch.tensor([[0, 1, 3, 3, 3, 3]])  # the first patch is never a target
    assert float(patch_lm_loss(logits, labels, K)) < 1e-6
    labels[0, 5] = 2
    assert float(patch_lm_loss(logits, labels, K)) > 1.0


def test_patch_forward_is_exact_mean_at_patch_positions(tiny_model):
    ids = torch.randint(0, 64, (2, 32))
    with torch.no_grad():
        logits, _ = patch_forward(tiny_model, ids, 4)
        mean_emb = tiny_model.get_input_embeddings()(ids).view(2, 8, 4, -1).mean(2)
        ref = tiny_model(inputs_embeds=mean_emb, position_ids=patch_position_ids(2, 8)).logits
        shifted = tiny_model(inputs_embeds=mean_emb, position_ids=patch_position_ids(2, 8) * 4).logits
    assert logits.shape == (2, 8, 64)
    assert float((logits - ref).abs().max()) <= 1e-5
    assert float((logits - shifted).abs().max()) > 1e-4  # positions iK would be a different model


def test_patch_forward_loss_and_grad(tiny_model):
    ids = torch.randint(0, 64, (2, 32))
    _, loss = patch_forward(tiny_model, ids, 4, labels=ids)
    assert abs(float(loss) - math.log(64)) < 0.5
    loss.backward()
    assert tiny_model.get_input_embeddings().weight.grad.abs().sum() > 0


def test_hf_cosine_schedule():
    for s in [0, 1, 5, 10, 11, 50, 99, 100]:
        assert hf_cosine_lr(s, 3e-4, 10, 100) == pytest.approx(hf_cosine_lr_loop(s, 3e-4, 10, 100))
    assert hf_cosine_lr(0, 3e-4, 10, 100) == 0.0
    assert hf_cosine_lr(10, 3e-4, 10, 100) == pytest.approx(3e-4)
    assert hf_cosine_lr(100, 3e-4, 10, 100) == pytest.approx(0.0, abs=1e-12)


def test_make_llama_rejects_unknown_size():
    with pytest.raises(ValueError, match="unknown model size"):
        make_llama("7b")
