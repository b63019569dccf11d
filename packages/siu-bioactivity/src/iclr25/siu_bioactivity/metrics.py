"""The redefined task's metrics (spec §3.3): per-pocket Pearson*/Spearman*, pooled metrics, masked MSE.

    Pearson*_t = nanmean_{p : |S_{t,p}| >= 2} pearson({y^_i}, {y_i}), i in S_{t,p}     (Spearman* likewise)

A pocket whose predictions (or labels) are all exactly equal has an undefined correlation (NaN, scipy's rule);
`nanmean` drops it, so a pocket-only model, whose prediction is constant within a pocket, scores NaN.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from iclr25.siu_bioactivity.formats import LABEL_TYPES


def _groups(pocket_ids: Sequence[Any]) -> tuple[np.ndarray, np.ndarray]:
    """(order sorting rows by pocket, start of each pocket's run in that order)."""
    _, inverse = np.unique(np.asarray(pocket_ids), return_inverse=True)
    order = np.argsort(inverse, kind="stable")
    sorted_g = inverse[order]
    starts = np.flatnonzero(np.r_[True, sorted_g[1:] != sorted_g[:-1]]) if len(sorted_g) else np.zeros(0, int)
    return order, starts


def _average_ranks(x: np.ndarray) -> np.ndarray:
    """Ranks 1..n with ties given their average rank (scipy.stats.rankdata's default)."""
    order = np.argsort(x, kind="mergesort")
    xs = x[order]
    new = np.r_[True, xs[1:] != xs[:-1]]
    dense_start = np.flatnonzero(new)
    ends = np.r_[dense_start[1:], len(x)]
    avg = (dense_start + ends + 1) / 2.0  # average of 1-based ranks start+1..end
    ranks = np.empty(len(x))
    ranks[order] = np.repeat(avg, ends - dense_start)
    return ranks


def per_pocket_values(
    pred: Any, target: Any, pocket_ids: Sequence[Any], method: str = "pearson", min_size: int = 2
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(pocket ids, correlation per pocket (NaN = undefined), size per pocket) for pockets of >= `min_size`."""
    if method not in ("pearson", "spearman"):
        raise ValueError(f"method must be one of pearson, spearman; got {method!r}")
    pred = np.asarray(pred, dtype=np.float64).ravel()
    target = np.asarray(target, dtype=np.float64).ravel()
    ids = np.asarray(pocket_ids)
    if not (len(pred) == len(target) == len(ids)):
        raise ValueError(f"pred, target and pocket_ids differ in length: {len(pred)}, {len(target)}, {len(ids)}")
    order, starts = _groups(ids)
    ends = np.r_[starts[1:], len(order)].astype(int)
    sizes = ends - starts
    keep = sizes >= min_size
    starts, ends, sizes = starts[keep], ends[keep], sizes[keep]
    x, y = pred[order], target[order]
    names = ids[order][starts] if len(starts) else ids[:0]
    values = np.full(len(starts), np.nan)
    if not len(starts):
        return names, values, sizes
    if method == "spearman":
        x, y = x.copy(), y.copy()
        for s, e in zip(starts, ends, strict=True):
            x[s:e], y[s:e] = _average_ranks(x[s:e]), _average_ranks(y[s:e])
    group = np.repeat(np.arange(len(starts)), sizes)
    idx = np.concatenate([np.arange(s, e) for s, e in zip(starts, ends, strict=True)])
    xs, ys = x[idx], y[idx]
    off = np.r_[0, np.cumsum(sizes)[:-1]]
    # a group is constant iff all its values are exactly equal (never via an inexact mean)
    const = (np.maximum.reduceat(xs, off) == np.minimum.reduceat(xs, off)) | (
        np.maximum.reduceat(ys, off) == np.minimum.reduceat(ys, off)
    )
    xm = xs - (np.add.reduceat(xs, off) / sizes)[group]  # two-pass centring, as scipy.stats.pearsonr
    ym = ys - (np.add.reduceat(ys, off) / sizes)[group]
    nx = np.sqrt(np.add.reduceat(xm * xm, off))
    ny = np.sqrt(np.add.reduceat(ym * ym, off))
    with np.errstate(invalid="ignore", divide="ignore"):
        r = np.add.reduceat((xm / nx[group]) * (ym / ny[group]), off)
    r = np.clip(r, -1.0, 1.0)
    values = np.where(const, np.nan, r)
    return names, values, sizes


def per_pocket_correlation(
    pred: Any,
    target: Any,
    pocket_ids: Sequence[Any],
    method: str = "pearson",
    min_size: int = 2,
    nan_as_zero: bool = False,
) -> float:
    """Pearson*/Spearman* (spec §3.3): the mean over pockets with >= `min_size` molecules of the within-pocket
    correlation; undefined pockets are dropped (nanmean) or, with `nan_as_zero`, count as 0. NaN when no pocket
    has a defined value (or, with `nan_as_zero`, when no pocket is large enough)."""
    _, values, _ = per_pocket_values(pred, target, pocket_ids, method, min_size)
    if nan_as_zero:
        values = np.nan_to_num(values, nan=0.0)
    if not len(values) or np.isnan(values).all():
        return float("nan")
    return float(np.nanmean(values))


def pooled_correlation(pred: Any, target: Any, method: str = "pearson") -> float:
    """The "traditional" correlation over all pooled pairs (NaN when either side is constant)."""
    pred = np.asarray(pred, dtype=np.float64).ravel()
    target = np.asarray(target, dtype=np.float64).ravel()
    if len(pred) < 2:
        return float("nan")
    _, values, _ = per_pocket_values(pred, target, np.zeros(len(pred), dtype=int), method, 2)
    return float(values[0])


def evaluate_bioactivity(
    pred: Any,
    target: Any,
    pocket_ids: Sequence[Any],
    types: Sequence[str] = LABEL_TYPES,
    min_size: int = 2,
) -> dict[str, dict[str, float]]:
    """Per label type t (column of `pred`/`target`, rows with target_t > 0): pearson_star, spearman_star, their
    `_nan0` variants (NaN pockets count 0), pearson_all, spearman_all (pooled), rmse, mae (pooled), n_pockets
    (pockets with >= `min_size` molecules), n_defined (pockets with a defined Pearson), n."""
    pred = np.asarray(pred, dtype=np.float64)
    target = np.asarray(target, dtype=np.float64)
    ids = np.asarray(pocket_ids)
    if pred.ndim == 1:
        pred, target = pred[:, None], target[:, None]
    if pred.shape != target.shape or pred.shape[1] != len(types) or len(ids) != len(pred):
        raise ValueError(
            f"pred {pred.shape} and target {target.shape} must be (N, {len(types)}) with N = len(pocket_ids) = {len(ids)}"
        )
    out: dict[str, dict[str, float]] = {}
    for j, t in enumerate(types):
        m = target[:, j] > 0
        p, y, g = pred[m, j], target[m, j], ids[m]
        _, pv, _ = per_pocket_values(p, y, g, "pearson", min_size)
        _, sv, _ = per_pocket_values(p, y, g, "spearman", min_size)
        star = {
            "pearson_star": float(np.nanmean(pv)) if len(pv) and not np.isnan(pv).all() else float("nan"),
            "spearman_star": float(np.nanmean(sv)) if len(sv) and not np.isnan(sv).all() else float("nan"),
            "pearson_star_nan0": float(np.nan_to_num(pv, nan=0.0).mean()) if len(pv) else float("nan"),
            "spearman_star_nan0": float(np.nan_to_num(sv, nan=0.0).mean()) if len(sv) else float("nan"),
        }
        err = p - y
        out[t] = {
            **star,
            "pearson_all": pooled_correlation(p, y, "pearson"),
            "spearman_all": pooled_correlation(p, y, "spearman"),
            "rmse": float(np.sqrt(np.mean(err**2))) if len(err) else float("nan"),
            "mae": float(np.mean(np.abs(err))) if len(err) else float("nan"),
            "n_pockets": len(pv),
            "n_defined": int(np.isfinite(pv).sum()),
            "n": int(m.sum()),
        }
    return out


def masked_mse(pred: Any, target: Any) -> Any:
    """Masked MSE of the multi-task heads (official loss): sum(mask (y^ - y)^2) / sum(mask), mask = target >= 0.
    Works on NumPy arrays and torch tensors (differentiable); 0 when nothing is labelled."""
    if hasattr(pred, "detach"):  # torch
        mask = (target >= 0).to(pred.dtype)
        return ((pred - target) ** 2 * mask).sum() / mask.sum().clamp(min=1.0)
    pred, target = np.asarray(pred, dtype=np.float64), np.asarray(target, dtype=np.float64)
    mask = target >= 0
    return float(((pred - target) ** 2 * mask).sum() / max(mask.sum(), 1))
