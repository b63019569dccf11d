"""The paper's comparison on one calibration/test split (Sec. 4): every method's conformal set with one
estimator, the Π samples drawn once and shared by all methods (as in the paper), and per method its coverage,
coverage in x-bins, mean length and Q̂; and one repetition of the validity check of Thm 3.1 (CP²-PCP-L/-D with
the oracle sampler Π = P)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from .baselines import CQR, CQR2, PCP, PiOnly, QuantileNet, SplitCP
from .cp2 import CP2HPD, Draws, cp2_pcp_pair, draw
from .estimators import Sampler
from .metrics import binned_coverage
from .sets import head

CP2_PCP_NAMES = {"linear": "cp2_l", "difference": "cp2_d"}


def conformal_sets(
    est: Sampler,
    Xc: np.ndarray,
    Yc: np.ndarray,
    Xt: np.ndarray,
    dc: Draws,
    dt: Draws,
    alpha: float,
    m: int,
    m_tau: int,
    quantiles: QuantileNet | None = None,
) -> tuple[dict[str, Any], dict[str, float]]:
    """Every method calibrated on (Xc, Yc) with the shared calibration draws `dc`, its sets on Xt with the shared
    test draws `dt`: CP²-PCP-L/-D, PCP, Π-only and split CP; HD-PCP and CP²-HPD when `est` has a density; CQR
    and CQR2 on the fitted `quantiles` (one output). Returns (sets, Q̂) by method name (Π-only has no Q̂)."""
    sets: dict[str, Any] = {}
    qhat: dict[str, float] = {}
    for adjust, method in cp2_pcp_pair(est, Xc, Yc, alpha, m, m_tau, dc).items():
        name = CP2_PCP_NAMES[adjust]
        sets[name], qhat[name] = method.predict_set(Xt, draws=dt), method.qhat_
    pcp = PCP(est, alpha, m).calibrate(Xc, Yc, draws=dc)
    sets["pcp"], qhat["pcp"] = pcp.predict_set(Xt, draws=dt), pcp.qhat_
    if hasattr(est, "log_prob"):  # HD-PCP: the ⌊0.8 M⌋ highest-density centres (PCP repository's fr = 0.2)
        hd = PCP(est, alpha, m, fr=0.2).calibrate(Xc, Yc, draws=dc)
        sets["hd_pcp"], qhat["hd_pcp"] = hd.predict_set(Xt, draws=dt), hd.qhat_
    sets["pi"] = PiOnly(est, alpha, m, m_tau).predict_set(Xt, draws=dt)
    cp = SplitCP(est, alpha).calibrate(Xc, Yc)
    sets["cp"], qhat["cp"] = cp.predict_set(Xt), cp.qhat_
    if hasattr(est, "log_prob"):
        hpd = CP2HPD(est, alpha, m_tau).calibrate(Xc, Yc, tilde=dc.tilde)
        sets["cp2_hpd"], qhat["cp2_hpd"] = hpd.predict_set(Xt, tilde=dt.tilde), hpd.qhat_
    if quantiles is not None and Yc.shape[1] == 1:
        c1 = CQR(quantiles, alpha).calibrate(Xc, Yc)
        sets["cqr"], qhat["cqr"] = c1.predict_set(Xt), float(c1.qhat_[0])
        c2 = CQR2(quantiles, alpha).calibrate(Xc, Yc)
        sets["cqr2"], qhat["cqr2"] = c2.predict_set(Xt), c2.qhat_
    return sets, qhat


def set_metrics(
    sets: dict[str, Any],
    qhat: dict[str, float],
    Xt: np.ndarray,
    Yt: np.ndarray,
    n_bins: int = 8,
    bins: tuple[float, float] | None = (-4.0, 4.0),
    length_points: int = 0,
    grid: tuple[float, float, float] = (-4.0, 8.0, 0.005),
) -> dict[str, dict[str, Any]]:
    """Per method: coverage and the hits on (Xt, Yt), the coverage in `n_bins` equal bins of x₁ over `bins` (None:
    none), the mean length over the first `length_points` test points (0: none; CP²-HPD's level sets measured on
    the y-grid (lo, hi, step) `grid`) and Q̂ where the method has one."""
    out: dict[str, dict[str, Any]] = {}
    for name, s in sets.items():
        hit = s.contains(Yt)
        row: dict[str, Any] = {"coverage": float(hit.mean()), "hits": hit}
        if bins is not None:
            row["bins"] = binned_coverage(hit, None, Xt[:, 0], n_bins, bins)[0].tolist()
        if length_points:
            sub = head(s, length_points)
            row["length"] = float(np.mean(sub.length(*grid) if name == "cp2_hpd" else sub.length()))
        if name in qhat:
            row["qhat"] = float(qhat[name])
        out[name] = row
    return out


def evaluate_methods(
    est: Sampler,
    split: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray],
    alpha: float,
    m: int,
    m_tau: int,
    rng: np.random.Generator,
    quantiles: QuantileNet | None = None,
    **metrics: Any,
) -> dict[str, dict[str, Any]]:
    """Every method on one split (Xc, Yc, Xt, Yt) with estimator `est`: M + M̃ draws of Π for each calibration
    point, then for each test point (from `rng`), shared by all methods; the `set_metrics` of each method
    (`metrics` its keyword arguments)."""
    Xc, Yc, Xt, Yt = split
    dc = draw(est, Xc, m, m_tau, rng)
    dt = draw(est, Xt, m, m_tau, rng)
    sets, qhat = conformal_sets(est, Xc, Yc, Xt, dc, dt, alpha, m, m_tau, quantiles)
    return set_metrics(sets, qhat, Xt, Yt, **metrics)


def oracle_validity(
    law: Sampler,
    sample: Callable[[int, np.random.Generator], tuple[np.ndarray, np.ndarray]],
    n: int,
    n_test: int,
    alpha: float,
    m: int,
    m_tau: int,
    rng: np.random.Generator,
) -> dict[str, float]:
    """One repetition of the validity check (Thm 3.1): n fresh calibration and n_test test points from `sample`,
    CP²-PCP-L/-D with Π = the true law `law`; the test coverage of each, by adjustment."""
    Xc, Yc = sample(n, rng)
    Xt, Yt = sample(n_test, rng)
    dc, dt = draw(law, Xc, m, m_tau, rng), draw(law, Xt, m, m_tau, rng)
    pair = cp2_pcp_pair(law, Xc, Yc, alpha, m, m_tau, dc)
    return {a: float(method.predict_set(Xt, draws=dt).contains(Yt).mean()) for a, method in pair.items()}
