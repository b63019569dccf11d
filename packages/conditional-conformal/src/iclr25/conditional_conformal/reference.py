"""Slow, obviously-correct forms the fast code is tested against (loops, sorting, no vectorisation tricks).

Imports nothing from the fast modules."""

from __future__ import annotations

import math

import numpy as np


def kth_smallest(values, k: int) -> float:
    """The k-th smallest (1-based) by sorting."""
    return float(sorted(float(v) for v in values)[k - 1])


def conformal_quantile(scores, alpha: float) -> float:
    """Sort, take rank ⌈(1 − α)(n + 1)⌉ (∞ beyond n); the rank is found by counting, not by float ceil."""
    n = len(scores)
    k = 1
    while k < (1 - alpha) * (n + 1) - 1e-9:  # smallest integer k with k >= (1 - alpha)(n + 1)
        k += 1
    return math.inf if k > n else kth_smallest(scores, k)


def mc_quantile(values, level: float) -> float:
    """Smallest value v among the draws such that at least a `level` fraction of draws is ≤ v."""
    s = sorted(float(v) for v in values)
    m = len(s)
    for v in s:
        if sum(w <= v for w in s) >= level * m - 1e-9:
            return v
    return s[-1]


def cp2_pcp_scores(y, centres, tilde, alpha: float, adjust: str):
    """Alg. 1 for one set of rows, point by point: returns (U [n], V [n], τ [n])."""
    U, V, T = [], [], []
    for yk, ck, tk in zip(y, centres, tilde, strict=True):
        v = min(float(np.linalg.norm(np.atleast_1d(yk) - c)) for c in ck)
        d = [min(float(np.linalg.norm(t - c)) for c in ck) for t in tk]
        tau = mc_quantile(d, 1 - alpha)
        U.append(v / tau if adjust == "linear" else v - tau)
        V.append(v)
        T.append(tau)
    return np.array(U), np.array(V), np.array(T)


def union_length(centres, radius: float) -> float:
    """Length of ∪ [c − r, c + r] by merging sorted intervals one by one."""
    if radius < 0:
        return 0.0
    total, cur_lo, cur_hi = 0.0, None, None
    for c in sorted(float(c) for c in centres):
        lo, hi = c - radius, c + radius
        if cur_hi is None or lo > cur_hi:
            if cur_hi is not None:
                total += cur_hi - cur_lo
            cur_lo, cur_hi = lo, hi
        else:
            cur_hi = max(cur_hi, hi)
    return total + (cur_hi - cur_lo)


def hpd_log_level(log_densities, alpha: float) -> float:
    """log λ: the largest level ℓ among the draws' log-densities with at least ⌈(1 − α)M̃⌉ draws at or above ℓ."""
    s = sorted((float(v) for v in log_densities), reverse=True)
    need = math.ceil((1 - alpha) * len(s) - 1e-9)
    return s[need - 1]


def worst_slab_on_points(z, hit, delta: float):
    """Romano et al.'s O(n²) search on projected values z: the (a, b) of least coverage among slabs holding at
    least ⌈δn⌉ points; returns (coverage, a, b)."""
    order = np.argsort(z)
    zs, hs = np.asarray(z)[order], np.asarray(hit, dtype=float)[order]
    n = len(zs)
    min_len = max(1, math.ceil(delta * n))
    best = (math.inf, zs[0], zs[-1])
    for i in range(n):
        total = 0.0
        for j in range(i, n):
            total += hs[j]
            if j - i + 1 >= min_len and total / (j - i + 1) < best[0]:
                best = (total / (j - i + 1), zs[i], zs[j])
    return best
