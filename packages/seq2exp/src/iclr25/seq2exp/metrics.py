"""Metrics: prediction (MSE, MAE, Pearson; Table 1) and mask discovery (AUPRC, precision, recall, ratio)."""

from __future__ import annotations

import numpy as np
from sklearn.metrics import average_precision_score


def regression_metrics(y_hat: np.ndarray, y: np.ndarray) -> dict[str, float]:
    """MSE, MAE and Pearson r of predictions against targets."""
    y_hat, y = np.asarray(y_hat, np.float64).ravel(), np.asarray(y, np.float64).ravel()
    err = y_hat - y
    r = float(np.corrcoef(y_hat, y)[0, 1]) if y_hat.std() > 0 and y.std() > 0 else 0.0
    return {"mse": float(np.mean(err**2)), "mae": float(np.mean(np.abs(err))), "pearson": r}


def mask_metrics(
    pred_mask_scores: np.ndarray, true_mask: np.ndarray, exclude: np.ndarray | None = None, threshold: float = 0.5
) -> dict[str, float]:
    """AUPRC of the scores against the true mask, and precision/recall/ratio of `scores >= threshold`, over the
    bases not in `exclude` (e.g. the forced promoter window)."""
    scores = np.asarray(pred_mask_scores, np.float64)
    truth = np.asarray(true_mask).astype(bool)
    if scores.shape != truth.shape:
        raise ValueError(f"scores {scores.shape} and true mask {truth.shape} differ in shape")
    keep = np.ones(truth.shape, bool) if exclude is None else ~np.asarray(exclude).astype(bool)
    s, t = scores[keep], truth[keep]
    called = s >= threshold
    tp = float(np.sum(called & t))
    return {
        "auprc": float(average_precision_score(t, s)) if t.any() else float("nan"),
        "precision": tp / max(float(called.sum()), 1.0),
        "recall": tp / max(float(t.sum()), 1.0),
        "ratio": float(called.mean()),
        "base_rate": float(t.mean()),
    }


def top_fraction_mask(scores: np.ndarray, fraction: float, exclude: np.ndarray | None = None) -> np.ndarray:
    """0/1 mask keeping the top `fraction` of each row's scores (Seq2Exp-retrain: the top 10%)."""
    scores = np.asarray(scores, np.float64)
    if scores.ndim == 1:
        scores = scores[None]
    ranked = scores.copy()
    if exclude is not None:
        ranked[np.broadcast_to(np.asarray(exclude, bool), ranked.shape)] = -np.inf
    k = max(1, round(fraction * scores.shape[1]))
    idx = np.argpartition(-ranked, k - 1, axis=1)[:, :k]
    out = np.zeros(scores.shape, np.uint8)
    np.put_along_axis(out, idx, 1, axis=1)
    return out
