"""Training loop for the classifiers HD-Explain explains (official models/trainers.py: Adam + cross-entropy).

A plain custom loop (the networks are small; the method itself needs no training): Adam, shuffled
mini-batches from a seeded generator, optional random-crop + horizontal-flip augmentation for images.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F


def _augment(xb: torch.Tensor, gen: torch.Generator) -> torch.Tensor:
    """Random crop (reflect padding 4) and horizontal flip of an image batch (n, C, H, W)."""
    n, c, h, w = xb.shape
    dev = xb.device
    padded = F.pad(xb, (4, 4, 4, 4), mode="reflect")
    dx = torch.randint(0, 9, (n,), generator=gen).to(dev)
    dy = torch.randint(0, 9, (n,), generator=gen).to(dev)
    rows = dy[:, None] + torch.arange(h, device=dev)[None, :]  # (n, H)
    cols = dx[:, None] + torch.arange(w, device=dev)[None, :]  # (n, W)
    batch = torch.arange(n, device=dev)[:, None, None, None]
    chan = torch.arange(c, device=dev)[None, :, None, None]
    out = padded[batch, chan, rows[:, None, :, None], cols[:, None, None, :]]  # (n, C, H, W)
    flip = (torch.rand(n, generator=gen) < 0.5).to(dev)
    return torch.where(flip[:, None, None, None], out.flip(-1), out)


def train_classifier(
    model: torch.nn.Module,
    X: Any,
    y: Any,
    epochs: int,
    lr: float,
    batch_size: int,
    seed: int = 0,
    device: str = "cpu",
    augment: bool = False,
    weight_decay: float = 0.0,
    progress: Callable[[Any], Any] | None = None,
) -> dict[str, float]:
    """Train `model` in place with Adam on cross-entropy; returns train accuracy, loss and samples/s."""
    if epochs < 0 or batch_size < 1 or not lr > 0:
        raise ValueError(f"need epochs >= 0, batch_size >= 1, lr > 0; got {epochs}, {batch_size}, {lr}")
    X = torch.as_tensor(np.asarray(X, dtype=np.float32))
    y = torch.as_tensor(np.asarray(y, dtype=np.int64))
    model.to(device).train()
    opt = torch.optim.Adam(model.parameters(), lr=lr, weight_decay=weight_decay)
    gen = torch.Generator().manual_seed(int(seed))
    start, seen, loss = time.perf_counter(), 0, torch.tensor(float("nan"))
    epoch_iter = range(epochs) if progress is None else progress(range(epochs))
    for _ in epoch_iter:
        perm = torch.randperm(X.shape[0], generator=gen)
        for i in range(0, X.shape[0], batch_size):
            idx = perm[i : i + batch_size]
            xb, yb = X[idx].to(device), y[idx].to(device)
            if augment:
                xb = _augment(xb, gen)
            loss = F.cross_entropy(model(xb), yb)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            seen += len(idx)
    elapsed = max(time.perf_counter() - start, 1e-9)
    model.eval()
    with torch.no_grad():
        correct = 0
        for i in range(0, X.shape[0], 1024):
            correct += int((model(X[i : i + 1024].to(device)).argmax(1).cpu() == y[i : i + 1024]).sum())
    return {
        "train_acc": correct / max(X.shape[0], 1),
        "final_loss": float(loss.detach()),
        "train_samples_per_s": seen / elapsed,
    }
