"""Baselines of HD-Explain's evaluation (arXiv 2403.15576, experiments), behind the same `Explainer` interface.

All use the model's predicted label for test points and return the largest scores (proponents).
- `InfluenceExplainer`: influence functions (Koh & Liang 2017) on the last linear layer (W, b):
  score_i = g_i^T (H + damping I)^-1 g_test / n, H the exact Hessian of the mean training loss wrt the
  last layer (official: LiSSA, damp 0.01, scale 25, depth 10, on the first training batch; `solver="lissa"`
  gives a LiSSA estimate on the full-data Hessian).
- `TracInExplainer`: TracIn (Pruthi et al. 2020) at the final checkpoint, last layer: g_i . g_test / n.
- `RepresenterExplainer`: representer points (Yeh et al. 2018): refit the last layer (no bias) with
  sigmoid + BCE towards the model's softmax outputs, L2 lambda = 0.003, full-batch gradient steps with
  backtracking line search (<= 3000 iterations, stop at mean|grad| < initial / 200);
  alpha_i = (sigma(W h_i) - f(x_i)) / (-2 lambda N), score_i = alpha_i[y_test] (h_i . h_test).
- `SimilarityExplainer`: RBF or cosine similarity in input or representation space (reviewers' baseline).

Loss: cross-entropy by default. The official IF/TracIn call nll_loss on probabilities, i.e. a loss of
-p_y(x); `loss="neg_prob"` reproduces that for parity runs. Last-layer gradients and Hessians use their
closed forms (z = W h + b: grad_W = r h^T, grad_b = r with r = dloss/dz), tested against autograd.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch
import torch.nn.functional as F

from iclr25.hd_explain.explainer import Explainer, HDExplainer, _as_tensor, model_device, model_dtype

LOSSES = ("ce", "neg_prob")
METHODS: tuple[str, ...] = ("hd", "hd*", "if", "tracin", "rps", "sim")


def features(model: Any, X: Any, batch_size: int = 512, dtype: torch.dtype = torch.float64) -> tuple[torch.Tensor, ...]:
    """Penultimate features h(x) (n, m) and probabilities f(x) (n, C), on the CPU in `dtype`."""
    device = model_device(model)
    X = _as_tensor(X, dtype=model_dtype(model), device="cpu")
    hs, ps = [], []
    with torch.no_grad():
        for i in range(0, X.shape[0], batch_size):
            h = model.representation(X[i : i + batch_size].to(device))
            hs.append(h.reshape(h.shape[0], -1).to(dtype).cpu())
            ps.append(torch.softmax(model.head(h), 1).to(dtype).cpu())
    return torch.cat(hs), torch.cat(ps)


def _dloss_dz(P: torch.Tensor, y: torch.Tensor, loss: str) -> torch.Tensor:
    onehot = F.one_hot(y, P.shape[1]).to(P.dtype)
    if loss == "ce":
        return P - onehot  # d(-log p_y)/dz
    if loss == "neg_prob":
        return P.gather(1, y[:, None]) * (P - onehot)  # d(-p_y)/dz
    raise ValueError(f"loss must be one of {', '.join(LOSSES)}, got {loss!r}")


def _with_bias(H: torch.Tensor) -> torch.Tensor:
    return torch.cat([H, torch.ones(H.shape[0], 1, dtype=H.dtype)], 1)  # (n, m + 1)


def last_layer_grads(H: torch.Tensor, P: torch.Tensor, y: torch.Tensor, loss: str = "ce") -> torch.Tensor:
    """Per-example loss gradient wrt [W | b] of the last layer, flattened row-major (n, C (m + 1))."""
    r = _dloss_dz(P, y, loss)  # (n, C)
    return (r[:, :, None] * _with_bias(H)[:, None, :]).reshape(H.shape[0], -1)


def last_layer_hessian(
    H: torch.Tensor, P: torch.Tensor, y: torch.Tensor, loss: str = "ce", chunk: int = 256
) -> torch.Tensor:
    """Exact Hessian of the mean loss wrt [W | b]: mean_i A_i (x) h~_i h~_i^T, A_i = d^2 loss / dz^2 (P, P)."""
    n, C = P.shape
    Ht = _with_bias(H)
    m1 = Ht.shape[1]
    out = torch.zeros(C, m1, C, m1, dtype=H.dtype)
    eye = torch.eye(C, dtype=P.dtype)
    for i in range(0, n, chunk):
        p, hb = P[i : i + chunk], Ht[i : i + chunk]
        A = torch.diag_embed(p) - p[:, :, None] * p[:, None, :]  # softmax Jacobian = Hessian of CE wrt z
        if loss == "neg_prob":  # d^2(-p_y)/dz^2 = -p_y [(e_y - p)(e_y - p)^T - (diag p - p p^T)]
            e = eye[y[i : i + chunk]] - p
            A = -p.gather(1, y[i : i + chunk, None])[:, :, None] * (e[:, :, None] * e[:, None, :] - A)
        elif loss != "ce":
            raise ValueError(f"loss must be one of {', '.join(LOSSES)}, got {loss!r}")
        out += torch.einsum("nab,ni,nj->aibj", A, hb, hb)
    return out.reshape(C * m1, C * m1) / n


def lissa(
    Hmat: torch.Tensor, V: torch.Tensor, damp: float = 0.01, scale: float = 25.0, depth: int = 10
) -> torch.Tensor:
    """LiSSA estimate of H^-1 v per column of V as in the official code (not divided by `scale`) (P, k)."""
    est = V.clone()
    for _ in range(depth):
        est = V + (1.0 - damp) * est - (Hmat @ est) / scale
    return est


class _LastLayer(Explainer):
    def __init__(self, model: Any, n_classes: int, loss: str = "ce") -> None:
        super().__init__(model, n_classes)
        if loss not in LOSSES:
            raise ValueError(f"loss must be one of {', '.join(LOSSES)}, got {loss!r}")
        self.loss = loss

    def fit(self, X: Any, y: Any) -> _LastLayer:
        """Cache last-layer features, probabilities and per-example gradients (given labels)."""
        self.model.eval()
        self.H, self.P = features(self.model, X)
        self.y = torch.as_tensor(np.asarray(y), dtype=torch.long)
        if self.y.shape[0] != self.H.shape[0]:
            raise ValueError(f"X has {self.H.shape[0]} rows but y has {self.y.shape[0]}")
        self.G = last_layer_grads(self.H, self.P, self.y, self.loss)  # (n, P)
        self.n_train = self.H.shape[0]
        return self

    def test_grads(self, X_test: Any) -> torch.Tensor:
        """Last-layer loss gradients of test points with their predicted label (n_test, P)."""
        H, P = features(self.model, X_test)
        return last_layer_grads(H, P, P.argmax(1), self.loss)


class InfluenceExplainer(_LastLayer):
    """Last-layer influence function: g_i^T (H + damping I)^-1 g_test / n (exact solve, or LiSSA)."""

    name = "if"

    def __init__(
        self, model: Any, n_classes: int, loss: str = "ce", damping: float = 0.01, solver: str = "exact"
    ) -> None:
        super().__init__(model, n_classes, loss)
        if not damping >= 0:
            raise ValueError(f"damping must be >= 0, got {damping}")
        if solver not in ("exact", "lissa"):
            raise ValueError(f"solver must be exact or lissa, got {solver!r}")
        self.damping, self.solver = float(damping), solver

    def fit(self, X: Any, y: Any) -> InfluenceExplainer:
        """Cache gradients and the damped exact Hessian of the mean training loss."""
        super().fit(X, y)
        self.hessian = last_layer_hessian(self.H, self.P, self.y, self.loss)
        return self

    def _solve(self, V: torch.Tensor) -> torch.Tensor:
        if self.solver == "lissa":
            return lissa(self.hessian, V, damp=self.damping)
        A = self.hessian + self.damping * torch.eye(self.hessian.shape[0], dtype=self.hessian.dtype)
        return torch.linalg.solve(A, V)

    def score(self, X_test: Any) -> torch.Tensor:
        """(1/n) g_i^T H^-1 g_test (n_test, n_train)."""
        s_test = self._solve(self.test_grads(X_test).T)  # (P, n_test)
        return (self.G @ s_test).T / self.n_train

    def debug_scores(self) -> torch.Tensor:
        """Self-influence g_i^T H^-1 g_i (n_train,)."""
        return (self.G * self._solve(self.G.T).T).sum(1)


class TracInExplainer(_LastLayer):
    """TracIn at the final checkpoint, last layer: g_i . g_test / n."""

    name = "tracin"

    def score(self, X_test: Any) -> torch.Tensor:
        """(1/n) g_i . g_test (n_test, n_train)."""
        return self.test_grads(X_test) @ self.G.T / self.n_train

    def debug_scores(self) -> torch.Tensor:
        """Self-influence |g_i|^2 (n_train,)."""
        return (self.G * self.G).sum(1)


class RepresenterExplainer(Explainer):
    """Representer point selection on the last layer (official refit: sigmoid + BCE, L2 lambda = 0.003)."""

    name = "rps"

    def __init__(self, model: Any, n_classes: int, lmbd: float = 0.003, max_iter: int = 3000) -> None:
        super().__init__(model, n_classes)
        if not lmbd > 0:
            raise ValueError(f"lmbd must be > 0, got {lmbd}")
        self.lmbd, self.max_iter = float(lmbd), int(max_iter)

    def _objective(self, W: torch.Tensor) -> torch.Tensor:
        phi = torch.sigmoid(self.H @ W.T)
        return F.binary_cross_entropy(phi, self.P) + self.lmbd * (W * W).sum()

    def fit(self, X: Any, y: Any) -> RepresenterExplainer:
        """Refit the last layer towards the softmax outputs and compute alpha (n, C)."""
        self.model.eval()
        self.H, self.P = features(self.model, X)
        self.y = torch.as_tensor(np.asarray(y), dtype=torch.long)
        W = self.model.head.weight.detach().to("cpu", self.H.dtype).clone()
        best_W, best, init = W.clone(), float("inf"), None
        self.iterations = 0
        for it in range(self.max_iter):
            W.requires_grad_(True)
            val = self._objective(W)
            (grad,) = torch.autograd.grad(val, W)
            W, val = W.detach(), val.detach()
            g = float(grad.abs().mean())
            init = g if init is None else init
            self.iterations = it + 1
            if g < best:
                best, best_W = g, W.clone()
                if g < init / 200:
                    break
            t, gnorm2 = 10.0, float((grad * grad).sum())
            while True:  # backtracking line search (t = 10, beta = 0.5), as in the official refit
                cand = W - t * grad
                if t < 1e-10 or float(self._objective(cand)) - float(val) + t * gnorm2 / 2 < 0:
                    break
                t *= 0.5
            W = cand
        self.W = best_W
        phi = torch.sigmoid(self.H @ best_W.T)
        self.alpha = (phi - self.P) / (-2.0 * self.lmbd * self.H.shape[0])  # (n, C)
        self.n_train = self.H.shape[0]
        return self

    def score(self, X_test: Any) -> torch.Tensor:
        """alpha_i[y_test] (h_i . h_test) (n_test, n_train)."""
        Ht, Pt = features(self.model, X_test)
        return self.alpha[:, Pt.argmax(1)].T * (Ht @ self.H.T)

    def debug_scores(self) -> torch.Tensor:
        """-alpha_i[y_i]: the official ranks alpha_i[y_i] ascending (most negative first) (n_train,)."""
        return -self.alpha.gather(1, self.y[:, None])[:, 0]


class SimilarityExplainer(Explainer):
    """RBF (exp(-|u - u'|^2 / (2 dim))) or cosine similarity in input or representation space."""

    name = "sim"

    def __init__(self, model: Any, n_classes: int, space: str = "input", metric: str = "rbf") -> None:
        super().__init__(model, n_classes)
        if space not in ("input", "representation"):
            raise ValueError(f"space must be input or representation, got {space!r}")
        if metric not in ("rbf", "cosine"):
            raise ValueError(f"metric must be rbf or cosine, got {metric!r}")
        self.space, self.metric = space, metric

    def _embed(self, X: Any) -> torch.Tensor:
        if self.space == "representation":
            return features(self.model, X)[0]
        X = _as_tensor(X, dtype=torch.float64)
        return X.reshape(X.shape[0], -1)

    def fit(self, X: Any, y: Any) -> SimilarityExplainer:
        """Cache the embedded pool."""
        self.U = self._embed(X)
        self.n_train = self.U.shape[0]
        return self

    def score(self, X_test: Any) -> torch.Tensor:
        """Similarity of every test point to every training point (n_test, n_train)."""
        V = self._embed(X_test)
        if self.metric == "cosine":
            return F.normalize(V, dim=1) @ F.normalize(self.U, dim=1).T
        r2 = ((V * V).sum(1)[:, None] + (self.U * self.U).sum(1)[None, :] - 2 * V @ self.U.T).clamp_min(0)
        return torch.exp(-r2 / (2.0 * self.U.shape[1]))


def make_explainer(method: str, model: Any, n_classes: int, **options: Any) -> Explainer:
    """One registry: "hd", "hd*" (representation), "if", "tracin", "rps", "sim" with their options."""
    if method == "hd":
        return HDExplainer(model, n_classes, **options)
    if method == "hd*":
        return HDExplainer(model, n_classes, representation=True, **options)
    if method == "if":
        return InfluenceExplainer(model, n_classes, **options)
    if method == "tracin":
        return TracInExplainer(model, n_classes, **options)
    if method == "rps":
        return RepresenterExplainer(model, n_classes, **options)
    if method == "sim":
        return SimilarityExplainer(model, n_classes, **options)
    raise ValueError(f"method must be one of {', '.join(METHODS)}, got {method!r}")
