"""Random Network Distillation novelty (Burda et al. 2019) as used by SA-GFN's Sibling (Madan et al., ICLR 2025).

Spec §3.1/§3.2: a frozen random target f and a trained predictor f_hat; novelty e(s) is the prediction error,
either the mean squared error over the output dimensions (`error="mse"`, the project default, 1-d output) or the
unsquared L2 norm (`error="l2norm"`, the GAFN reference: 128-d output, scale 0.1). Rewards are always detached.

`normalize=True` divides the novelty by a running standard deviation of every error the module has computed
for a reward, as Burda et al. (2019, §2.4) normalise RND rewards. Project choice: with PyTorch's default
initialisation the raw error of a 1-d RND is ~1e-3, so an unnormalised c = 1 novelty is negligible next to
R_e = 1 and the Sibling hardly explores.
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
        normalize: bool = False,
    ) -> None:
        super().__init__()
        if error not in ("mse", "l2norm"):
            raise ValueError(f"error must be 'mse' or 'l2norm', got {error!r}")
        if activation not in ACTIVATIONS:
            raise ValueError(f"activation must be one of {list(ACTIVATIONS)}, got {activation!r}")
        if scale < 0:
            raise ValueError(f"scale must be >= 0, got {scale}")
        self.scale, self.error_kind = scale, error
        self.target = _mlp(input_dim, hidden, out_dim, n_layers, activation)
        self.predictor = _mlp(input_dim, hidden, out_dim, n_layers, activation)
        self.target.requires_grad_(False)
        self.normalize = normalize
        self.register_buffer("_count", torch.zeros((), dtype=torch.float64))
        self.register_buffer("_mean", torch.zeros((), dtype=torch.float64))
        self.register_buffer("_m2", torch.zeros((), dtype=torch.float64))

    def _update_moments(self, e: torch.Tensor) -> None:
        """Chan et al. parallel update of the running mean and variance of the errors."""
        n = float(e.numel())
        mean, var = e.double().mean(), e.double().var(unbiased=False)
        delta = mean - self._mean
        total = self._count + n
        self._mean += delta * n / total
        self._m2 += var * n + delta.pow(2) * self._count * n / total
        self._count.copy_(total)

    @property
    def running_std(self) -> float:
        """Running standard deviation of the errors seen by `novelty` (1 before any)."""
        if self._count < 2:
            return 1.0
        return float((self._m2 / self._count).sqrt().clamp(min=1e-12))

    def error(self, x: torch.Tensor) -> torch.Tensor:
        """Prediction error e(x) per row (differentiable w.r.t. the predictor)."""
        diff = self.predictor(x) - self.target(x)
        if self.error_kind == "mse":
            return diff.pow(2).mean(-1)  # e(x) = mean_k (f_hat_k(x) - f_k(x))^2, spec §3.2
        return diff.norm(dim=-1)  # GAFN reference: unsquared L2 norm, spec §4

    @torch.no_grad()
    def novelty(self, x: torch.Tensor) -> torch.Tensor:
        """Intrinsic reward r_i(x) = scale * e(x) (/ running std when `normalize`), detached."""
        e = self.error(x)
        if not self.normalize:
            return self.scale * e
        self._update_moments(e)
        return self.scale * e / self.running_std

    def loss(self, x: torch.Tensor) -> torch.Tensor:
        """Predictor loss: mean prediction error on the visited states `x`."""
        return self.error(x).mean()

    def optimizer(self, lr: float = 1e-3) -> torch.optim.Adam:
        """Adam on the predictor only (lr 1e-3, spec §3.3)."""
        return torch.optim.Adam(self.predictor.parameters(), lr=lr)
