"""The CtD codebook channel (CB): a discrete codebook between Sender and Receiver (arXiv 2601.10169; spec 3.3).

The Sender's continuous vector z (B, d) becomes the |p| nearest codebook rows (|p| = 1 is standard VQ); the forward
pass sends the selected rows e_k, the backward pass is straight-through (q = z + sg(e_k - z) per word). Loss terms are
VQ-VAE's (van den Oord et al. 2017, eq. 3): beta1 * sum_words ||sg(z) - e_k||^2 (codebook) and
beta2 * sum_words ||z - sg(e_k)||^2 (commitment), averaged over the batch. The paper tried 0.1-1.0 for both
(reviews); we use beta1 = 1.0, beta2 = 0.25 (VQ-VAE's). Initialisation (reviews: "matters"): uniform(-1/K, 1/K) or
k-means of the first z's; codes unused for `dead_after` steps are re-seeded from recent z's.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor, nn


@dataclass
class ChannelOutput:
    """What a channel sends: word ids, the vectors the Receiver sees, and the channel's own loss."""

    words: Tensor  # (B, n) long
    vectors: Tensor  # (B, n, msg_dim)
    loss: Tensor  # scalar
    logs: dict[str, float]


def kmeans(x: Tensor, k: int, iters: int = 20, generator: torch.Generator | None = None) -> Tensor:
    """Lloyd's k-means of x (N, d) with k-means++ seeding; returns (k, d) centroids (k <= N)."""
    n = x.shape[0]
    if n < k:
        raise ValueError(f"k-means needs at least k = {k} points, got {n}")
    idx = [int(torch.randint(n, (1,), generator=generator))]
    d2 = ((x - x[idx[0]]) ** 2).sum(1)
    for _ in range(1, k):
        p = d2 / d2.sum() if d2.sum() > 0 else torch.full_like(d2, 1.0 / n)
        idx.append(int(torch.multinomial(p, 1, generator=generator)))
        d2 = torch.minimum(d2, ((x - x[idx[-1]]) ** 2).sum(1))
    c = x[idx].clone()
    for _ in range(iters):
        assign = torch.cdist(x, c).argmin(1)
        for j in range(k):
            members = x[assign == j]
            if len(members):
                c[j] = members.mean(0)
    return c


class CodebookChannel(nn.Module):
    """CB channel: codebook E (K, d); words = the n nearest rows to z; straight-through; VQ losses (spec 3.3)."""

    def __init__(
        self,
        K: int,
        dim: int,
        beta1: float = 1.0,
        beta2: float = 0.25,
        init: str = "kmeans",
        dead_after: int = 200,
    ) -> None:
        super().__init__()
        if K < 1 or dim < 1:
            raise ValueError(f"need K >= 1 and dim >= 1, got {K}, {dim}")
        if init not in ("kmeans", "uniform"):
            raise ValueError(f"init must be 'kmeans' or 'uniform', got {init!r}")
        self.K, self.dim, self.beta1, self.beta2, self.init, self.dead_after = K, dim, beta1, beta2, init, dead_after
        self.codebook = nn.Parameter(torch.empty(K, dim).uniform_(-1.0 / K, 1.0 / K))
        self.register_buffer("last_used", torch.zeros(K, dtype=torch.long))
        self.register_buffer("steps", torch.zeros((), dtype=torch.long))
        self.register_buffer("reseeded", torch.zeros((), dtype=torch.long))
        self.msg_dim = dim
        self.vocab = K

    def distances(self, z: Tensor) -> Tensor:
        """Squared Euclidean distances ||z - e_k||^2, (B, K)."""
        e = self.codebook
        return (z * z).sum(-1, keepdim=True) - 2 * z @ e.t() + (e * e).sum(-1)

    def forward(self, z: Tensor, n_words: int = 1) -> ChannelOutput:
        """Quantise z (B, d) into its n_words nearest distinct codewords, nearest first."""
        if not 1 <= n_words <= self.K:
            raise ValueError(f"n_words must be in 1..K = {self.K}, got {n_words}")
        with torch.no_grad():
            words = self.distances(z).topk(n_words, dim=-1, largest=False).indices  # (B, n)
        e = self.codebook[words]  # (B, n, d)
        zz = z.unsqueeze(1).expand_as(e)
        q = zz + (e - zz).detach()  # straight-through: forward e_k, d q / d z = I
        codebook_loss = ((zz.detach() - e) ** 2).sum(-1).sum(-1).mean()  # ||sg(z) - e_k||^2, summed over words
        commit_loss = ((zz - e.detach()) ** 2).sum(-1).sum(-1).mean()  # ||z - sg(e_k)||^2
        loss = self.beta1 * codebook_loss + self.beta2 * commit_loss
        logs = {"codebook_loss": float(codebook_loss.detach()), "commit_loss": float(commit_loss.detach())}
        return ChannelOutput(words=words, vectors=q, loss=loss, logs=logs)

    @torch.no_grad()
    def initialize(self, z: Tensor, generator: torch.Generator | None = None) -> None:
        """k-means initialisation from sample Sender outputs z (N, d) (no-op for init='uniform')."""
        if self.init == "kmeans":
            self.codebook.data.copy_(kmeans(z.detach(), self.K, generator=generator))

    @torch.no_grad()
    def after_step(self, z: Tensor, words: Tensor, generator: torch.Generator | None = None) -> int:
        """Track usage; re-seed codes unused for `dead_after` steps from random recent z. Returns #re-seeded."""
        self.steps += 1
        self.last_used[words.reshape(-1).unique()] = self.steps
        dead = torch.nonzero(self.steps - self.last_used >= self.dead_after).flatten()
        if len(dead) == 0 or self.dead_after <= 0:
            return 0
        pick = torch.randint(z.shape[0], (len(dead),), generator=generator)
        self.codebook.data[dead] = z.detach().reshape(-1, self.dim)[pick].to(self.codebook.dtype)
        self.last_used[dead] = self.steps
        self.reseeded += len(dead)
        return len(dead)
