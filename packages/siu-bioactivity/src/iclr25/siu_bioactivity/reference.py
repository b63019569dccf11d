"""Slow, obviously-correct forms the fast code is tested against (loops over groups, atoms and cells)."""

from __future__ import annotations

import itertools
import warnings
from typing import Any

import numpy as np


def per_pocket_correlation_loop(
    pred: Any, target: Any, pocket_ids: Any, method: str = "pearson", min_size: int = 2, nan_as_zero: bool = False
) -> float:
    """Per-group scipy pearsonr/spearmanr, groups < min_size skipped, nanmean (spec §9.1)."""
    from scipy import stats

    pred, target, ids = np.asarray(pred, float), np.asarray(target, float), np.asarray(pocket_ids)
    vals = []
    for g in np.unique(ids):
        m = ids == g
        if m.sum() < min_size:
            continue
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            fn = stats.pearsonr if method == "pearson" else stats.spearmanr
            r = float(fn(pred[m], target[m])[0])
        vals.append(0.0 if (nan_as_zero and np.isnan(r)) else r)
    vals = np.asarray(vals)
    return float("nan") if not len(vals) or np.isnan(vals).all() else float(np.nanmean(vals))


def lcs_identity_loop(a: str, b: str) -> float:
    """LCS(a, b) / max(len) by the textbook dynamic programme."""
    if not a or not b:
        return 0.0
    H = [[0] * (len(b) + 1) for _ in range(len(a) + 1)]
    for i in range(1, len(a) + 1):
        for j in range(1, len(b) + 1):
            H[i][j] = max(H[i - 1][j], H[i][j - 1], H[i - 1][j - 1] + (a[i - 1] == b[j - 1]))
    return H[-1][-1] / max(len(a), len(b))


def interaction_loop(pel: np.ndarray, pxyz: np.ndarray, lel: np.ndarray, lxyz: np.ndarray) -> np.ndarray:
    """The 60-number interaction fingerprint of one complex, atom pair by atom pair."""
    out = np.zeros(60)
    for i, j in itertools.product(range(len(lel)), range(len(pel))):
        if lel[i] < 0 or pel[j] < 0:
            continue
        d = float(np.linalg.norm(lxyz[i] - pxyz[j]))
        b = 0 if d < 3.5 else 1 if d < 5.0 else 2 if d < 8.0 else None
        if b is not None:
            out[(pel[j] * 5 + lel[i]) * 3 + b] += 1
    return out


def contact_score_loop(pel: np.ndarray, pxyz: np.ndarray, lel: np.ndarray, lxyz: np.ndarray) -> float:
    """The raw contact score of one complex (spec §6a), pair by pair."""
    s = 0.0
    for i, j in itertools.product(range(len(lel)), range(len(pel))):
        if lel[i] < 0 or pel[j] < 0:
            continue
        d = float(np.linalg.norm(lxyz[i] - pxyz[j]))
        if lel[i] in (1, 2) and pel[j] in (1, 2) and d < 3.5:
            s += 1
        if lel[i] == 0 and pel[j] == 0 and d < 4.5:
            s += 0.3
        if d < 2.2:
            s -= 1
    return s
