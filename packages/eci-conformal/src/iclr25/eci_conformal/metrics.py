"""Evaluation metrics for online conformal intervals (paper Sec. 5: coverage, average/median width,
rolling coverage; the intro's longest miscoverage run) plus a recovery time after a changepoint.

Paper: "Error-quantified Conformal Inference for Time Series" (ICLR 2025, arXiv 2502.00818).
Convention: metrics are over indices t > burn_in (the official driver's coverage convention; its printed
widths include the burn-in, ours do not, so that ACI's early infinite sets do not dominate the mean).
"""

from __future__ import annotations

import numpy as np


def _arrays(*xs: np.ndarray) -> list[np.ndarray]:
    arrs = [np.asarray(x, dtype=float) for x in xs]
    if any(a.shape != arrs[0].shape or a.ndim != 1 for a in arrs):
        raise ValueError(f"arrays must be 1-D and of one length, got shapes {[a.shape for a in arrs]}")
    return arrs


def covered(lo: np.ndarray, hi: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Boolean array: lo_t <= y_t <= hi_t."""
    lo, hi, y = _arrays(lo, hi, y)
    return (lo <= y) & (y <= hi)


def coverage(lo: np.ndarray, hi: np.ndarray, y: np.ndarray, burn_in: int = 0) -> float:
    """Fraction of t > burn_in with y_t in [lo_t, hi_t] (burn_in = 0 evaluates every index)."""
    c = covered(lo, hi, y)
    start = burn_in + 1 if burn_in > 0 else 0
    if start >= len(c):
        raise ValueError(f"burn_in {burn_in} leaves no evaluation points in a series of length {len(c)}")
    return float(c[start:].mean())


def width_stats(lo: np.ndarray, hi: np.ndarray, burn_in: int = 0) -> dict[str, float]:
    """Average and median width hi - lo over t > burn_in (inf when any set is infinite)."""
    lo, hi = _arrays(lo, hi)
    start = burn_in + 1 if burn_in > 0 else 0
    w = (hi - lo)[start:]
    return {"avg_width": float(np.mean(w)), "median_width": float(np.median(w))}


def longest_miss_run(lo: np.ndarray, hi: np.ndarray, y: np.ndarray, burn_in: int = 0) -> int:
    """Length of the longest run of consecutive miscovered steps after burn-in."""
    start = burn_in + 1 if burn_in > 0 else 0
    miss = ~covered(lo, hi, y)[start:]
    if not miss.any():
        return 0
    edges = np.diff(np.concatenate([[0], miss.astype(np.int8), [0]]))  # +1 where a run starts, -1 after it ends
    return int((np.flatnonzero(edges < 0) - np.flatnonzero(edges > 0)).max())


def rolling_coverage(cov: np.ndarray, window: int = 50) -> np.ndarray:
    """Trailing mean of a coverage indicator over `window` steps (shorter at the start)."""
    cov = np.asarray(cov, dtype=float)
    if window < 1:
        raise ValueError(f"window must be >= 1, got {window}")
    c = np.concatenate([[0.0], np.cumsum(cov)])
    t = np.arange(1, len(cov) + 1)
    start = np.maximum(t - window, 0)
    return (c[t] - c[start]) / (t - start)


def recovery_time(cov: np.ndarray, tau: int, window: int = 50, level: float = 0.85, horizon: int = 300) -> int:
    """Steps after tau until the trailing coverage, having dropped below `level` within `horizon` steps,
    is back at or above it; 0 if it never drops; censored at the series end."""
    rc = rolling_coverage(cov, window)
    if not 0 <= tau < len(rc):
        raise ValueError(f"tau must index the series (0 <= tau < {len(rc)}), got {tau}")
    seg = rc[tau : tau + horizon]
    below = np.flatnonzero(seg < level)
    if below.size == 0:
        return 0
    after = rc[tau + below[0] :]
    back = np.flatnonzero(after >= level)
    return int(below[0] + back[0]) if back.size else int(len(rc) - tau)


def summarize(lo: np.ndarray, hi: np.ndarray, y: np.ndarray, burn_in: int = 0) -> dict[str, float]:
    """Coverage, average/median width and longest miss run in one dict."""
    return {
        "coverage": coverage(lo, hi, y, burn_in),
        **width_stats(lo, hi, burn_in),
        "longest_miss_run": float(longest_miss_run(lo, hi, y, burn_in)),
    }
