"""Slow, obviously-correct forms the fast code is tested against."""

from __future__ import annotations

import numpy as np
import torch
from scipy.stats import poisson


def selective_scan_reference(
    x: torch.Tensor, dt: torch.Tensor, A: torch.Tensor, B: torch.Tensor, C: torch.Tensor
) -> torch.Tensor:
    """Step-by-step recurrence h_t = exp(dt_t A) h_{t-1} + dt_t B_t x_t, y_t = C_t . h_t (per channel)."""
    b, L, c = x.shape
    h = x.new_zeros(b, B.shape[-1], c)
    ys = []
    for t in range(L):
        a = torch.exp(dt[:, t] * A)  # (b, c)
        h = a[:, None, :] * h + B[:, t, :, None] * (dt[:, t] * x[:, t])[:, None, :]
        ys.append(torch.einsum("bn,bnc->bc", C[:, t], h))
    return torch.stack(ys, 1)


def beta_kl_reference(a1: torch.Tensor, b1: torch.Tensor, a2: torch.Tensor, b2: torch.Tensor) -> torch.Tensor:
    """KL(Beta(a1, b1) || Beta(a2, b2)) by torch.distributions."""
    return torch.distributions.kl_divergence(torch.distributions.Beta(a1, b1), torch.distributions.Beta(a2, b2))


def signal_beta_reference(
    signals: np.ndarray, c: float, beta_min: float, b: tuple[float, ...], w: tuple[float, ...]
) -> tuple[np.ndarray, np.ndarray]:
    """Loop over signals: alpha2 = sum_i w_i c (s_i + beta_min), beta2 = sum_i w_i c (b_i + beta_min)."""
    alpha = np.zeros(signals.shape[:-1])
    beta = np.zeros(signals.shape[:-1])
    for i in range(signals.shape[-1]):
        alpha += w[i] * c * (signals[..., i] + beta_min)
        beta += w[i] * c * (b[i] + beta_min)
    return alpha, beta


def poisson_upper_reference(k: np.ndarray, lam: np.ndarray) -> np.ndarray:
    """P(X >= k | lam) for integer k by the Poisson survival function."""
    return poisson.sf(np.asarray(k) - 1, lam)


def bh_reference(p: np.ndarray) -> np.ndarray:
    """Benjamini-Hochberg q-values by the definition q_i = min_{j: p_j >= p_i} p_j n / rank_j."""
    p = np.asarray(p, float)
    n = p.size
    ranks = np.argsort(np.argsort(p, kind="stable"), kind="stable") + 1
    return np.array([min(1.0, min(p[j] * n / ranks[j] for j in range(n) if p[j] >= p[i])) for i in range(n)])
