"""Paired comparison of two models over seeds: the per-seed differences, Student's t and an exact sign-flip test.

Every model of a seed shares its data, initial weights, batches and sampling noise, so the seed-by-seed difference
of a metric removes most of the seed-to-seed variation. The test is decided by the exact two-sided sign-flip
(randomisation) p-value of the mean difference, which needs no normality assumption; with several comparisons
against one baseline, Holm's step-down correction keeps the family-wise error at the stated level.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence

import numpy as np

MAX_EXACT = 16  # seeds up to which all 2^n sign patterns are enumerated (65,536 patterns)
N_RANDOM = 100_000  # sign patterns drawn above that


def sign_flip_pvalue(diffs: Sequence[float], seed: int = 0) -> float:
    """Two-sided p-value of mean(diffs) = 0 under random signs: share of sign patterns with |mean| >= observed.

    Exact (all 2^n patterns) for n <= 16, else `N_RANDOM` random patterns (with the observed one counted).
    """
    d = np.asarray(diffs, dtype=np.float64)
    if d.ndim != 1 or d.size < 1:
        raise ValueError(f"diffs must be a non-empty 1-D sequence, got shape {d.shape}")
    observed = abs(d.mean())
    if d.size <= MAX_EXACT:
        signs = np.array(list(itertools.product((1.0, -1.0), repeat=d.size)))
        extreme = np.abs(signs @ d / d.size) >= observed * (1 - 1e-12)
        return float(extreme.mean())
    signs = np.random.default_rng(seed).choice((1.0, -1.0), size=(N_RANDOM, d.size))
    extreme = np.abs(signs @ d / d.size) >= observed * (1 - 1e-12)
    return float((extreme.sum() + 1) / (N_RANDOM + 1))


def paired_comparison(baseline: Sequence[float], other: Sequence[float]) -> dict[str, float | int]:
    """Paired statistics of `baseline - other` (positive: `other` is lower, i.e. better for an error metric)."""
    b, o = np.asarray(baseline, dtype=np.float64), np.asarray(other, dtype=np.float64)
    if b.shape != o.shape or b.ndim != 1:
        raise ValueError(f"baseline and other must be 1-D of equal length, got {b.shape} and {o.shape}")
    d = b - o
    n = d.size
    sd = float(d.std(ddof=1)) if n > 1 else float("nan")
    t = float(d.mean() / (sd / math.sqrt(n))) if n > 1 and sd > 0 else float("nan")
    return {
        "n": n,
        "mean_diff": float(d.mean()),
        "sd_diff": sd,
        "t": t,
        "df": n - 1,
        "p_sign_flip": sign_flip_pvalue(d),
        "ratio_of_means": float(o.mean() / b.mean()),
        "wins": int((o < b).sum()),
    }


def holm(pvalues: Sequence[float]) -> list[float]:
    """Holm step-down adjusted p-values (same order as given), each capped at 1."""
    p = np.asarray(pvalues, dtype=np.float64)
    order = np.argsort(p, kind="stable")
    m = p.size
    adjusted = np.empty(m)
    running = 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (m - rank) * p[i]))
        adjusted[i] = running
    return adjusted.tolist()
