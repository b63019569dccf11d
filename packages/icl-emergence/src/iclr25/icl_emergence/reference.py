"""Slow, obviously-correct forms the fast code is tested against: brute-force HMM enumeration, a per-step
least-squares loop, a per-position transformer forward pass and a loop over the two-level loss."""

from __future__ import annotations

from itertools import product

import numpy as np
import torch
from torch import Tensor

from iclr25.icl_emergence.ginc import HMM


def brute_force_next_token(hmm: HMM, prefix: list[int], start: np.ndarray | None = None) -> np.ndarray:
    """p(x_{L+1} | x_1..x_L) by summing over every hidden path h_1..h_{L+1} (H^(L+1) terms)."""
    start = hmm.startprob if start is None else start
    H, V = hmm.emission.shape
    joint = np.zeros(V)
    for path in product(range(H), repeat=len(prefix) + 1):
        p = start[path[0]]
        for t, tok in enumerate(prefix):
            p *= hmm.emission[path[t], tok] * hmm.transmat[path[t], path[t + 1]]
        joint += p * hmm.emission[path[-1]]
    return joint / joint.sum()


def brute_force_loglik(hmm: HMM, tokens: list[int], start: np.ndarray | None = None) -> float:
    """log p(tokens) by enumeration of hidden paths."""
    start = hmm.startprob if start is None else start
    H = hmm.emission.shape[0]
    total = 0.0
    for path in product(range(H), repeat=len(tokens)):
        p = start[path[0]] * hmm.emission[path[0], tokens[0]]
        for t in range(1, len(tokens)):
            p *= hmm.transmat[path[t - 1], path[t]] * hmm.emission[path[t], tokens[t]]
        total += p
    return float(np.log(total))


def least_squares_loop(seq: Tensor, lam: float = 1e-3) -> Tensor:
    """In-context least squares for one sequence (T, d), one prediction index at a time."""
    x = seq.double()
    T, d = x.shape
    out = torch.zeros(T - 1, d, dtype=torch.float64)
    for t in range(T - 1):
        A = torch.zeros(d, d, dtype=torch.float64)
        B = lam * (t + 1) * torch.eye(d, dtype=torch.float64)
        for s in range(t):
            A += torch.outer(x[s + 1], x[s])
            B += torch.outer(x[s], x[s])
        out[t] = A @ torch.linalg.inv(B) @ x[t]
    return out


@torch.no_grad()
def prefix_by_prefix(model: torch.nn.Module, seq: Tensor) -> Tensor:
    """The model's prediction at index t computed from the prefix x_0..x_t alone (what causality must give)."""
    return torch.stack([model(seq[None, : t + 1])[0, -1] for t in range(seq.shape[0])])


def two_level_loss_loop(per_token: Tensor) -> float:
    """L_hat = 1/(K N T) sum_k sum_n sum_t loss[k, n, t] by explicit loops (spec §3.1)."""
    K, N, T = per_token.shape
    total = 0.0
    for k in range(K):
        for n in range(N):
            for t in range(T):
                total += float(per_token[k, n, t])
    return total / (K * N * T)
