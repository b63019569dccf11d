"""Linear-dynamical-system topics (spec §3.3 A): topic = transition matrix W ~ P_W; sequences
x_1 ~ N(0, I_d), x_{t+1} = W x_t + eps_t, eps_t ~ N(0, sigma^2 I_d)."""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
from torch import Tensor

KINDS = ("orthogonal", "rotation2d", "gaussian")


def haar_orthogonal(K: int, d: int, generator: torch.Generator) -> Tensor:
    """K Haar-distributed orthogonal d x d matrices: QR of a Gaussian matrix with the sign of diag(R) fixed."""
    G = torch.randn(K, d, d, generator=generator, dtype=torch.float64)
    Q, R = torch.linalg.qr(G)
    return Q * torch.sign(torch.diagonal(R, dim1=-2, dim2=-1)).unsqueeze(-2)


@dataclass(frozen=True)
class LDSTopicPrior:
    """Topic prior P_W over LDS transition matrices (kind: orthogonal W = rho Q, rotation2d W = rho R(phi) with
    phi ~ U[0, 2pi), gaussian W_ij ~ N(0, rho^2/d) rescaled to spectral radius <= rho) and the sequence law."""

    kind: str = "rotation2d"
    d: int = 2
    rho: float = 1.0
    sigma: float = 0.1

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"kind must be one of {', '.join(KINDS)}; got {self.kind!r}")
        if self.kind == "rotation2d" and self.d != 2:
            raise ValueError(f"rotation2d needs d = 2, got {self.d}")
        if self.d < 1 or not self.rho > 0 or not self.sigma >= 0:
            raise ValueError(f"need d >= 1, rho > 0, sigma >= 0; got {self.d}, {self.rho}, {self.sigma}")

    def sample_topics(self, K: int, generator: torch.Generator) -> Tensor:
        """K topics w_k ~ P_W: (K, d, d) float64."""
        if self.kind == "orthogonal":
            return self.rho * haar_orthogonal(K, self.d, generator)
        if self.kind == "rotation2d":
            phi = 2 * math.pi * torch.rand(K, generator=generator, dtype=torch.float64)
            c, s = torch.cos(phi), torch.sin(phi)
            return self.rho * torch.stack([torch.stack([c, -s], -1), torch.stack([s, c], -1)], -2)
        W = torch.randn(K, self.d, self.d, generator=generator, dtype=torch.float64) * (self.rho / math.sqrt(self.d))
        radius = torch.linalg.eigvals(W).abs().amax(-1)
        return W * torch.clamp(self.rho / radius, max=1.0)[:, None, None]

    def sample_sequences(self, W: Tensor, N: int, T: int, generator: torch.Generator) -> Tensor:
        """N sequences of length T per topic: (K, N, T, d) float64, x_{t+1} = W x_t + eps_t."""
        K, d = W.shape[0], self.d
        x = torch.empty(K, N, T, d, dtype=torch.float64)
        x[:, :, 0] = torch.randn(K, N, d, generator=generator, dtype=torch.float64)
        noise = self.sigma * torch.randn(K, N, T - 1, d, generator=generator, dtype=torch.float64)
        for t in range(T - 1):
            x[:, :, t + 1] = torch.einsum("kij,knj->kni", W, x[:, :, t]) + noise[:, :, t]
        return x

    @property
    def floor(self) -> float:
        """The oracle's expected squared error per next-state prediction, d * sigma^2."""
        return self.d * self.sigma**2
