"""Stein kernels: closed forms == autograd (values and score-gradients), symmetry, Stein identity, self-scores."""

from __future__ import annotations

import pytest
import torch

from iclr25.hd_explain.reference import imq_base, linear_base, rbf_base, stein_kernel_autograd
from iclr25.hd_explain.stein import (
    resolve_bandwidth,
    stein_kernel,
    stein_kernel_imq,
    stein_kernel_linear,
    stein_kernel_rbf,
    stein_self_scores,
)


def _points(n1=3, n2=4, dim=5, seed=0):
    g = torch.Generator().manual_seed(seed)
    return [torch.randn(n, dim, generator=g, dtype=torch.float64) for n in (n1, n2, n1, n2)]


CASES = {
    "rbf-h0.7": (lambda *a: stein_kernel_rbf(*a, h=0.7), rbf_base(0.7)),
    "rbf-h5": (lambda *a: stein_kernel_rbf(*a, h=5.0), rbf_base(5.0)),
    "imq": (stein_kernel_imq, imq_base()),
    "imq-g2-b0.3": (lambda *a: stein_kernel_imq(*a, g=2.0, beta=0.3), imq_base(2.0, 0.3)),
    "linear": (stein_kernel_linear, linear_base()),
}


@pytest.mark.parametrize("case", list(CASES))
@pytest.mark.parametrize("shape", [(3, 4, 5), (1, 6, 2)], ids=["3x4-D5", "1x6-D2"])
def test_closed_form_matches_autograd(case, shape):
    fast, base = CASES[case]
    D1, D2, S1, S2 = _points(*shape)
    S1.requires_grad_(True)
    ref = stein_kernel_autograd(base, D1, D2, S1, S2)
    out = fast(D1, D2, S1, S2)
    torch.testing.assert_close(out, ref, atol=1e-6, rtol=1e-6)
    w = torch.randn(out.shape, dtype=torch.float64)
    g_fast = torch.autograd.grad((out * w).sum(), S1)[0]
    g_ref = torch.autograd.grad((ref * w).sum(), S1)[0]
    torch.testing.assert_close(g_fast, g_ref, atol=1e-6, rtol=1e-6)


@pytest.mark.parametrize("kernel", ["rbf", "imq", "linear"])
def test_gradcheck_in_points(kernel):
    D1, D2, S1, S2 = [t.requires_grad_(True) for t in _points(2, 3, 3, seed=1)]
    assert torch.autograd.gradcheck(lambda *a: stein_kernel(*a, kernel=kernel, h=1.3), (D1, D2, S1, S2))


@pytest.mark.parametrize("kernel", ["rbf", "imq", "linear"])
def test_symmetry(kernel):
    D1, D2, S1, S2 = _points()
    a = stein_kernel(D1, D2, S1, S2, kernel, h=2.0)
    b = stein_kernel(D2, D1, S2, S1, kernel, h=2.0)
    torch.testing.assert_close(a, b.T)


def test_official_linear_quirk_differs_and_is_not_stein():
    D1, D2, S1, S2 = _points()
    quirk = stein_kernel_linear(D1, D2, S1, S2, official_quirk=True)
    assert not torch.allclose(quirk, stein_kernel_linear(D1, D2, S1, S2))
    expected = (S1 @ S2.T) * (D1 @ D2.T) + S1 @ D2.T + D1 @ S2.T + D1.shape[1]
    torch.testing.assert_close(quirk, expected)


def test_stein_identity_rbf():
    """Spec check 2: s = -d under d ~ N(0, I): U-statistic ~ 0; with the score of N(1, I) the mean is ~ 4."""
    g = torch.Generator().manual_seed(0)
    d = torch.randn(2000, 10, generator=g, dtype=torch.float64)
    K = stein_kernel_rbf(d, d, -d, -d, h=10.0)
    n = d.shape[0]
    u_stat = (K.sum() - K.diagonal().sum()) / (n * (n - 1))
    assert abs(float(u_stat)) < 0.01
    assert abs(float(K.mean())) < 0.02  # V-statistic
    K_alt = stein_kernel_rbf(d, d, -(d - 1), -(d - 1), h=10.0)
    assert float((K_alt.sum() - K_alt.diagonal().sum()) / (n * (n - 1))) > 1.0


@pytest.mark.parametrize("kernel", ["rbf", "imq", "linear"])
def test_self_scores_equal_diagonal(kernel):
    D, _, S, _ = _points(6, 1, 4)
    full = stein_kernel(D, D, S, S, kernel, h=1.7)
    torch.testing.assert_close(stein_self_scores(D, S, kernel, h=1.7), full.diagonal())


def test_rbf_self_score_closed_form():
    """Spec check 3: RBF self-score = |s|^2 + D/h exactly."""
    D, _, S, _ = _points(5, 1, 7)
    assert torch.equal(stein_self_scores(D, S, "rbf", h=3.0), (S * S).sum(1) + 7 / 3.0)


def test_rbf_parts_sum_to_whole():
    D1, D2, S1, S2 = _points()
    parts = [stein_kernel_rbf(D1, D2, S1, S2, 2.0, parts=(p,)) for p in ("score", "cross", "trace")]
    torch.testing.assert_close(sum(parts), stein_kernel_rbf(D1, D2, S1, S2, 2.0))


def test_bandwidth_resolution_and_errors():
    assert resolve_bandwidth("dim_d", 1.0, 2, 6) == 6.0
    assert resolve_bandwidth("dim_x", 0.5, 2, 6) == 1.0
    assert resolve_bandwidth(3.5, 1.0, 2, 6) == 3.5
    assert resolve_bandwidth("2.5", 1.0, 2, 6) == 2.5
    for bad in ("dim_y", -1.0, 0):
        with pytest.raises(ValueError, match="bandwidth"):
            resolve_bandwidth(bad, 1.0, 2, 6)
    D1, D2, S1, S2 = _points()
    with pytest.raises(ValueError, match="kernel must be one of"):
        stein_kernel(D1, D2, S1, S2, "poly")
    with pytest.raises(ValueError, match="shape"):
        stein_kernel_rbf(D1, D2[:, :2], S1, S2, 1.0)
    with pytest.raises(ValueError, match="h must be > 0"):
        stein_kernel_rbf(D1, D2, S1, S2, 0.0)
