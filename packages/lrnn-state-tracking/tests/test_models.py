"""Models: the eigenvalue-range switch exactly as the paper defines it (spec §9.2), forms equal, causality."""

from __future__ import annotations

import pytest
import torch

from iclr25.lrnn_state_tracking.baselines import ALL_MODELS, build_model
from iclr25.lrnn_state_tracking.models import DeltaNetLayer, DiagonalLRNN, Figure1Model, FullMatrixLRNN, MambaLayer


@pytest.mark.parametrize(("eig_range", "hi"), [("[-1,1]", 2.0), ("[0,1]", 1.0)])
def test_deltanet_beta_range_and_same_beta_for_erase_and_write(eig_range, hi):
    torch.manual_seed(0)
    layer = DeltaNetLayer(16, 2, eig_range).double()
    with torch.no_grad():
        layer.b_proj.weight.mul_(200)  # push β to the ends of its range
    x = torch.randn(2, 2, 16, dtype=torch.float64)
    beta = layer.betas(x)  # (B, T, H)
    assert beta.min() > 0 and beta.max() < hi
    assert beta.max() > 0.9 * hi
    q, k, v = layer.qkv(x)
    from iclr25.lrnn_state_tracking.reference import delta_rule_recurrent

    b = beta.transpose(1, 2)
    _, s1 = delta_rule_recurrent(q[:, :, :1], k[:, :, :1], v[:, :, :1], b[:, :, :1])
    k1, v1, b1 = k[:, :, 0], v[:, :, 0], b[:, :, 0, None, None]
    assert torch.allclose(s1, b1 * k1[..., :, None] * v1[..., None, :], atol=1e-12)  # S1 = β1 k1 v1ᵀ
    _, s2 = delta_rule_recurrent(q, k, v, b)
    k2, v2, b2 = k[:, :, 1], v[:, :, 1], b[:, :, 1, None, None]
    eye = torch.eye(8, dtype=torch.float64)
    expected = (eye - b2 * k2[..., :, None] * k2[..., None, :]) @ s1 + b2 * k2[..., :, None] * v2[..., None, :]
    assert torch.allclose(s2, expected, atol=1e-12)
    # eigenvalue along k: 1 - β‖k‖² stays in (-1, 1] thanks to the eps inside the L2 norm
    lam = 1 - b.unsqueeze(-1) * (k * k).sum(-1, keepdim=True)
    assert lam.min() > -1 and lam.max() <= 1


def test_deltanet_layer_chunk_equals_recurrent():
    torch.manual_seed(1)
    layer = DeltaNetLayer(16, 2, "[-1,1]", chunk_size=8).double()
    x = torch.randn(2, 29, 16, dtype=torch.float64)
    out_chunk = layer(x)
    layer.mode = "recurrent"
    assert (out_chunk - layer(x)).abs().max() <= 1e-10


def test_mamba_switch_changes_only_the_transition():
    torch.manual_seed(2)
    pos = MambaLayer(16, eig_range="[0,1]").double()
    neg = MambaLayer(16, eig_range="[-1,1]").double()
    neg.load_state_dict(pos.state_dict())  # identical parameters: the range is not a parameter
    x = torch.randn(2, 9, 16, dtype=torch.float64)
    assert not torch.allclose(pos(x), neg(x))
    from iclr25.lrnn_state_tracking import ops

    calls = []
    original = ops.selective_scan

    def spy(*args, **kwargs):
        calls.append(args[6])
        return original(*args, **kwargs)

    import iclr25.lrnn_state_tracking.models as models

    models.selective_scan = spy
    try:
        pos(x), neg(x)
    finally:
        models.selective_scan = original
    assert calls == ["[0,1]", "[-1,1]"]


@pytest.mark.parametrize("eig_range", ["[0,1]", "[-1,1]"])
def test_diagonal_lrnn_gate_range(eig_range):
    layer = DiagonalLRNN(8, eig_range)
    a = layer.transition(torch.randn(4, 50, 8) * 10)
    if eig_range == "[0,1]":
        assert a.min() >= 0
    else:
        assert a.min() < 0
    assert a.abs().max() <= 1


@pytest.mark.parametrize("name", ALL_MODELS)
def test_models_are_causal_and_shaped(name):
    torch.manual_seed(3)
    model = build_model(name, 5, d_model=16, n_layers=2, n_heads=2).double()
    x = torch.randint(0, 5, (2, 12))
    y = x.clone()
    y[:, 8:] = (y[:, 8:] + 1) % 5  # change the future only
    out_x, out_y = model(x), model(y)
    assert out_x.shape == (2, 12, 5)
    assert torch.allclose(out_x[:, :8], out_y[:, :8], atol=1e-10)
    assert not torch.allclose(out_x[:, 8:], out_y[:, 8:])


def test_build_model_rejects_unknown():
    with pytest.raises(ValueError, match="model must be one of"):
        build_model("rwkv", 5)
    with pytest.raises(ValueError, match="divisible"):
        DeltaNetLayer(10, 3)


def test_full_matrix_lrnn_follows_its_recurrence():
    """h_0 = B(x_0) x_0, h_t = A(x_t) h_{t-1} + B(x_t) x_t with dense A, B = reshape(W x + b)/sqrt(d) (official)."""
    torch.manual_seed(4)
    layer = FullMatrixLRNN(4).double()
    x = torch.randn(2, 3, 4, dtype=torch.float64)
    h = layer(x)
    W_a, b_a, W_b, b_b = layer.w_a.weight, layer.w_a.bias, layer.w_b.weight, layer.w_b.bias
    for n in range(2):
        expected = None
        for t in range(3):
            A = (W_a @ x[n, t] + b_a).view(4, 4) / 2  # reshape(W_A x + b_A) / sqrt(d), row-major
            Bm = (W_b @ x[n, t] + b_b).view(4, 4) / 2
            expected = Bm @ x[n, t] if expected is None else A @ expected + Bm @ x[n, t]
            assert torch.allclose(h[n, t], expected, atol=1e-12)


def test_full_matrix_input_term_is_dense():
    """B(x) mixes channels: a change in one input channel moves every state channel at t = 0 (Diag(.) x would not)."""
    torch.manual_seed(5)
    layer = FullMatrixLRNN(6).double()
    x = torch.randn(1, 1, 6, dtype=torch.float64)
    y = x.clone()
    y[..., 0] += 1.0
    moved = (layer(x) - layer(y)).abs()[0, 0]
    assert (moved > 1e-6).all()
    assert layer.w_b.out_features == 36


def test_build_fullmatrix_is_the_official_one_block_model():
    model = build_model("fullmatrix", 3, d_model=10, n_layers=2)
    assert isinstance(model.lrnn, FullMatrixLRNN)  # pre-LayerNorm -> layer -> post-LayerNorm -> head, one block
    assert model(torch.randint(0, 3, (2, 7))).shape == (2, 7, 3)
    with pytest.raises(ValueError, match="layer must be"):
        Figure1Model(3, 4, layer="dense")
