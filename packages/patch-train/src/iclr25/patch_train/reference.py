"""Slow, obviously-correct forms of Eqs. 1 and 2 of arXiv 2407.12665 (loops, a LLaMA written out), used to
test `patch.py` and `llama.py`.

`patch_lm_loss_global` is the other reading of Eq. 2 with ignored labels (one mean over all valid
(i, k) targets); the official code, and `patch.patch_lm_loss`, average per-k means instead.
"""

from __future__ import annotations

import torch


def patchify_loop(embeds: torch.Tensor, K: int) -> torch.Tensor:
    """Eq. 1 by loops: patch i = (1/K) sum_k E(x_{iK+k})."""
    B, L, d = embeds.shape
    out = torch.zeros(B, L // K, d, dtype=embeds.dtype)
    for b in range(B):
        for i in range(L // K):
            acc = torch.zeros(d, dtype=embeds.dtype)
            for k in range(K):
                acc = acc + embeds[b, i * K + k]
            out[b, i] = acc / K
    return out


def patch_lm_loss_loop(logits: torch.Tensor, labels: torch.Tensor, K: int, ignore_index: int = -100) -> torch.Tensor:
    """Eq. 2 by loops, official per-k convention: mean_k [ mean over valid (b, i) of -log q_i(x_{(i+1)K+k}) ]."""
    B, T, _ = logits.shape
    logp = torch.log_softmax(logits.double(), dim=-1)
    column_means = []
    for k in range(K):
        terms = []
        for b in range(B):
            for i in range(T - 1):
                target = int(labels[b, (i + 1) * K + k])
                if target != ignore_index:
                    terms.append(-logp[b, i, target])
        column_means.append(torch.stack(terms).mean() if terms else torch.zeros((), dtype=torch.float64))
    return torch.stack(column_means).mean()


def patch_lm_loss_global(logits: torch.Tensor, labels: torch.Tensor, K: int, ignore_index: int = -100) -> torch.Tensor:
    """Eq. 2 with one global mean over every valid (b, i, k) target (not the official convention)."""
    B, T, _ = logits.shape
    logp = torch.log_softmax(logits.double(), dim=-1)
    terms = []
    for b in range(B):
        for i in range(T - 1):
            for k in range(K):
                target = int(labels[b, (i + 1) * K + k])
                if target != ignore_index:
                    terms.append(-logp[b, i, target])
    return torch.stack(terms).mean()


def hf_cosine_lr_loop(step: int, lr: float, warmup: int, total: int) -> float:
    """The Hugging Face `cosine` schedule written out: linear warmup from 0, then half a cosine to 0."""
    import math

    if step < warmup:
        return lr * step / warmup
    progress = (step - warmup) / max(1, total - warmup)
    return lr * 0.5 * (1.0 + math.cos(math.pi * min(progress, 1.0)))


def llama_patch_logits_reference(
    state: dict[str, torch.Tensor], n_heads: int, ids: torch.Tensor, K: int, eps: float = 1e-6, theta: float = 1e4
) -> torch.Tensor:
    """Patch-level logits (B, T, V) of a LLaMA written out from the equations in float64, from its weights alone.

    Eq. 1: patch i is (1/K) sum_k E(x_{iK+k}); it sits at RoPE position i (0 ... T-1). Then each layer:
    h = x + W_o attn(RoPE(W_q n1(x)), RoPE(W_k n1(x)), W_v n1(x)) with causal softmax(q.k / sqrt(d_h)) over
    patches 0 ... i, and x' = h + W_down(silu(W_gate n2(h)) * W_up n2(h)); n(x) = w * x / sqrt(mean(x^2) + eps);
    logits = W_head n(x). RoPE rotates the pairs (j, j + d_h/2) of every head by the angle i * theta^(-2j/d_h).
    No Hugging Face or package model code is used: this is what `patch_forward` is checked against.
    """
    W = {k: v.detach().to(torch.float64).cpu() for k, v in state.items()}
    E = W["model.embed_tokens.weight"]
    ids = ids.cpu()
    B, L = ids.shape
    T, d = L // K, E.shape[1]
    x = torch.zeros(B, T, d, dtype=torch.float64)
    for i in range(T):  # Eq. 1, patch by patch
        for k in range(K):
            x[:, i] += E[ids[:, i * K + k]]
        x[:, i] /= K

    def norm(h: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
        return w * h / torch.sqrt((h * h).mean(-1, keepdim=True) + eps)

    dh = d // n_heads
    half = dh // 2
    angle = torch.tensor([[i * theta ** (-2.0 * j / dh) for j in range(half)] for i in range(T)], dtype=torch.float64)
    cos, sin = angle.cos()[:, None, :], angle.sin()[:, None, :]  # (T, 1, half)

    def rotate(q: torch.Tensor) -> torch.Tensor:  # (B, T, H, dh): rotate each pair (j, j + half) by angle[i, j]
        a, b = q[..., :half], q[..., half:]
        return torch.cat([a * cos - b * sin, b * cos + a * sin], dim=-1)

    causal = torch.tril(torch.ones(T, T, dtype=torch.bool))
    n_layers = 1 + max(int(key.split(".")[2]) for key in W if key.startswith("model.layers."))
    for layer in range(n_layers):
        p = f"model.layers.{layer}."
        h = norm(x, W[p + "input_layernorm.weight"])
        q = rotate((h @ W[p + "self_attn.q_proj.weight"].T).view(B, T, n_heads, dh))
        k = rotate((h @ W[p + "self_attn.k_proj.weight"].T).view(B, T, n_heads, dh))
        v = (h @ W[p + "self_attn.v_proj.weight"].T).view(B, T, n_heads, dh)
        out = torch.zeros(B, T, n_heads, dh, dtype=torch.float64)
        for head in range(n_heads):
            scores = q[:, :, head] @ k[:, :, head].transpose(1, 2) / dh**0.5  # (B, T, T)
            scores = scores.masked_fill(~causal, float("-inf"))
            out[:, :, head] = torch.softmax(scores, dim=-1) @ v[:, :, head]
        x = x + out.reshape(B, T, d) @ W[p + "self_attn.o_proj.weight"].T
        h = norm(x, W[p + "post_attention_layernorm.weight"])
        gate, up = h @ W[p + "mlp.gate_proj.weight"].T, h @ W[p + "mlp.up_proj.weight"].T
        x = x + (gate * torch.sigmoid(gate) * up) @ W[p + "mlp.down_proj.weight"].T
    return norm(x, W["model.norm.weight"]) @ W["lm_head.weight"].T
