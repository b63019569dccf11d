"""HD-Explain: example-based explanations from the kernelized Stein discrepancy (arXiv 2403.15576).

A point (x, y) is lifted to d = [vec x, onehot y] and the trained classifier f_theta is read
as the density p(d) proportional to p(y|x) with a uniform marginal on x, so its score is
s = [grad_x log f_y(x), f(x)] (the label block is the softmax vector, as in the official code). The
support of training point i for a test prediction is the Stein kernel kappa(d_test, d_i) (the KSD kernel);
the explanation is the top-k training points. Test points use the model's predicted label, training
points their given label. HD-Explain* (`representation=True`) replaces x by the penultimate features
h(x) and differentiates log softmax(W h + b)_y wrt h. One input-gradient per point, cached at `fit`.

Data debugging: the self-score kappa(d_i, d_i) (RBF: |s_i|^2 + D/h) ranks training points,
large first.
"""

from __future__ import annotations

import copy
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F

from iclr25.hd_explain.stein import KERNELS, resolve_bandwidth, stein_kernel, stein_self_scores


def _as_tensor(x: Any, dtype: torch.dtype = torch.float32, device: Any = "cpu") -> torch.Tensor:
    if isinstance(x, torch.Tensor):
        return x.to(device=device, dtype=dtype)
    return torch.as_tensor(np.asarray(x), dtype=dtype, device=device)


def model_device(model: torch.nn.Module) -> torch.device:
    """The device of a model's first parameter (CPU for a parameter-free model)."""
    p = next(iter(model.parameters()), None)
    return p.device if p is not None else torch.device("cpu")


def model_dtype(model: torch.nn.Module) -> torch.dtype:
    """The floating dtype of a model's first parameter (float32 for a parameter-free model)."""
    p = next(iter(model.parameters()), None)
    return p.dtype if p is not None else torch.float32


def predict_labels(model: Any, X: Any, batch_size: int = 512) -> torch.Tensor:
    """argmax f(x), computed in batches, on the CPU (n,)."""
    device = model_device(model)
    X = _as_tensor(X, dtype=model_dtype(model), device="cpu")
    out = []
    with torch.no_grad():
        for i in range(0, X.shape[0], batch_size):
            out.append(model.predict_proba(X[i : i + batch_size].to(device)).argmax(1).cpu())
    return torch.cat(out) if out else torch.zeros(0, dtype=torch.long)


def augmented_scores(
    model: Any,
    X: Any,
    y: Any,
    n_classes: int,
    representation: bool = False,
    batch_size: int = 256,
    dtype: torch.dtype = torch.float64,
) -> tuple[torch.Tensor, torch.Tensor]:
    """(D, S) of shape (n, dim + C): d = [x or h(x), onehot y], s = [grad log f_y wrt x or h, f(x)].

    Batched: log f_y of different rows do not interact (the model must be in eval mode), so the gradient
    of their sum gives every row's input-gradient in one backward pass.
    """
    device = model_device(model)
    X = _as_tensor(X, dtype=model_dtype(model), device="cpu")
    y = torch.as_tensor(np.asarray(y) if not isinstance(y, torch.Tensor) else y, dtype=torch.long).cpu()
    if X.shape[0] != y.shape[0]:
        raise ValueError(f"X has {X.shape[0]} rows but y has {y.shape[0]}")
    if y.numel() and (int(y.min()) < 0 or int(y.max()) >= n_classes):
        raise ValueError(f"labels must lie in 0..{n_classes - 1}, got range {int(y.min())}..{int(y.max())}")
    Ds, Ss = [], []
    for i in range(0, X.shape[0], batch_size):
        xb = X[i : i + batch_size].to(device)
        yb = y[i : i + batch_size].to(device)
        with torch.enable_grad():
            if representation:
                with torch.no_grad():
                    feat = model.representation(xb)
                feat = feat.detach().requires_grad_(True)
                logits = model.head(feat)
            else:
                feat = xb.detach().clone().requires_grad_(True)
                logits = model.head(model.representation(feat))
            logp = torch.log_softmax(logits, dim=1)  # log f(x)
            picked = logp.gather(1, yb[:, None]).sum()  # sum_i log f_{y_i}(x_i)
            (grad,) = torch.autograd.grad(picked, feat)
        onehot = F.one_hot(yb, n_classes).to(dtype)
        Ds.append(torch.cat([feat.detach().reshape(len(xb), -1).to(dtype), onehot], 1).cpu())
        Ss.append(torch.cat([grad.reshape(len(xb), -1).to(dtype), logp.detach().exp().to(dtype)], 1).cpu())
    return torch.cat(Ds), torch.cat(Ss)


class Explainer:
    """Common interface: `fit(X, y)` on the explanation pool, `explain(X_test, k)`, `debug_scores()`."""

    name = "explainer"

    def __init__(self, model: Any, n_classes: int) -> None:
        if not (isinstance(n_classes, int) and n_classes >= 2):
            raise ValueError(f"n_classes must be an int >= 2, got {n_classes!r}")
        for member in ("representation", "predict_proba", "head"):
            if not hasattr(model, member):
                raise ValueError(
                    f"the model must have `{member}` (model protocol: representation, predict_proba, head)"
                )
        self.model = model
        self.n_classes = n_classes
        self.n_train = 0

    def fit(self, X: Any, y: Any) -> Explainer:
        """Cache what scoring needs for the training pool (X, given labels y)."""
        raise NotImplementedError

    def score(self, X_test: Any) -> torch.Tensor:
        """Support of every training point for each test prediction (n_test, n_train), larger = more support."""
        raise NotImplementedError

    def debug_scores(self) -> torch.Tensor:
        """Mislabel-suspicion score of every training point (n_train,), larger = more suspicious."""
        raise NotImplementedError(f"{self.name} has no data-debugging score")

    def explain(self, X_test: Any, k: int = 3) -> tuple[np.ndarray, np.ndarray]:
        """Top-k training indices per test point, sorted by decreasing score (n_test, k), and all scores."""
        if self.n_train == 0:
            raise ValueError("call fit(X, y) before explain")
        if not (isinstance(k, int | np.integer) and 1 <= k <= self.n_train):
            raise ValueError(f"k must be an int in 1..{self.n_train}, got {k!r}")
        scores = self.score(X_test)
        idx = torch.topk(scores, int(k), dim=1, sorted=True).indices
        return idx.numpy(), scores.numpy()


class HDExplainer(Explainer):
    """HD-Explain (Stein-kernel support); HD-Explain* with `representation=True`.

    kernel: "rbf" (h = bandwidth: a float, "dim_x" = temperature * dim x, or "dim_d" = temperature *
    (dim x + C), the official default), "imq" (g = 1, beta = 0.5) or "linear" (correct form unless
    `official_linear_quirk`).
    """

    name = "hd"

    def __init__(
        self,
        model: Any,
        n_classes: int,
        kernel: str = "rbf",
        bandwidth: float | str = "dim_d",
        temperature: float = 1.0,
        representation: bool = False,
        official_linear_quirk: bool = False,
        rbf_parts: tuple[str, ...] = ("score", "cross", "trace"),
        batch_size: int = 256,
    ) -> None:
        super().__init__(model, n_classes)
        if kernel not in KERNELS:
            raise ValueError(f"kernel must be one of {', '.join(KERNELS)}, got {kernel!r}")
        if not temperature > 0:
            raise ValueError(f"temperature must be > 0, got {temperature}")
        resolve_bandwidth(bandwidth, temperature, 1, 1)  # validates the value
        self.kernel, self.bandwidth, self.temperature = kernel, bandwidth, float(temperature)
        self.representation = bool(representation)
        self.official_linear_quirk = official_linear_quirk
        self.rbf_parts = tuple(rbf_parts)
        self.batch_size = batch_size
        self.name = "hd*" if representation else "hd"

    def fit(self, X: Any, y: Any) -> HDExplainer:
        """Cache d_i and s_i of every training point with its given label (one input-gradient each)."""
        self.model.eval()
        self.D, self.S = augmented_scores(
            self.model, X, y, self.n_classes, self.representation, self.batch_size
        )  # (n, dim + C) each
        self.n_train = self.D.shape[0]
        dim_d = self.D.shape[1]
        self.h = resolve_bandwidth(self.bandwidth, self.temperature, dim_d - self.n_classes, dim_d)
        return self

    def at_temperature(self, temperature: float) -> HDExplainer:
        """A copy on the same fitted pool with the official RBF bandwidth at another temperature: h = temperature x
        dim d (the paper's temperature sweep; nothing is recomputed)."""
        if self.n_train == 0:
            raise ValueError("call fit(X, y) before at_temperature")
        dim_d = self.D.shape[1]
        clone = copy.copy(self)
        clone.bandwidth, clone.temperature = "dim_d", float(temperature)
        clone.h = resolve_bandwidth("dim_d", temperature, dim_d - self.n_classes, dim_d)
        return clone

    def test_points(self, X_test: Any) -> tuple[torch.Tensor, torch.Tensor]:
        """(d, s) of test points with the model's predicted label."""
        y_hat = predict_labels(self.model, X_test)
        return augmented_scores(self.model, X_test, y_hat, self.n_classes, self.representation, self.batch_size)

    def _kernel(self, D1: torch.Tensor, S1: torch.Tensor) -> torch.Tensor:
        if self.kernel == "rbf":
            return stein_kernel(D1, self.D, S1, self.S, "rbf", self.h, parts=self.rbf_parts)
        if self.kernel == "linear":
            return stein_kernel(D1, self.D, S1, self.S, "linear", official_quirk=self.official_linear_quirk)
        return stein_kernel(D1, self.D, S1, self.S, "imq")

    def score(self, X_test: Any) -> torch.Tensor:
        """kappa(d_test, d_i) for every test point and training point (n_test, n_train)."""
        if self.n_train == 0:
            raise ValueError("call fit(X, y) before score")
        Dt, St = self.test_points(X_test)
        out = [self._kernel(Dt[i : i + 256], St[i : i + 256]) for i in range(0, Dt.shape[0], 256)]
        return torch.cat(out) if out else torch.zeros(0, self.n_train, dtype=self.D.dtype)

    def debug_scores(self) -> torch.Tensor:
        """Self-scores kappa(d_i, d_i) with the given labels (RBF: |s_i|^2 + D/h) (n_train,)."""
        if self.n_train == 0:
            raise ValueError("call fit(X, y) before debug_scores")
        return stein_self_scores(self.D, self.S, self.kernel, self.h, official_quirk=self.official_linear_quirk)
