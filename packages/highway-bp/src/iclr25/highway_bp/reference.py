"""Slow, obviously-correct reference forms for Highway-BP (Fagnou et al., ICLR 2025, arXiv 2501.17086).

- `cumsumprod_bruteforce`: `CumSumProd(a, M)_i = Σ_{j ≥ i} a_j M_{j−1} ⋯ M_i` straight from the definition (§4.3).
- `path_sum_bruteforce`: Theorem 1, the gradient as an explicit sum over all 2^L paths, grouped by the number
  of J-factors (`w^k − w^{k−1}` of Theorem 2 is the group with exactly k J-factors).
- `exact_backprop_matrices`: `δ_L = e_L, δ_i = e_i + δ_{i+1}(J_{i+1} + K_{i+1})` (§3).
"""

from __future__ import annotations

import itertools

import torch
from torch import Tensor


def _as_matrix(m: Tensor | float | None, d: int, like: Tensor) -> Tensor:
    """A transfer (None, number, diagonal vector or matrix) as a dense (d, d) matrix."""
    if m is None:
        return torch.eye(d, dtype=like.dtype, device=like.device)
    m = torch.as_tensor(m, dtype=like.dtype, device=like.device)
    if m.dim() == 0:
        return m * torch.eye(d, dtype=like.dtype, device=like.device)
    if m.dim() == 1:
        return torch.diag(m)
    return m


def cumsumprod_bruteforce(a: Tensor, M: Tensor | float | None = None, mode: str = "identity") -> Tensor:
    """Σ_{j ≥ i} a_j M_{j−1} ⋯ M_i for row vectors a_j (L, D); M per position (None / scalar / (L, D) / (L, D, D))."""
    L, D = a.shape
    mats = []
    for i in range(L):
        if mode == "identity":
            mats.append(_as_matrix(None, D, a))
        elif mode == "zero":
            mats.append(torch.zeros(D, D, dtype=a.dtype))
        elif mode == "scalar":
            m = torch.as_tensor(M, dtype=a.dtype)
            mats.append(_as_matrix(m if m.dim() == 0 else m[i], D, a))
        else:
            mats.append(_as_matrix(M[i], D, a))
    out = torch.zeros_like(a)
    for i in range(L):
        for j in range(i, L):
            row = a[j].clone()
            for m in range(j - 1, i - 1, -1):  # a_j M_{j−1} M_{j−2} ⋯ M_i
                row = row @ mats[m]
            out[i] += row
    return out


def path_sum_bruteforce(J: Tensor, K: Tensor, e: Tensor, kmax: int) -> Tensor:
    """Theorem 1 grouped by J-count: (kmax+1, L+1, D), entry [c, i] = Σ over paths with exactly c J-factors.

    J, K: (L, D, D) with J[m−1] = J_m, K[m−1] = K_m (row-vector convention); e: (L+1, D) direct loss gradients.
    """
    L = J.shape[0]
    out = torch.zeros(kmax + 1, L + 1, e.shape[1], dtype=e.dtype)
    for i in range(L + 1):
        for j in range(i, L + 1):
            for choice in itertools.product((0, 1), repeat=j - i):  # choice[m − i − 1] = 1: J_m, else K_m
                count = sum(choice)
                if count > kmax:
                    continue
                row = e[j].clone()
                for m in range(j, i, -1):  # e_j Π_{m=j}^{i+1} (J_m or K_m)
                    row = row @ (J[m - 1] if choice[m - i - 1] else K[m - 1])
                out[count, i] += row
    return out


def exact_backprop_matrices(J: Tensor, K: Tensor, e: Tensor) -> Tensor:
    """Exact gradients δ_0..δ_L (L+1, D) from explicit Jacobians: δ_i = e_i + δ_{i+1}(J_{i+1} + K_{i+1})."""
    L = J.shape[0]
    delta = [e[L]]
    for i in range(L - 1, -1, -1):
        delta.append(e[i] + delta[-1] @ (J[i] + K[i]))
    return torch.stack(delta[::-1])
