"""The Transformer path of Highway-BP (Fagnou et al., ICLR 2025, arXiv 2501.17086, §5.2, Table 1, Table 4, Fig. 3).

A GPT-2-style (pre-LN) causal language model as a `HighwayStack`: the stem is token + learned position
embeddings, every attention sub-layer `Attn(LN(x))` and every feed-forward sub-layer `MLP(LN(x))` is its own layer
(12 GPT-2 blocks give L = 24), and each is wrapped in the γ trick (`ScaledResidual`): `g = Layer(LN(x)) + γx`,
`r = (1−γ)x + z`, K = (1−γ)I, γ = 0.2 (the plain γ = 0 split diverged in the paper). The network function does
not depend on γ; only the Highway-BP(k) estimate does. Training follows Table 4's GPT-2 settings (AdamW 1e-3,
β2 0.98, weight decay 0.1, clipping at 1, warmup then cosine decay to 0.1×) with k on a schedule that grows over
training (the paper suggests growing k; reviewers asked for it).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import torch
from torch import Tensor, nn

from iclr25.highway_bp.highway import HighwayStack, ScaledResidual, gradient_cosine, highway_step
from iclr25.highway_bp.train import lr_factor

LN2 = math.log(2.0)


class CausalSelfAttention(nn.Module):
    """Attn(LN(x)) on (B, T, D): multi-head causal self-attention after a LayerNorm."""

    def __init__(self, d: int, heads: int) -> None:
        super().__init__()
        if d % heads:
            raise ValueError(f"d={d} must be a multiple of heads={heads}")
        self.heads = heads
        self.ln = nn.LayerNorm(d)
        self.qkv = nn.Linear(d, 3 * d)
        self.proj = nn.Linear(d, d)

    def forward(self, x: Tensor) -> Tensor:
        """(B, T, D) -> (B, T, D)."""
        B, T, D = x.shape
        q, k, v = self.qkv(self.ln(x)).view(B, T, 3, self.heads, D // self.heads).permute(2, 0, 3, 1, 4)
        y = nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)  # (B, heads, T, D/heads)
        return self.proj(y.transpose(1, 2).reshape(B, T, D))


def feed_forward(d: int, mult: int = 4) -> nn.Module:
    """MLP(LN(x)) = W2·GELU(W1·LN(x)) with hidden size mult·d (GPT-2)."""
    return nn.Sequential(nn.LayerNorm(d), nn.Linear(d, mult * d), nn.GELU(), nn.Linear(mult * d, d))


class TokenPositionEmbedding(nn.Module):
    """The stem: token embedding + learned position embedding, (B, T) ids -> (B, T, D)."""

    def __init__(self, vocab: int, d: int, context: int) -> None:
        super().__init__()
        self.tok = nn.Embedding(vocab, d)
        self.pos = nn.Embedding(context, d)

    def forward(self, ids: Tensor) -> Tensor:
        """(B, T) -> (B, T, D)."""
        return self.tok(ids) + self.pos(torch.arange(ids.shape[1], device=ids.device))


def gpt2_stack(
    vocab: int, d: int = 64, blocks: int = 4, heads: int = 4, context: int = 64, gamma: float = 0.2
) -> HighwayStack:
    """A pre-LN GPT-2-style LM as a `HighwayStack` with L = 2·blocks γ-trick layers (attention, FFN, ...)."""
    if min(vocab, d, blocks, heads, context) < 1:
        raise ValueError("vocab, d, blocks, heads and context must all be >= 1")
    layers = []
    for _ in range(blocks):
        layers += [ScaledResidual(CausalSelfAttention(d, heads), gamma), ScaledResidual(feed_forward(d), gamma)]
    head = nn.Sequential(nn.LayerNorm(d), nn.Linear(d, vocab))
    return HighwayStack(layers, stem=TokenPositionEmbedding(vocab, d, context), head=head)


def set_gamma(model: HighwayStack, gamma: float) -> None:
    """Change γ of every `ScaledResidual` layer (the network function stays the same; §5.2)."""
    if not 0.0 <= gamma <= 1.0:
        raise ValueError(f"gamma must be in [0, 1], got {gamma}")
    for layer in model.layers:
        if isinstance(layer, ScaledResidual):
            layer.gamma = float(gamma)


def lm_loss(logits: Tensor, targets: Tensor) -> Tensor:
    """Mean next-token cross-entropy over (B, T, V) logits and (B, T) targets."""
    return nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]), targets.reshape(-1))


def k_schedule(step: int, total: int, k_start: int, k_end: int) -> int:
    """k growing linearly from `k_start` (first step) to `k_end` (last step), rounded down."""
    if min(k_start, k_end) < 0 or total < 1:
        raise ValueError(f"k_start and k_end must be >= 0 and total >= 1, got {k_start}, {k_end}, {total}")
    return int(k_start + (k_end - k_start) * step / max(1, total - 1))


def windows(ids: Tensor, length: int, batch: int, gen: torch.Generator) -> tuple[Tensor, Tensor]:
    """`batch` random windows: inputs (B, T) and next-token targets (B, T)."""
    starts = torch.randint(0, len(ids) - length - 1, (batch,), generator=gen)
    rows = ids[starts[:, None] + torch.arange(length + 1)]
    return rows[:, :-1], rows[:, 1:]


@torch.no_grad()
def transformer_bpc(model: HighwayStack, ids: Tensor, length: int, max_windows: int = 0, batch: int = 64) -> float:
    """Bits per character on non-overlapping windows of `length`."""
    n = (len(ids) - 1) // length
    n = min(n, max_windows) if max_windows else n
    if n < 1:
        raise ValueError(f"the text ({len(ids)} characters) is shorter than one window of {length + 1}")
    x, y = ids[: n * length].view(n, length), ids[1 : n * length + 1].view(n, length)
    model.eval()
    total = sum(
        float(lm_loss(model(x[i : i + batch]), y[i : i + batch])) * len(x[i : i + batch]) for i in range(0, n, batch)
    )
    model.train()
    return total / n / LN2


@dataclass
class TransformerResult:
    """Outcome of one GPT-2-style run."""

    valid_bpc: float
    step_ms: float
    cosine_init: dict[int, float] = field(default_factory=dict)  # cos(HBP(k), BP) at initialisation
    cosine_end: dict[int, float] = field(default_factory=dict)  # ... after training
    cosine_gamma0_init: dict[int, float] = field(default_factory=dict)  # same weights, plain split (γ = 0)


def train_transformer(
    train_ids: np.ndarray,
    valid_ids: np.ndarray,
    vocab: int,
    *,
    algo: str = "hbp",
    k_start: int = 0,
    k_end: int = 0,
    d: int = 64,
    blocks: int = 4,
    heads: int = 4,
    length: int = 64,
    batch: int = 32,
    steps: int = 300,
    lr: float = 1e-3,
    warmup: int = 30,
    gamma: float = 0.2,
    cosine_ks: Sequence[int] = (0, 1, 2, 4),
    seed: int = 0,
    device: str = "cpu",
    valid_windows: int = 0,
    desc: str = "transformer",
) -> TransformerResult:
    """Train a `gpt2_stack` with BP or Highway-BP(k(t)) (Table 4 GPT-2 optimiser); cosines to BP at init and end."""
    from iclr25.highway_bp.models import seeded
    from iclr25.shared.device import Throughput
    from iclr25.shared.progress import progress

    if algo not in ("bp", "hbp"):
        raise ValueError(f"algo must be 'bp' or 'hbp', got {algo!r}")
    model = seeded(lambda: gpt2_stack(vocab, d, blocks, heads, length, gamma), seed).to(device)
    tr, va = torch.as_tensor(train_ids).to(device), torch.as_tensor(valid_ids).to(device)
    probe = windows(tr, length, batch, torch.Generator().manual_seed(10_000 + seed))  # fixed batch for the cosines
    ks = sorted({min(int(k), model.depth) for k in cosine_ks})
    result = TransformerResult(0.0, 0.0, cosine_init=gradient_cosine(model, lm_loss, *probe, ks))
    set_gamma(model, 0.0)
    result.cosine_gamma0_init = gradient_cosine(model, lm_loss, *probe, ks)
    set_gamma(model, gamma)
    decay = [p for p in model.parameters() if p.dim() >= 2]
    rest = [p for p in model.parameters() if p.dim() < 2]
    groups = [{"params": decay, "weight_decay": 0.1}, {"params": rest, "weight_decay": 0.0}]
    opt = torch.optim.AdamW(groups, lr=lr, betas=(0.9, 0.98))  # Table 4 (GPT-2)
    gen = torch.Generator().manual_seed(seed)
    meter = Throughput(device=device)
    for step in progress(range(steps), desc=desc, unit="step"):
        x, y = windows(tr, length, batch, gen)
        for group in opt.param_groups:
            group["lr"] = lr * lr_factor(step, steps, warmup, "cosine")
        with meter.measure(1):
            opt.zero_grad(set_to_none=True)
            k = k_schedule(step, steps, k_start, k_end)
            highway_step(model, lm_loss, x, y, k, algo=algo)
            nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            opt.step()
    result.step_ms = 1000 * meter.seconds / max(1, meter.items)
    result.cosine_end = gradient_cosine(model, lm_loss, *probe, ks)
    result.valid_bpc = transformer_bpc(model, va, length, max_windows=valid_windows)
    return result
