"""The GPT-2-style Transformer path: γ trick, exactness at k = L, the k schedule (§5.2)."""

import numpy as np
import pytest
import torch

from iclr25.highway_bp.highway import flat_grad, gradient_cosine, highway_step
from iclr25.highway_bp.transformer import gpt2_stack, k_schedule, lm_loss, set_gamma, train_transformer


def _batch():
    gen = torch.Generator().manual_seed(0)
    return torch.randint(0, 11, (3, 7), generator=gen), torch.randint(0, 11, (3, 7), generator=gen)


def test_exact_at_k_eq_L_for_every_gamma_and_estimate_depends_on_gamma():
    torch.manual_seed(0)
    model = gpt2_stack(11, d=8, blocks=2, heads=2, context=7).double()
    assert model.depth == 4  # attention and FFN are separate layers
    x, y = _batch()
    logits = model(x)
    cos = {}
    for gamma in (0.0, 0.2, 0.8):
        set_gamma(model, gamma)
        assert torch.allclose(model(x), logits, atol=1e-12)  # the function does not depend on γ
        cos[gamma] = gradient_cosine(model, lm_loss, x, y, [0, 4])
        assert abs(cos[gamma][4] - 1.0) < 1e-10
    assert abs(cos[0.0][0] - cos[0.2][0]) > 1e-6  # the k < L estimate does
    set_gamma(model, 0.2)
    model.zero_grad()
    highway_step(model, lm_loss, x, y, 4)
    hbp = flat_grad(model).clone()
    model.zero_grad()
    lm_loss(model(x), y).backward()
    assert (hbp - flat_grad(model)).norm() / flat_grad(model).norm() < 1e-10
    with pytest.raises(ValueError, match="gamma"):
        set_gamma(model, 1.5)


def test_causal_and_k_schedule():
    torch.manual_seed(0)
    model = gpt2_stack(11, d=8, blocks=1, heads=2, context=7).double()
    x, _ = _batch()
    x2 = x.clone()
    x2[:, -1] = (x2[:, -1] + 1) % 11
    assert torch.allclose(model(x)[:, :-1], model(x2)[:, :-1])  # the future does not leak into the past
    assert [k_schedule(s, 5, 0, 4) for s in range(5)] == [0, 1, 2, 3, 4]
    assert k_schedule(0, 1, 3, 0) == 3
    with pytest.raises(ValueError, match="k_start"):
        k_schedule(0, 5, -1, 2)


def test_train_transformer_tiny():
    ids = np.arange(400, dtype=np.int64) % 11
    res = train_transformer(ids, ids[:100], 11, k_start=0, k_end=2, d=8, blocks=1, heads=2, length=8, batch=4, steps=3)
    assert set(res.cosine_init) == {0, 1, 2} and abs(res.cosine_init[2] - 1.0) < 1e-4  # k = L = 2 is exact
    assert res.valid_bpc > 0 and res.step_ms > 0
