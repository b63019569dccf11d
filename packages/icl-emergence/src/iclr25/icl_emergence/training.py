"""AR-NTP pre-training (spec §3.1, §6a): the loss averages the next-token loss over every position of every
sequence; AdamW with linear warm-up and cosine decay; an SGLD variant logging gradient differences against a
prior objective for the Langevin KL (spec §3.2 item 4). Plain torch loops (a few ms per step on CPU)."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from typing import Any

import torch
import torch.nn.functional as F
from torch import Tensor, nn


def next_token_targets(seq: Tensor) -> tuple[Tensor, Tensor]:
    """(inputs, targets) = (x_1..x_{T-1}, x_2..x_T): the output at position t is scored against x_{t+1}."""
    return seq[:, :-1], seq[:, 1:]


def ar_loss(model: nn.Module, seq: Tensor) -> Tensor:
    """Mean AR-NTP loss over all B x (T-1) predictions: squared Euclidean error (vectors) or cross-entropy (tokens)."""
    inputs, targets = next_token_targets(seq)
    out = model(inputs)
    if seq.dtype in (torch.long, torch.int32, torch.int64):
        return F.cross_entropy(out.reshape(-1, out.shape[-1]), targets.reshape(-1))
    return ((out - targets) ** 2).sum(-1).mean()


def lr_at(step: int, steps: int, warmup: int, lr: float) -> float:
    """Linear warm-up over `warmup` steps, then cosine decay to 0 at `steps` (spec §6a)."""
    if step < warmup:
        return lr * (step + 1) / warmup
    progress = (step - warmup) / max(1, steps - warmup)
    return lr * 0.5 * (1 + math.cos(math.pi * min(progress, 1.0)))


def train_ar(
    model: nn.Module,
    next_batch: Callable[[int], Tensor],
    steps: int,
    *,
    lr: float = 1e-3,
    warmup: int = 100,
    weight_decay: float = 0.01,
    loop: Iterable[int] | None = None,
    on_log: Callable[[int, float], None] | None = None,
    log_every: int = 200,
    device: str = "cpu",
) -> list[float]:
    """AdamW on the AR-NTP loss for `steps` steps; `next_batch(step)` gives a (B, T, ...) batch. Returns the
    per-step training losses."""
    model.to(device).train()
    opt = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=weight_decay)
    losses = []
    for step in loop if loop is not None else range(steps):
        for group in opt.param_groups:
            group["lr"] = lr_at(step, steps, warmup, lr)
        loss = ar_loss(model, next_batch(step).to(device))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        losses.append(loss.item())
        if on_log is not None and ((step + 1) % log_every == 0 or step + 1 == steps):
            on_log(step + 1, loss.item())
    model.eval()
    return losses


def _flat_grad(model: nn.Module, loss: Tensor) -> Tensor:
    grads = torch.autograd.grad(loss, [p for p in model.parameters() if p.requires_grad])
    return torch.cat([g.reshape(-1) for g in grads])


def train_sgld(
    model: nn.Module,
    next_batch: Callable[[int], Tensor],
    next_prior_batch: Callable[[int], Tensor],
    steps: int,
    *,
    lr: float = 1e-3,
    beta: float = 1e5,
    seed: int = 0,
    device: str = "cpu",
) -> dict[str, Any]:
    """SGLD theta <- theta - eta g + sqrt(2 eta / beta) xi on the AR-NTP loss, logging ||g - g^J||^2 with g^J the
    gradient of the prior objective (batches of the prior corpus) at the same theta (spec §3.2 item 4)."""
    model.to(device).train()
    gen = torch.Generator(device="cpu").manual_seed(seed)
    params = [p for p in model.parameters() if p.requires_grad]
    diffs, etas, losses = [], [], []
    for step in range(steps):
        loss = ar_loss(model, next_batch(step).to(device))
        g = _flat_grad(model, loss)
        g_prior = _flat_grad(model, ar_loss(model, next_prior_batch(step).to(device)))
        diffs.append(float(((g - g_prior) ** 2).sum()))
        etas.append(lr)
        losses.append(loss.item())
        with torch.no_grad():
            offset = 0
            for p in params:
                n = p.numel()
                noise = torch.randn(p.shape, generator=gen).to(device)
                p.add_(-lr * g[offset : offset + n].view_as(p) + math.sqrt(2 * lr / beta) * noise)
                offset += n
    model.eval()
    return {"grad_diff_sq": diffs, "step_sizes": etas, "losses": losses}
