"""A small training loop for the Highway-BP experiments (Fagnou et al., ICLR 2025, arXiv 2501.17086, §5).

Plain PyTorch (no Lightning): the backward pass is custom, the models are tiny and the per-step Lightning
overhead would dominate on CPU. Each step: `zero_grad`, the chosen backward (BP/BPTT, Highway-BP(k), FPI(k)),
`optimizer.step()`. Step times are measured with `iclr25.shared.device.Throughput`.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
import torch
from torch import Tensor, nn

from iclr25.highway_bp.highway import HighwayStack, highway_step
from iclr25.highway_bp.models import SeqClassifier


@dataclass
class TrainResult:
    """Outcome of one training run."""

    test_acc: float
    train_loss: list[float] = field(default_factory=list)  # mean loss per epoch
    steps: int = 0
    step_time_s: float = 0.0  # mean wall time of one training step (forward + backward + update)


def make_step_fn(model: nn.Module, algo: str, k: int) -> Callable[[Tensor, Tensor], Tensor]:
    """The forward + backward of one batch for a `HighwayStack` (bp/hbp/fpi) or a `SeqClassifier` (bptt/hbp/fpi)."""
    if isinstance(model, HighwayStack):
        algo = "bp" if algo == "bptt" else algo
        return lambda x, y: highway_step(model, nn.functional.cross_entropy, x, y, k, algo=algo)
    if isinstance(model, SeqClassifier):
        algo = "bptt" if algo == "bp" else algo
        return lambda x, y: model.step(x, y, k=k, algo=algo)
    raise ValueError(f"model must be a HighwayStack or a SeqClassifier, got {type(model).__name__}")


@torch.no_grad()
def accuracy(model: nn.Module, X: Tensor, y: Tensor, batch: int = 512) -> float:
    """Classification accuracy of `model` on (X, y)."""
    model.eval()
    correct = 0
    for i in range(0, len(y), batch):
        correct += int((model(X[i : i + batch]).argmax(-1) == y[i : i + batch]).sum())
    model.train()
    return correct / len(y)


def lr_factor(step: int, total: int, warmup: int, schedule: str) -> float:
    """Learning-rate multiplier: constant, step (÷10 at 50% and 75%: ResNets, Table 4), or warmup + cosine to 0.1×."""
    if schedule == "constant":
        return 1.0
    if schedule == "step":  # "lr ÷10 twice" (Table 4); the epochs are not given, 50% / 75% is the CIFAR convention
        return 0.1 ** ((step >= total // 2) + (step >= (3 * total) // 4))
    if schedule != "cosine":
        raise ValueError(f"schedule must be 'constant', 'step' or 'cosine', got {schedule!r}")
    if warmup and step < warmup:
        return (step + 1) / warmup
    progress = (step - warmup) / max(1, total - warmup)
    return 0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * min(1.0, progress)))


def train_classifier(
    model: nn.Module,
    data: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray],
    *,
    algo: str,
    k: int,
    epochs: int,
    batch_size: int,
    lr: float,
    seed: int,
    device: str = "cpu",
    schedule: str = "constant",
    warmup: int = 0,
    clip: float | None = None,
    max_steps: int = 0,
    log: Callable[[dict], None] | None = None,
    optimizer: str = "adam",
    momentum: float = 0.9,
    weight_decay: float = 0.0,
    augment: Callable[[Tensor, torch.Generator], Tensor] | None = None,
    desc: str = "train",
) -> TrainResult:
    """Train with Adam (or SGD) and the chosen backward; return test accuracy and timings (`max_steps` > 0 caps steps).

    Progress (`desc`, in steps) shows on a terminal, as a line every ~30 s in logs, not at all when quiet."""
    from iclr25.shared.device import Throughput
    from iclr25.shared.progress import progress

    if epochs < 1 or batch_size < 1 or lr <= 0:
        raise ValueError(f"epochs and batch_size must be >= 1 and lr > 0; got {epochs}, {batch_size}, {lr}")
    Xtr, ytr, Xte, yte = (torch.as_tensor(a).to(device) for a in data)
    model.to(device).train()
    if optimizer == "adam":
        opt = torch.optim.Adam(model.parameters(), lr=lr, weight_decay=weight_decay)
    elif optimizer == "sgd":  # ResNets (Table 4): SGD, momentum 0.9, weight decay 1e-4
        opt = torch.optim.SGD(model.parameters(), lr=lr, momentum=momentum, weight_decay=weight_decay)
    else:
        raise ValueError(f"optimizer must be 'adam' or 'sgd', got {optimizer!r}")
    step_fn = make_step_fn(model, algo, k)
    gen = torch.Generator().manual_seed(seed)
    n = len(ytr)
    per_epoch = math.ceil(n / batch_size)
    total = epochs * per_epoch if max_steps <= 0 else min(max_steps, epochs * per_epoch)
    meter = Throughput(device=device)
    result = TrainResult(test_acc=0.0)
    step = 0
    bar = progress(total=total, desc=desc, unit="step")
    for epoch in range(epochs):
        perm = torch.randperm(n, generator=gen).to(device)
        losses = []
        for i in range(0, n, batch_size):
            if step >= total:
                break
            idx = perm[i : i + batch_size]
            for group in opt.param_groups:
                group["lr"] = lr * lr_factor(step, total, warmup, schedule)
            with meter.measure(1):
                opt.zero_grad(set_to_none=True)
                xb = Xtr[idx] if augment is None else augment(Xtr[idx], gen)
                loss = step_fn(xb, ytr[idx])
                if clip:
                    nn.utils.clip_grad_norm_(model.parameters(), clip)
                opt.step()
            losses.append(float(loss))
            step += 1
            bar.update()
        if not losses:
            break
        result.train_loss.append(float(np.mean(losses)))
        if log is not None:
            log({"epoch": epoch, "train_loss": result.train_loss[-1]})
    bar.close()
    result.steps = step
    result.step_time_s = meter.seconds / max(1, meter.items)
    result.test_acc = accuracy(model, Xte, yte)
    return result
