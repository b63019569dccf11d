"""Slow, obviously-correct forms the fast code is tested against (loops, explicit masks, float64)."""

from __future__ import annotations

import itertools
import math

import torch
from torch import Tensor

from iclr25.probe_pruning.model import DecoderLM, rotate_half


def select_probe_bruteforce(residual: Tensor, seq_ratio: float, bsz_ratio: float) -> tuple[list[int], list[int]]:
    """Probe indices by explicit loops: positions by sqrt(sum_b ||R[b,s]||^2), then samples on those positions."""
    B, S, _ = residual.shape
    n_s = min(S, max(math.ceil(seq_ratio * S), 2))
    n_b = min(B, max(math.ceil(bsz_ratio * B), 1))
    norm = [[math.sqrt(sum(float(v) ** 2 for v in residual[b, s])) for s in range(S)] for b in range(B)]
    seq_score = [math.sqrt(sum(norm[b][s] ** 2 for b in range(B))) for s in range(S)]
    s_sel = sorted(sorted(range(S), key=lambda s: -seq_score[s])[:n_s])
    if n_s <= 10 and n_s < S and s_sel[0] != 0:
        s_sel = sorted([0, *s_sel[1:]])
    bsz_score = [math.sqrt(sum(norm[b][s] ** 2 for s in s_sel)) for b in range(B)]
    b_sel = sorted(sorted(range(B), key=lambda b: -bsz_score[b])[:n_b])
    return b_sel, s_sel


def ppsp_mlp_loop(C: Tensor, W: Tensor) -> Tensor:
    """PPsp per channel by loops: sqrt(sum_i (C_c W_ic^2)^2)."""
    d, n = W.shape
    return torch.tensor(
        [math.sqrt(sum((float(C[c]) * float(W[i, c]) ** 2) ** 2 for i in range(d))) for c in range(n)],
        dtype=torch.float64,
    )


def ppsp_head_loop(C: Tensor, W: Tensor, n_heads: int) -> Tensor:
    """PPsp per head by loops over rows and the head's channels."""
    d, n = W.shape
    hd = n // n_heads
    out = []
    for h in range(n_heads):
        total = sum((float(C[c]) * float(W[i, c]) ** 2) ** 2 for i in range(d) for c in range(h * hd, (h + 1) * hd))
        out.append(math.sqrt(total))
    return torch.tensor(out, dtype=torch.float64)


def attention_loop(q: Tensor, k: Tensor, v: Tensor) -> Tensor:
    """Causal softmax attention for one head by explicit masking: q, k, v (S, hd) -> (S, hd)."""
    S, hd = q.shape
    scores = q @ k.T / math.sqrt(hd)
    mask = torch.tensor([[j > i for j in range(S)] for i in range(S)])
    scores = scores.masked_fill(mask, float("-inf"))
    return torch.softmax(scores, -1) @ v


def probe_attention_reference(block, probe: Tensor, positions: Tensor) -> Tensor:
    """The attention probe by loops over samples and heads: q/k/v of the probe tokens, RoPE at `positions`,
    causal attention among the probe tokens; concatenated head outputs (n_b, n_s, H*hd). LLaMA, no GQA."""
    cfg = block.cfg
    H, hd = cfg.num_attention_heads, cfg.head_dim
    a = block.self_attn
    inv = 1.0 / (cfg.rope_theta ** (torch.arange(0, hd, 2, dtype=torch.float64) / hd))
    ang = positions.double()[:, None] * inv[None, :]
    cos, sin = torch.cat([ang, ang], -1).cos(), torch.cat([ang, ang], -1).sin()
    outs = []
    for b in range(probe.shape[0]):
        x = probe[b].double()
        heads = []
        for h in range(H):
            rows = slice(h * hd, (h + 1) * hd)
            q = x @ a.q_proj.weight[rows].double().T
            k = x @ a.k_proj.weight[rows].double().T
            v = x @ a.v_proj.weight[rows].double().T
            q, k = q * cos + rotate_half(q) * sin, k * cos + rotate_half(k) * sin
            heads.append(attention_loop(q, k, v))
        outs.append(torch.cat(heads, -1))
    return torch.stack(outs)


@torch.no_grad()
def masked_forward(model: DecoderLM, ids: Tensor, kept: dict[tuple[int, str], Tensor]) -> Tensor:
    """The dense forward with pruned heads / channels zero-masked at the output projection's input (no slicing)."""
    h = model.embed(ids)
    pos = torch.arange(ids.shape[1])
    for i, block in enumerate(model.layers):
        z = block.attn_inner(block.attn_norm(h), pos)
        if (i, "attn") in kept:
            mask = torch.zeros(model.cfg.num_attention_heads, model.cfg.head_dim)
            mask[kept[(i, "attn")]] = 1
            z = z * mask.reshape(-1)
        h = h + block.attn_outer(z)
        z = block.mlp_inner(block.mlp_norm(h))
        if (i, "mlp") in kept:
            mask = torch.zeros(model.cfg.intermediate_size)
            mask[kept[(i, "mlp")]] = 1
            z = z * mask
        h = h + block.mlp_outer(z)
    return model.head(h)


def all_subsets(n: int, k: int) -> list[tuple[int, ...]]:
    """Every k-subset of range(n) (for exhaustive checks on tiny sizes)."""
    return list(itertools.combinations(range(n), k))
