"""Baseline channels of CtD (arXiv 2601.10169; spec section 4): Gumbel-Softmax (GS) and quantized (QT).

Both take the same Sender output z (B, d) as the codebook channel and return a `ChannelOutput`, so agents, message
length and budgets are identical across channels.
- GS (Jang et al. 2017; Maddison et al. 2017): logits = Linear(z) over a vocabulary of K words. Training: |p|
  straight-through Gumbel-Softmax samples (tau = 1) without replacement (each later word masks the earlier ones);
  evaluation: the top-|p| logits. The Receiver sees one-hot vectors.
- QT (Carmeli et al. 2023, "Emergent quantized communication"): per word, a head maps z to `bits` coordinates,
  each sigma(.) * (q - 1) rounded with a straight-through gradient; the word is the tuple of levels (id in base q).
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from iclr25.compose_decompose.codebook import ChannelOutput


class GumbelChannel(nn.Module):
    """GS channel: straight-through Gumbel-Softmax words in training, top-|p| logits at evaluation."""

    def __init__(self, vocab: int, dim: int, tau: float = 1.0) -> None:
        super().__init__()
        if vocab < 1 or tau <= 0:
            raise ValueError(f"need vocab >= 1 and tau > 0, got {vocab}, {tau}")
        self.vocab, self.tau, self.msg_dim = vocab, tau, vocab
        self.head = nn.Linear(dim, vocab)

    def forward(self, z: Tensor, n_words: int = 1, noise: Tensor | None = None) -> ChannelOutput:
        """Words for z (B, d): sampled (training) or arg-top (evaluation), as one-hot vectors (B, n, vocab);
        `noise` (B, vocab): the uniforms of the Gumbel draw, else drawn here (torch's global RNG)."""
        if not 1 <= n_words <= self.vocab:
            raise ValueError(f"n_words must be in 1..vocab = {self.vocab}, got {n_words}")
        logits = self.head(z)  # (B, V)
        if not self.training:
            words = logits.topk(n_words, dim=-1).indices  # (B, n)
            return ChannelOutput(words, F.one_hot(words, self.vocab).to(z.dtype), z.new_zeros(()), {})
        u = torch.rand_like(logits) if noise is None else noise.to(logits.device, logits.dtype)
        u = u.clamp(1e-10, 1 - 1e-10)
        y = (logits - torch.log(-torch.log(u))) / self.tau  # Gumbel-perturbed logits
        mask = torch.zeros_like(y, dtype=torch.bool)
        words, vecs = [], []
        for _ in range(n_words):
            soft = y.masked_fill(mask, float("-inf")).softmax(-1)
            w = soft.argmax(-1)
            hard = F.one_hot(w, self.vocab).to(soft.dtype)
            vecs.append(hard - soft.detach() + soft)  # straight-through one-hot
            words.append(w)
            mask = mask | hard.bool()
        lp = logits.detach().log_softmax(-1)
        entropy = -(lp.exp() * lp).sum(-1).mean()
        return ChannelOutput(torch.stack(words, 1), torch.stack(vecs, 1), z.new_zeros(()), {"entropy": float(entropy)})


class QuantizedChannel(nn.Module):
    """QT channel: per-word heads, coordinates sigma(h) * (levels - 1) rounded with a straight-through gradient."""

    def __init__(self, dim: int, levels: int = 2, bits: int = 4, max_words: int = 3) -> None:
        super().__init__()
        if levels < 2 or bits < 1 or max_words < 1:
            raise ValueError(f"need levels >= 2, bits >= 1, max_words >= 1, got {levels}, {bits}, {max_words}")
        self.levels, self.bits, self.max_words, self.msg_dim = levels, bits, max_words, bits
        self.vocab = levels**bits
        self.heads = nn.Linear(dim, bits * max_words)

    @staticmethod
    def bits_for(vocab: int, levels: int = 2) -> int:
        """Smallest number of coordinates whose level tuples name at least `vocab` words."""
        return max(1, math.ceil(math.log(vocab) / math.log(levels) - 1e-9))

    def forward(self, z: Tensor, n_words: int = 1) -> ChannelOutput:
        """Quantised words for z (B, d): vectors (B, n, bits) of levels / (levels - 1), ids in base `levels`."""
        if not 1 <= n_words <= self.max_words:
            raise ValueError(f"n_words must be in 1..{self.max_words}, got {n_words}")
        h = self.heads(z).view(z.shape[0], self.max_words, self.bits)[:, :n_words]  # (B, n, bits)
        x = torch.sigmoid(h) * (self.levels - 1)
        r = x + (torch.round(x) - x).detach()  # straight-through rounding
        powers = self.levels ** torch.arange(self.bits, device=z.device)
        words = (torch.round(x).long() * powers).sum(-1)  # (B, n)
        return ChannelOutput(words, r / (self.levels - 1), z.new_zeros(()), {})
