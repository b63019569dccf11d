"""Backbones: the chunked selective scan equals the step-by-step recurrence (values and gradients); shapes."""

from __future__ import annotations

import importlib.util

import pytest
import torch
from torch import nn

from iclr25.seq2exp import BiGRU, BiMamba, DilatedCNN, selective_scan
from iclr25.seq2exp.backbones import LongDecayMix, ShiftConv
from iclr25.seq2exp.reference import selective_scan_reference


def _inputs(L: int, seed: int = 0):
    g = torch.Generator().manual_seed(seed)
    b, c, n = 2, 3, 4
    x = torch.randn(b, L, c, generator=g, dtype=torch.float64, requires_grad=True)
    dt = (torch.rand(b, L, c, generator=g, dtype=torch.float64) * 0.5).requires_grad_()
    A = -(torch.rand(c, generator=g, dtype=torch.float64) + 0.1)
    B = torch.randn(b, L, n, generator=g, dtype=torch.float64, requires_grad=True)
    C = torch.randn(b, L, n, generator=g, dtype=torch.float64, requires_grad=True)
    return x, dt, A, B, C


def test_selective_scan_matches_reference_with_gradients():
    for L, chunk, max_elems in ((37, 8, 2**25), (16, 16, 2**25), (5, 64, 2**25), (70, 4, 200)):
        x, dt, A, B, C = _inputs(L)
        fast = selective_scan(x, dt, A, B, C, chunk=chunk, max_elems=max_elems)  # 200: one chunk per group
        ref = selective_scan_reference(x, dt, A, B, C)
        assert torch.allclose(fast, ref, atol=1e-10)
        w = torch.randn_like(ref)
        g_fast = torch.autograd.grad((fast * w).sum(), (x, dt, B, C))
        g_ref = torch.autograd.grad((ref * w).sum(), (x, dt, B, C))
        for a, b in zip(g_fast, g_ref, strict=True):
            assert torch.allclose(a, b, atol=1e-9)


def test_shiftconv_equals_conv1d():
    torch.manual_seed(0)
    sc = ShiftConv(3, 5, kernel=3, dilation=4)
    conv = nn.Conv1d(3, 5, 3, dilation=4, padding=4)
    with torch.no_grad():  # Linear over [x(t-4), x(t), x(t+4)] == Conv1d weight (out, in, k)
        conv.weight.copy_(sc.proj.weight.view(5, 3, 3).permute(0, 2, 1))
        conv.bias.copy_(sc.proj.bias)
    x = torch.randn(2, 20, 3)
    assert torch.allclose(sc(x), conv(x.transpose(1, 2)).transpose(1, 2), atol=1e-6)


def test_long_mix_reaches_far_positions():
    torch.manual_seed(0)
    mix = LongDecayMix(4)
    x = torch.zeros(1, 512, 4)
    x[0, 5] = 1.0  # an impulse far from the centre
    assert mix(x)[0, 256].abs().sum() > 0
    assert BiMamba(8, 1, chunk=16)(torch.randn(1, 40, 8)).shape == (1, 40, 8)


def test_backbone_shapes_and_bidirectionality():
    torch.manual_seed(0)
    for net in (DilatedCNN(8, 2), BiGRU(8, 1), BiMamba(8, 2, chunk=16)):
        x = torch.randn(2, 48, 8, requires_grad=True)
        y = net(x)
        assert y.shape == (2, 48, 8)
        w = torch.randn(8)  # (a plain sum of a LayerNorm output is constant)
        g = torch.autograd.grad((y[:, 0] @ w).sum(), x)[0]  # position 0 depends on later ones (bidirectional)
        assert g[:, 30:].abs().sum() > 0


def test_missing_mamba_kernels_get_a_clear_error():
    if importlib.util.find_spec("mamba_ssm") is not None:
        pytest.skip("mamba-ssm is installed")
    with pytest.raises(ModuleNotFoundError, match="use_mamba_ssm=True needs the optional mamba-ssm kernels"):
        BiMamba(8, n_layers=1, use_mamba_ssm=True)
