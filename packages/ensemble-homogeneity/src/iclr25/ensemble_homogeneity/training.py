"""Training a batched homogeneous ensemble: plain SGD, no momentum, no weight decay, no augmentation (spec §3.6, §6a).

Each member draws its own permutation of the training set every epoch (independent shuffles), and all
members step together: the loss is the sum over members of each member's mean cross-entropy, so the
gradients of different members never mix. Training stops once *every* member fits the training set
(checked once per epoch, spec §6a: "interpolation ≈ collapse") or after `max_epochs` / `max_steps`.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import torch
from torch import nn
from torch.nn import functional as F

LR_SCHEDULES = ("constant", "inverse_sqrt")


@dataclass(frozen=True)
class TrainSettings:
    """SGD recipe: spec §6a for the quick runs; `inverse_sqrt` is Nakkiran et al.'s lr 0.1/√(1 + ⌊t/512⌋)."""

    lr: float = 0.1
    batch_size: int = 64
    max_epochs: int = 300
    until_interpolation: bool = True
    lr_schedule: str = "constant"
    max_steps: int | None = None

    def __post_init__(self) -> None:
        if not self.lr > 0 or self.batch_size < 1 or self.max_epochs < 1:
            raise ValueError("lr must be > 0, batch_size and max_epochs >= 1")
        if self.lr_schedule not in LR_SCHEDULES:
            raise ValueError(f"lr_schedule must be one of {', '.join(LR_SCHEDULES)}, got {self.lr_schedule!r}")
        if self.max_steps is not None and self.max_steps < 1:
            raise ValueError("max_steps must be >= 1 or None")

    def lr_at(self, step: int) -> float:
        """Learning rate at optimisation step `step`."""
        if self.lr_schedule == "inverse_sqrt":
            return self.lr / math.sqrt(1 + step // 512)
        return self.lr


@torch.no_grad()
def predict_logits(model: nn.Module, x: torch.Tensor, chunk: int = 2048) -> torch.Tensor:
    """Logits (M, N, C) of every member on inputs x (N, ...), in eval mode."""
    was_training = model.training
    model.eval()
    out = torch.cat([model(x[i : i + chunk]) for i in range(0, x.shape[0], chunk)], dim=1)
    model.train(was_training)
    return out


def predict_probs(model: nn.Module, x: torch.Tensor, chunk: int = 2048) -> np.ndarray:
    """Softmax probabilities (M, N, C) as float64 numpy."""
    return torch.softmax(predict_logits(model, x, chunk).double(), dim=-1).cpu().numpy()


def member_accuracy(model: nn.Module, x: torch.Tensor, y: torch.Tensor) -> np.ndarray:
    """Accuracy of each member on (x, y), shape (M,)."""
    pred = predict_logits(model, x).argmax(-1)  # (M, N)
    return (pred == y[None]).double().mean(1).cpu().numpy()


def train_ensemble(
    model: nn.Module,
    x: torch.Tensor,
    y: torch.Tensor,
    settings: TrainSettings,
    shuffle_seeds: Sequence[int],
    progress: Callable | None = None,
    log: Callable[[dict], None] | None = None,
) -> dict:
    """Train every member of a batched ensemble on (x, y) with its own data order; returns the history.

    x (N, ...) and y (N,) live on the model's device. `progress(iterable, **kw)` wraps the epoch loop.
    """
    M = model.n_members
    if len(shuffle_seeds) != M:
        raise ValueError(f"need {M} shuffle seeds, got {len(shuffle_seeds)}")
    N = x.shape[0]
    gens = [np.random.default_rng(int(s)) for s in shuffle_seeds]
    params = [p for p in model.parameters() if p.requires_grad]
    epochs = range(settings.max_epochs)
    if progress is not None:
        epochs = progress(epochs, desc=f"train M={M}", unit="epoch")
    step, seen, seconds = 0, 0, 0.0
    acc = np.zeros(M)
    history = []
    model.train()
    for epoch in epochs:
        perms = torch.as_tensor(np.stack([g.permutation(N) for g in gens]), device=x.device)  # (M, N)
        start = time.perf_counter()
        for b in range(0, N, settings.batch_size):
            idx = perms[:, b : b + settings.batch_size]  # (M, B)
            logits = model(x[idx])  # (M, B, C)
            loss = F.cross_entropy(logits.flatten(0, 1), y[idx].flatten(), reduction="sum") / idx.shape[1]
            grads = torch.autograd.grad(loss, params)
            lr = settings.lr_at(step)
            with torch.no_grad():  # plain SGD θ <- θ - lr ∇θ: no momentum, no weight decay (torch.optim would
                for p, g in zip(params, grads, strict=True):  # import dynamo, seconds per process, for the same)
                    p.add_(g, alpha=-lr)
            step += 1
            seen += idx.numel()
            if settings.max_steps is not None and step >= settings.max_steps:
                break
        if x.device.type == "cuda":
            torch.cuda.synchronize()
        seconds += time.perf_counter() - start
        acc = member_accuracy(model, x, y)
        row = {"epoch": epoch + 1, "step": step, "loss": loss.item() / M, "min_train_acc": float(acc.min())}
        history.append(row)
        if log is not None:
            log(row)
        if settings.until_interpolation and acc.min() >= 1.0:
            break
        if settings.max_steps is not None and step >= settings.max_steps:
            break
    return {
        "epochs": len(history),
        "steps": step,
        "interpolated": bool(acc.min() >= 1.0),
        "train_acc": acc,
        "train_seconds": seconds,
        "member_samples_per_s": seen / seconds if seconds > 0 else 0.0,
        "history": history,
    }


def train_homogeneous(
    data,
    model: str,
    width: int,
    n_members: int,
    seed: int = 0,
    settings: TrainSettings | None = None,
    device: str = "cpu",
    identical: bool = False,
    progress: Callable | None = None,
    log: Callable[[dict], None] | None = None,
) -> tuple[np.ndarray, dict]:
    """Train a homogeneous M-ensemble on `data` (a `data.Dataset`); returns test probs (M, N, C) and info.

    Members differ only by init seed and data order (both from `member_seeds(seed, M)`); `identical` gives
    every member the same seeds, hence identical members (the negative control of spec §9.5).
    """
    from iclr25.ensemble_homogeneity.models import make_ensemble, member_seeds

    settings = settings or TrainSettings()
    init = member_seeds(seed, n_members, identical)
    shuffle = member_seeds(seed + 10_000, n_members, identical)
    net = make_ensemble(model, width, data.n_classes, n_members, data.input_shape, seeds=init).to(device)
    x = torch.as_tensor(data.x_train, device=device)
    y = torch.as_tensor(data.y_train, device=device)
    info = train_ensemble(net, x, y, settings, shuffle, progress=progress, log=log)
    probs = predict_probs(net, torch.as_tensor(data.x_test, device=device))
    info["n_params_per_member"] = sum(p.numel() for p in net.parameters()) // n_members
    return probs, info
