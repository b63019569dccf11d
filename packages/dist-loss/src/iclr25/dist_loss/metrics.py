"""Imbalanced-regression metrics used by Dist Loss (Nie, Tang, Hong, ICLR 2025, arXiv 2411.15216, Sec. 4.1).

Shot regions follow DIR (Yang et al. 2021): a label bin is many-shot with more than 100 training
samples, few-shot with fewer than 20, median-shot otherwise. Per region: MAE, MSE and GM (geometric
mean of absolute errors). Unlike the official metric code (which casts training labels to int and
compares them with float test labels), labels are binned on a grid, so non-integer labels work too.
"""

from __future__ import annotations

import numpy as np

__all__ = ["REGIONS", "balanced_mae", "shot_metrics", "shot_regions", "wasserstein1"]

REGIONS = ("all", "many", "median", "few")


def _as_1d(x: object, name: str) -> np.ndarray:
    if hasattr(x, "detach"):
        x = x.detach().cpu().numpy()
    arr = np.asarray(x, dtype=np.float64).reshape(-1)
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} must be finite")
    return arr


def _bins(labels: np.ndarray, min_label: float, step: float) -> np.ndarray:
    return np.floor((labels - min_label) / step + 1e-9).astype(np.int64)


def shot_regions(
    target: np.ndarray,
    train_labels: np.ndarray,
    many: int = 100,
    few: int = 20,
    min_label: float = 0.0,
    step: float = 1.0,
) -> np.ndarray:
    """Region of each target ("many" | "median" | "few") from its bin's training count."""
    if not few <= many:
        raise ValueError(f"need few <= many thresholds, got many={many}, few={few}")
    target, train_labels = _as_1d(target, "target"), _as_1d(train_labels, "train_labels")
    train_bins, counts = np.unique(_bins(train_labels, min_label, step), return_counts=True)
    lookup = dict(zip(train_bins.tolist(), counts.tolist(), strict=True))
    n = np.array([lookup.get(b, 0) for b in _bins(target, min_label, step).tolist()])
    return np.where(n > many, "many", np.where(n < few, "few", "median"))


def _gm(err: np.ndarray) -> float:
    if err.size == 0:
        return float("nan")
    if np.any(err == 0):
        return 0.0
    return float(np.exp(np.mean(np.log(err))))


def shot_metrics(
    pred: np.ndarray,
    target: np.ndarray,
    train_labels: np.ndarray,
    many: int = 100,
    few: int = 20,
    min_label: float = 0.0,
    step: float = 1.0,
) -> dict[str, dict[str, float]]:
    """MAE, MSE, GM and sample count overall and per shot region (NaN for an empty region)."""
    pred, target = _as_1d(pred, "pred"), _as_1d(target, "target")
    if pred.shape != target.shape:
        raise ValueError(f"pred and target must have the same length, got {pred.size} and {target.size}")
    regions = shot_regions(target, train_labels, many, few, min_label, step)
    err = np.abs(pred - target)
    out: dict[str, dict[str, float]] = {}
    for region in REGIONS:
        mask = np.ones_like(err, dtype=bool) if region == "all" else regions == region
        e = err[mask]
        out[region] = {
            "mae": float(e.mean()) if e.size else float("nan"),
            "mse": float((e**2).mean()) if e.size else float("nan"),
            "gm": _gm(e),
            "n": int(e.size),
        }
    return out


def balanced_mae(pred: np.ndarray, target: np.ndarray, min_label: float = 0.0, step: float = 1.0) -> float:
    """Mean over label bins of the per-bin MAE (the official model-selection metric)."""
    pred, target = _as_1d(pred, "pred"), _as_1d(target, "target")
    bins = _bins(target, min_label, step)
    err = np.abs(pred - target)
    _, inv = np.unique(bins, return_inverse=True)
    return float(np.mean(np.bincount(inv, weights=err) / np.bincount(inv)))


def wasserstein1(a: np.ndarray, b: np.ndarray) -> float:
    """1-Wasserstein distance between two empirical 1-D distributions."""
    from scipy.stats import wasserstein_distance

    return float(wasserstein_distance(_as_1d(a, "a"), _as_1d(b, "b")))
