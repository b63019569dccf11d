"""Non-conformal set treatments of the study: Top-k and Average-k, plus empty-set filling.

Paper: Cresswell et al., ICLR 2025 (arXiv 2410.01888), §3 of the spec. Average-k follows Lorieul et al. (2021)
as adapted in the official `average_k.py`: one global threshold on the pooled calibration probabilities, ties
assigned at random until exactly ceil(k * n_test) labels are given; k is found by the official bisection on a
validation split (`search_average_k`). Average-k is not a conformal method; the study uses it as a treatment.
"""

from __future__ import annotations

import math

import numpy as np

from iclr25.fair_conformal_sets.calibrate import fill_empty_with_top1

__all__ = ["average_k", "average_k_threshold", "fill_empty_with_top1", "search_average_k", "top_k"]


def top_k(probs: np.ndarray, k: int = 3) -> np.ndarray:
    """The k most probable labels of each item (k = 3 in the official config); ties by label index."""
    p = np.asarray(probs)
    if not 1 <= k <= p.shape[1]:
        raise ValueError(f"k must be in [1, {p.shape[1]}], got {k}")
    order = np.argsort(-p, axis=1, kind="stable")[:, :k]
    out = np.zeros(p.shape, dtype=bool)
    np.put_along_axis(out, order, True, axis=1)
    return out


def average_k_threshold(cal_probs: np.ndarray, k: float) -> float:
    """t = lower quantile of all n*K calibration probabilities at level 1 - k/K."""
    p = np.asarray(cal_probs, dtype=np.float64)
    K = p.shape[1]
    if not 0 <= k <= K:
        raise ValueError(f"average set size k must be in [0, {K}], got {k}")
    return float(np.quantile(p.ravel(), 1 - k / K, method="lower"))


def average_k(
    cal_probs: np.ndarray, test_probs: np.ndarray, k: float, rng: np.random.Generator | None = None
) -> np.ndarray:
    """Average-k sets: {y : p_y > t}, plus random ties p_y = t until ceil(k n_test) labels in total."""
    t = average_k_threshold(cal_probs, k)
    p = np.asarray(test_probs, dtype=np.float64)
    sets = p > t
    missing = math.ceil(k * len(p) - sets.sum())
    if missing > 0:
        rng = np.random.default_rng() if rng is None else rng
        rows, cols = np.nonzero(p == t)
        pick = rng.permutation(len(rows))[:missing]
        sets[rows[pick], cols[pick]] = True
    return sets


def search_average_k(
    cal_probs: np.ndarray,
    val_probs: np.ndarray,
    val_labels: np.ndarray,
    alpha: float,
    k_start: float,
    *,
    rng: np.random.Generator | None = None,
    max_steps: int = 200,
) -> float:
    """The official bisection: k such that validation coverage, rounded to 3 decimals, equals 1 - alpha.

    Starts at k_high = k = int(k_start) (the marginal CP mean size), steps up by 0.5 while coverage is too low,
    then bisects. We start at max(1, int(k_start)) (the official loop never runs when int(k_start) = 0) and stop
    after `max_steps` evaluations.
    """
    rng = np.random.default_rng() if rng is None else rng
    K = np.asarray(cal_probs).shape[1]
    y = np.asarray(val_labels)
    target = round(1 - alpha, 3)
    k_low, k_high = 0.0, float(max(1, int(k_start)))
    k = k_high
    for _ in range(max_steps):
        sets = average_k(cal_probs, val_probs, min(k, K), rng)
        coverage = round(float(sets[np.arange(len(y)), y].mean()), 3)
        if coverage < target:
            if k_high == k:
                if k >= K:
                    return float(K)
                k, k_high = k + 0.5, k_high + 0.5
            else:
                k_low, k = k, (k_high + k) / 2
        elif coverage > target:
            k_high, k = k, (k + k_low) / 2
        if coverage == target or round(k_low, 5) == round(k_high, 5):
            break
    return float(min(k, K))
