"""Models with the interface FI needs: scikit-learn-style `fit` / `predict_proba` plus a functional view.

Every model exposes `theta` (flat float64 parameters), `l2_diag` (the per-parameter weight of the L2 term,
so the training objective is R(theta) = mean_i L(y_i, x_i; theta) + 1/2 sum_k l2_diag_k theta_k^2, paper
App. A: H includes the L2 term) and `logits_fn(theta, x)` (a torch function of one flat parameter vector and
one input x of shape (d,), returning (K,) logits). Binary logistic regression is written with logits
[0, w.x + b], which is exactly the sigmoid model.

Our choices (the paper gives none): the L2 term is lambda/2 |w|^2 on the mean loss; binary LR leaves the
intercept unpenalised, multinomial LR penalises it (otherwise the softmax intercept shift leaves H singular).
"""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np


def _softmax(z: np.ndarray) -> np.ndarray:
    z = z - z.max(axis=-1, keepdims=True)
    e = np.exp(z)
    return e / e.sum(axis=-1, keepdims=True)


def _augment(X: np.ndarray, fit_intercept: bool) -> np.ndarray:
    return np.hstack([X, np.ones((len(X), 1))]) if fit_intercept else X


class LogisticModel:
    """L2-regularised logistic regression (binary: sigmoid; K > 2: softmax), fitted by damped Newton to `tol`."""

    def __init__(
        self,
        l2: float = 1e-2,
        n_classes: int | None = None,
        fit_intercept: bool = True,
        penalize_intercept: bool | None = None,
        tol: float = 1e-10,
        max_iter: int = 100,
    ) -> None:
        if not l2 >= 0:
            raise ValueError(f"l2 must be >= 0, got {l2}")
        self.l2 = float(l2)
        self.n_classes = n_classes
        self.fit_intercept = fit_intercept
        self.penalize_intercept = penalize_intercept
        self.tol = tol
        self.max_iter = max_iter
        self.theta: np.ndarray | None = None
        self.d: int | None = None

    # ---- shapes -------------------------------------------------------------------------------------
    @property
    def binary(self) -> bool:
        """True for the sigmoid parameterisation theta = (w, b)."""
        return self.n_classes == 2

    @property
    def K(self) -> int:
        """Number of classes."""
        assert self.n_classes is not None
        return self.n_classes

    @property
    def width(self) -> int:
        """d + 1 with an intercept, else d."""
        assert self.d is not None
        return self.d + int(self.fit_intercept)

    @property
    def l2_diag(self) -> np.ndarray:
        """Per-parameter L2 weights (the Hessian of the penalty)."""
        pen_b = self.penalize_intercept if self.penalize_intercept is not None else not self.binary
        row = np.full(self.width, self.l2)
        if self.fit_intercept and not pen_b:
            row[-1] = 0.0
        return row if self.binary else np.tile(row, self.K)

    def weights(self, theta: np.ndarray | None = None) -> np.ndarray:
        """Binary: (d+1,) = [w, b]; multinomial: (K, d+1) = W."""
        theta = self.theta if theta is None else theta
        return theta if self.binary else theta.reshape(self.K, self.width)

    # ---- numpy model --------------------------------------------------------------------------------
    def _probs_theta(self, theta: np.ndarray, Xa: np.ndarray) -> np.ndarray:
        if self.binary:
            z = Xa @ theta
            s = 1.0 / (1.0 + np.exp(-z))
            return np.stack([1 - s, s], axis=1)
        return _softmax(Xa @ theta.reshape(self.K, self.width).T)

    def predict_proba(self, X: np.ndarray) -> np.ndarray:
        """Class probabilities, shape (m, K)."""
        assert self.theta is not None, "fit the model first"
        return self._probs_theta(self.theta, _augment(np.asarray(X, float), self.fit_intercept))

    def predict(self, X: np.ndarray) -> np.ndarray:
        """Most probable class."""
        return self.predict_proba(X).argmax(1)

    def objective(self, theta: np.ndarray, X: np.ndarray, y: np.ndarray) -> float:
        """R(theta) = mean cross-entropy + 1/2 sum l2_diag theta^2."""
        P = self._probs_theta(theta, _augment(X, self.fit_intercept))
        nll = -np.mean(np.log(np.clip(P[np.arange(len(y)), y], 1e-300, None)))
        return float(nll + 0.5 * np.sum(self.l2_diag * theta**2))

    def grad_hess(self, theta: np.ndarray, X: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Gradient and Hessian of R at theta (closed form, including the L2 term)."""
        Xa = _augment(X, self.fit_intercept)
        n = len(y)
        P = self._probs_theta(theta, Xa)
        if self.binary:
            s = P[:, 1]
            g = Xa.T @ (s - y) / n
            H = (Xa * (s * (1 - s))[:, None]).T @ Xa / n
        else:
            E = np.eye(self.K)[y]
            g = ((P - E).T @ Xa).ravel() / n  # (K*(d+1),) ordered (c, a)
            w = self.width
            H = np.empty((self.K * w, self.K * w))
            for c in range(self.K):
                for k in range(c, self.K):
                    coef = P[:, c] * ((c == k) - P[:, k])
                    blk = (Xa * coef[:, None]).T @ Xa / n
                    H[c * w : (c + 1) * w, k * w : (k + 1) * w] = blk
                    H[k * w : (k + 1) * w, c * w : (c + 1) * w] = blk.T
        lam = self.l2_diag
        return g + lam * theta, H + np.diag(lam)

    def fit(self, X: np.ndarray, y: np.ndarray, theta0: np.ndarray | None = None) -> LogisticModel:
        """Minimise R by Newton's method with backtracking until |grad| <= tol."""
        X = np.asarray(X, float)
        y = np.asarray(y).astype(int)
        if X.ndim != 2 or len(X) != len(y):
            raise ValueError(f"X must be (n, d) with n = len(y); got {X.shape} and {y.shape}")
        if self.n_classes is None:
            self.n_classes = max(2, int(y.max()) + 1)
        self.d = X.shape[1]
        p = self.width if self.binary else self.K * self.width
        theta = np.zeros(p) if theta0 is None else np.array(theta0, float)
        f = self.objective(theta, X, y)
        for _ in range(self.max_iter):
            g, H = self.grad_hess(theta, X, y)
            if np.max(np.abs(g)) <= self.tol:
                break
            try:
                step = np.linalg.solve(H, g)
            except np.linalg.LinAlgError:
                step = np.linalg.lstsq(H, g, rcond=None)[0]
            t = 1.0
            while t > 1e-10:
                new = theta - t * step
                f_new = self.objective(new, X, y)
                if f_new <= f - 1e-4 * t * float(g @ step) or np.max(np.abs(g)) < 1e-6:
                    break
                t *= 0.5
            theta, f = new, f_new
        self.theta = theta
        return self

    def clone(self) -> LogisticModel:
        """An unfitted copy with the same hyperparameters."""
        return LogisticModel(
            self.l2, self.n_classes, self.fit_intercept, self.penalize_intercept, self.tol, self.max_iter
        )

    # ---- functional (torch) view, used by the generic FI path and the reference ----------------------
    def logits_fn(self, theta: Any, x: Any) -> Any:
        """Logits of one input x (d,) as a torch function of the flat parameters."""
        import torch

        xa = torch.cat([x, x.new_ones(1)]) if self.fit_intercept else x
        if self.binary:
            z = xa @ theta
            return torch.stack([torch.zeros_like(z), z])
        return theta.reshape(self.K, self.width) @ xa


class MLPModel:
    """MLP d -> h -> h -> K (ReLU), trained full-batch with Adam and weight decay (the 2-D nonlinear setting of Table 2).

    K = 2 uses a single sigmoid output written as logits [0, f(x)] (the paper's sigmoid head).
    """

    def __init__(
        self,
        hidden: tuple[int, ...] = (16, 16),
        n_classes: int = 2,
        lr: float = 1e-2,
        weight_decay: float = 1e-3,
        steps: int = 1500,
        seed: int = 0,
    ) -> None:
        self.hidden = tuple(hidden)
        self.n_classes = n_classes
        self.lr = lr
        self.weight_decay = weight_decay
        self.steps = steps
        self.seed = seed
        self.theta: np.ndarray | None = None
        self.d: int | None = None

    def _shapes(self) -> list[tuple[int, int]]:
        assert self.d is not None
        sizes = [self.d, *self.hidden, 1 if self.n_classes == 2 else self.n_classes]
        return list(itertools.pairwise(sizes))

    @property
    def K(self) -> int:
        """Number of classes."""
        return self.n_classes

    @property
    def l2_diag(self) -> np.ndarray:
        """Adam's weight decay adds wd * theta to the gradient, i.e. a penalty wd/2 |theta|^2 on every parameter."""
        assert self.theta is not None
        return np.full(self.theta.size, self.weight_decay)

    def _unflatten(self, theta: Any) -> list[tuple[Any, Any]]:
        out, i = [], 0
        for a, b in self._shapes():
            W = theta[i : i + a * b].reshape(b, a)
            i += a * b
            out.append((W, theta[i : i + b]))
            i += b
        return out

    def logits_fn(self, theta: Any, x: Any) -> Any:
        """Logits of one input x (d,) (or a batch (m, d)) as a torch function of the flat parameters."""
        import torch

        h = x
        layers = self._unflatten(theta)
        for j, (W, b) in enumerate(layers):
            h = h @ W.T + b
            if j < len(layers) - 1:
                h = torch.relu(h)
        if self.n_classes == 2:
            return torch.cat([torch.zeros_like(h), h], dim=-1)
        return h

    def init_theta(self, d: int, seed: int) -> np.ndarray:
        """PyTorch's nn.Linear default initialisation (uniform +-1/sqrt(fan_in)), flattened, seeded."""
        self.d = d
        rng = np.random.default_rng(seed)
        parts = []
        for a, b in self._shapes():
            bound = 1.0 / np.sqrt(a)
            parts += [rng.uniform(-bound, bound, b * a), rng.uniform(-bound, bound, b)]
        return np.concatenate(parts)

    def fit(self, X: np.ndarray, y: np.ndarray) -> MLPModel:
        """Full-batch Adam on the mean cross-entropy (float64), weight decay as in torch.optim.Adam."""
        X = np.asarray(X, float)
        self.theta = fit_mlp_batch(self, X[None], np.asarray(y)[None], None, [self.seed])[0]
        return self

    def predict_proba(self, X: np.ndarray) -> np.ndarray:
        """Class probabilities, shape (m, K)."""
        import torch

        assert self.theta is not None, "fit the model first"
        with torch.no_grad():
            z = self.logits_fn(torch.as_tensor(self.theta), torch.as_tensor(np.asarray(X, float)))
            return torch.softmax(z, -1).numpy()

    def predict(self, X: np.ndarray) -> np.ndarray:
        """Most probable class."""
        return self.predict_proba(X).argmax(1)

    def clone(self) -> MLPModel:
        """An unfitted copy with the same hyperparameters."""
        return MLPModel(self.hidden, self.n_classes, self.lr, self.weight_decay, self.steps, self.seed)


def fit_mlp_batch(
    template: MLPModel, Xs: np.ndarray, ys: np.ndarray, weights: np.ndarray | None, seeds: list[int]
) -> np.ndarray:
    """Train B independent MLPs at once (B, n, d) with per-model sample weights (0 = removed point): (B, p).

    One Adam over the stacked (B, p) parameters is B independent Adams (every Adam operation is elementwise),
    so each row equals a separate `MLPModel.fit` on its own weighted data.
    """
    import torch

    B, n, d = Xs.shape
    theta0 = np.stack([template.init_theta(d, s) for s in seeds])
    theta = torch.as_tensor(theta0).requires_grad_(True)
    Xt = torch.as_tensor(np.asarray(Xs, float))
    Y = torch.as_tensor(np.eye(template.n_classes)[np.asarray(ys).astype(int)])  # (B, n, K)
    W = torch.ones(B, n, dtype=torch.float64) if weights is None else torch.as_tensor(np.asarray(weights, float))
    W = W / W.sum(1, keepdim=True)
    batched = torch.func.vmap(template.logits_fn)
    opt = torch.optim.Adam([theta], lr=template.lr, weight_decay=template.weight_decay)
    for _ in range(template.steps):
        opt.zero_grad()
        logp = torch.log_softmax(batched(theta, Xt), -1)  # (B, n, K)
        loss = -(W * (logp * Y).sum(-1)).sum()  # sum over models of each model's weighted mean loss
        loss.backward()
        opt.step()
    return theta.detach().numpy().copy()
