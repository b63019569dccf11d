"""The AR transformer, the AR-NTP loss and the training loops."""

from __future__ import annotations

import functools

import pytest
import torch

from iclr25.icl_emergence.model import ARTransformer
from iclr25.icl_emergence.reference import prefix_by_prefix, two_level_loss_loop
from iclr25.icl_emergence.training import ar_loss, lr_at, next_token_targets, train_ar, train_sgld


def test_shapes_tokens_and_vectors():
    torch.manual_seed(0)
    vec = ARTransformer(input_dim=3, d_model=16, n_layers=2, n_heads=2, max_len=10)
    assert vec(torch.randn(4, 10, 3)).shape == (4, 10, 3)
    tok = ARTransformer(vocab_size=7, d_model=16, n_layers=1, n_heads=4, max_len=10)
    assert tok(torch.randint(7, (4, 9))).shape == (4, 9, 7)
    with pytest.raises(ValueError, match="exactly one"):
        ARTransformer(vocab_size=3, input_dim=2)
    with pytest.raises(ValueError, match="max_len"):
        vec(torch.randn(1, 11, 3))


def test_causal_mask_prefix_equals_full_and_no_mask_leaks():
    torch.manual_seed(0)
    model = ARTransformer(input_dim=2, d_model=16, n_layers=2, n_heads=4, max_len=12).eval()
    x = torch.randn(12, 2)
    with torch.no_grad():
        full = model(x[None])[0]
    assert torch.allclose(full, prefix_by_prefix(model, x), atol=1e-5)
    leaky = ARTransformer(input_dim=2, d_model=16, n_layers=2, n_heads=4, max_len=12, causal=False).eval()
    leaky.load_state_dict(model.state_dict())
    with torch.no_grad():
        assert not torch.allclose(leaky(x[None])[0], prefix_by_prefix(leaky, x), atol=1e-4)


def test_loss_is_the_two_level_average_and_targets_are_shifted():
    torch.manual_seed(0)
    model = ARTransformer(input_dim=2, d_model=8, n_layers=1, n_heads=2, max_len=6)
    data = torch.randn(3, 4, 7, 2)  # K x N x T x d
    flat = data.reshape(12, 7, 2)
    inputs, targets = next_token_targets(flat)
    assert torch.equal(inputs, flat[:, :-1]) and torch.equal(targets, flat[:, 1:])
    with torch.no_grad():
        per_token = ((model(inputs) - targets) ** 2).sum(-1).reshape(3, 4, 6)
        assert abs(float(ar_loss(model, flat)) - two_level_loss_loop(per_token)) < 1e-5
    tok = ARTransformer(vocab_size=5, d_model=8, n_layers=1, n_heads=2, max_len=6)
    seq = torch.randint(5, (3, 7))
    logits = tok(seq[:, :-1])
    expected = -torch.log_softmax(logits, -1).gather(-1, seq[:, 1:, None]).mean()
    assert torch.allclose(ar_loss(tok, seq), expected)


def test_gradients_reach_every_parameter():
    torch.manual_seed(0)
    model = ARTransformer(input_dim=2, d_model=8, n_layers=2, n_heads=2, max_len=6)
    ar_loss(model, torch.randn(5, 7, 2)).backward()
    for name, p in model.named_parameters():
        assert p.grad is not None and torch.isfinite(p.grad).all() and p.grad.abs().sum() > 0, name


def test_schedule():
    assert lr_at(0, 1000, 100, 1e-3) == pytest.approx(1e-5)
    assert lr_at(99, 1000, 100, 1e-3) == pytest.approx(1e-3)
    assert lr_at(550, 1000, 100, 1e-3) == pytest.approx(0.5e-3)
    assert lr_at(1000, 1000, 100, 1e-3) == pytest.approx(0.0, abs=1e-12)


def test_training_lowers_the_loss():
    torch.manual_seed(0)
    model = ARTransformer(input_dim=2, d_model=16, n_layers=1, n_heads=2, max_len=7)
    W = torch.tensor([[0.0, -1.0], [1.0, 0.0]])
    x0 = torch.randn(256, 2)
    seqs = [x0]
    for _ in range(7):
        seqs.append(seqs[-1] @ W.T)
    data = torch.stack(seqs, 1)
    g = torch.Generator().manual_seed(0)
    losses = train_ar(model, lambda s: data[torch.randint(256, (32,), generator=g)], 150, lr=3e-3, warmup=10)
    assert sum(losses[-10:]) / 10 < 0.3 * sum(losses[:10]) / 10


def test_sgld_logs_gradient_differences():
    torch.manual_seed(0)
    model = ARTransformer(input_dim=2, d_model=8, n_layers=1, n_heads=2, max_len=5)
    a, b = torch.randn(16, 6, 2), 3 * torch.randn(16, 6, 2)
    before = [p.clone() for p in model.parameters()]
    log = train_sgld(model, lambda s: a, lambda s: b, 5, lr=1e-2, beta=1e4)
    assert len(log["grad_diff_sq"]) == 5 and all(v > 0 for v in log["grad_diff_sq"])
    assert any(not torch.equal(p, q) for p, q in zip(before, model.parameters(), strict=True))
    same = train_sgld(model, lambda s: a, lambda s: a, 2, lr=1e-2, beta=1e4)
    assert max(same["grad_diff_sq"]) < 1e-10  # identical objectives: no disagreement


def test_noncausal_variant_is_constructible_via_partial():
    make = functools.partial(ARTransformer, causal=False)
    m = make(input_dim=2, d_model=8, n_layers=1, n_heads=2, max_len=4)
    assert m.blocks[0].attn.causal is False
