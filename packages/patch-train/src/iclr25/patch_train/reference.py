"""Slow, obviously-correct loop forms of Eqs. 1 and 2 of arXiv 2407.12665, used to test `patch.py`.

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
