"""Conditional estimators Π(·|x) that CP² consumes: anything with `sample(x, m, rng)` (and `log_prob(x, y)`
for CP²-HPD and HD-PCP).

Two are provided: `OracleMixtureSampler`, a Gaussian mixture whose parameters are given functions of x
(used as Π = P and, with scaled standard deviations, as a misspecified Π), and `MDN`, a mixture density
network in torch (the paper's estimator, Sec. 4 / App. B: softmax weights, means and positive scales, trained
by maximum likelihood). Both share the mixture arithmetic of `GaussianMixtureConditional`.

Conventions: x has shape [n, d] (a 1-D array is read as [n, 1]); y has shape [n, q] (1-D: [n, 1]);
`sample` returns [n, m, q]; `log_prob` accepts y of shape [n, q] -> [n] or [n, k, q] -> [n, k].
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol, runtime_checkable

import numpy as np

LOG_2PI = float(np.log(2 * np.pi))


def as_2d(a: np.ndarray) -> np.ndarray:
    """An array as [n, d] float64 (a 1-D array becomes one column)."""
    a = np.asarray(a, dtype=float)
    if a.ndim == 1:
        return a[:, None]
    if a.ndim != 2:
        raise ValueError(f"expected a 1-D or 2-D array, got shape {a.shape}")
    return a


@runtime_checkable
class Sampler(Protocol):
    """An implicit conditional model: draws m samples of Y given each row of x."""

    def sample(self, x: np.ndarray, m: int, rng: np.random.Generator | None = None) -> np.ndarray:
        """Draws of shape [n, m, q]."""
        ...


@runtime_checkable
class Density(Sampler, Protocol):
    """An explicit conditional model: samples and log-densities."""

    def log_prob(self, x: np.ndarray, y: np.ndarray) -> np.ndarray:
        """log γ(y|x): y [n, q] -> [n], y [n, k, q] -> [n, k]."""
        ...


class GaussianMixtureConditional:
    """A conditional Gaussian mixture with diagonal covariances; subclasses supply `params(x)`."""

    def params(self, x: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(log weights [n, K], means [n, K, q], standard deviations [n, K, q])."""
        raise NotImplementedError

    def sample(self, x: np.ndarray, m: int, rng: np.random.Generator | None = None) -> np.ndarray:
        """m independent draws of Y | x for each row: [n, m, q]."""
        rng = np.random.default_rng() if rng is None else rng
        logw, mu, sd = self.params(as_2d(x))
        n, k, q = mu.shape
        w = np.exp(logw - logw.max(axis=1, keepdims=True))
        cdf = np.cumsum(w / w.sum(axis=1, keepdims=True), axis=1)  # [n, K]
        u = rng.random((n, m, 1))
        comp = np.minimum((u > cdf[:, None, :]).sum(-1), k - 1)  # [n, m] component index
        rows = np.arange(n)[:, None]
        eps = rng.standard_normal((n, m, q))
        return mu[rows, comp] + sd[rows, comp] * eps  # [n, m, q]

    def log_prob(self, x: np.ndarray, y: np.ndarray) -> np.ndarray:
        """Mixture log-density: y [n, q] -> [n], y [n, k, q] -> [n, k] (one x per row)."""
        logw, mu, sd = self.params(as_2d(x))
        y = np.asarray(y, dtype=float)
        squeeze = y.ndim == 2
        if y.ndim == 1:
            y, squeeze = y[:, None, None], True
        elif y.ndim == 2:
            y = y[:, None, :]
        z = (y[:, :, None, :] - mu[:, None]) / sd[:, None]  # [n, k, K, q]
        comp = -0.5 * (z**2).sum(-1) - np.log(sd).sum(-1)[:, None] - 0.5 * mu.shape[-1] * LOG_2PI  # [n, k, K]
        a = comp + logw[:, None, :]
        amax = a.max(-1, keepdims=True)
        out = (amax + np.log(np.exp(a - amax).sum(-1, keepdims=True)))[..., 0]  # [n, k]
        return out[:, 0] if squeeze else out

    def mean(self, x: np.ndarray) -> np.ndarray:
        """E[Y | x] of the mixture: [n, q]."""
        logw, mu, _ = self.params(as_2d(x))
        w = np.exp(logw - logw.max(axis=1, keepdims=True))
        w /= w.sum(axis=1, keepdims=True)
        return (w[..., None] * mu).sum(1)


ParamFn = Callable[[np.ndarray], np.ndarray]


class OracleMixtureSampler(GaussianMixtureConditional):
    """A Gaussian mixture with known parameter functions of x (the oracle Π = P of the quick experiments).

    `means(x) -> [n, K, q]`, `sds(x) -> [n, K]` or `[n, K, q]`, `weights(x) -> [n, K]` (default uniform).
    `sd_scale` multiplies every standard deviation (the misspecified samplers σ×0.7 and σ×1.5, spec §6a).
    """

    def __init__(
        self,
        means: ParamFn,
        sds: ParamFn,
        weights: ParamFn | None = None,
        sd_scale: float = 1.0,
        name: str = "oracle",
    ) -> None:
        if not sd_scale > 0:
            raise ValueError(f"sd_scale must be > 0, got {sd_scale}")
        self.means, self.sds, self.weights, self.sd_scale, self.name = means, sds, weights, sd_scale, name

    def params(self, x: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Mixture parameters at x (see class docstring)."""
        x = as_2d(x)
        mu = np.asarray(self.means(x), dtype=float)
        if mu.ndim == 2:
            mu = mu[..., None]
        sd = np.asarray(self.sds(x), dtype=float) * self.sd_scale
        if sd.ndim == 2:
            sd = np.broadcast_to(sd[..., None], mu.shape)
        n, k, _ = mu.shape
        w = np.full((n, k), 1.0 / k) if self.weights is None else np.asarray(self.weights(x), dtype=float)
        return np.log(w), mu, sd

    def scaled(self, sd_scale: float) -> OracleMixtureSampler:
        """The same mixture with every standard deviation multiplied by `sd_scale` (means unchanged)."""
        return OracleMixtureSampler(
            self.means, self.sds, self.weights, self.sd_scale * sd_scale, f"{self.name}_sd_x{sd_scale:g}"
        )


class MDN(GaussianMixtureConditional):
    """Mixture density network (Bishop 1994), as used by the paper for Π: an MLP maps standardised x to
    mixture logits, means and log-scales of K diagonal Gaussians; trained by maximum likelihood (Adam).

    Paper setting (CDE package, Sec. 4.2): 10 components, 2 hidden layers of 100; the quick preset uses 5 and 64.
    """

    def __init__(
        self,
        x_dim: int,
        y_dim: int = 1,
        n_components: int = 10,
        hidden: tuple[int, ...] = (100, 100),
        seed: int = 0,
    ) -> None:
        import torch
        from torch import nn

        if n_components < 1 or x_dim < 1 or y_dim < 1:
            raise ValueError("x_dim, y_dim and n_components must be >= 1")
        torch.manual_seed(seed)
        layers: list[nn.Module] = []
        width = x_dim
        for h in hidden:
            layers += [nn.Linear(width, h), nn.Tanh()]
            width = h
        self.body = nn.Sequential(*layers)
        self.head = nn.Linear(width, n_components * (1 + 2 * y_dim))
        self.k, self.q, self.x_dim = n_components, y_dim, x_dim
        self.x_mean = np.zeros(x_dim)
        self.x_std = np.ones(x_dim)
        self.y_mean = np.zeros(y_dim)
        self.y_std = np.ones(y_dim)
        self.history: list[float] = []

    def _torch_params(self, xs):  # standardised x -> (log w, mu, log sd) in standardised y units
        import torch

        out = self.head(self.body(xs))
        k, q = self.k, self.q
        logits, mu, log_sd = out[:, :k], out[:, k : k + k * q], out[:, k + k * q :]
        logw = torch.log_softmax(logits, dim=-1)
        return logw, mu.reshape(-1, k, q), log_sd.reshape(-1, k, q).clamp(-7.0, 5.0)

    def _nll(self, xs, ys):
        import torch

        logw, mu, log_sd = self._torch_params(xs)
        z = (ys[:, None, :] - mu) * torch.exp(-log_sd)
        comp = -0.5 * (z**2).sum(-1) - log_sd.sum(-1) - 0.5 * self.q * LOG_2PI
        return -torch.logsumexp(comp + logw, dim=-1).mean()

    def fit(
        self,
        X: np.ndarray,
        Y: np.ndarray,
        epochs: int = 30,
        lr: float = 1e-3,
        batch_size: int = 128,
        seed: int = 0,
        progress: Callable | None = None,
        threads: int = 1,
    ) -> MDN:
        """Maximum-likelihood training with Adam on standardised (x, y); returns self.

        `threads`: intra-op torch threads while training (a net this small runs fastest on one CPU thread)."""
        import torch

        from iclr25.shared.device import torch_threads

        X, Y = as_2d(X), as_2d(Y)
        if X.shape[1] != self.x_dim or Y.shape[1] != self.q or len(X) != len(Y):
            raise ValueError(f"X must be [n, {self.x_dim}] and Y [n, {self.q}], got {X.shape} and {Y.shape}")
        self.x_mean, self.x_std = X.mean(0), X.std(0) + 1e-12
        self.y_mean, self.y_std = Y.mean(0), Y.std(0) + 1e-12
        xs = torch.as_tensor((X - self.x_mean) / self.x_std, dtype=torch.float32)
        ys = torch.as_tensor((Y - self.y_mean) / self.y_std, dtype=torch.float32)
        params = list(self.body.parameters()) + list(self.head.parameters())
        opt = torch.optim.Adam(params, lr=lr)
        gen = torch.Generator().manual_seed(seed)
        epochs_iter = range(epochs) if progress is None else progress(range(epochs))
        with torch_threads(threads):
            self._train(xs, ys, opt, gen, epochs_iter, batch_size)
        return self

    def _train(self, xs, ys, opt, gen, epochs_iter, batch_size: int) -> None:
        import torch

        for _ in epochs_iter:
            perm = torch.randperm(len(xs), generator=gen)
            total = 0.0
            for i in range(0, len(xs), batch_size):
                idx = perm[i : i + batch_size]
                loss = self._nll(xs[idx], ys[idx])
                opt.zero_grad()
                loss.backward()
                opt.step()
                total += float(loss.detach()) * len(idx)
            self.history.append(total / len(xs))

    def params(self, x: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Mixture parameters at x in the original units of y."""
        import torch

        from iclr25.shared.device import torch_threads

        xs = torch.as_tensor((as_2d(x) - self.x_mean) / self.x_std, dtype=torch.float32)
        with torch.no_grad(), torch_threads(1):
            logw, mu, log_sd = self._torch_params(xs)
        logw = logw.double().numpy()
        mu = mu.double().numpy() * self.y_std + self.y_mean
        sd = np.exp(log_sd.double().numpy()) * self.y_std
        return logw, mu, sd
