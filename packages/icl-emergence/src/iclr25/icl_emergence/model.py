"""`ARTransformer`: a small GPT-style causal transformer for auto-regressive next-token prediction (AR-NTP).

Spec §6a block layout: linear read-in (vectors) or a token embedding, learned positions, pre-LayerNorm blocks
(causal multi-head self-attention + MLP of width 4·d_model, GELU), a final LayerNorm and a linear read-out.
The same network serves continuous sequences (LDS: read-out to R^d, squared loss) and token sequences (GINC:
read-out to vocabulary logits, cross-entropy). Initialisation follows GPT-2 (normal(0, 0.02), residual
projections scaled by 1/sqrt(2·n_layers)).
"""

from __future__ import annotations

import math

import torch
from torch import Tensor, nn


class CausalSelfAttention(nn.Module):
    """Multi-head self-attention; `causal=False` removes the mask (only for tests of the leak it causes)."""

    def __init__(self, d_model: int, n_heads: int, causal: bool = True) -> None:
        super().__init__()
        if d_model % n_heads:
            raise ValueError(f"d_model ({d_model}) must be divisible by n_heads ({n_heads})")
        self.n_heads, self.causal = n_heads, causal
        self.qkv = nn.Linear(d_model, 3 * d_model)
        self.proj = nn.Linear(d_model, d_model)

    def forward(self, x: Tensor) -> Tensor:
        """x: (B, L, d_model) -> (B, L, d_model); position i attends to positions <= i."""
        B, L, D = x.shape
        q, k, v = self.qkv(x).view(B, L, 3, self.n_heads, D // self.n_heads).permute(2, 0, 3, 1, 4)
        att = (q @ k.transpose(-1, -2)) * (1.0 / math.sqrt(q.shape[-1]))  # (B, H, L, L)
        if self.causal:
            mask = torch.ones(L, L, dtype=torch.bool, device=x.device).triu(1)
            att = att.masked_fill(mask, float("-inf"))
        y = att.softmax(-1) @ v
        return self.proj(y.transpose(1, 2).reshape(B, L, D))


class Block(nn.Module):
    """Pre-LayerNorm transformer block: x + attn(LN(x)), then x + MLP(LN(x))."""

    def __init__(self, d_model: int, n_heads: int, causal: bool = True) -> None:
        super().__init__()
        self.ln1, self.ln2 = nn.LayerNorm(d_model), nn.LayerNorm(d_model)
        self.attn = CausalSelfAttention(d_model, n_heads, causal)
        self.mlp = nn.Sequential(nn.Linear(d_model, 4 * d_model), nn.GELU(), nn.Linear(4 * d_model, d_model))

    def forward(self, x: Tensor) -> Tensor:
        """One residual block."""
        x = x + self.attn(self.ln1(x))
        return x + self.mlp(self.ln2(x))


class ARTransformer(nn.Module):
    """Causal transformer over tokens (`vocab_size`) or vectors (`input_dim`); output at position t predicts
    element t+1 (vectors: a point of R^input_dim; tokens: logits over the vocabulary)."""

    def __init__(
        self,
        vocab_size: int | None = None,
        input_dim: int | None = None,
        d_model: int = 64,
        n_layers: int = 2,
        n_heads: int = 4,
        max_len: int = 64,
        causal: bool = True,
    ) -> None:
        super().__init__()
        if (vocab_size is None) == (input_dim is None):
            raise ValueError("give exactly one of vocab_size (tokens) or input_dim (vectors)")
        self.vocab_size, self.input_dim, self.max_len = vocab_size, input_dim, max_len
        self.read_in: nn.Module = (
            nn.Embedding(vocab_size, d_model) if vocab_size is not None else nn.Linear(input_dim, d_model)
        )
        self.pos = nn.Parameter(torch.zeros(max_len, d_model))
        self.blocks = nn.ModuleList(Block(d_model, n_heads, causal) for _ in range(n_layers))
        self.ln_f = nn.LayerNorm(d_model)
        self.read_out = nn.Linear(d_model, vocab_size if vocab_size is not None else input_dim)
        self.apply(self._init)
        nn.init.normal_(self.pos, std=0.02)
        for name, p in self.named_parameters():
            if name.endswith("proj.weight") or name.endswith("mlp.2.weight"):
                nn.init.normal_(p, std=0.02 / math.sqrt(2 * n_layers))

    @staticmethod
    def _init(module: nn.Module) -> None:
        if isinstance(module, nn.Linear | nn.Embedding):
            nn.init.normal_(module.weight, std=0.02)
            if getattr(module, "bias", None) is not None:
                nn.init.zeros_(module.bias)

    def forward(self, x: Tensor) -> Tensor:
        """x: (B, L, input_dim) floats or (B, L) token ids -> (B, L, input_dim) or (B, L, vocab_size)."""
        L = x.shape[1]
        if self.max_len < L:
            raise ValueError(f"sequence length {L} exceeds max_len {self.max_len}")
        h = self.read_in(x) + self.pos[:L]
        for block in self.blocks:
            h = block(h)
        return self.read_out(self.ln_f(h))
