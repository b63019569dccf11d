"""Hyperparameter tuning of the real tasks' conformal sets, after the official `hpo.py`.

Paper: Cresswell et al., "Conformal Prediction Sets Can Cause Disparate Impact", ICLR 2025 (arXiv 2410.01888).
The official code tunes the temperature T and the score's (lam, k_reg) per task with Optuna's TPE, minimising the
mean set size on the calibration-validation split. We search at random over a neighbourhood of the task's official
values instead (`random_candidates`) and keep the candidate with the smallest mean validation set size.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from iclr25.fair_conformal_sets.calibrate import conformal_sets
from iclr25.fair_conformal_sets.data import ModelOutputs
from iclr25.fair_conformal_sets.scores import score_matrix


def random_candidates(base: dict[str, Any], trials: int, rng: np.random.Generator) -> list[dict[str, Any]]:
    """`base` ({"T", "lam", "k_reg"}) and `trials` random draws around it: floats log-uniform in [v/10, 10 v],
    k_reg uniform in [v-1, v+1] (at least 0)."""
    candidates = [base]
    for _ in range(trials):
        candidates.append(
            {
                "T": float(base["T"] * 10 ** rng.uniform(-1, 1)),
                "lam": float(base["lam"] * 10 ** rng.uniform(-1, 1)),
                "k_reg": int(rng.integers(max(0, base["k_reg"] - 1), base["k_reg"] + 2)),
            }
        )
    return candidates


def tuned_sets(
    cal: ModelOutputs,
    val: ModelOutputs,
    test: ModelOutputs,
    *,
    score: str,
    mode: str,
    alpha: float,
    base: dict[str, Any],
    trials: int,
    rng: np.random.Generator,
) -> tuple[np.ndarray, np.ndarray, dict[str, Any]]:
    """The test sets of calibration `mode` with the hyperparameters (T, lam, k_reg) of smallest mean set size on
    `val` among `random_candidates(base, trials)` (`base` itself when trials = 0); returns the sets, the test
    scores and the chosen hyperparameters. ESS runs with its default split and grid."""

    def build(h: dict[str, Any], target: ModelOutputs) -> tuple[np.ndarray, np.ndarray]:
        kw = {"k_reg": h["k_reg"], "lam": h["lam"], "rng": rng}
        Sc = score_matrix(cal.probs(h["T"]), score, **kw)
        St = score_matrix(target.probs(h["T"]), score, **kw)
        sets = conformal_sets(Sc, cal.labels, cal.groups, St, target.groups, alpha, modes=(mode,), rng=rng)
        return sets[mode], St

    candidates = random_candidates(base, trials, rng)
    best = min(candidates, key=lambda h: build(h, val)[0].sum(axis=1).mean()) if trials else base
    return (*build(best, test), best)
