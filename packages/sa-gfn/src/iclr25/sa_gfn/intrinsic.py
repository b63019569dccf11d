"""Random Network Distillation novelty (Burda et al. 2019) as used by SA-GFN's Sibling (Madan et al., ICLR 2025).

Spec §3.1/§3.2: a frozen random target f and a trained predictor f_hat; novelty e(s) is the prediction error,
either the mean squared error over the output dimensions (`error="mse"`, the project default, 1-d output) or the
unsquared L2 norm (`error="l2norm"`, the GAFN reference: 128-d output, scale 0.1). Rewards are always detached.

Normalisation (`normalize=`): "none" is the raw novelty c * e(x) of the spec and the third-party code;
"std" divides by a running standard deviation of every error passed to `observe` (Burda et al. 2019, §2.4);
"mean" divides by their running mean. Reading (`novelty`) never changes the running moments: the caller updates
them explicitly with `observe`, once per iteration, on the states the predictor is trained on. `weight` is the
effective multiplier of the raw error, c / normaliser, which grows as the errors decay when normalising.
"""

from __future__ import annotations

import torch
from torch import nn

from iclr25.sa_gfn.gflownet import ACTIVATIONS


def _mlp(input_dim: int, hidden: int, out_dim: int, n_layers: int, activation: str) -> nn.Sequential:
    layers: list[nn.Module] = []
    width = input_dim
    for _ in range(n_layers):
        layers += [nn.Linear(width, hidden), ACTIVATIONS[activation]()]
        width = hidden
    return nn.Sequential(*layers, nn.Linear(width, out_dim))


NORMALIZATIONS = ("none", "std", "mean")


class RND(nn.Module):
    """RND module: `novelty(x)` = scale * e(x) (detached), `loss(x)` = mean e(x) for the predictor step."""

    def __init__(
        self,
        input_dim: int,
        hidden: int = 256,
        out_dim: int = 1,
        scale: float = 1.0,
        error: str = "mse",
        n_layers: int = 2,
        activation: str = "relu",
        normalize: str = "none",
    ) -> None:
        super().__init__()
        if error not in ("mse", "l2norm"):
            raise ValueError(f"error must be 'mse' or 'l2norm', got {error!r}")
        if activation not in ACTIVATIONS:
            raise ValueError(f"activation must be one of {list(ACTIVATIONS)}, got {activation!r}")
        if scale < 0:
            raise ValueError(f"scale must be >= 0, got {scale}")
        if normalize not in NORMALIZATIONS:
            raise ValueError(f"normalize must be one of {NORMALIZATIONS}, got {normalize!r}")
        self.scale, self.error_kind = scale, error
        self.target = _mlp(input_dim, hidden, out_dim, n_layers, activation)
        self.predictor = _mlp(input_dim, hidden, out_dim, n_layers, activation)
        self.target.requires_grad_(False)
        self.normalize = normalize
        self.register_buffer("_count", torch.zeros((), dtype=torch.float64))
        self.register_buffer("_mean", torch.zeros((), dtype=torch.float64))
        self.register_buffer("_m2", torch.zeros((), dtype=torch.float64))

    @torch.no_grad()
    def observe(self, x: torch.Tensor) -> torch.Tensor:
        """Add the errors e(x) of the states `x` to the running moments (Chan et al. parallel update); return e(x).

        The only method that changes the normalisation statistics.
        """
        e = self.error(x).reshape(-1)
        n = float(e.numel())
        if n == 0:
            return e
        mean, var = e.double().mean(), e.double().var(unbiased=False)
        delta = mean - self._mean
        total = self._count + n
        self._mean += delta * n / total
        self._m2 += var * n + delta.pow(2) * self._count * n / total
        self._count.copy_(total)
        return e

    @property
    def running_std(self) -> float:
        """Running standard deviation of the errors passed to `observe` (1 before two of them)."""
        if self._count < 2:
            return 1.0
        return float((self._m2 / self._count).sqrt().clamp(min=1e-12))

    @property
    def running_mean(self) -> float:
        """Running mean of the errors passed to `observe` (1 before any)."""
        if self._count < 1:
            return 1.0
        return float(self._mean.clamp(min=1e-12))

    @property
    def weight(self) -> float:
        """Effective weight of the raw error in the novelty: c, c / running std or c / running mean."""
        if self.normalize == "std":
            return self.scale / self.running_std
        if self.normalize == "mean":
            return self.scale / self.running_mean
        return self.scale

    def error(self, x: torch.Tensor) -> torch.Tensor:
        """Prediction error e(x) per row (differentiable w.r.t. the predictor)."""
        diff = self.predictor(x) - self.target(x)
        if self.error_kind == "mse":
            return diff.pow(2).mean(-1)  # e(x) = mean_k (f_hat_k(x) - f_k(x))^2, spec §3.2
        return diff.norm(dim=-1)  # GAFN reference: unsquared L2 norm, spec §4

    @torch.no_grad()
    def novelty(self, x: torch.Tensor) -> torch.Tensor:
        """Intrinsic reward r_i(x) = weight * e(x), detached; reads the module without changing it."""
        return self.weight * self.error(x)

    def loss(self, x: torch.Tensor) -> torch.Tensor:
        """Predictor loss: mean prediction error on the visited states `x`."""
        return self.error(x).mean()

    def optimizer(self, lr: float = 1e-3) -> torch.optim.Adam:
        """Adam on the predictor only (lr 1e-3, spec §3.3)."""
        return torch.optim.Adam(self.predictor.parameters(), lr=lr)
