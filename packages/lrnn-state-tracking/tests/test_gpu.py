"""On a GPU: our CUDA forms against the loops, and FLA's Triton delta-rule kernel (optional `fla-core`, `mode="fla"`)
against our chunked delta rule with β ∈ (0, 2): outputs, final states, gradients, the DeltaNet layer, and the
benchmark. Skipped without CUDA (and the FLA tests without fla-core)."""

from __future__ import annotations

import pytest
import torch

from iclr25.lrnn_state_tracking.fast import fla_speedup
from iclr25.lrnn_state_tracking.models import DeltaNetLayer
from iclr25.lrnn_state_tracking.ops import delta_rule_chunked, delta_rule_fla, diagonal_scan
from iclr25.lrnn_state_tracking.reference import delta_rule_recurrent, diagonal_scan_reference
from iclr25.shared.device import requires_gpu


@pytest.fixture
def full_float32():
    """TF32 off for the test: a CUDA run earlier in the same process (`configure_torch`) may have turned it on, and
    its 10-bit mantissa alone moves the chunked form by ~5e-3."""
    flags = torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = False
    yield
    torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32 = flags


@pytest.mark.gpu
@requires_gpu
def test_cuda_forms_equal_reference(full_float32):
    g = torch.Generator(device="cuda").manual_seed(0)
    q, k, v = torch.randn(3, 2, 2, 256, 32, device="cuda", generator=g).unbind(0)
    k = torch.nn.functional.normalize(k, dim=-1)
    beta = 2 * torch.rand(2, 2, 256, device="cuda", generator=g)
    o1, s1 = delta_rule_recurrent(q, k, v, beta)
    o2, s2 = delta_rule_chunked(q, k, v, beta, chunk_size=64)
    assert (o1 - o2).abs().max() <= 1e-3 and (s1 - s2).abs().max() <= 1e-3
    a = torch.rand(4, 300, 8, device="cuda", generator=g) * 2 - 1
    b = torch.randn(4, 300, 8, device="cuda", generator=g)
    assert (diagonal_scan(a, b) - diagonal_scan_reference(a, b)).abs().max() <= 1e-4


def _close(a: torch.Tensor, b: torch.Tensor, rel: float) -> bool:
    """|a - b| within `rel` of b's largest entry (bfloat16 inputs: ~3 significant digits)."""
    return bool((a.float() - b.float()).abs().max() <= rel * b.float().abs().max() + 1e-3)


@pytest.mark.gpu
@requires_gpu
def test_fla_kernel_matches_ours_with_negative_eigenvalues():
    pytest.importorskip("fla.ops.delta_rule")
    g = torch.Generator(device="cuda").manual_seed(1)
    B, H, T, D = 2, 2, 300, 64  # T not a multiple of FLA's chunk (64)
    q, k, v = (torch.randn(B, H, T, D, device="cuda", generator=g) for _ in range(3))
    k = torch.nn.functional.normalize(k, dim=-1)
    beta = 2 * torch.rand(B, H, T, device="cuda", generator=g)  # allow_neg_eigval: β ∈ (0, 2)
    h0 = 0.1 * torch.randn(B, H, D, D, device="cuda", generator=g)
    # ours on the bfloat16-rounded inputs FLA sees, in float32: only the kernels' arithmetic differs
    q, k, v, beta = (t.bfloat16().float().requires_grad_() for t in (q, k, v, beta))
    o_fla, s_fla = delta_rule_fla(q, k, v, beta, initial_state=h0)
    o_fla.square().sum().backward()
    grads_fla = [t.grad.clone() for t in (q, k, v, beta)]
    for t in (q, k, v, beta):
        t.grad = None
    o_ours, s_ours = delta_rule_chunked(q, k, v, beta, chunk_size=64, initial_state=h0)
    o_ours.square().sum().backward()
    assert o_fla.dtype == torch.float32 and o_fla.shape == o_ours.shape
    assert _close(o_fla, o_ours, 2e-2) and _close(s_fla, s_ours, 2e-2)
    for got, want in zip(grads_fla, (q.grad, k.grad, v.grad, beta.grad), strict=True):
        assert _close(got, want, 5e-2)


@pytest.mark.gpu
@requires_gpu
def test_deltanet_layer_fla_mode_equals_chunk_mode():
    pytest.importorskip("fla.ops.delta_rule")
    torch.manual_seed(0)
    layer = DeltaNetLayer(128, n_heads=4, eig_range="[-1,1]").cuda()
    x = torch.randn(4, 200, 128, device="cuda")
    want = layer(x)
    layer.mode = "fla"
    got = layer(x)
    assert _close(got, want, 5e-2)


@pytest.mark.gpu
@requires_gpu
def test_fla_benchmark_on_gpu():
    pytest.importorskip("fla.ops.delta_rule")
    out = fla_speedup(batch_size=4, n_heads=4, seq_len=1_024, head_dim=64, reps=3)
    assert out["ours_fwd_bwd_tokens_per_s"] > 0 and out["fla_fwd_bwd_tokens_per_s"] > 0  # the speed-up is reported
    assert out["max_abs_diff"] <= 0.1
