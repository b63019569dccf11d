"""On a GPU: our chunked delta rule against FLA's Triton kernel (when installed) and the CUDA scan against the loop."""

from __future__ import annotations

import pytest
import torch

from iclr25.lrnn_state_tracking.ops import delta_rule_chunked, diagonal_scan
from iclr25.lrnn_state_tracking.reference import delta_rule_recurrent, diagonal_scan_reference
from iclr25.shared.device import requires_gpu


@pytest.mark.gpu
@requires_gpu
def test_cuda_forms_equal_reference():
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


@pytest.mark.gpu
@requires_gpu
def test_fla_kernel_matches_ours_with_negative_eigenvalues():
    fla_delta = pytest.importorskip("fla.ops.delta_rule")
    g = torch.Generator(device="cuda").manual_seed(1)
    B, H, T, D = 2, 2, 256, 64
    q, k, v = torch.randn(3, B, T, H, D, device="cuda", generator=g).unbind(0)  # FLA layout (B, T, H, D)
    k = torch.nn.functional.normalize(k, dim=-1)
    beta = 2 * torch.rand(B, T, H, device="cuda", generator=g)  # allow_neg_eigval: β ∈ (0, 2)
    o_fla, s_fla = fla_delta.chunk_delta_rule(q, k, v, beta, output_final_state=True)
    o_ours, s_ours = delta_rule_chunked(*(t.transpose(1, 2) for t in (q, k, v, beta)), chunk_size=64)
    assert (o_fla - o_ours.transpose(1, 2)).abs().max() <= 5e-3
    assert (s_fla.float() - s_ours).abs().max() <= 5e-3
