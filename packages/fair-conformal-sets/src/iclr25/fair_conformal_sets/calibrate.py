"""Split-conformal calibration: marginal, Mondrian (group-conditional) and Equalized-Set-Size (ESS).

Paper: Cresswell et al., "Conformal Prediction Sets Can Cause Disparate Impact", ICLR 2025 (arXiv 2410.01888).
Marginal and Mondrian follow the official code (crepes `ConformalClassifier`, spec §3.3) with the exact rank
rule as default; crepes' smoothed p-values (its default since 0.7.1) are `smoothing=True`. The paper recommends
Equalized Set Size as the fairness criterion but gives no algorithm: `equalized_set_size` is our design
(spec §3.4), a two-split construction whose marginal coverage guarantee is the usual split-conformal one.

All functions take score matrices S (n, K) (lower = more conforming) and return boolean sets (n, K).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from iclr25.fair_conformal_sets.scores import true_label

MODES = ("marginal", "mondrian", "ess")  # the calibration modes (the paper's treatments, ESS ours)
ESS_VARIANTS = ("two_split", "single_split", "singleton")


def conformal_rank(n: int, alpha: float) -> int:
    """The rank ceil((1 - alpha)(n + 1)) of the conformal quantile (1-based; may exceed n)."""
    if not 0 < alpha < 1:
        raise ValueError(f"alpha must be in (0, 1), got {alpha}")
    if n < 0:
        raise ValueError(f"n must be >= 0, got {n}")
    # the tolerance keeps (1 - 0.1) * 10 = 9.000000000000002 from rounding up to 10
    return math.ceil((1 - alpha) * (n + 1) - 1e-9)


def conformal_quantile(scores: np.ndarray, alpha: float) -> float:
    """q_hat = the ceil((1-alpha)(n+1))-th smallest score; +inf when that rank exceeds n (spec §3.3)."""
    s = np.asarray(scores, dtype=np.float64).ravel()
    rank = conformal_rank(len(s), alpha)
    if rank > len(s):
        return math.inf
    return float(np.partition(s, rank - 1)[rank - 1])


def smoothed_pvalues(cal_scores: np.ndarray, test_scores: np.ndarray, u: np.ndarray) -> np.ndarray:
    """crepes' smoothed p-values p_y = (#{s_i > S} + U (#{s_i = S} + 1)) / (n + 1); `u` one per test item."""
    s = np.sort(np.asarray(cal_scores, dtype=np.float64).ravel())
    n = len(s)
    right = np.searchsorted(s, test_scores, side="right")
    left = np.searchsorted(s, test_scores, side="left")
    u = np.asarray(u, dtype=np.float64).reshape(-1, *([1] * (np.ndim(test_scores) - 1)))
    return ((n - right) + u * (right - left + 1)) / (n + 1)


def marginal(
    cal_scores: np.ndarray,
    test_scores: np.ndarray,
    alpha: float,
    *,
    smoothing: bool = False,
    rng: np.random.Generator | None = None,
) -> np.ndarray:
    """Marginal split CP: C(x) = {y : S(x, y) <= q_hat}; smoothed p-value rule p_y > alpha if `smoothing`."""
    test_scores = np.asarray(test_scores, dtype=np.float64)
    if smoothing:
        rng = np.random.default_rng() if rng is None else rng
        conformal_rank(len(np.ravel(cal_scores)), alpha)  # validates alpha
        return smoothed_pvalues(cal_scores, test_scores, rng.random(len(test_scores))) > alpha
    return test_scores <= conformal_quantile(cal_scores, alpha)


def _check_groups(cal_groups: np.ndarray, test_groups: np.ndarray) -> np.ndarray:
    known = np.unique(cal_groups)
    unknown = np.setdiff1d(np.unique(test_groups), known)
    if len(unknown):
        raise ValueError(f"test groups {unknown.tolist()} have no calibration points (have {known.tolist()})")
    return known


def mondrian(
    cal_scores: np.ndarray,
    cal_groups: np.ndarray,
    test_scores: np.ndarray,
    test_groups: np.ndarray,
    alpha: float,
    *,
    smoothing: bool = False,
    rng: np.random.Generator | None = None,
) -> np.ndarray:
    """Group-conditional (Mondrian) CP: q_hat_g from group g's calibration scores, applied to group g (§3.3)."""
    cal_scores, cal_groups = np.asarray(cal_scores, dtype=np.float64), np.asarray(cal_groups)
    test_scores, test_groups = np.asarray(test_scores, dtype=np.float64), np.asarray(test_groups)
    if len(cal_scores) != len(cal_groups) or len(test_scores) != len(test_groups):
        raise ValueError("scores and groups must have the same length")
    out = np.zeros(test_scores.shape, dtype=bool)
    for g in _check_groups(cal_groups, test_groups):
        rows = test_groups == g
        out[rows] = marginal(cal_scores[cal_groups == g], test_scores[rows], alpha, smoothing=smoothing, rng=rng)
    return out


def stratified_split(groups: np.ndarray, fraction: float, rng: np.random.Generator) -> np.ndarray:
    """Boolean mask of part A: round(fraction * n_g) random points of every group g."""
    if not 0 < fraction < 1:
        raise ValueError(f"split fraction must be in (0, 1), got {fraction}")
    groups = np.asarray(groups)
    in_a = np.zeros(len(groups), dtype=bool)
    for g in np.unique(groups):
        idx = np.flatnonzero(groups == g)
        take = round(fraction * len(idx))
        in_a[rng.permutation(idx)[:take]] = True
    return in_a


@dataclass
class ESSCalibration:
    """A fitted ESS calibration: per-group threshold curves tau_g(k) on `grid`, and the chosen index of k_hat."""

    grid: np.ndarray  # (G,) set-size targets in (0, K] (or multi-label fractions in (0, 1] for "singleton")
    taus: dict = field(default_factory=dict)  # group -> (G,) nondecreasing thresholds tau_g(grid)
    k_index: int = 0  # index of k_hat in grid; len(grid) means k_hat = inf (full label set)
    variant: str = "two_split"

    @property
    def k_hat(self) -> float:
        """The calibrated target k_hat (inf = every label)."""
        return math.inf if self.k_index >= len(self.grid) else float(self.grid[self.k_index])

    def thresholds(self, groups: np.ndarray) -> np.ndarray:
        """tau_{g(x)}(k_hat) for each item."""
        groups = np.asarray(groups)
        _check_groups(np.array(list(self.taus)), groups)
        if self.k_index >= len(self.grid):
            return np.full(len(groups), np.inf)
        out = np.empty(len(groups))
        for g, tau in self.taus.items():
            out[groups == g] = tau[self.k_index]
        return out

    def predict(self, test_scores: np.ndarray, test_groups: np.ndarray) -> np.ndarray:
        """C(x) = {y : S(x, y) <= tau_{g(x)}(k_hat)} (spec §3.4)."""
        return np.asarray(test_scores) <= self.thresholds(test_groups)[:, None]


def _curve_values(scores_a: np.ndarray, variant: str) -> tuple[np.ndarray, int]:
    """The sorted values F_g a group's threshold curve indexes, and its unit count n_g^A."""
    if variant == "singleton":
        # |C| >= 2 iff the second-smallest label score is <= tau: equalise the multi-label (non-singleton) rate
        return np.sort(np.partition(scores_a, 1, axis=1)[:, 1]), len(scores_a)
    return np.sort(scores_a.ravel()), len(scores_a)


def fit_equalized_set_size(
    cal_scores_all: np.ndarray,
    cal_labels: np.ndarray,
    cal_groups: np.ndarray,
    alpha: float,
    *,
    split: float = 0.5,
    grid_size: int = 800,
    variant: str = "two_split",
    rng: np.random.Generator | None = None,
) -> ESSCalibration:
    """Fit ESS (our design, spec §3.4): per-group size curves on part A, a conformal k_hat on part B.

    tau_g(k) = F_g[ceil(k n_g^A) - 1] with F_g the sorted label scores of group g's points in A, so that the
    average set size on those points is k; r_i = min{k in grid : S(x_i, y_i) <= tau_{g_i}(k)} on B and
    k_hat = the ceil((1-alpha)(n_B+1))-th smallest r_i. `variant="single_split"` uses all points for both
    (plug-in, no guarantee); `variant="singleton"` equalises the multi-label rate (k in (0, 1]) instead.
    """
    if variant not in ESS_VARIANTS:
        raise ValueError(f"unknown ESS variant {variant!r}: variant must be one of {', '.join(ESS_VARIANTS)}")
    if grid_size < 1:
        raise ValueError(f"grid_size must be >= 1, got {grid_size}")
    S = np.asarray(cal_scores_all, dtype=np.float64)  # (n, K)
    y, g = np.asarray(cal_labels), np.asarray(cal_groups)
    if S.ndim != 2 or len(S) != len(y) or len(y) != len(g):
        raise ValueError("cal_scores_all must be (n, K) with n labels and n groups")
    rng = np.random.default_rng() if rng is None else rng
    if variant == "single_split":
        in_a = np.ones(len(y), dtype=bool)
        in_b = in_a
    else:
        in_a = stratified_split(g, split, rng)
        in_b = ~in_a
    top = 1.0 if variant == "singleton" else float(S.shape[1])
    grid = top * np.arange(1, grid_size + 1) / grid_size  # (G,) values in (0, top]
    taus = {}
    for grp in np.unique(g):
        rows = in_a & (g == grp)
        if not rows.any():
            raise ValueError(f"group {grp!r} has no points in calibration part A; use more calibration data")
        values, n_units = _curve_values(S[rows], variant)
        idx = np.ceil(grid * n_units - 1e-9).astype(int) - 1
        taus[grp] = values[np.clip(idx, 0, len(values) - 1)]
    # conformity score on B: the first grid index whose threshold covers the true label (len(grid) = never)
    s_true = S[np.flatnonzero(in_b), y[in_b]]
    r_index = np.empty(len(s_true), dtype=int)
    g_b = g[in_b]
    for grp, tau in taus.items():
        rows = g_b == grp
        r_index[rows] = np.searchsorted(tau, s_true[rows], side="left")
    rank = conformal_rank(len(r_index), alpha)
    k_index = len(grid) if rank > len(r_index) else int(np.partition(r_index, rank - 1)[rank - 1])
    return ESSCalibration(grid=grid, taus=taus, k_index=k_index, variant=variant)


def equalized_set_size(
    cal_scores_all: np.ndarray,
    cal_labels: np.ndarray,
    cal_groups: np.ndarray,
    test_scores: np.ndarray,
    test_groups: np.ndarray,
    alpha: float,
    *,
    split: float = 0.5,
    grid_size: int = 800,
    variant: str = "two_split",
    rng: np.random.Generator | None = None,
) -> np.ndarray:
    """Equalized-Set-Size sets (spec §3.4): fit on the calibration data, then predict for the test items."""
    fit = fit_equalized_set_size(
        cal_scores_all, cal_labels, cal_groups, alpha, split=split, grid_size=grid_size, variant=variant, rng=rng
    )
    return fit.predict(test_scores, test_groups)


def conformal_sets(
    cal_scores_all: np.ndarray,
    cal_labels: np.ndarray,
    cal_groups: np.ndarray,
    test_scores: np.ndarray,
    test_groups: np.ndarray,
    alpha: float,
    *,
    modes: tuple[str, ...] = MODES,
    split: float = 0.5,
    grid_size: int = 800,
    variant: str = "two_split",
    rng: np.random.Generator | None = None,
) -> dict[str, np.ndarray]:
    """The sets of every calibration mode in `modes` (in that order), calibrated on the same data: marginal and
    Mondrian from the true labels' scores, ESS (`split`, `grid_size`, `variant`, `rng`) from the full matrix."""
    unknown = [m for m in modes if m not in MODES]
    if unknown:
        raise ValueError(f"unknown modes {unknown}: modes must be among {', '.join(MODES)}")
    s_true = true_label(np.asarray(cal_scores_all), cal_labels)
    ess = {"split": split, "grid_size": grid_size, "variant": variant, "rng": rng}
    build = {
        "marginal": lambda: marginal(s_true, test_scores, alpha),
        "mondrian": lambda: mondrian(s_true, cal_groups, test_scores, test_groups, alpha),
        "ess": lambda: equalized_set_size(
            cal_scores_all, cal_labels, cal_groups, test_scores, test_groups, alpha, **ess
        ),
    }
    return {m: build[m]() for m in modes}


def fill_empty_with_top1(sets: np.ndarray, scores: np.ndarray) -> np.ndarray:
    """Replace every empty set by {argmin_y S(x, y)} (official `get_conformal_set`); returns a copy."""
    sets = np.array(sets, dtype=bool, copy=True)
    empty = ~sets.any(axis=1)
    if empty.any():
        sets[np.flatnonzero(empty), np.argmin(np.asarray(scores)[empty], axis=1)] = True
    return sets
