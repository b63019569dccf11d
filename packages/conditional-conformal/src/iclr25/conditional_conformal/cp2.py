"""CP²: probabilistic conformal prediction with approximate conditional validity.

Plassier, Fishkov, Guizani, Panov, Moulines, "Probabilistic Conformal Prediction with Approximate
Conditional Validity", ICLR 2025, arXiv:2407.01794. Sec. 3 (framework), Alg. 1 (CP²-PCP), Alg. 2 / App. C.1
(CP²-HPD).

Ingredients (Sec. 3): nested sets R_Z(x; t), a score V_Z(x, y) = inf{t : y ∈ R_Z(x; t)}, an adjustment family
f_τ with reference φ (linear f_τ(v) = τv, φ = 1; difference f_τ(v) = τ + v, φ = 0), the per-x size under the
estimate τ_x = inf{τ : Π(R_Z(x; f_τ(φ)) | x) ≥ 1 − α} (eq. 5), the conformity score U = f_τ^{-1}(V) and the
conformal quantile Q̂ = the ⌈(1 − α)(n + 1)⌉-th smallest U_k. The set is C(x) = R_Z(x; f_{τ_x}(Q̂)).

Deliberate choices (the paper leaves them open): M̃ (the second sample for τ) defaults to 100; Monte Carlo
quantiles are order statistics (rank ⌈level · m⌉); CP²-HPD uses the sign-safe form U = λ_x / γ(y|x) with
λ_x the density level of Π's (1 − α)-HPD region (spec §3.3), equivalent to App. C.1 for the linear adjustment.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Literal

import numpy as np

from .estimators import Density, Sampler, as_2d
from .sets import LevelSet, UnionOfBalls, nearest_distance

Adjust = Literal["linear", "difference"]
ADJUSTMENTS: tuple[str, ...] = ("linear", "difference")
_EPS = 1e-9


def check_alpha(alpha: float) -> float:
    """alpha must lie in (0, 1)."""
    if not 0 < alpha < 1:
        raise ValueError(f"alpha must be in (0, 1), got {alpha}")
    return float(alpha)


def check_adjust(adjust: str) -> str:
    """adjust must be 'linear' or 'difference'."""
    if adjust not in ADJUSTMENTS:
        raise ValueError(f"adjust must be one of {ADJUSTMENTS}, got {adjust!r}")
    return adjust


def conformal_rank(n: int, alpha: float) -> int:
    """⌈(1 − α)(n + 1)⌉, the rank of the conformal quantile among n calibration scores (Sec. 3, step 5)."""
    return math.ceil((1 - alpha) * (n + 1) - _EPS)


def conformal_quantile(scores: np.ndarray, alpha: float) -> float:
    """Q̂ = the ⌈(1 − α)(n + 1)⌉-th smallest score, +∞ when that rank exceeds n (Thm 3.1)."""
    scores = np.asarray(scores, dtype=float).ravel()
    k = conformal_rank(len(scores), alpha)
    if k > len(scores):
        return math.inf
    return float(np.partition(scores, k - 1)[k - 1])


def mc_rank(m: int, level: float) -> int:
    """Rank of the empirical `level`-quantile of m draws: ⌈level · m⌉, clipped to [1, m]."""
    return min(m, max(1, math.ceil(level * m - _EPS)))


def order_statistic(values: np.ndarray, rank: int, axis: int = -1) -> np.ndarray:
    """The `rank`-th smallest (1-based) along `axis`."""
    return np.take(np.partition(values, rank - 1, axis=axis), rank - 1, axis=axis)


@dataclass
class Draws:
    """Samples of Π(·|x) for a batch of x: ball centres Ŷ [n, M, q] and the independent Ỹ [n, M̃, q] for τ."""

    centres: np.ndarray
    tilde: np.ndarray
    tau_cache: dict = field(default_factory=dict, repr=False)  # τ per alpha, shared by the methods using these draws

    def __len__(self) -> int:
        return len(self.centres)

    def subset(self, idx: np.ndarray | slice) -> Draws:
        """The draws of the rows `idx`."""
        return Draws(self.centres[idx], self.tilde[idx])


def draw(estimator: Sampler, x: np.ndarray, m: int, m_tau: int, rng: np.random.Generator) -> Draws:
    """Ŷ_1..Ŷ_M and, independently, Ỹ_1..Ỹ_M̃ from Π(·|x) for each row of x (Alg. 1, lines 2-3)."""
    x = as_2d(x)
    centres = estimator.sample(x, m, rng)
    tilde = estimator.sample(x, m_tau, rng) if m_tau > 0 else centres[:, :0]
    return Draws(np.asarray(centres, dtype=float), np.asarray(tilde, dtype=float))


def pcp_tau(draws: Draws, alpha: float, chunk: int = 2000) -> np.ndarray:
    """τ_x for the PCP sets (eq. 5 with Monte Carlo): the ⌈(1 − α)M̃⌉-th smallest of d_j = min_i ‖Ỹ_j − Ŷ_i‖.

    For both adjustments t ↦ f_t(φ) is the identity, so τ_x is the radius at which the union of balls holds a
    (1 − α) fraction of the second sample (Alg. 1, line 4).
    """
    if alpha not in draws.tau_cache:
        d = nearest_distance(draws.tilde, draws.centres, chunk)  # [n, M̃]
        draws.tau_cache[alpha] = order_statistic(d, mc_rank(d.shape[1], 1 - alpha))
    return draws.tau_cache[alpha]


def adjusted_score(v: np.ndarray, tau: np.ndarray, adjust: str) -> np.ndarray:
    """U = f_τ^{-1}(V): V / τ (linear) or V − τ (difference) (Sec. 3, step 5)."""
    if adjust == "linear":
        with np.errstate(divide="ignore", invalid="ignore"):
            u = np.asarray(v, dtype=float) / tau
        return np.where(np.isnan(u), 0.0, u)  # 0/0: y sits on a centre and the set has zero radius
    return np.asarray(v, dtype=float) - tau


def adjusted_radius(tau: np.ndarray, qhat: float, adjust: str) -> np.ndarray:
    """f_τ(Q̂): τ · Q̂ (linear) or max(τ + Q̂, 0) (difference) (Sec. 3, step 6)."""
    tau = np.asarray(tau, dtype=float)
    if math.isinf(qhat):
        return np.full_like(tau, math.inf)
    if adjust == "linear":
        return tau * qhat
    return np.maximum(tau + qhat, 0.0)


class CP2PCP:
    """CP²-PCP (Alg. 1): union of M balls around draws of Π(·|x), radius f_{τ_x}(Q̂).

    `estimator` needs only `sample(x, m, rng)`. Calibration draws are made once per calibration point and
    kept; every call of `predict_set` draws fresh samples from the same generator stream (never the same
    numbers as calibration). Pass `draws=` to reuse samples across methods (the paper shares them).
    """

    def __init__(
        self,
        estimator: Sampler,
        alpha: float = 0.1,
        n_samples: int = 50,
        n_samples_tau: int = 100,
        adjust: Adjust = "linear",
        seed: int | None = None,
        chunk: int = 2000,
    ) -> None:
        self.estimator = estimator
        self.alpha = check_alpha(alpha)
        if n_samples < 1 or n_samples_tau < 1:
            raise ValueError(f"n_samples and n_samples_tau must be >= 1, got {n_samples}, {n_samples_tau}")
        self.n_samples, self.n_samples_tau = int(n_samples), int(n_samples_tau)
        self.adjust = check_adjust(adjust)
        self.rng = np.random.default_rng(seed)
        self.chunk = chunk
        self.qhat_: float | None = None

    def draw(self, X: np.ndarray) -> Draws:
        """Fresh Ŷ [n, M, q] and Ỹ [n, M̃, q] for each row of X."""
        return draw(self.estimator, X, self.n_samples, self.n_samples_tau, self.rng)

    def tau(self, draws: Draws) -> np.ndarray:
        """τ_x for each row of `draws` (eq. 5, Monte Carlo)."""
        return pcp_tau(draws, self.alpha, self.chunk)

    def conformity_scores(self, X: np.ndarray, Y: np.ndarray, draws: Draws | None = None) -> np.ndarray:
        """U = f_τ^{-1}(V_Z(x, y)) with V = min_i ‖y − Ŷ_i‖ (Alg. 1, lines 5-6) -> [n]."""
        draws = self.draw(X) if draws is None else draws
        v = nearest_distance(as_2d(Y)[:, None, :], draws.centres, self.chunk)[:, 0]
        return adjusted_score(v, self.tau(draws), self.adjust)

    def calibrate(self, X: np.ndarray, Y: np.ndarray, draws: Draws | None = None) -> CP2PCP:
        """Compute and store the calibration scores U_k and Q̂ (Alg. 1, line 7); returns self."""
        X, Y = as_2d(X), as_2d(Y)
        if len(X) != len(Y) or len(X) == 0:
            raise ValueError(f"X and Y must have the same, non-zero number of rows, got {len(X)} and {len(Y)}")
        self.draws_ = self.draw(X) if draws is None else draws
        self.tau_cal_ = self.tau(self.draws_)
        self.v_cal_ = nearest_distance(Y[:, None, :], self.draws_.centres, self.chunk)[:, 0]
        self.scores_ = adjusted_score(self.v_cal_, self.tau_cal_, self.adjust)
        self.qhat_ = conformal_quantile(self.scores_, self.alpha)
        return self

    fit = calibrate

    def predict_set(self, X: np.ndarray, draws: Draws | None = None) -> UnionOfBalls:
        """C(x) = ∪_i B(Ŷ_i, f_{τ_x}(Q̂)) with fresh draws (Alg. 1, lines 8-10)."""
        if self.qhat_ is None:
            raise RuntimeError("call calibrate(X_cal, Y_cal) before predict_set")
        draws = self.draw(X) if draws is None else draws
        return UnionOfBalls(draws.centres, adjusted_radius(self.tau(draws), self.qhat_, self.adjust))


class CP2HPD:
    """CP²-HPD (Alg. 2, spec §3.3 sign-safe form): C(x) = {y : γ(y|x) ≥ λ_x / Q̂}.

    λ_x is the density level of Π's (1 − α)-HPD region, estimated from M̃ draws Ỹ_j ~ Π(·|x) as the level below
    which a fraction α of the densities γ(Ỹ_j|x) lie (order statistic of rank M̃ − ⌈(1 − α)M̃⌉ + 1, the same
    convention as CP²-PCP's τ on the score −γ). Linear adjustment: U = λ_x / γ(y|x); difference adjustment on
    log densities: U = log λ_x − log γ(y|x). Because U_lin = exp(U_diff) the two give identical sets.
    """

    def __init__(
        self,
        density: Density,
        alpha: float = 0.1,
        n_samples_tau: int = 100,
        adjust: Adjust = "linear",
        seed: int | None = None,
    ) -> None:
        self.density = density
        self.alpha = check_alpha(alpha)
        if n_samples_tau < 1:
            raise ValueError(f"n_samples_tau must be >= 1, got {n_samples_tau}")
        self.n_samples_tau = int(n_samples_tau)
        self.adjust = check_adjust(adjust)
        self.rng = np.random.default_rng(seed)
        self.qhat_: float | None = None

    def log_level(self, X: np.ndarray, tilde: np.ndarray | None = None) -> np.ndarray:
        """log λ_x per row of X, from Ỹ [n, M̃, q] (drawn fresh when not given)."""
        X = as_2d(X)
        if tilde is None:
            tilde = self.density.sample(X, self.n_samples_tau, self.rng)
        lp = self.density.log_prob(X, tilde)  # [n, M̃]
        m = lp.shape[1]
        return order_statistic(lp, m - mc_rank(m, 1 - self.alpha) + 1)

    def conformity_scores(self, X: np.ndarray, Y: np.ndarray, tilde: np.ndarray | None = None) -> np.ndarray:
        """U = λ_x / γ(y|x) (linear) or log λ_x − log γ(y|x) (difference) -> [n]."""
        X = as_2d(X)
        diff = self.log_level(X, tilde) - self.density.log_prob(X, as_2d(Y))
        if self.adjust == "difference":
            return diff
        with np.errstate(over="ignore"):
            return np.exp(diff)

    def calibrate(self, X: np.ndarray, Y: np.ndarray, tilde: np.ndarray | None = None) -> CP2HPD:
        """Store the calibration scores and Q̂ = ⌈(1 − α)(n + 1)⌉-th smallest; returns self."""
        if len(as_2d(X)) != len(as_2d(Y)) or len(as_2d(X)) == 0:
            raise ValueError("X and Y must have the same, non-zero number of rows")
        self.scores_ = self.conformity_scores(X, Y, tilde)
        self.qhat_ = conformal_quantile(self.scores_, self.alpha)
        return self

    fit = calibrate

    def predict_set(self, X: np.ndarray, tilde: np.ndarray | None = None) -> LevelSet:
        """{y : log γ(y|x) ≥ log λ_x − log Q̂} (linear) or ≥ log λ_x − Q̂ (difference), fresh Ỹ."""
        if self.qhat_ is None:
            raise RuntimeError("call calibrate(X_cal, Y_cal) before predict_set")
        q = self.qhat_
        shift = (math.inf if math.isinf(q) else math.log(q) if q > 0 else -math.inf) if self.adjust == "linear" else q
        return LevelSet(self.density, X, self.log_level(X, tilde) - shift)


def cp2_pcp_pair(
    estimator: Sampler, X: np.ndarray, Y: np.ndarray, alpha: float, m: int, m_tau: int, draws: Draws
) -> dict[str, CP2PCP]:
    """CP²-PCP-L and CP²-PCP-D calibrated on (X, Y) with the same Π draws, keyed by adjustment."""
    return {a: CP2PCP(estimator, alpha, m, m_tau, a).calibrate(X, Y, draws=draws) for a in ADJUSTMENTS}
