"""The paper's analysis of homogeneous deep ensembles, on any pool of member probabilities (M, N, C).

Paper: "Agree to Disagree: Demystifying Homogeneous Deep Ensembles through Distributional Equivalence",
Yipei Wang and Xiaoqian Wang, ICLR 2025 (OpenReview XYRPm8rAGM). The paper body and the official code were
not retrievable; equation labels (R1)-(R8) are those of our spec (§3.3-3.4), derived from the paper's stated
definitions. Our reading, to be checked against the paper: the DE test is a pairwise two-sample KS test of
true-class scores; the two-model estimator is the collapse-free U-statistic form below (R5); the Beta fit of
q(x) (R6) is our extension.

- distributional equivalence (§3.3): pairwise KS / W1 of true-class scores vs point-wise disagreement;
- Jensen gap (§3.2) vs the best member;
- exact finite-pool subset-mean curve (no random subsets) and a Monte-Carlo curve for any loss;
- complete-neural-collapse closed forms (R1)-(R4), the two-model estimator (R5), the Beta extrapolation (R6).
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from itertools import combinations

import numpy as np
from scipy import stats

from iclr25.ensemble_homogeneity.metrics import (
    ensemble_probs,
    get_loss,
    true_class_scores,
)

CURVE_LOSSES = ("brier_true", "brier_multiclass")


def all_pairs(n_members: int) -> list[tuple[int, int]]:
    """Every pair (i, j), i < j, of a pool of `n_members`."""
    return list(combinations(range(n_members), 2))


def random_pairs(n_members: int, n_pairs: int, rng: np.random.Generator) -> list[tuple[int, int]]:
    """`n_pairs` distinct pairs drawn without replacement from all pairs of the pool."""
    pairs = all_pairs(n_members)
    if n_pairs > len(pairs):
        raise ValueError(f"asked for {n_pairs} pairs but a pool of {n_members} has only {len(pairs)}")
    pick = rng.choice(len(pairs), size=n_pairs, replace=False)
    return [pairs[i] for i in sorted(pick)]


# --------------------------------------------------------------------------------------------------
# Distributional equivalence (spec §3.3)


def distributional_equivalence(
    probs: np.ndarray, y: np.ndarray, pairs: Sequence[tuple[int, int]] | None = None, alpha: float = 0.05
) -> dict:
    """Pairwise DE tests of true-class scores: KS statistic and p-value, W1, point-wise and prediction disagreement.

    Both members of a pair are scored on the same test points, so the samples are paired; the KS test
    treats them as independent, which makes it conservative (it favours "equivalent").
    """
    s = true_class_scores(probs, y)  # (M, N)
    pred = np.argmax(probs, axis=-1)  # (M, N)
    pairs = all_pairs(s.shape[0]) if pairs is None else list(pairs)
    if not pairs:
        raise ValueError("distributional_equivalence needs at least two members")
    i, j = np.array(pairs).T
    pointwise = np.mean(np.abs(s[i] - s[j]), axis=1)  # E_x |f̂ - ĝ|
    disagree = np.mean(pred[i] != pred[j], axis=1)  # P_x(argmax f != argmax g)
    ks_stat = np.empty(len(pairs))
    ks_p = np.empty(len(pairs))
    w1 = np.empty(len(pairs))
    for k, (a, b) in enumerate(pairs):
        with warnings.catch_warnings():  # scipy falls back to the asymptotic p-value when the exact one fails
            warnings.filterwarnings("ignore", "ks_2samp: Exact calculation unsuccessful", RuntimeWarning)
            res = stats.ks_2samp(s[a], s[b])
        ks_stat[k], ks_p[k] = res.statistic, res.pvalue
        w1[k] = stats.wasserstein_distance(s[a], s[b])
    return {
        "pairs": [list(p) for p in pairs],
        "ks_stat": ks_stat,
        "ks_p": ks_p,
        "w1": w1,
        "pointwise": pointwise,
        "disagreement": disagree,
        "median_ks_p": float(np.median(ks_p)),
        "frac_ks_p_below_alpha": float(np.mean(ks_p < alpha)),
        "median_w1": float(np.median(w1)),
        "mean_pointwise": float(np.mean(pointwise)),
        "mean_disagreement": float(np.mean(disagree)),
    }


# --------------------------------------------------------------------------------------------------
# Jensen gap vs the best member (spec §3.2)


def jensen_gap(probs: np.ndarray, y: np.ndarray, loss: str = "brier_true") -> dict:
    """Member losses, the ensemble's loss, the Jensen gap (mean member - ensemble) and superiority over the best."""
    fn = get_loss(loss)
    members = fn(probs, y)  # (M,)
    ens = float(fn(ensemble_probs(probs), y))
    return {
        "members": members,
        "mean_member": float(members.mean()),
        "best_member": float(members.min()),
        "worst_member": float(members.max()),
        "ensemble": ens,
        "gap": float(members.mean() - ens),  # >= 0 for convex losses (Jensen)
        "gain_over_best": float(members.min() - ens),
        "superiority": bool(ens < members.min()),
    }


def heldout_best_member(
    probs: np.ndarray, y: np.ndarray, loss: str = "brier_true", n_splits: int = 50, seed: int = 0
) -> dict:
    """Ensemble vs the member that is best on a *different* half of the test set (random halves, `n_splits` times).

    Picking the best member on the points it is scored on is an optimistic order statistic; choosing it on half A
    and scoring ensemble and member on half B compares the ensemble with a best member that could be found in practice.
    """
    fn = get_loss(loss)
    rng = np.random.default_rng(seed)
    N = len(y)
    ens_probs = ensemble_probs(probs)
    gaps = []
    for _ in range(n_splits):
        perm = rng.permutation(N)
        a, b = perm[: N // 2], perm[N // 2 :]
        best = int(np.argmin(fn(probs[:, a], y[a])))
        gaps.append(float(fn(probs[best, b], y[b]) - fn(ens_probs[b], y[b])))
    gaps_arr = np.array(gaps)
    return {"mean_gain": float(gaps_arr.mean()), "win_rate": float(np.mean(gaps_arr > 0)), "n_splits": n_splits}


# --------------------------------------------------------------------------------------------------
# Ensemble curves


def _pool_moments(probs: np.ndarray, y: np.ndarray, loss: str) -> tuple[np.ndarray, np.ndarray]:
    """Per point: squared error of the pool mean and the pool's population variance (summed over classes)."""
    if loss == "brier_true":
        s = true_class_scores(probs, y)  # (P, N)
        return (1.0 - s.mean(0)) ** 2, s.var(0)
    if loss == "brier_multiclass":
        onehot = np.eye(probs.shape[-1])[y]
        return np.sum((probs.mean(0) - onehot) ** 2, -1), np.sum(probs.var(0), -1)
    raise ValueError(f"the exact curve supports loss in {CURVE_LOSSES}, got {loss!r}")


def subset_mean_curve(probs: np.ndarray, y: np.ndarray, sizes: Sequence[int], loss: str = "brier_true") -> np.ndarray:
    """Exact mean Brier over all size-m subsets of the pool (spec §6a), for each m in `sizes`.

    Sampling m of P members without replacement: E_S (1 - p̄_S)² = (1 - p̄)² + (P/(P-1)) (1/m - 1/P) v,
    with p̄, v the pool mean and population variance at x (multiclass: summed over classes).
    """
    P = probs.shape[0]
    sizes = np.asarray(sizes, dtype=np.float64)
    if P < 2 or np.any(sizes < 1) or np.any(sizes > P):
        raise ValueError(f"subset sizes must lie in [1, {P}] for a pool of {P} >= 2 members, got {sizes.tolist()}")
    bias, var = _pool_moments(probs, y, loss)
    factor = (P / (P - 1)) * (1.0 / sizes - 1.0 / P)  # (S,)
    return bias.mean() + factor * var.mean()


def ensemble_curve(
    probs: np.ndarray,
    y: np.ndarray,
    sizes: Sequence[int],
    n_subsets: int = 50,
    rng: np.random.Generator | None = None,
    loss: str = "nll",
) -> dict:
    """Monte-Carlo curve for any loss: mean and sd of the loss of `n_subsets` random size-m ensembles."""
    rng = np.random.default_rng(0) if rng is None else rng
    fn = get_loss(loss)
    P = probs.shape[0]
    mean, sd = [], []
    for m in sizes:
        if not 1 <= m <= P:
            raise ValueError(f"subset size {m} outside [1, {P}]")
        vals = [float(fn(probs[rng.choice(P, size=m, replace=False)].mean(0), y)) for _ in range(n_subsets)]
        mean.append(np.mean(vals))
        sd.append(np.std(vals))
    return {"sizes": list(sizes), "mean": np.array(mean), "sd": np.array(sd)}


def fit_bias_variance_curve(sizes: Sequence[int], values: Sequence[float]) -> dict:
    """Least-squares fit L(M) = B_∞ + V/M and its R² (an identity for subset means of any pool: not evidence)."""
    x = 1.0 / np.asarray(sizes, dtype=np.float64)
    v = np.asarray(values, dtype=np.float64)
    A = np.stack([np.ones_like(x), x], axis=1)
    (b, var), *_ = np.linalg.lstsq(A, v, rcond=None)
    resid = v - A @ np.array([b, var])
    ss_tot = float(np.sum((v - v.mean()) ** 2))
    r2 = 1.0 - float(np.sum(resid**2)) / ss_tot if ss_tot > 0 else 1.0
    return {"B_inf": float(b), "V": float(var), "r2": r2}


# --------------------------------------------------------------------------------------------------
# Two-model estimator (R5) and bias-variance terms (R4)


def _pair_terms(p_f: np.ndarray, p_g: np.ndarray, y: np.ndarray, loss: str) -> tuple[float, float]:
    """(B̂_∞, V̂) from two members' probabilities (N, C) (R5)."""
    if loss == "brier_true":
        f, g = true_class_scores(p_f, y), true_class_scores(p_g, y)
        return float(np.mean((1 - f) * (1 - g))), float(np.mean((f - g) ** 2) / 2)  # (R5)
    if loss == "brier_multiclass":
        onehot = np.eye(p_f.shape[-1])[y]
        b = np.mean(np.sum((p_f - onehot) * (p_g - onehot), -1))  # mean_x <p_f - e_y, p_g - e_y>
        v = np.mean(np.sum((p_f - p_g) ** 2, -1)) / 2  # mean_x ||p_f - p_g||² / 2
        return float(b), float(v)
    raise ValueError(f"the two-model estimator supports loss in {CURVE_LOSSES}, got {loss!r}")


def _collapsed(p: np.ndarray) -> np.ndarray:
    """One-hot argmax predictions: the complete-neural-collapse reading of a member's output."""
    return np.eye(p.shape[-1])[np.argmax(p, axis=-1)]


def estimate_from_two(
    p_f: np.ndarray,
    p_g: np.ndarray,
    y: np.ndarray,
    sizes: Sequence[int],
    loss: str = "brier_true",
    collapse: bool = False,
) -> dict:
    """Predicted Brier of an M-ensemble from two independently trained members: L̂_M = B̂_∞ + V̂/M (R4, R5).

    Default (collapse-free): the soft scores themselves; unbiased because E[(1 - mean_m p_m)²] = (1 - μ)² + Var/M
    per x, and E(1-f)(1-g) = (1-μ)², E(f-g)²/2 = Var for independent f, g. With `collapse`, members are read as
    one-hot argmax predictions first (f̂ = 1[f correct]), the paper's complete-neural-collapse setting.
    """
    p_f, p_g = np.asarray(p_f, np.float64), np.asarray(p_g, np.float64)
    if collapse:
        p_f, p_g = _collapsed(p_f), _collapsed(p_g)
    b, v = _pair_terms(p_f, p_g, np.asarray(y), loss)
    sizes_arr = np.asarray(sizes, dtype=np.float64)
    return {"B_inf": b, "V": v, "sizes": list(sizes), "curve": b + v / sizes_arr}


def estimate_from_pairs(
    probs: np.ndarray,
    y: np.ndarray,
    sizes: Sequence[int],
    pairs: Sequence[tuple[int, int]] | None = None,
    loss: str = "brier_true",
    collapse: bool = False,
) -> dict:
    """Mean of the two-model estimates over `pairs` (default: all pairs, the U-statistic), with their sd."""
    pairs = all_pairs(probs.shape[0]) if pairs is None else list(pairs)
    ests = [estimate_from_two(probs[i], probs[j], y, sizes, loss, collapse) for i, j in pairs]
    curves = np.stack([e["curve"] for e in ests])
    return {
        "B_inf": float(np.mean([e["B_inf"] for e in ests])),
        "V": float(np.mean([e["V"] for e in ests])),
        "sizes": list(sizes),
        "curve": curves.mean(0),
        "curve_sd": curves.std(0),
        "n_pairs": len(pairs),
    }


def bias_variance(probs: np.ndarray, y: np.ndarray, loss: str = "brier_true") -> dict:
    """B_∞ and V of (R4) from a pool: the all-pairs U-statistics of (R5), in closed form (no loop over pairs).

    B̂_∞ = mean over pairs of mean_x (1-f̂_i)(1-f̂_j); V̂ = mean_x of the unbiased variance over members.
    """
    P = probs.shape[0]
    if P < 2:
        raise ValueError("bias_variance needs at least two members")
    if loss == "brier_true":
        r = 1.0 - true_class_scores(probs, y)[..., None]  # residuals (P, N, 1)
    elif loss == "brier_multiclass":
        r = probs - np.eye(probs.shape[-1])[y]  # (P, N, C)
    else:
        raise ValueError(f"bias_variance supports loss in {CURVE_LOSSES}, got {loss!r}")
    total = r.sum(0)  # (N, C)
    cross = (np.sum(total**2, -1) - np.sum(r**2, axis=(0, 2))) / (P * (P - 1))  # Σ_{i≠j} <r_i, r_j> / P(P-1)
    var = np.sum(r.var(0, ddof=1), -1)
    return {"B_inf": float(cross.mean()), "V": float(var.mean())}


# --------------------------------------------------------------------------------------------------
# Complete neural collapse: closed forms (R1)-(R4) and the Beta extrapolation (R6)


def _phi(name: str, p: np.ndarray, n_classes: int, eps: float) -> np.ndarray:
    if name == "brier_true":
        return (1.0 - p) ** 2
    if name == "nll":  # (R7): smooth p <- (1-ε)p + ε/C so that an all-wrong ensemble stays finite
        return -np.log((1 - eps) * p + eps / n_classes)
    if name == "error_binary":  # vote of a binary task: wrong below half, a tie counts 1/2
        return np.where(p < 0.5, 1.0, np.where(p == 0.5, 0.5, 0.0))
    raise ValueError(f"unknown collapse loss {name!r}: use brier_true, nll or error_binary")


def collapse_theory_curve(
    q: np.ndarray, sizes: Sequence[int], loss: str = "brier_true", eps: float = 1e-3, n_classes: int = 10
) -> np.ndarray:
    """(R1): E L_M = E_x Σ_j C(M,j) q^j (1-q)^(M-j) φ(j/M), for q(x) = P_F(F correct at x)."""
    q = np.asarray(q, dtype=np.float64)
    out = []
    for M in sizes:
        j = np.arange(M + 1)
        pmf = stats.binom.pmf(j[None, :], M, q[:, None])  # (N, M+1): S_M(x) ~ Binomial(M, q(x))
        out.append(float(np.mean(pmf @ _phi(loss, j / M, n_classes, eps))))
    return np.array(out)


def collapse_brier_closed_form(q: np.ndarray, sizes: Sequence[int]) -> dict:
    """(R4): E L_M = B_∞ + V/M with B_∞ = E_x (1-q)², V = E_x q(1-q)."""
    q = np.asarray(q, dtype=np.float64)
    b, v = float(np.mean((1 - q) ** 2)), float(np.mean(q * (1 - q)))
    return {"B_inf": b, "V": v, "curve": b + v / np.asarray(sizes, dtype=np.float64)}


def beta_fit_q(acc: float, p_both_correct: float) -> tuple[float, float]:
    """(R6, our extension) Beta(a, b) for q(x) by moments: E q = accuracy, E q² = P(both members correct)."""
    var = p_both_correct - acc**2
    if not 0 < acc < 1 or not 0 < var < acc * (1 - acc):
        raise ValueError(
            f"no Beta fit: need 0 < acc < 1 and 0 < P(both) - acc² < acc(1-acc), got acc={acc}, P(both)={p_both_correct}"
        )
    total = acc * (1 - acc) / var - 1
    return acc * total, (1 - acc) * total


def beta_majority_accuracy(a: float, b: float, sizes: Sequence[int]) -> np.ndarray:
    """(R6, our extension) P(S_M > M/2) + ½ P(S_M = M/2) with S_M ~ BetaBinomial(M, a, b): majority-vote accuracy
    under collapse; for C > 2 classes it lower-bounds the plurality vote's accuracy."""
    out = []
    for M in sizes:
        j = np.arange(M + 1)
        pmf = stats.betabinom.pmf(j, M, a, b)
        out.append(float(np.sum(pmf * np.where(2 * j > M, 1.0, np.where(2 * j == M, 0.5, 0.0)))))
    return np.array(out)


def two_model_beta_fit(p_f: np.ndarray, p_g: np.ndarray, y: np.ndarray) -> tuple[float, float]:
    """(R6) Beta parameters of q(x) from the argmax correctness of two members."""
    cf = np.argmax(p_f, -1) == y
    cg = np.argmax(p_g, -1) == y
    return beta_fit_q(float((cf.mean() + cg.mean()) / 2), float(np.mean(cf & cg)))


def vote_accuracy(probs: np.ndarray, y: np.ndarray) -> float:
    """Accuracy of the plurality vote of member argmax predictions (ties broken towards the lower class id)."""
    votes = np.argmax(probs, -1)  # (M, N)
    counts = np.apply_along_axis(np.bincount, 0, votes, minlength=probs.shape[-1])  # (C, N)
    return float(np.mean(np.argmax(counts, 0) == y))
