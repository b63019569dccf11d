"""Fast forms == step-by-step references (outputs, final states, gradients), spec §9.1."""

from __future__ import annotations

import sys

import pytest
import torch

from iclr25.lrnn_state_tracking.config import TrainConfig
from iclr25.lrnn_state_tracking.models import DeltaNetLayer
from iclr25.lrnn_state_tracking.ops import (
    delta_rule,
    delta_rule_chunked,
    delta_rule_fla,
    diagonal_scan,
    mamba_transition,
    parse_eig_range,
    selective_scan,
)
from iclr25.lrnn_state_tracking.reference import delta_rule_recurrent, diagonal_scan_reference, selective_scan_reference

TOL = {torch.float64: 1e-9, torch.float32: 1e-4}


def _delta_inputs(dtype, T=128, B=2, H=2, Dk=16, Dv=8, seed=0):
    g = torch.Generator().manual_seed(seed)
    q = torch.randn(B, H, T, Dk, generator=g, dtype=dtype)
    k = torch.nn.functional.normalize(torch.randn(B, H, T, Dk, generator=g, dtype=dtype), dim=-1)
    v = torch.randn(B, H, T, Dv, generator=g, dtype=dtype)
    beta = 2 * torch.sigmoid(torch.randn(B, H, T, generator=g, dtype=dtype))  # range (0, 2): eigenvalues in (-1, 1)
    return [t.requires_grad_() for t in (q, k, v, beta)]


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32], ids=["fp64", "fp32"])
@pytest.mark.parametrize("T", [128, 100], ids=["T128", "T100-ragged"])
def test_delta_rule_chunked_equals_recurrent(dtype, T):
    q, k, v, beta = _delta_inputs(dtype, T)
    o_ref, s_ref = delta_rule_recurrent(q, k, v, beta)
    o_fast, s_fast = delta_rule_chunked(q, k, v, beta, chunk_size=32)
    tol = TOL[dtype]
    assert (o_ref - o_fast).abs().max() <= tol
    assert (s_ref - s_fast).abs().max() <= tol
    w = torch.randn_like(o_ref)
    g_ref = torch.autograd.grad((o_ref * w).sum() + s_ref.sum(), (q, k, v, beta))
    g_fast = torch.autograd.grad((o_fast * w).sum() + s_fast.sum(), (q, k, v, beta))
    for a, b in zip(g_ref, g_fast, strict=True):  # gradients to the same tolerance as the outputs
        assert (a - b).abs().max() <= tol


def test_delta_rule_initial_state_and_beta_zero_padding():
    q, k, v, beta = (t.detach() for t in _delta_inputs(torch.float64, 40))
    s0 = torch.randn(2, 2, 16, 8, dtype=torch.float64)
    o_ref, s_ref = delta_rule_recurrent(q, k, v, beta, initial_state=s0)
    o_fast, s_fast = delta_rule_chunked(q, k, v, beta, chunk_size=16, initial_state=s0)
    assert torch.allclose(o_ref, o_fast, atol=1e-10)
    assert torch.allclose(s_ref, s_fast, atol=1e-10)
    with pytest.raises(ValueError, match="chunk_size"):
        delta_rule_chunked(q, k, v, beta, chunk_size=0)


def _fake_fla_kernel(q, k, v, beta, scale=None, initial_state=None, output_final_state=False):
    """A stand-in with the contract of fla.ops.delta_rule.chunk_delta_rule: (B, T, H, D), no float32, β (B, T, H)."""
    assert q.dtype == k.dtype == v.dtype == beta.dtype == torch.bfloat16  # FLA's chunk kernel refuses float32
    assert q.shape[:3] == beta.shape and q.is_contiguous() and output_final_state
    assert initial_state is None or initial_state.dtype == torch.float32
    o, s = delta_rule_chunked(*(t.float().transpose(1, 2) for t in (q, k, v, beta)), 64, initial_state, scale)
    return o.transpose(1, 2).bfloat16(), s  # FLA: output in the input dtype, final state in float32


def test_fla_mode_layout_and_dtypes_with_a_stand_in_kernel():
    """Our side of the FLA path (layout, casts, gradients) on the CPU; the real kernel is tested in test_gpu.py."""
    q, k, v, beta = _delta_inputs(torch.float32, 100)
    s0 = torch.randn(2, 2, 16, 8)
    o_fla, s_fla = delta_rule_fla(q, k, v, beta, initial_state=s0, kernel=_fake_fla_kernel)
    o_ref, s_ref = delta_rule_chunked(q, k, v, beta, initial_state=s0)
    assert o_fla.dtype == torch.float32 and o_fla.shape == o_ref.shape and s_fla.shape == s_ref.shape
    assert (o_fla - o_ref).abs().max() <= 0.05 * o_ref.abs().max()  # bfloat16 inputs
    assert (s_fla - s_ref).abs().max() <= 0.05 * s_ref.abs().max()
    grads = torch.autograd.grad(o_fla.sum(), (q, k, v, beta))
    assert all(g.dtype == torch.float32 and g.abs().sum() > 0 for g in grads)


def test_fla_mode_is_refused_on_cpu_and_never_imported_otherwise(monkeypatch):
    for name in ("fla", "fla.ops", "fla.ops.delta_rule"):  # any import of the optional package now fails
        monkeypatch.setitem(sys.modules, name, None)
    q, k, v, beta = (t.detach() for t in _delta_inputs(torch.float32, 8))
    with pytest.raises(ValueError, match="needs CUDA tensors"):
        delta_rule(q, k, v, beta, mode="fla")
    with pytest.raises(ValueError, match="mode must be one of chunk, recurrent, fla"):
        delta_rule(q, k, v, beta, mode="triton")
    with pytest.raises(ValueError, match="mode must be one of"):
        DeltaNetLayer(16, 2, mode="triton")
    with pytest.raises(ValueError, match="deltanet_mode must be one of"):
        TrainConfig(deltanet_mode="triton")
    DeltaNetLayer(16, 2)(torch.randn(1, 5, 16))  # the default path never imports the optional package


@pytest.mark.parametrize("method", ["assoc", "chunk"])
@pytest.mark.parametrize("dtype", [torch.float64, torch.float32], ids=["fp64", "fp32"])
def test_diagonal_scan_equals_loop(method, dtype):
    g = torch.Generator().manual_seed(1)
    a = (torch.rand(3, 203, 5, generator=g, dtype=dtype) * 2 - 1).requires_grad_()  # negative entries included
    b = torch.randn(3, 203, 5, generator=g, dtype=dtype).requires_grad_()
    h0 = torch.randn(3, 5, generator=g, dtype=dtype).requires_grad_()
    ref = diagonal_scan_reference(a, b, h0)
    fast = diagonal_scan(a, b, h0, method=method)
    tol = 1e-10 if dtype == torch.float64 else 1e-5
    assert (ref - fast).abs().max() <= tol
    w = torch.randn_like(ref)
    for x, y in zip(
        torch.autograd.grad((ref * w).sum(), (a, b, h0)), torch.autograd.grad((fast * w).sum(), (a, b, h0)), strict=True
    ):
        assert (x - y).abs().max() <= 10 * tol


def test_diagonal_scan_rejects_bad_input():
    a = torch.zeros(1, 4, 2)
    with pytest.raises(ValueError, match="method"):
        diagonal_scan(a, a, method="fft")
    with pytest.raises(ValueError, match="same shape"):
        diagonal_scan(a, torch.zeros(1, 4, 3))


@pytest.mark.parametrize("eig_range", ["[0,1]", "[-1,1]"])
def test_selective_scan_equals_loop(eig_range):
    g = torch.Generator().manual_seed(2)
    B, T, E, N = 2, 37, 6, 4
    x = torch.randn(B, T, E, generator=g, dtype=torch.float64).requires_grad_()
    delta = torch.nn.functional.softplus(torch.randn(B, T, E, generator=g, dtype=torch.float64)).requires_grad_()
    A = (-torch.exp(torch.randn(E, N, generator=g, dtype=torch.float64))).requires_grad_()
    Bm = torch.randn(B, T, N, generator=g, dtype=torch.float64).requires_grad_()
    Cm = torch.randn(B, T, N, generator=g, dtype=torch.float64).requires_grad_()
    D = torch.ones(E, dtype=torch.float64).requires_grad_()
    inputs = (x, delta, A, Bm, Cm, D)
    ref = selective_scan_reference(*inputs, eig_range)
    w = torch.randn_like(ref)
    g1 = torch.autograd.grad((ref * w).sum(), inputs)
    for method in ("assoc", "chunk"):
        fast = selective_scan(*inputs, eig_range, method=method)
        assert (ref - fast).abs().max() <= 1e-9
        g2 = torch.autograd.grad((fast * w).sum(), inputs)
        for u, v in zip(g1, g2, strict=True):
            assert (u - v).abs().max() <= 1e-9


def test_mamba_transition_ranges():
    """Spec §9.2: closed intervals; strictly inside for ΔA in [-5, -1e-3]; negative for ΔA < -ln 2."""
    delta = torch.logspace(-6, 3, 200, dtype=torch.float32)[:, None]
    A = -torch.tensor([[1.0, 16.0]])
    pos, neg = mamba_transition(delta, A, "[0,1]"), mamba_transition(delta, A, "[-1,1]")
    assert pos.min() >= 0 and pos.max() <= 1
    assert neg.min() >= -1 and neg.max() <= 1 and neg.min() < 0
    dA = torch.linspace(-5, -1e-3, 500, dtype=torch.float64)
    inside = mamba_transition(-dA[:, None], torch.tensor([[-1.0]], dtype=torch.float64), "[-1,1]")[:, 0, 0]
    assert (inside > -1).all() and (inside < 1).all()
    ln2 = torch.log(torch.tensor(2.0, dtype=torch.float64))
    assert (inside[dA < -ln2] < 0).all() and (inside[dA > -ln2] > 0).all()


@pytest.mark.parametrize("text", ["0,1", "[0, 1]", "-1,1", "[-1,1]"])
def test_parse_eig_range_accepts(text):
    assert parse_eig_range(text) in ("[0,1]", "[-1,1]")


def test_parse_eig_range_rejects():
    with pytest.raises(ValueError, match=r"\[0,1\] or \[-1,1\]"):
        parse_eig_range("-2,2")
