"""The paper's Sec. 5 approximations (Algorithms 5-8): KFSVD and subsampling with a random-forest rank model.

KFSVD: H by K-FAC (block-diagonal per layer, each block G_l kron A_l) and M_z by its top-k singular subspace,
found by subspace (power) iteration from the products M a and u^T M (never the p x d matrix).
Subsampling: compute FI on a random fraction alpha of the candidates, rank them, fit a random-forest regressor
from x to the rank and rank every candidate by its prediction.
"""

from __future__ import annotations

from typing import Any

import numpy as np


def subsample_rank_forest(
    scores_on_subset: np.ndarray, X_subset: np.ndarray, X_all: np.ndarray, *, seed: int = 0, n_estimators: int = 100
) -> np.ndarray:
    """Predicted rank (ascending: larger = larger score) of every candidate, from a forest fitted on a subset."""
    from sklearn.ensemble import RandomForestRegressor

    ranks = np.argsort(np.argsort(np.asarray(scores_on_subset, float), kind="stable"), kind="stable").astype(float)
    forest = RandomForestRegressor(n_estimators=n_estimators, random_state=seed, n_jobs=1)
    forest.fit(np.asarray(X_subset, float), ranks)
    return forest.predict(np.asarray(X_all, float))


def kfac_hessian(model: Any, X: np.ndarray, y: np.ndarray) -> np.ndarray:
    """K-FAC approximation of H for an `MLPModel` (dense p x p, block-diagonal per layer) + the L2 term.

    Block l = E_i[sum_c P_ic delta_ic delta_ic^T] kron E_i[a~_i a~_i^T] (the Fisher with the model's own label
    distribution, exact over the K classes); a~ = [layer input, 1], delta = d(-log P_c)/d(pre-activation).
    """
    import torch

    X = np.asarray(X, float)
    theta = torch.as_tensor(np.asarray(model.theta, float))
    layers = model._unflatten(theta)
    h = torch.as_tensor(X).requires_grad_(True)  # a graph from the input on, so every pre-activation is in it
    acts, pres = [], []
    for j, (W, b) in enumerate(layers):
        acts.append(torch.cat([h, torch.ones(len(h), 1, dtype=h.dtype)], 1).detach())
        z = h @ W.T + b
        pres.append(z)
        h = torch.relu(z) if j < len(layers) - 1 else z
    logits = torch.cat([torch.zeros_like(h), h], -1) if model.n_classes == 2 else h
    logp = torch.log_softmax(logits, -1)
    P = logp.exp().detach()
    n = len(X)
    Gs = [torch.zeros(z.shape[1], z.shape[1], dtype=torch.float64) for z in pres]
    for c in range(logp.shape[1]):
        deltas = torch.autograd.grad(-logp[:, c].sum(), pres, retain_graph=True)
        for G, dl in zip(Gs, deltas, strict=True):
            G += (dl * P[:, c : c + 1]).T @ dl / n
    blocks = []
    for (W, _), A_in, G in zip(layers, acts, Gs, strict=True):
        A = (A_in.T @ A_in / n).numpy()
        out, inp = W.shape
        block = np.kron(G.numpy(), A)  # order (o, i~) with i~ = inputs then the bias
        perm = [o * (inp + 1) + i for o in range(out) for i in range(inp)] + [o * (inp + 1) + inp for o in range(out)]
        blocks.append(block[np.ix_(perm, perm)])  # our flat order: W row-major, then b
    p = sum(len(b) for b in blocks)
    H = np.zeros((p, p))
    i = 0
    for blk in blocks:
        H[i : i + len(blk), i : i + len(blk)] = blk
        i += len(blk)
    return H + np.diag(model.l2_diag)


class TruncatedMOps:
    """Wrap FI ops so that M_z is replaced by its rank-k truncation M V V^T (V: top-k right singular vectors)."""

    def __init__(self, ops: Any, rank: int, iters: int = 8, seed: int = 0) -> None:
        if rank < 1:
            raise ValueError(f"svd rank must be >= 1, got {rank}")
        self.base = ops
        self.rank = rank
        self.iters = iters
        self.seed = seed
        self.K, self.d, self.p = ops.K, ops.d, ops.p
        self._cache: dict[int, tuple[np.ndarray, np.ndarray]] = {}

    def __getattr__(self, name: str) -> Any:
        return getattr(self.base, name)

    def factors(self, X: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(M V (m, k, p), V (m, d, k)) by subspace iteration on M^T M."""
        key = hash((X.tobytes(), np.asarray(y).tobytes()))
        if key in self._cache:
            return self._cache[key]
        m, d = X.shape
        k = min(self.rank, d)
        V = np.linalg.qr(np.random.default_rng(self.seed).standard_normal((m, d, k)))[0]
        for _ in range(self.iters):
            MV = self.base.mixed_jvp(X, y, np.transpose(V, (0, 2, 1)))  # (m, k, p)
            U = np.linalg.qr(np.transpose(MV, (0, 2, 1)))[0]  # (m, p, k)
            Z = self.base.mixed_vjp(X, y, np.transpose(U, (0, 2, 1)))  # (m, k, d) = U^T M
            V = np.linalg.qr(np.transpose(Z, (0, 2, 1)))[0]  # (m, d, k)
        MV = self.base.mixed_jvp(X, y, np.transpose(V, (0, 2, 1)))
        self._cache = {key: (MV, V)}
        return MV, V

    def mixed_vjp(self, X: np.ndarray, y: np.ndarray, U: np.ndarray) -> np.ndarray:
        """u^T M V V^T."""
        MV, V = self.factors(X, y)
        return np.einsum("mrp,mkp,mdk->mrd", U, MV, V)

    def mixed_jvp(self, X: np.ndarray, y: np.ndarray, A: np.ndarray) -> np.ndarray:
        """M V V^T a."""
        MV, V = self.factors(X, y)
        return np.einsum("mkp,mdk,mrd->mrp", MV, V, A)
