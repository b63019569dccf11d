"""The theory of Grazzi, Siems et al., "Unlocking State-Tracking in Linear RNNs Through Negative Eigenvalues" (ICLR
2025, arXiv 2411.12537), made executable.

- Generalised Householder (GH) matrices I - β v vᵀ (§4, eq. 3) and Proposition 1: permutations are products of at most
  n - 1 reflections (swaps, β = 2); rotations are products of two reflections.
- §4.1 / Theorem 3: the hand-built one-layer parity LRNN with a(1) = -1; a cyclic-group counter (2×2 rotations); an S5
  word-problem LRNN whose transition matrices are products of ≤ 4 reflections.
- Theorem 1: under finite precision, h ← a h + b with a ≥ 0 becomes constant, so no readout can alternate (parity fails);
  with a = -1 the state alternates forever.

Product convention: a list of factors [M_1, ..., M_k] stands for the matrix product M_1 M_2 ... M_k.
"""

from __future__ import annotations

import math

import numpy as np
import torch
from torch import Tensor

from iclr25.lrnn_state_tracking.ops import diagonal_scan


def householder(v: Tensor, beta: float | Tensor) -> Tensor:
    """Generalised Householder matrix I - β v vᵀ with v normalised to unit length (eigenvalues 1 - β and 1)."""
    v = v / v.norm()
    return torch.eye(v.numel(), dtype=v.dtype) - beta * torch.outer(v, v)


def swap_reflection(i: int, j: int, n: int, dtype: torch.dtype = torch.float64) -> Tensor:
    """The transposition (i j) as the reflection I - 2 v vᵀ, v = (e_i - e_j)/√2 (Proposition 1)."""
    if not (0 <= i < n and 0 <= j < n) or i == j:
        raise ValueError(f"need distinct indices in [0, {n}), got i={i}, j={j}")
    v = torch.zeros(n, dtype=dtype)
    v[i], v[j] = 1.0, -1.0
    return householder(v, 2.0)


def permutation_matrix(perm: list[int] | np.ndarray | Tensor, dtype: torch.dtype = torch.float64) -> Tensor:
    """P with P e_x = e_{perm[x]}, so that P_{p∘q} = P_p P_q."""
    perm = [int(p) for p in perm]
    if sorted(perm) != list(range(len(perm))):
        raise ValueError(f"not a permutation of 0..{len(perm) - 1}: {perm}")
    P = torch.zeros(len(perm), len(perm), dtype=dtype)
    P[perm, list(range(len(perm)))] = 1.0
    return P


def permutation_to_householders(
    perm: list[int] | np.ndarray | Tensor, dtype: torch.dtype = torch.float64
) -> list[Tensor]:
    """At most n - 1 reflections whose product (in list order) is `permutation_matrix(perm)` (Proposition 1)."""
    R = permutation_matrix(perm, dtype)
    n = R.shape[0]
    factors = []
    for j in range(n - 1):  # left-multiply by swaps until R = I; columns < j are already fixed
        i = int(R[:, j].argmax())
        if i != j:
            S = swap_reflection(i, j, n, dtype)
            R = S @ R
            factors.append(S)
    return factors  # S_k ... S_1 P = I and S⁻¹ = S, so P = S_1 S_2 ... S_k


def product(factors: list[Tensor], n: int | None = None) -> Tensor:
    """M_1 M_2 ... M_k (the identity of size n for an empty list)."""
    if not factors:
        if n is None:
            raise ValueError("an empty product needs the size n")
        return torch.eye(n, dtype=torch.float64)
    out = factors[0]
    for M in factors[1:]:
        out = out @ M
    return out


def rotation(theta: float, dtype: torch.dtype = torch.float64) -> Tensor:
    """The 2×2 rotation by theta."""
    c, s = math.cos(theta), math.sin(theta)
    return torch.tensor([[c, -s], [s, c]], dtype=dtype)


def rotation_as_two_reflections(theta: float, dtype: torch.dtype = torch.float64) -> list[Tensor]:
    """Two GH reflections (β = 2) whose product is the rotation by theta: Ref(θ/2) Ref(0) (Theorem 3, cyclic groups)."""

    def reflection(phi: float) -> Tensor:  # across the line at angle phi: normal n = (-sin φ, cos φ)
        return householder(torch.tensor([-math.sin(phi), math.cos(phi)], dtype=dtype), 2.0)

    return [reflection(theta / 2), reflection(0.0)]


def parity_lrnn(bits: Tensor | list[int], a_neg: float = -1.0, dtype: torch.dtype = torch.float64) -> Tensor:
    """The §4.1 construction h_t = a(x_t) h_{t-1} + b(x_t), a(0) = 1, b(0) = 0, a(1) = a_neg, b(1) = 1; y_t = h_t.

    With a_neg = -1 the state is the running parity of the bits (exactly, in any precision). bits (T,) or (B, T).
    """
    x = torch.as_tensor(bits, dtype=dtype)
    batched = x.dim() == 2
    x = x if batched else x.reshape(1, -1)
    a = torch.where(x == 1, torch.tensor(a_neg, dtype=dtype), torch.ones((), dtype=dtype))  # a(1) = a_neg, a(0) = 1
    h = diagonal_scan(a, x.clone(), method="chunk")  # b(x) = x
    return h if batched else h[0]


def finite_precision_orbit(a: float, b: float = 1.0, k: int = 100_000, dtype: type = np.float32) -> np.ndarray:
    """States h_1..h_k of h ← a·h + b from h_0 = 0, computed in the given finite precision (Theorem 1 demo)."""
    a_, b_, h = dtype(a), dtype(b), dtype(0)
    out = np.empty(k, dtype=dtype)
    for t in range(k):
        h = dtype(a_ * h + b_)
        out[t] = h
    return out


def first_constant_step(orbit: np.ndarray) -> int | None:
    """Smallest k̄ such that orbit[k] == orbit[k̄] for all k ≥ k̄ (1-based), or None if the last two states differ."""
    if len(orbit) < 2 or orbit[-1] != orbit[-2]:
        return None
    differs = np.flatnonzero(orbit != orbit[-1])
    return int(differs[-1]) + 2 if len(differs) else 1


def cyclic_counter(tokens: Tensor | list[int], m: int) -> Tensor:
    """Count the 1-tokens mod m with a 2-D LRNN whose transition is a rotation (a product of two reflections)."""
    R = product(rotation_as_two_reflections(2 * math.pi / m))
    h = torch.tensor([1.0, 0.0], dtype=torch.float64)
    out = []
    for x in torch.as_tensor(tokens).tolist():
        h = R @ h if x == 1 else h
        out.append(round(math.atan2(float(h[1]), float(h[0])) / (2 * math.pi / m)) % m)
    return torch.tensor(out)


def s5_lrnn(inputs: Tensor, perms: np.ndarray) -> Tensor:
    """Theorem 3 for S5: h_t = P(g_t) h_{t-1} with P(g) a product of ≤ 4 reflections; decodes prefix-product ids.

    inputs (B, T) element ids into `perms`; returns the ids of p_t = g_t ∘ ... ∘ g_1, (B, T).
    """
    mats = torch.stack([product(permutation_to_householders(p), len(p)) for p in perms])  # (G, n, n)
    n = perms.shape[1]
    weights = n ** torch.arange(n)  # a permutation row as a base-n number, for a table lookup
    lookup = torch.full((n**n,), -1, dtype=torch.long)
    lookup[torch.from_numpy(perms) @ weights] = torch.arange(len(perms))
    h = torch.arange(n, dtype=torch.float64).expand(inputs.shape[0], n)  # h_0 = (0, 1, ..., n-1)
    out = torch.empty_like(inputs)
    for t in range(inputs.shape[1]):
        h = (mats[inputs[:, t]] @ h[..., None])[..., 0]  # h = P(p_t) h_0: h[p_t[x]] = x
        decoded = torch.argsort(h.round(), dim=-1)  # p_t = argsort of the inverse permutation
        out[:, t] = lookup[decoded @ weights]
    return out
