"""Baselines the paper compares FI against: IV (Chhabra et al., ICLR 2024), random, BALD and max-entropy.

IV follows the InfDataSel definition (read, not copied): IV_i = g_i^T (sum_i hess L_i + lambda I)^{-1} sum_V g_v,
the sum (not mean) Hessian; trimming removes the *bottom*-b (most negative) IV points. In active learning
a decision tree regresses the labelled points' IV on x and the pool points with the largest predicted IV are
queried; the FI paper recomputes this every round (their modification), as we do. Our models minimise the
mean loss + lambda/2 |w|^2, so their Hessian of the sum loss is n H, i.e. InfDataSel's lambda is n * ours.

BALD (Gal et al. 2017): mutual information between the label and the parameters, with a Laplace posterior
N(theta_hat, (n H)^{-1}) for logistic models (50 samples) or MC-dropout passes for networks with dropout.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from iclr25.influence_selection.fi import _solve, make_ops
from iclr25.influence_selection.threads import quantize


def iv_scores(
    model: Any, X: np.ndarray, y: np.ndarray, X_val: np.ndarray, y_val: np.ndarray, *, backend: str = "auto"
) -> np.ndarray:
    """IV of every training point (n,): g_i^T (n H)^{-1} sum_V g; remove the most negative ones."""
    X = np.asarray(X, float)
    y = np.asarray(y).astype(int)
    ops = make_ops(model, backend)
    H_sum = len(X) * ops.hessian(X, y)  # sum of per-point Hessians + n * lambda (InfDataSel's lambda)
    gV = ops.grads(np.asarray(X_val, float), np.asarray(y_val).astype(int)).sum(0)
    return ops.grads(X, y) @ _solve(H_sum, gV)


def iv_active_scores(
    model: Any,
    X_lab: np.ndarray,
    y_lab: np.ndarray,
    X_pool: np.ndarray,
    X_val: np.ndarray,
    y_val: np.ndarray,
    *,
    seed: int = 0,
) -> np.ndarray:
    """IV for active learning: a DecisionTreeRegressor fitted on (x_lab -> IV) predicts IV on the pool."""
    from sklearn.tree import DecisionTreeRegressor

    # the tree's splits turn on exact ties (integer pixels): regress on IV without its last-bit noise
    iv = quantize(iv_scores(model, X_lab, y_lab, X_val, y_val))
    tree = DecisionTreeRegressor(random_state=seed).fit(np.asarray(X_lab, float), iv)
    return tree.predict(np.asarray(X_pool, float))


def entropy_scores(model: Any, X_pool: np.ndarray) -> np.ndarray:
    """Predictive entropy (max-entropy sampling)."""
    P = np.clip(model.predict_proba(X_pool), 1e-12, 1.0)
    return -np.sum(P * np.log(P), axis=1)


def random_scores(n: int, rng: np.random.Generator) -> np.ndarray:
    """Uniform random scores (random selection / removal)."""
    return rng.random(n)


def bald_laplace_scores(
    model: Any, X_lab: np.ndarray, y_lab: np.ndarray, X_pool: np.ndarray, *, samples: int = 50, seed: int = 0
) -> np.ndarray:
    """BALD with a Laplace posterior N(theta_hat, (n H)^{-1}): H[E_s p] - E_s H[p] over `samples` draws."""
    import torch

    X_lab = np.asarray(X_lab, float)
    y_lab = np.asarray(y_lab).astype(int)
    ops = make_ops(model, "auto")
    H = len(X_lab) * ops.hessian(X_lab, y_lab)
    L = np.linalg.cholesky(0.5 * (H + H.T))
    rng = np.random.default_rng(seed)
    eps = rng.standard_normal((samples, H.shape[0]))
    draws = model.theta + np.linalg.solve(L.T, eps.T).T  # cov = (L L^T)^{-1}
    Xt = torch.as_tensor(np.asarray(X_pool, float))
    with torch.no_grad():
        fn = torch.func.vmap(lambda t: torch.softmax(torch.func.vmap(lambda x: model.logits_fn(t, x))(Xt), -1))
        Ps = fn(torch.as_tensor(draws)).numpy()  # (S, m, K)
    return _mutual_information(Ps)


bald_scores = bald_laplace_scores  # the name of the spec's API (Laplace BALD for logistic models)


def _mutual_information(Ps: np.ndarray) -> np.ndarray:
    Ps = np.clip(Ps, 1e-12, 1.0)
    mean = Ps.mean(0)
    return -np.sum(mean * np.log(mean), -1) + np.mean(np.sum(Ps * np.log(Ps), -1), 0)


def bald_mc_dropout_scores(predict_proba_stochastic: Any, X_pool: Any, passes: int = 20) -> np.ndarray:
    """BALD by MC-dropout: `predict_proba_stochastic(X)` is one dropout-on forward pass returning (m, K)."""
    Ps = np.stack([np.asarray(predict_proba_stochastic(X_pool)) for _ in range(passes)])
    return _mutual_information(Ps)
