"""A scikit-learn style front end: `ConformalSets(score, mode).fit(p_cal, y_cal, groups).predict_set(p, groups)`.

Paper: Cresswell et al., "Conformal Prediction Sets Can Cause Disparate Impact", ICLR 2025 (arXiv 2410.01888).
Wraps the scores of `scores.py` and the calibration modes of `calibrate.py`; inputs are class probabilities
(temperature T re-scales them as softmax(log p / T), the official pipeline's softmax(z / T)).
"""

from __future__ import annotations

import numpy as np

from iclr25.fair_conformal_sets import calibrate
from iclr25.fair_conformal_sets.scores import SCORES, score_matrix, softmax, true_label

MODES = calibrate.MODES


class ConformalSets:
    """Conformal prediction sets for one score and one calibration mode; `predict_set` returns bool (n, K)."""

    def __init__(
        self,
        score: str = "lac",
        mode: str = "marginal",
        alpha: float = 0.1,
        *,
        temperature: float = 1.0,
        k_reg: int = 3,
        lam: float = 0.5,
        randomized: bool = True,
        smoothing: bool = False,
        fill_empty: bool = False,
        ess_split: float = 0.5,
        ess_grid: int = 800,
        ess_variant: str = "two_split",
        seed: int | None = None,
    ) -> None:
        if score not in SCORES:
            raise ValueError(f"unknown score {score!r}: score must be one of {', '.join(SCORES)}")
        if mode not in MODES:
            raise ValueError(f"unknown mode {mode!r}: mode must be one of {', '.join(MODES)}")
        if not 0 < alpha < 1:
            raise ValueError(f"alpha must be in (0, 1), got {alpha}")
        if smoothing and mode == "ess":
            raise ValueError("smoothing applies to marginal and mondrian modes, not ess")
        if ess_variant not in calibrate.ESS_VARIANTS:
            raise ValueError(f"ess_variant must be one of {', '.join(calibrate.ESS_VARIANTS)}; got {ess_variant!r}")
        self.score, self.mode, self.alpha = score, mode, alpha
        self.temperature, self.k_reg, self.lam, self.randomized = temperature, k_reg, lam, randomized
        self.smoothing, self.fill_empty = smoothing, fill_empty
        self.ess_split, self.ess_grid, self.ess_variant = ess_split, ess_grid, ess_variant
        self.rng = np.random.default_rng(seed)
        self.fitted_ = False

    def scores(self, probs: np.ndarray) -> np.ndarray:
        """The non-conformity score of every label, (n, K) (fresh U for randomised scores)."""
        p = np.asarray(probs, dtype=np.float64)
        if self.temperature != 1.0:
            p = softmax(np.log(np.clip(p, 1e-300, None)), self.temperature)
        return score_matrix(p, self.score, k_reg=self.k_reg, lam=self.lam, randomized=self.randomized, rng=self.rng)

    def _groups(self, groups: np.ndarray | None, n: int) -> np.ndarray:
        if groups is None:
            if self.mode != "marginal":
                raise ValueError(f"mode {self.mode!r} needs the protected group of every item")
            return np.zeros(n, dtype=int)
        groups = np.asarray(groups)
        if groups.shape != (n,):
            raise ValueError(f"groups must have shape ({n},), got {groups.shape}")
        return groups

    def fit(self, probs: np.ndarray, labels: np.ndarray, groups: np.ndarray | None = None) -> ConformalSets:
        """Calibrate on held-out probabilities (n, K), true labels (n,) and groups (n,)."""
        S = self.scores(probs)
        labels = np.asarray(labels)
        if labels.shape != (len(S),):
            raise ValueError(f"labels must have shape ({len(S)},), got {labels.shape}")
        g = self._groups(groups, len(S))
        self.K_ = S.shape[1]
        self.cal_scores_ = true_label(S, labels)
        self.cal_groups_ = g
        if self.mode == "ess":
            self.ess_ = calibrate.fit_equalized_set_size(
                S, labels, g, self.alpha, split=self.ess_split, grid_size=self.ess_grid,
                variant=self.ess_variant, rng=self.rng,
            )  # fmt: skip
        self.fitted_ = True
        return self

    def predict_set(self, probs: np.ndarray, groups: np.ndarray | None = None) -> np.ndarray:
        """Boolean sets (n, K) for new items (top-1 filled where empty if `fill_empty`)."""
        if not self.fitted_:
            raise ValueError("call fit(...) before predict_set(...)")
        S = self.scores(probs)
        if S.shape[1] != self.K_:
            raise ValueError(f"fitted with K = {self.K_} classes, got {S.shape[1]}")
        g = self._groups(groups, len(S))
        if self.mode == "marginal":
            sets = calibrate.marginal(self.cal_scores_, S, self.alpha, smoothing=self.smoothing, rng=self.rng)
        elif self.mode == "mondrian":
            sets = calibrate.mondrian(
                self.cal_scores_, self.cal_groups_, S, g, self.alpha, smoothing=self.smoothing, rng=self.rng
            )
        else:
            sets = self.ess_.predict(S, g)
        return calibrate.fill_empty_with_top1(sets, S) if self.fill_empty else sets
