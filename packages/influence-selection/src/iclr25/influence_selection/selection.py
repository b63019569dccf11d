"""Data trimming and active learning with any per-point score (paper Algorithms 1-4).

Trimming: score the training points, remove the top-b (FI) or bottom-b (IV) and retrain from
scratch. Active learning: every round, score the pool with the current model, query the top
`acquire` points, add them to the labelled set and retrain (the FI paper recomputes every score each round).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from iclr25.influence_selection.threads import quantize

STRATEGIES = ("fi", "iv", "bald", "entropy", "random", "fi_subsample", "fi_bottom", "fi_drop_n")


def trim_dataset(scores: np.ndarray, b: int, mode: str = "top") -> np.ndarray:
    """Indices to keep after removing the b points with the largest ("top") or smallest ("bottom") score."""
    scores = np.asarray(scores, float)
    if mode not in ("top", "bottom"):
        raise ValueError(f"mode must be 'top' or 'bottom', got {mode!r}")
    if not 0 <= b <= len(scores):
        raise ValueError(f"b must lie in [0, {len(scores)}], got {b}")
    q = quantize(scores)  # last-bit noise (BLAS threads, CPU) cannot reorder; ties go to the lower index
    order = np.argsort(-q if mode == "top" else q, kind="stable")
    return np.sort(order[b:])


def removed_indices(scores: np.ndarray, b: int, mode: str = "top") -> np.ndarray:
    """The b removed indices (complement of `trim_dataset`)."""
    keep = trim_dataset(scores, b, mode)
    return np.setdiff1d(np.arange(len(scores)), keep)


def curve_auc(curve: np.ndarray) -> float:
    """Normalised area under an accuracy-per-round curve (trapezoid over rounds 0..R, divided by R)."""
    curve = np.asarray(curve, float)
    if len(curve) < 2:
        return float(curve[0])
    return float(np.sum((curve[1:] + curve[:-1]) / 2) / (len(curve) - 1))


@dataclass
class ALResult:
    """Accuracy after each round (round 0 = the initial set), labelled-set sizes and queried pool indices."""

    curve: list[float]
    sizes: list[int]
    queried: list[list[int]] = field(default_factory=list)
    score_seconds: float = 0.0
    scored_points: int = 0

    @property
    def auc(self) -> float:
        """Normalised area under the accuracy curve."""
        return curve_auc(np.array(self.curve))


def active_learning_loop(
    strategy: Callable[[Any, np.ndarray, np.ndarray, np.ndarray, np.random.Generator], np.ndarray],
    X_init: np.ndarray,
    y_init: np.ndarray,
    X_pool: np.ndarray,
    y_pool: np.ndarray,
    rounds: int,
    acquire: int,
    fit_fn: Callable[[np.ndarray, np.ndarray], Any],
    eval_fn: Callable[[Any], float],
    rng: np.random.Generator | None = None,
) -> ALResult:
    """Run pool-based active learning; `strategy(model, X_lab, y_lab, X_pool_left, rng)` returns pool scores."""
    import time

    rng = rng or np.random.default_rng(0)
    if acquire < 1 or rounds < 0:
        raise ValueError(f"need acquire >= 1 and rounds >= 0, got {acquire}, {rounds}")
    if rounds * acquire > len(X_pool):
        raise ValueError(f"rounds * acquire = {rounds * acquire} exceeds the pool size {len(X_pool)}")
    X_lab, y_lab = np.asarray(X_init), np.asarray(y_init)
    left = np.arange(len(X_pool))
    model = fit_fn(X_lab, y_lab)
    res = ALResult(curve=[float(eval_fn(model))], sizes=[len(y_lab)])
    for _ in range(rounds):
        t = time.perf_counter()
        scores = np.asarray(strategy(model, X_lab, y_lab, X_pool[left], rng), float)
        res.score_seconds += time.perf_counter() - t
        res.scored_points += len(left)
        pick = np.argsort(-quantize(scores), kind="stable")[:acquire]  # ties: the lower pool index first
        chosen = left[pick]
        res.queried.append(chosen.tolist())
        X_lab = np.concatenate([X_lab, X_pool[chosen]])
        y_lab = np.concatenate([y_lab, y_pool[chosen]])
        left = np.delete(left, pick)
        model = fit_fn(X_lab, y_lab)
        res.curve.append(float(eval_fn(model)))
        res.sizes.append(len(y_lab))
    return res


def make_strategy(
    name: str,
    *,
    X_val: np.ndarray | None = None,
    y_val: np.ndarray | None = None,
    sub: int | None = 120,
    bald_samples: int = 50,
    alpha: float = 0.2,
) -> Callable[[Any, np.ndarray, np.ndarray, np.ndarray, np.random.Generator], np.ndarray]:
    """A pool-scoring strategy by name (see STRATEGIES); "iv" needs a validation set."""
    from iclr25.influence_selection import baselines as bl
    from iclr25.influence_selection.approx import subsample_rank_forest
    from iclr25.influence_selection.fi import fi_active

    if name not in STRATEGIES:
        raise ValueError(f"strategy must be one of {', '.join(STRATEGIES)}; got {name!r}")
    if name == "iv" and (X_val is None or y_val is None):
        raise ValueError("strategy 'iv' needs a validation set (X_val, y_val)")

    def score(model, X_lab, y_lab, X_pool, rng):
        if name in ("fi", "fi_bottom", "fi_drop_n"):
            form = "drop_n" if name == "fi_drop_n" else "appendix"
            s = fi_active(model, X_lab, y_lab, X_pool, sub=sub, rng=rng, metric_form=form)
            return -s if name == "fi_bottom" else s
        if name == "fi_subsample":  # Sec. 5: exact FI on a fraction alpha, a random forest predicts the rest
            k = max(2, round(alpha * len(X_pool)))
            idx = rng.choice(len(X_pool), k, replace=False)
            s = fi_active(model, X_lab, y_lab, X_pool[idx], sub=sub, rng=rng)
            return subsample_rank_forest(s, X_pool[idx], X_pool, seed=int(rng.integers(1 << 31)))
        if name == "iv":
            return bl.iv_active_scores(model, X_lab, y_lab, X_pool, X_val, y_val, seed=int(rng.integers(1 << 31)))
        if name == "bald":
            return bl.bald_laplace_scores(
                model, X_lab, y_lab, X_pool, samples=bald_samples, seed=int(rng.integers(1 << 31))
            )
        if name == "entropy":
            return bl.entropy_scores(model, X_pool)
        return bl.random_scores(len(X_pool), rng)

    score.__name__ = f"strategy_{name}"
    return score
