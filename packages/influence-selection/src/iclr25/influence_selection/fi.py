"""FI: the local influence measure on the perturbation manifold (Yu, Xu, Zhou, Wang, Zhu, Zhou, ICLR 2025).

Paper: "Enhancing Prediction Performance through Influence Measure" (OpenReview KjBG4JNOc2; no arXiv, no
official code). Everything follows the derivation of Appendix A:

    J_z   = d theta_hat / d omega = -(1/n) H^{-1} M_z,   M_z = d_x d_theta L(y, x; theta_hat)       (A.7)
    s_c   = J_z^T grad_theta log P(c|x) + grad_x log P(c|x)                                        (metric, App. A)
    G_z   = sum_c P(c|x) s_c s_c^T            (d x d, rank <= K-1: Moore-Penrose pseudo-inverse)
    v     = grad_theta L(z')^T J_z,   FI(z', z) = v G_z^+ v^T  >= 0                                (App. A)

H is the Hessian of the *regularised* mean training loss. The -1/n is kept inside s_c (the main-text
Algorithm 1 prints J without it; inside G, J = -H^{-1} M loses noisy-label detection completely and
J = +H^{-1} M weakens it, see the ablation claims of the reproduction). FI_util uses the mean
validation gradient for grad_theta L(z') (Algorithms 1 and 3); FI_active uses the predicted label of an
unlabelled point as z' and aggregates FI over labelled points by the mean of the values between the 10th and
90th percentiles (Algorithms 2 and 4).

Nothing here forms the p x d matrix M_z: everything goes through the two products u^T M_z (`mixed_vjp`) and
M_z a (`mixed_jvp`), in closed form for logistic regression and by `torch.func` for any other model.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

DEFAULT_RCOND = 1e-8  # relative pseudo-inverse tolerance on G (ours; the paper gives none)
# The factor c in J = c H^{-1} M used inside the metric G (v only scales FI, which leaves rankings unchanged):
# "appendix" is the paper's derivation (A.7, c = -1/n); the other two exist only for the ablations:
# "drop_n" keeps the sign and drops 1/n (c = -1), "main_text" is Algorithm 1 as printed (c = +1).


# ---------------------------------------------------------------------------------------------------------
# Operations: closed form (logistic regression) and generic (torch.func)
# ---------------------------------------------------------------------------------------------------------
class LogisticOps:
    """Closed-form per-point derivatives of binary / multinomial logistic regression (spec Sec. 3)."""

    def __init__(self, model: Any) -> None:
        self.model = model
        self.K = model.K
        self.d = model.d
        self.p = model.theta.size
        self.fi = model.fit_intercept

    def _aug(self, X: np.ndarray) -> np.ndarray:
        return np.hstack([X, np.ones((len(X), 1))]) if self.fi else X

    def hessian(self, X: np.ndarray, y: np.ndarray) -> np.ndarray:
        """Hessian of the regularised mean loss (p, p)."""
        return self.model.grad_hess(self.model.theta, X, y)[1]

    def probs(self, X: np.ndarray) -> np.ndarray:
        """(m, K)."""
        return self.model.predict_proba(X)

    def grads(self, X: np.ndarray, y: np.ndarray) -> np.ndarray:
        """Per-point grad_theta L, (m, p)."""
        Xa, P = self._aug(X), self.probs(X)
        if self.model.binary:
            return (P[:, 1] - y)[:, None] * Xa
        E = np.eye(self.K)[y]
        return ((P - E)[:, :, None] * Xa[:, None, :]).reshape(len(X), -1)

    def logp_grads(self, X: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """grad_theta log P(c|x) (m, K, p) and grad_x log P(c|x) (m, K, d)."""
        Xa, P = self._aug(X), self.probs(X)
        m, d = X.shape
        if self.model.binary:
            s, w = P[:, 1], self.model.theta[:d]
            dth = np.stack([-s[:, None] * Xa, (1 - s)[:, None] * Xa], axis=1)
            dx = np.stack([-s[:, None] * w, (1 - s)[:, None] * w], axis=1)
            return dth, dx
        W = self.model.weights()
        Wx = W[:, :d]
        Wbar = P @ Wx  # (m, d)
        EmP = np.eye(self.K)[None] - P[:, None, :]  # (m, c, k) = e_c - p
        dth = (EmP[:, :, :, None] * Xa[:, None, None, :]).reshape(m, self.K, -1)
        dx = Wx[None] - Wbar[:, None, :]
        return dth, dx

    def mixed_vjp(self, X: np.ndarray, y: np.ndarray, U: np.ndarray) -> np.ndarray:
        """u^T M_i for directions U (m, r, p): (m, r, d)."""
        Xa, P = self._aug(X), self.probs(X)
        m, d = X.shape
        if self.model.binary:
            s, w = P[:, 1], self.model.theta[:d]
            ux = np.einsum("mrp,mp->mr", U, Xa)
            return (s - y)[:, None, None] * U[..., :d] + (s * (1 - s))[:, None, None] * ux[..., None] * w
        W = self.model.weights()
        Wx = W[:, :d]
        Wbar = P @ Wx
        U4 = U.reshape(m, U.shape[1], self.K, -1)
        r = np.einsum("mrka,ma->mrk", U4, Xa)  # u_c . x~
        pr = P[:, None, :] * r
        t1 = np.einsum("mrk,kd->mrd", pr, Wx) - pr.sum(-1)[..., None] * Wbar[:, None, :]
        t2 = np.einsum("mk,mrkd->mrd", P - np.eye(self.K)[y], U4[..., :d])
        return t1 + t2

    def mixed_jvp(self, X: np.ndarray, y: np.ndarray, A: np.ndarray) -> np.ndarray:
        """M_i a for directions A (m, r, d): (m, r, p)."""
        Xa, P = self._aug(X), self.probs(X)
        m, d = X.shape
        pad = np.concatenate([A, np.zeros((*A.shape[:2], 1))], -1) if self.fi else A
        if self.model.binary:
            s, w = P[:, 1], self.model.theta[:d]
            wa = A @ w
            return (s - y)[:, None, None] * pad + (s * (1 - s))[:, None, None] * wa[..., None] * Xa[:, None, :]
        W = self.model.weights()
        Wx = W[:, :d]
        Wbar = P @ Wx
        t = np.einsum("kd,mrd->mrk", Wx, A) - np.einsum("md,mrd->mr", Wbar, A)[..., None]
        first = (P[:, None, :] * t)[..., None] * Xa[:, None, None, :]
        second = (P - np.eye(self.K)[y])[:, None, :, None] * pad[:, :, None, :]
        return (first + second).reshape(m, A.shape[1], -1)


class TorchOps:
    """Generic per-point derivatives of any model with `theta`, `l2_diag` and `logits_fn`, via torch.func."""

    def __init__(self, model: Any) -> None:
        import torch
        from torch.func import grad, jacrev, jvp, vmap

        self.model = model
        self.theta = torch.as_tensor(np.asarray(model.theta, float))
        self.p = self.theta.numel()
        self.K = model.K
        self.d = model.d
        f = model.logits_fn
        th = self.theta

        def loss(t, x, y):  # y is a one-hot row (vmap cannot index by a batched label)
            return -(torch.log_softmax(f(t, x), -1) * y).sum()

        def logp(t, x):
            return torch.log_softmax(f(t, x), -1)

        gloss = grad(loss)
        self._torch = torch
        self._loss = loss
        self._grads = vmap(gloss, in_dims=(None, 0, 0))
        self._probs = vmap(lambda x: torch.softmax(f(th, x), -1))
        self._logp = vmap(jacrev(logp, argnums=(0, 1)), in_dims=(None, 0))

        def vjp_one(x, y, u):  # u^T d_x grad_theta L
            return grad(lambda xx: gloss(th, xx, y) @ u)(x)

        def jvp_one(x, y, a):  # d_x grad_theta L . a
            return jvp(lambda xx: gloss(th, xx, y), (x,), (a,))[1]

        self._vjp = vmap(vmap(vjp_one, in_dims=(None, None, 0)), in_dims=(0, 0, 0))
        self._jvp = vmap(vmap(jvp_one, in_dims=(None, None, 0)), in_dims=(0, 0, 0))

    def _t(self, a: np.ndarray) -> Any:
        return self._torch.as_tensor(np.asarray(a, float))

    def _y(self, y: np.ndarray) -> Any:
        return self._t(np.eye(self.K)[np.asarray(y).astype(int)])

    def hessian(self, X: np.ndarray, y: np.ndarray) -> np.ndarray:
        """Hessian of the regularised mean loss by torch.func.hessian (p, p)."""
        from torch.func import hessian, vmap

        Xt, yt = self._t(X), self._y(y)

        def mean_loss(t):
            return vmap(self._loss, in_dims=(None, 0, 0))(t, Xt, yt).mean()

        H = hessian(mean_loss)(self.theta).numpy()
        return 0.5 * (H + H.T) + np.diag(self.model.l2_diag)

    def probs(self, X: np.ndarray) -> np.ndarray:
        """(m, K)."""
        return self._probs(self._t(X)).detach().numpy()

    def grads(self, X: np.ndarray, y: np.ndarray) -> np.ndarray:
        """Per-point grad_theta L, (m, p)."""
        return self._grads(self.theta, self._t(X), self._y(y)).detach().numpy()

    def logp_grads(self, X: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """grad_theta log P(c|x) (m, K, p) and grad_x log P(c|x) (m, K, d)."""
        dth, dx = self._logp(self.theta, self._t(X))
        return dth.detach().numpy(), dx.detach().numpy()

    def mixed_vjp(self, X: np.ndarray, y: np.ndarray, U: np.ndarray) -> np.ndarray:
        """u^T M_i for U (m, r, p): (m, r, d)."""
        return self._vjp(self._t(X), self._y(y), self._t(U)).detach().numpy()

    def mixed_jvp(self, X: np.ndarray, y: np.ndarray, A: np.ndarray) -> np.ndarray:
        """M_i a for A (m, r, d): (m, r, p)."""
        return self._jvp(self._t(X), self._y(y), self._t(A)).detach().numpy()


def make_ops(model: Any, backend: str = "auto") -> Any:
    """Closed-form ops for `LogisticModel` ("auto"/"closed"), torch.func ops otherwise ("auto"/"torch")."""
    from iclr25.influence_selection.models import LogisticModel

    if backend not in ("auto", "closed", "torch"):
        raise ValueError(f"backend must be 'auto', 'closed' or 'torch', got {backend!r}")
    if backend == "torch" or not isinstance(model, LogisticModel):
        if backend == "closed":
            raise ValueError("the closed form exists for LogisticModel only")
        return TorchOps(model)
    return LogisticOps(model)


# ---------------------------------------------------------------------------------------------------------
# The measure
# ---------------------------------------------------------------------------------------------------------
def _hessian(ops: Any, model: Any, X: np.ndarray, y: np.ndarray, hessian: Any) -> np.ndarray:
    """H: "exact" / None (the full Hessian with the L2 term), "kfac" (Sec. 5, MLPModel), or a given matrix."""
    if hessian is None or (isinstance(hessian, str) and hessian == "exact"):
        return ops.hessian(X, y)
    if isinstance(hessian, str):
        if hessian != "kfac":
            raise ValueError(f"hessian must be 'exact', 'kfac' or a (p, p) array, got {hessian!r}")
        from iclr25.influence_selection.approx import kfac_hessian

        return kfac_hessian(model, X, y)
    return np.asarray(hessian, float)


def _with_rank(ops: Any, svd_rank: int | None) -> Any:
    """Replace M by its rank-k truncation (KFSVD, Sec. 5) when svd_rank is given."""
    if svd_rank is None:
        return ops
    from iclr25.influence_selection.approx import TruncatedMOps

    return ops if isinstance(ops, TruncatedMOps) else TruncatedMOps(ops, svd_rank)


def _solve(H: np.ndarray, B: np.ndarray) -> np.ndarray:
    """H^{-1} B for B (p, ...) (numpy LU; a least-squares solve if H is singular)."""
    shape = B.shape
    B2 = B.reshape(shape[0], -1)
    try:
        out = np.linalg.solve(H, B2)
    except np.linalg.LinAlgError:
        out = np.linalg.lstsq(H, B2, rcond=None)[0]
    return out.reshape(shape)


def pinv_psd(G: np.ndarray, rcond: float = DEFAULT_RCOND) -> np.ndarray:
    """Batched Moore-Penrose pseudo-inverse of symmetric PSD matrices (..., d, d), relative tolerance rcond."""
    w, V = np.linalg.eigh(G)
    top = np.max(np.abs(w), axis=-1, keepdims=True)
    keep = w > rcond * top
    inv = np.where(keep, 1.0 / np.where(keep, w, 1.0), 0.0)
    return np.einsum("...ik,...k,...jk->...ij", V, inv, V)


def _check_form(form: str) -> None:
    if form not in ("appendix", "drop_n", "main_text"):
        raise ValueError(f"metric_form must be 'appendix', 'drop_n' or 'main_text', got {form!r}")


class Geometry:
    """Per-training-point metric of the perturbation manifold: S (m, K, d'), P (m, K), G^+ (m, d', d')."""

    def __init__(
        self,
        ops: Any,
        H: np.ndarray,
        n: int,
        X: np.ndarray,
        y: np.ndarray,
        *,
        rcond: float = DEFAULT_RCOND,
        basis: np.ndarray | None = None,
        metric_form: str = "appendix",
    ) -> None:
        m = len(X)
        self.P = ops.probs(X)  # (m, K)
        dth, dx = ops.logp_grads(X)  # (m, K, p), (m, K, d)
        Q = _solve(H, dth.reshape(-1, dth.shape[-1]).T).T.reshape(dth.shape)  # H^{-1} grad_theta log P_c
        MtQ = ops.mixed_vjp(X, y, Q)  # (m, K, d) = M^T H^{-1} grad_theta log P_c
        _check_form(metric_form)
        c = {"appendix": -1.0 / n, "drop_n": -1.0, "main_text": 1.0}[metric_form]
        S = c * MtQ + dx  # s_c = J^T grad_theta log P_c + grad_x log P_c with J = -(1/n) H^{-1} M  (App. A, A.7)
        if basis is not None:  # omega = basis @ omega': every x-direction vector is mapped by basis^T
            S = S @ basis
        self.S = S
        self.G = np.einsum("mk,mki,mkj->mij", self.P, S, S)  # G_z = sum_c P_c s_c s_c^T
        self.Gp = pinv_psd(self.G, rcond)
        self.m = m


def _v_rows(ops: Any, H: np.ndarray, n: int, X: np.ndarray, y: np.ndarray, g_target: np.ndarray, basis) -> np.ndarray:
    """v_i = g_target^T J_i = -(1/n) (H^{-1} g_target)^T M_i for every training point: (m, d')."""
    u = _solve(H, g_target)
    v = -ops.mixed_vjp(X, y, np.broadcast_to(u, (len(X), 1, u.size)).copy())[:, 0] / n
    return v if basis is None else v @ basis


def _fi_direction(
    model: Any,
    X: np.ndarray,
    y: np.ndarray,
    g_target: np.ndarray,
    *,
    rcond: float,
    basis: np.ndarray | None,
    backend: str,
    hessian: Any,
    metric_form: str = "appendix",
    ops: Any = None,
) -> np.ndarray:
    X = np.asarray(X, float)
    y = np.asarray(y).astype(int)
    ops = ops or make_ops(model, backend)
    H = _hessian(ops, model, X, y, hessian)
    n = len(X)
    geo = Geometry(ops, H, n, X, y, rcond=rcond, basis=basis, metric_form=metric_form)
    v = _v_rows(ops, H, n, X, y, g_target, basis)
    return np.einsum("mi,mij,mj->m", v, geo.Gp, v)  # FI = v G^+ v^T (App. A)


def fi_util(
    model: Any,
    X: np.ndarray,
    y: np.ndarray,
    X_val: np.ndarray,
    y_val: np.ndarray,
    *,
    rcond: float = DEFAULT_RCOND,
    basis: np.ndarray | None = None,
    backend: str = "auto",
    hessian: np.ndarray | str | None = None,
    svd_rank: int | None = None,
    metric_form: str = "appendix",
    ops: Any = None,
) -> np.ndarray:
    """FI_util of every training point (n,): the target is the mean validation loss (Algorithms 1 and 3).

    `model` must be fitted on (X, y). `basis` reparameterises omega = basis @ omega' (tests of Theorem 1);
    `hessian` is "exact" (default), "kfac" or a matrix; `svd_rank=k` truncates M to rank k (KFSVD);
    `metric_form` other than "appendix" is an ablation
    (see the note at the top of the module).
    """
    ops = _with_rank(ops or make_ops(model, backend), svd_rank)
    gV = ops.grads(np.asarray(X_val, float), np.asarray(y_val).astype(int)).mean(0)  # mean validation gradient
    return _fi_direction(
        model, X, y, gV, rcond=rcond, basis=basis, backend=backend, hessian=hessian, metric_form=metric_form, ops=ops
    )


def fi_pair(
    model: Any,
    z_target: tuple[np.ndarray, int],
    X: np.ndarray,
    y: np.ndarray,
    *,
    rcond: float = DEFAULT_RCOND,
    basis: np.ndarray | None = None,
    backend: str = "auto",
    hessian: np.ndarray | str | None = None,
    svd_rank: int | None = None,
    ops: Any = None,
) -> np.ndarray:
    """FI(z', z_i) of one target point z' = (x', y') on every training point z_i (App. A): (n,)."""
    ops = _with_rank(ops or make_ops(model, backend), svd_rank)
    xt, yt = z_target
    g = ops.grads(np.asarray(xt, float).reshape(1, -1), np.array([int(yt)]))[0]
    return _fi_direction(model, X, y, g, rcond=rcond, basis=basis, backend=backend, hessian=hessian, ops=ops)


def trim_mean_10_90(values: np.ndarray, axis: int = -1) -> np.ndarray:
    """Mean of the values between the 10th and 90th percentiles (inclusive): the paper's FI_active aggregate."""
    values = np.asarray(values, float)
    lo = np.percentile(values, 10, axis=axis, keepdims=True)
    hi = np.percentile(values, 90, axis=axis, keepdims=True)
    keep = (values >= lo) & (values <= hi)
    return np.sum(np.where(keep, values, 0.0), axis=axis) / np.maximum(keep.sum(axis=axis), 1)


AGGREGATES: dict[str, Callable[[np.ndarray], np.ndarray]] = {
    "trim_mean_10_90": trim_mean_10_90,
    "mean": lambda v: np.mean(v, axis=-1),
    "max": lambda v: np.max(v, axis=-1),
}


def fi_active_matrix(
    model: Any,
    X_lab: np.ndarray,
    y_lab: np.ndarray,
    X_pool: np.ndarray,
    *,
    sub: int | None = None,
    rng: np.random.Generator | None = None,
    rcond: float = DEFAULT_RCOND,
    backend: str = "auto",
    hessian: np.ndarray | str | None = None,
    svd_rank: int | None = None,
    metric_form: str = "appendix",
    chunk: int = 256,
) -> np.ndarray:
    """FI((x_u, y_hat_u), z_j) for every pool point u and (sub-sampled) labelled point j: (m, n_sub).

    With A_j = diag(sqrt P_j) S_j (K x d), G_j = A_j^T A_j and A_j^+ = G_j^+ A_j^T, so
    FI(u, j) = |v_uj A_j^+|^2 = (1/n^2) |h_u^T (M_j A_j^+)|^2 with h_u = H^{-1} grad L(x_u, y_hat_u):
    the K products M_j a are computed once per labelled point, never the p x d matrix.
    """
    X_lab = np.asarray(X_lab, float)
    y_lab = np.asarray(y_lab).astype(int)
    X_pool = np.asarray(X_pool, float)
    ops = _with_rank(make_ops(model, backend), svd_rank)
    H = _hessian(ops, model, X_lab, y_lab, hessian)
    n = len(X_lab)
    idx = np.arange(n)
    if sub is not None and sub < n:
        idx = np.sort((rng or np.random.default_rng(0)).choice(n, sub, replace=False))
    Xs, ys = X_lab[idx], y_lab[idx]
    geo = Geometry(ops, H, n, Xs, ys, rcond=rcond, metric_form=metric_form)
    A = np.sqrt(geo.P)[..., None] * geo.S  # (j, K, d)
    Apinv = np.einsum("jab,jkb->jak", geo.Gp, A)  # (j, d, K) = G^+ A^T
    B = ops.mixed_jvp(Xs, ys, np.transpose(Apinv, (0, 2, 1)))  # (j, K, p) = (M_j A_j^+)^T
    out = np.empty((len(X_pool), len(idx)))
    for s in range(0, len(X_pool), chunk):
        Xp = X_pool[s : s + chunk]
        yhat = ops.probs(Xp).argmax(1)  # the predicted label stands in for the unknown one (Algorithms 2 and 4)
        h = _solve(H, ops.grads(Xp, yhat).T).T  # (u, p)
        hb = (h @ B.reshape(-1, B.shape[-1]).T).reshape(len(Xp), *B.shape[:2])  # (u, j, K) = h_u^T M_j A_j^+
        out[s : s + chunk] = (hb**2).sum(-1) / n**2
    return out


def fi_active(
    model: Any,
    X_lab: np.ndarray,
    y_lab: np.ndarray,
    X_pool: np.ndarray,
    *,
    agg: str | Callable[[np.ndarray], np.ndarray] = "trim_mean_10_90",
    sub: int | None = None,
    rng: np.random.Generator | None = None,
    rcond: float = DEFAULT_RCOND,
    backend: str = "auto",
    hessian: np.ndarray | str | None = None,
    svd_rank: int | None = None,
    metric_form: str = "appendix",
) -> np.ndarray:
    """FI_active acquisition score of every pool point (m,): FI aggregated over labelled points (Algorithm 4)."""
    if isinstance(agg, str) and agg not in AGGREGATES:
        raise ValueError(f"agg must be one of {sorted(AGGREGATES)} or a callable, got {agg!r}")
    fn = AGGREGATES[agg] if isinstance(agg, str) else agg
    mat = fi_active_matrix(
        model,
        X_lab,
        y_lab,
        X_pool,
        sub=sub,
        rng=rng,
        rcond=rcond,
        backend=backend,
        hessian=hessian,
        svd_rank=svd_rank,
        metric_form=metric_form,
    )
    return fn(mat)


def fi_binary_closed_form(model: Any, X: np.ndarray, y: np.ndarray, g_target: np.ndarray) -> np.ndarray:
    """Binary LR: FI = (v.s_1)^2 (1 - sigma) / (sigma |s_1|^4), since G = sigma/(1-sigma) s_1 s_1^T (rank one)."""
    ops = LogisticOps(model)
    X = np.asarray(X, float)
    y = np.asarray(y).astype(int)
    n = len(X)
    H = ops.hessian(X, y)
    s = model.predict_proba(X)[:, 1]
    dth, dx = ops.logp_grads(X)
    q = _solve(H, dth[:, 1].T).T  # H^{-1} (1 - sigma) x~
    s1 = -ops.mixed_vjp(X, y, q[:, None, :])[:, 0] / n + dx[:, 1]
    v = _v_rows(ops, H, n, X, y, g_target, None)
    return (np.sum(v * s1, 1) ** 2) * (1 - s) / (s * np.sum(s1**2, 1) ** 2)
