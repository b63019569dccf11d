"""Metrics of the paper's Sec. 4: marginal coverage, coverage in x-bins, worst-slab coverage (WSC; Cauchois et
al. 2021, Romano et al. 2020: slab chosen on a 25% split, evaluated on the other 75%), set size / sd(Y)."""

from __future__ import annotations

import numpy as np

from .estimators import as_2d


def _covered(sets_or_covered, Y: np.ndarray | None) -> np.ndarray:
    if Y is None:
        return np.asarray(sets_or_covered, dtype=bool)
    return sets_or_covered.contains(Y)


def coverage(sets, Y: np.ndarray | None = None) -> float:
    """Fraction of y_j ∈ C(x_j); `sets` may also be a boolean array of hits (then Y is None)."""
    return float(_covered(sets, Y).mean())


def binned_coverage(sets, Y: np.ndarray | None, x: np.ndarray, bins: np.ndarray | int = 8, lim=(-4.0, 4.0)):
    """Coverage in equal bins of a scalar feature x: returns (coverage per bin [B], count per bin [B])."""
    hit = _covered(sets, Y)
    x = np.asarray(x, dtype=float).reshape(len(hit), -1)[:, 0]
    edges = np.linspace(lim[0], lim[1], bins + 1) if np.isscalar(bins) else np.asarray(bins, dtype=float)
    idx = np.clip(np.searchsorted(edges, x, side="right") - 1, 0, len(edges) - 2)
    counts = np.bincount(idx, minlength=len(edges) - 1)
    hits = np.bincount(idx, weights=hit, minlength=len(edges) - 1)
    with np.errstate(invalid="ignore"):
        return hits / counts, counts


def set_size(sets, scale: float = 1.0) -> float:
    """Mean set length (volume for q > 1) divided by `scale` (the paper reports size / sd(Y))."""
    size = sets.length() if getattr(sets, "dim", 1) == 1 else sets.volume()
    return float(np.mean(size) / scale)


def min_window_mean(sorted_hits: np.ndarray, min_len: int, iters: int = 40) -> tuple[np.ndarray, np.ndarray]:
    """For each row of 0/1 values, the smallest mean over contiguous windows of length ≥ `min_len`.

    Bisection on the value c: a window (i, j] with mean ≤ c exists iff min_j [Q_j − max_{i ≤ j−L} Q_i] ≤ 0
    for Q_k = P_k − c·k (P the prefix sums); vectorised over rows. Returns (lower, upper) bounds [D] that bracket
    the minimum within 2^-iters.
    """
    h = np.asarray(sorted_hits, dtype=float)
    d, n = h.shape
    prefix = np.concatenate([np.zeros((d, 1)), np.cumsum(h, axis=1)], axis=1)  # [D, n+1]
    k = np.arange(n + 1)
    lo, hi = np.zeros(d), np.ones(d)
    for _ in range(iters):
        c = 0.5 * (lo + hi)
        q = prefix - c[:, None] * k
        run_max = np.maximum.accumulate(q[:, : n - min_len + 1], axis=1)
        feasible = (q[:, min_len:] - run_max).min(1) <= 0
        hi = np.where(feasible, c, hi)
        lo = np.where(feasible, lo, c)
    return lo, hi


def _worst_window(h: np.ndarray, min_len: int, c: float) -> tuple[int, int]:
    """A window (i, j] of length ≥ min_len with mean ≤ c in the 0/1 row h (exists by construction)."""
    n = len(h)
    q = np.concatenate([[0.0], np.cumsum(h)]) - c * np.arange(n + 1)
    run_max = np.maximum.accumulate(q[: n - min_len + 1])
    j = int(np.argmin(q[min_len:] - run_max)) + min_len
    i = int(np.argmax(q[: j - min_len + 1]))
    return i, j


def wsc(
    X: np.ndarray,
    covered: np.ndarray,
    delta: float = 0.1,
    n_dirs: int = 1000,
    split: float = 0.25,
    seed: int = 0,
    directions: np.ndarray | None = None,
    evaluate_on: str = "rest",
    return_slab: bool = False,
):
    """Worst-slab coverage: over slabs {x : a ≤ vᵀx ≤ b} of mass ≥ δ and random directions v, pick the one of
    least coverage on a `split` fraction of the points, and report the coverage of that slab on the rest.

    `evaluate_on="selection"` judges the slab on the points that chose it: optimistically biased downwards (kept
    only to show why the split matters)."""
    X, hit = as_2d(X), np.asarray(covered, dtype=float)
    if not 0 < delta <= 1 or not 0 < split < 1:
        raise ValueError("delta must be in (0, 1] and split in (0, 1)")
    rng = np.random.default_rng(seed)
    perm = rng.permutation(len(X))
    n_sel = round(split * len(X))
    sel, ev = perm[:n_sel], perm[n_sel:]
    if evaluate_on not in ("rest", "selection"):
        raise ValueError(f"evaluate_on must be 'rest' or 'selection', got {evaluate_on!r}")
    if evaluate_on == "selection":
        ev = sel
    if directions is None:
        directions = rng.standard_normal((n_dirs, X.shape[1]))
    v = directions / np.linalg.norm(directions, axis=1, keepdims=True)  # [D, d]
    z = X[sel] @ v.T  # [n_sel, D]
    order = np.argsort(z, axis=0)
    hs = np.take_along_axis(np.broadcast_to(hit[sel][:, None], z.shape), order, axis=0).T  # [D, n_sel]
    min_len = max(1, int(np.ceil(delta * n_sel)))
    _, upper = min_window_mean(hs, min_len)
    best = int(np.argmin(upper))
    i, j = _worst_window(hs[best], min_len, upper[best])
    zs = np.sort(z[:, best])
    a, b = zs[i], zs[j - 1]
    ze = X[ev] @ v[best]
    inside = (ze >= a) & (ze <= b)
    value = float(hit[ev][inside].mean()) if inside.any() else float("nan")
    if return_slab:
        return value, {"direction": v[best], "a": float(a), "b": float(b), "selection_coverage": float(upper[best])}
    return value
