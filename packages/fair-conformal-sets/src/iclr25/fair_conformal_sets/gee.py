"""Logistic GEE with an independence working correlation and cluster-robust (sandwich) covariance, in numpy.

Paper: Cresswell et al., "Conformal Prediction Sets Can Cause Disparate Impact", ICLR 2025 (arXiv 2410.01888).
Spec §3.5: an optional GEE logistic model accuracy ~ treatment x group, clustered by item, giving per-group
odds ratios against control and maxROR = max_g OR / min_g OR (the follow-up paper's statistic; the exact test of
the ICLR paper is not verified). With the independence working correlation the GEE point estimates are the
logistic maximum-likelihood estimates; the Liang-Zeger sandwich makes their covariance robust to any
correlation within a cluster. statsmodels is not a dependency; this is the part of it the analysis needs.
"""

from __future__ import annotations

from typing import Any

import numpy as np


def gee_logistic(
    X: np.ndarray, y: np.ndarray, clusters: np.ndarray, *, max_iter: int = 100, tol: float = 1e-10
) -> tuple[np.ndarray, np.ndarray, bool]:
    """Fit logit P(y = 1) = X beta by IRLS; returns (beta, sandwich covariance, converged).

    cov = B^-1 M B^-1 with B = X' W X and M = sum over clusters of (X_c' (y_c - mu_c))(X_c' (y_c - mu_c))'.
    """
    X, y = np.asarray(X, dtype=np.float64), np.asarray(y, dtype=np.float64)
    clusters = np.asarray(clusters)
    if X.ndim != 2 or len(X) != len(y) or len(y) != len(clusters):
        raise ValueError("X must be (n, p) with n outcomes and n cluster ids")
    beta = np.zeros(X.shape[1])
    converged = False
    with np.errstate(over="ignore"):  # a cell with all-correct responses drifts to +inf: reported as not converged
        for _ in range(max_iter):
            mu = 1 / (1 + np.exp(-(X @ beta)))
            w = mu * (1 - mu)
            step = np.linalg.lstsq((X * w[:, None]).T @ X, X.T @ (y - mu), rcond=None)[0]
            beta = beta + step
            if np.max(np.abs(step)) < tol:
                converged = True
                break
        mu = 1 / (1 + np.exp(-(X @ beta)))
    bread = np.linalg.pinv((X * (mu * (1 - mu))[:, None]).T @ X)
    _, index = np.unique(clusters, return_inverse=True)
    scores = np.zeros((index.max() + 1, X.shape[1]))
    np.add.at(scores, index, X * (y - mu)[:, None])  # per-cluster score sums
    meat = scores.T @ scores
    return beta, bread @ meat @ bread, converged


def treatment_group_odds_ratios(
    correct: np.ndarray,
    treatment: np.ndarray,
    group: np.ndarray,
    clusters: np.ndarray,
    *,
    control: str = "control",
    level_z: float = 1.959963984540054,
) -> dict[str, Any]:
    """Cell model logit P(correct) = a_g + b_{t,g} (t != control): OR_{t,g} = exp(b_{t,g}) against control, with
    cluster-robust 95% CIs, and maxROR_t = max_g OR / min_g OR with a delta-method CI on the log scale."""
    treatment, group = np.asarray(treatment), np.asarray(group)
    groups = np.unique(group)
    treatments = [t for t in np.unique(treatment) if t != control]
    if control not in set(treatment.tolist()):
        raise ValueError(f"no responses under the control treatment {control!r}")
    cols = [(group == g).astype(float) for g in groups]
    names = []
    for t in treatments:
        for g in groups:
            cols.append(((treatment == t) & (group == g)).astype(float))
            names.append((t, g))
    X = np.stack(cols, axis=1)
    beta, cov, converged = gee_logistic(X, np.asarray(correct, dtype=float), clusters)
    se = np.sqrt(np.clip(np.diag(cov), 0, None))
    G = len(groups)
    out: dict[str, Any] = {"converged": converged}
    for t in treatments:
        idx = [G + i for i, (tt, _) in enumerate(names) if tt == t]
        b = beta[idx]
        entry: dict[str, Any] = {
            "odds_ratio": {_key(g): float(np.exp(v)) for g, v in zip(groups, b, strict=True)},
            "odds_ratio_low": {_key(g): float(np.exp(v - level_z * s)) for g, v, s in zip(groups, b, se[idx], strict=True)},
            "odds_ratio_high": {_key(g): float(np.exp(v + level_z * s)) for g, v, s in zip(groups, b, se[idx], strict=True)},
        }  # fmt: skip
        hi, lo = idx[int(np.argmax(b))], idx[int(np.argmin(b))]
        log_ratio = beta[hi] - beta[lo]
        var = cov[hi, hi] + cov[lo, lo] - 2 * cov[hi, lo]
        half = level_z * np.sqrt(max(var, 0.0))
        entry.update(
            maxROR=float(np.exp(log_ratio)),
            maxROR_low=float(np.exp(log_ratio - half)),
            maxROR_high=float(np.exp(log_ratio + half)),
        )
        out[str(t)] = entry
    return out


def _key(g: Any) -> Any:
    return g.item() if hasattr(g, "item") else g
