"""A small training loop for the Highway-BP experiments (Fagnou et al., ICLR 2025, arXiv 2501.17086, §5).

Plain PyTorch: the backward pass is custom, so the model is not wrapped in DDP. Each step: `zero_grad`, the chosen
backward (BP/BPTT, Highway-BP(k), FPI(k)), `optimizer.step()`. Step times are measured with
`iclr25.shared.device.Throughput`. With a Lightning Fabric of several processes (`--devices`), the batch norms
normalise with the statistics of the whole global batch (`iclr25.shared.global_batch`, a differentiable all-reduce
of per-channel sums), each process runs the backward of its share's part of the batch's mean loss (the share's
summed loss / the batch size) and one all-reduce per step sums the gradients and losses: one process on the whole
batch, for every model. With global batch norm, a process's backward already holds the other shares' terms that
reach its rows through the statistics (the all-reduce's backward sums every process's cotangents), so the share
losses must be scaled by the whole batch before the backward, not weighted after it.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

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

    def summary(self) -> dict[str, float]:
        """The run's plain metrics: test accuracy, ms per training step and the last epoch's mean training loss."""
        return {"acc": self.test_acc, "step_ms": 1000 * self.step_time_s, "final_loss": self.train_loss[-1]}


def make_step_fn(model: nn.Module, algo: str, k: int) -> Callable[..., Tensor]:
    """The forward + backward `step(x, y, loss=cross_entropy)` of one batch for a `HighwayStack` (bp/hbp/fpi) or a
    `SeqClassifier` (bptt/hbp/fpi); `loss(logits, targets)` is the scalar that is differentiated and returned."""
    ce = nn.functional.cross_entropy
    if isinstance(model, HighwayStack):
        algo = "bp" if algo == "bptt" else algo
        return lambda x, y, loss=ce: highway_step(model, loss, x, y, k, algo=algo)
    if isinstance(model, SeqClassifier):
        algo = "bptt" if algo == "bp" else algo
        return lambda x, y, loss=ce: model.step(x, y, k=k, algo=algo, loss=loss)
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
    fabric: Any = None,
    checkpointer: Any = None,
    resume: str | None = None,
) -> TrainResult:
    """Train with Adam (or SGD) and the chosen backward; return test accuracy and timings (`max_steps` > 0 caps steps).

    With `fabric` (several processes), the model's batch norms become global ones (in place), every process draws
    the same batches and trains on its share (gradients summed, see the module docstring). With `checkpointer`, the
    model, the optimiser, the step, the position in the epoch, the permutation, the generator and the loss curve are
    saved every `checkpointer.every` steps and at the end; `resume` ("auto" or a checkpoint file) continues from one
    with the same result as an uninterrupted run. Progress (`desc`, in steps) shows on a terminal, as a line every
    ~30 s in logs, not at all when quiet."""
    from iclr25.shared.device import Throughput
    from iclr25.shared.global_batch import to_global_batch_norm
    from iclr25.shared.progress import progress

    if epochs < 1 or batch_size < 1 or lr <= 0:
        raise ValueError(f"epochs and batch_size must be >= 1 and lr > 0; got {epochs}, {batch_size}, {lr}")
    rank, world = (fabric.global_rank, fabric.world_size) if fabric is not None else (0, 1)
    if batch_size % world:
        raise ValueError(f"batch_size {batch_size} must be a multiple of the {world} processes")
    if fabric is not None:
        device = fabric.device
    Xtr, ytr, Xte, yte = (torch.as_tensor(a).to(device) for a in data)
    model.to(device).train()
    if fabric is not None:
        to_global_batch_norm(model)
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
    state: dict[str, Any] = {"model": model, "optimizer": opt, "step": 0, "epoch": 0, "pos": 0, "losses": []}
    state.update(train_loss=[], perm=torch.zeros(0, dtype=torch.long), gen=gen.get_state())
    if checkpointer is not None:
        checkpointer.resume(resume, state, fabric)
        gen.set_state(state["gen"])
    step, first_epoch, first_pos = int(state["step"]), int(state["epoch"]), int(state["pos"])
    result.train_loss = list(state["train_loss"])
    bar = progress(total=total, desc=desc, unit="step")
    if step:
        bar.update(step)
    for epoch in range(first_epoch, epochs):
        if epoch == first_epoch and first_pos > 0:  # resumed in the middle of this epoch
            perm, losses, start = state["perm"].to(device), list(state["losses"]), first_pos
        else:
            perm, losses, start = torch.randperm(n, generator=gen).to(device), [], 0
        for i in range(start, n, batch_size):
            if step >= total:
                break
            idx = perm[i : i + batch_size]
            for group in opt.param_groups:
                group["lr"] = lr * lr_factor(step, total, warmup, schedule)
            with meter.measure(1):
                opt.zero_grad(set_to_none=True)
                xb = Xtr[idx] if augment is None else augment(Xtr[idx], gen)
                if fabric is None:
                    loss = step_fn(xb, ytr[idx])
                else:
                    loss = _shared_step(fabric, model, step_fn, xb, ytr[idx], rank, world)
                if clip:
                    nn.utils.clip_grad_norm_(model.parameters(), clip)
                opt.step()
            losses.append(float(loss))
            step += 1
            bar.update()
            if checkpointer is not None:
                state.update(step=step, epoch=epoch, pos=i + batch_size, losses=losses, perm=perm.cpu())
                state.update(train_loss=result.train_loss, gen=gen.get_state())
                if checkpointer.maybe_save(state, fabric) is None and step == total:
                    checkpointer.save(state, fabric)  # the end, so a resumed run goes straight to the test
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


def _shared_step(
    fabric: Any,
    model: nn.Module,
    step_fn: Callable[..., Tensor],
    x: Tensor,
    y: Tensor,
    rank: int,
    world: int,
) -> Tensor:
    """This process's backward of its share's summed loss / the batch size, then the batch's gradient and mean loss
    on every process: their sums over processes (one all-reduce of all gradients and the loss)."""
    from iclr25.shared.global_batch import batch_share

    size = len(y)

    def share_loss(logits: Tensor, targets: Tensor) -> Tensor:  # this share's part of the batch's mean loss
        return nn.functional.cross_entropy(logits, targets, reduction="sum") / size

    lo, hi = batch_share(size, rank, world)
    # an empty share (a last batch smaller than the number of processes) still runs: every process must issue the
    # collectives of its batch norms, in the same order
    loss = step_fn(x[lo:hi], y[lo:hi], share_loss).detach()
    params = [p for p in model.parameters() if p.requires_grad]
    grads = [p.grad if p.grad is not None else torch.zeros_like(p) for p in params]
    flat = torch.cat([g.reshape(-1) for g in grads] + [loss.reshape(1).to(grads[0].dtype)])
    flat = fabric.all_reduce(flat, reduce_op="sum")
    offset = 0
    for p, g in zip(params, grads, strict=True):
        p.grad = flat[offset : offset + g.numel()].view_as(g).clone()
        offset += g.numel()
    return flat[-1]
