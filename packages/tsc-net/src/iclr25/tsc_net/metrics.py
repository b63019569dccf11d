"""Metrics (spec §3 detail 5, §6a): best-of-K ADE/FDE with independent minima, goal-FDE, obstacle violations."""

from __future__ import annotations

import numpy as np

from iclr25.tsc_net.data import pixel_of, walkable


def min_ade_fde(pred: np.ndarray, gt: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per-pedestrian minADE and minFDE over K samples, each minimum taken independently (official `statistic`):
    pred (K, N, T, 2), gt (N, T, 2) -> ((N,), (N,))."""
    err = np.linalg.norm(np.asarray(pred) - np.asarray(gt)[None], axis=-1)  # (K, N, T)
    return err.mean(-1).min(0), err[..., -1].min(0)


def goal_min_fde(goals: np.ndarray, gt_end: np.ndarray) -> np.ndarray:
    """Per-pedestrian min over the K goals (K, N, 2) of the distance to the ground-truth endpoint (N, 2)."""
    return np.linalg.norm(np.asarray(goals) - np.asarray(gt_end)[None], axis=-1).min(0)


def obstacle_violation_rate(pred: np.ndarray, gt: np.ndarray, masks: list[np.ndarray], scene: np.ndarray) -> np.ndarray:
    """Per pedestrian: fraction of the best-of-K trajectory's points (lowest ADE) on non-walkable pixels (floor
    rounding as in the simulator; points outside the map count as not violating). pred (K, N, T, 2)."""
    pred = np.asarray(pred)
    ade = np.linalg.norm(pred - np.asarray(gt)[None], axis=-1).mean(-1)
    best = pred[ade.argmin(0), np.arange(pred.shape[1])]  # (N, T, 2)
    rates = np.zeros(len(best))
    for s in np.unique(scene):
        sel = np.flatnonzero(scene == s)
        ok = walkable(masks[s])
        h, w = ok.shape
        px = pixel_of(best[sel])
        inside = (px[..., 0] >= 0) & (px[..., 0] < w) & (px[..., 1] >= 0) & (px[..., 1] < h)
        hit = np.zeros(px.shape[:2], dtype=bool)
        hit[inside] = ~ok[px[inside][:, 1], px[inside][:, 0]]
        rates[sel] = hit.mean(-1)
    return rates


def summarize(pred: np.ndarray, goals: np.ndarray | None, gt: np.ndarray, masks, scene, irregular) -> dict:
    """minADE20, minFDE20, goal-minFDE20 (when goals are given) and violation rate, overall and per subset.
    pred (K, N, 12, 2), gt (N, 12, 2) future."""
    ade, fde = min_ade_fde(pred, gt)
    viol = obstacle_violation_rate(pred, gt, masks, scene)
    gfde = goal_min_fde(goals, gt[:, -1]) if goals is not None else None
    out = {}
    for name, sel in (("all", np.ones(len(gt), bool)), ("regular", ~irregular), ("irregular", irregular)):
        if not sel.any():
            continue
        row = {
            "minADE": float(ade[sel].mean()), "minFDE": float(fde[sel].mean()),
            "violation": float(viol[sel].mean()), "n": int(sel.sum()),
        }  # fmt: skip
        if gfde is not None:
            row["goal_minFDE"] = float(gfde[sel].mean())
        out[name] = row
    return out
