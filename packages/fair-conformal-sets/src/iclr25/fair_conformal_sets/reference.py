"""Slow, loop-by-loop forms of the scores, calibration rules and decision model; the tests check the fast ones.

Paper: Cresswell et al., "Conformal Prediction Sets Can Cause Disparate Impact", ICLR 2025 (arXiv 2410.01888).
Written straight from the formulas of spec §3 (one item and one label at a time); imports nothing from the
fast modules.
"""

from __future__ import annotations

import math

import numpy as np


def _rank_of(p_row: np.ndarray, label: int) -> tuple[int, list[int]]:
    order = sorted(range(len(p_row)), key=lambda j: (-p_row[j], j))  # most likely first, ties by index
    return order.index(label), order


def score_ref(p: np.ndarray, u: np.ndarray, score: str, *, k_reg: int = 3, lam: float = 0.5) -> np.ndarray:
    """S(x, y) of every item and label from the §3.2 formulas, with U = u[i, y]."""
    n, K = p.shape
    out = np.zeros((n, K))
    for i in range(n):
        for y in range(K):
            r, order = _rank_of(p[i], y)
            before = sum(p[i, order[j]] for j in range(r))
            if score == "lac":
                out[i, y] = 1 - p[i, y]
            elif score == "aps":
                out[i, y] = before + u[i, y] * p[i, y]
            elif score == "raps":
                out[i, y] = before + u[i, y] * p[i, y] + lam * max(r + 1 - k_reg, 0)
            elif score == "saps":
                top = p[i, order[0]]
                out[i, y] = u[i, y] * top if r == 0 else top + lam * (r - u[i, y])
            else:
                raise ValueError(score)
    return out


def quantile_ref(scores: np.ndarray, alpha: float) -> float:
    """The ceil((1-alpha)(n+1))-th smallest score by sorting a list; inf past the end."""
    s = sorted(float(v) for v in scores)
    rank = math.ceil((1 - alpha) * (len(s) + 1) - 1e-9)
    return math.inf if rank > len(s) else s[rank - 1]


def mondrian_ref(cal: np.ndarray, g_cal: np.ndarray, S: np.ndarray, g_test: np.ndarray, alpha: float) -> np.ndarray:
    """Group-wise thresholds, one test item at a time."""
    out = np.zeros(S.shape, dtype=bool)
    for i in range(len(S)):
        q = quantile_ref([c for c, g in zip(cal, g_cal, strict=True) if g == g_test[i]], alpha)
        for y in range(S.shape[1]):
            out[i, y] = S[i, y] <= q
    return out


def smoothed_pvalue_ref(cal: np.ndarray, s: float, u: float) -> float:
    """(#{s_i > s} + u (#{s_i = s} + 1)) / (n + 1) by counting."""
    greater = sum(1 for c in cal if c > s)
    equal = sum(1 for c in cal if c == s)
    return (greater + u * (equal + 1)) / (len(cal) + 1)


def ess_ref(
    S_cal: np.ndarray,
    y_cal: np.ndarray,
    g_cal: np.ndarray,
    in_a: np.ndarray,
    S_test: np.ndarray,
    g_test: np.ndarray,
    alpha: float,
    grid_size: int = 800,
) -> np.ndarray:
    """Spec §3.4 written out: tau_g(k) from part A, r_i on part B by scanning the grid, k_hat, then the sets."""
    K = S_cal.shape[1]
    grid = [K * (j + 1) / grid_size for j in range(grid_size)]

    def tau(group, k):
        values = sorted(S_cal[i, y] for i in range(len(S_cal)) if in_a[i] and g_cal[i] == group for y in range(K))
        n_g = sum(1 for i in range(len(S_cal)) if in_a[i] and g_cal[i] == group)
        return values[min(math.ceil(k * n_g - 1e-9), len(values)) - 1]

    taus = {grp: [tau(grp, k) for k in grid] for grp in set(g_cal.tolist())}
    r = []
    for i in range(len(S_cal)):
        if in_a[i]:
            continue
        s = S_cal[i, y_cal[i]]
        r.append(next((k for j, k in enumerate(grid) if s <= taus[g_cal[i]][j]), math.inf))
    k_hat = quantile_ref(r, alpha)
    out = np.zeros(S_test.shape, dtype=bool)
    for i in range(len(S_test)):
        t = math.inf if math.isinf(k_hat) else taus[g_test[i]][grid.index(k_hat)]
        out[i] = S_test[i] <= t
    return out


def expected_accuracy_ref(sets, labels, groups, skill, override, slope, K) -> np.ndarray:
    """Spec §3.6 closed form, one item at a time; `sets=None` is the control."""
    out = []
    for i in range(len(labels)):
        kappa = skill[groups[i]] if isinstance(skill, dict) else skill
        alone = kappa + (1 - kappa) / K
        if sets is None:
            out.append(alone)
            continue
        members = [y for y in range(K) if sets[i][y]]
        c = 1.0 if labels[i] in members else 0.0
        s = len(members)
        a = min(max(1 - slope * (s - 1), 0.0), 1.0)
        out.append(a * (kappa * (c + (1 - c) * override) + (1 - kappa) * c / s) + (1 - a) * alone)
    return np.array(out)
