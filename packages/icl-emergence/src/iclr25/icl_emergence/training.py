"""AR-NTP pre-training (spec §3.1, §6a): the loss averages the next-token loss over every position of every
sequence; AdamW with linear warm-up and cosine decay; an SGLD variant logging gradient differences against a
prior objective for the Langevin KL (spec §3.2 item 4). Plain torch loops (a few ms per step on CPU).

Both loops scale out through a duck-typed Lightning Fabric (`fabric=`, see `iclr25.shared.fabric`): every process
draws the same global batch (the batch functions use the same seeded generator on every rank) and trains on its own
equal slice, so N processes with per-process batch B take the steps of one process with batch N·B. With
`checkpointer=`, the weights, the optimizer, the step, the data generator's state and the loss curve are saved every
`checkpointer.every` steps and at the end; `resume` ("auto" or a file) continues from one exactly. Without these
arguments they are the plain torch loops, step for step and bit for bit."""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Iterable
from contextlib import nullcontext
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


def _share(batch: Tensor, rank: int, world: int) -> Tensor:
    """This process's equal slice of a global batch."""
    if len(batch) % world:
        raise ValueError(f"batch {len(batch)} must be a multiple of the {world} processes")
    share = len(batch) // world
    return batch[rank * share : (rank + 1) * share] if world > 1 else batch


def _global_mean(fabric: Any, loss: Tensor) -> float:
    """The loss of the whole global batch: the mean of the processes' equal shares (the loss itself without Fabric)."""
    if fabric is None:
        return loss.item()
    from iclr25.shared.fabric import all_reduce_mean

    return all_reduce_mean(fabric, loss.detach())


class _Meter:
    """Logged rows under the shared names (loss, lr, throughput in sequences/s since the last row, epoch)."""

    def __init__(self, logger: Any, prefix: str, epoch_size: int | None) -> None:
        self.logger, self.prefix, self.epoch_size = logger, prefix, epoch_size
        self.time, self.seen = time.perf_counter(), 0

    def row(self, step: int, loss: float, lr: float, extra: dict[str, float]) -> None:
        from iclr25.shared.logging import training_row

        now = time.perf_counter()
        throughput = self.seen / (now - self.time) if now > self.time else None
        epoch = step * self.batch / self.epoch_size if self.epoch_size else None
        row = training_row(loss, lr=lr, throughput=throughput, epoch=epoch, prefix=self.prefix, **extra)
        self.time, self.seen = now, 0
        self.logger.log(row, step=step)

    def count(self, sequences: int) -> None:
        self.batch, self.seen = sequences, self.seen + sequences


def train_ar(
    model: nn.Module,
    next_batch: Callable[[int], Tensor],
    steps: int,
    *,
    lr: float = 1e-3,
    warmup: int = 100,
    weight_decay: float = 0.01,
    loop: Iterable[int] | None = None,
    on_log: Callable[[int, float], dict[str, float] | None] | None = None,
    log_every: int = 200,
    device: str = "cpu",
    logger: Any = None,
    prefix: str = "",
    epoch_size: int | None = None,
    history: list[dict[str, float]] | None = None,
    generator: torch.Generator | None = None,
    fabric: Any = None,
    checkpointer: Any = None,
    resume: str | None = None,
) -> list[float]:
    """AdamW on the AR-NTP loss for `steps` steps; `next_batch(step)` gives a (B, T, ...) global batch. Returns the
    per-step training losses (of the whole global batch).

    Every `log_every` steps and at the end, `on_log(step, loss)` may measure more (it returns a dict of extra
    metrics, or None); the row (step, loss and those metrics) is appended to `history` when given, and `logger`
    gets `training_row(loss, lr, throughput, epoch, prefix, **extra)` (throughput in sequences/s; epoch = sequences
    seen / `epoch_size` when given). `generator`: the one `next_batch` draws from; its state is checkpointed, so a
    resumed run sees the same batches. `fabric`, `checkpointer`, `resume`: see the module docstring (the global
    batch must be a multiple of the processes).
    """
    rank, world = (fabric.global_rank, fabric.world_size) if fabric is not None else (0, 1)
    model.to(device).train()
    opt = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=weight_decay)
    net = model
    if fabric is not None:
        net, opt = fabric.setup(model, opt)
        device = fabric.device
    losses: list[float] = []
    rows = history if history is not None else []
    state: dict[str, Any] = {"model": net, "optimizer": opt, "step": 0, "losses": losses, "history": list(rows)}
    if generator is not None:
        state["data_rng"] = generator.get_state()
    if checkpointer is not None:
        checkpointer.resume(resume, state, fabric)
        losses = state["losses"] = list(state["losses"])
        rows[:] = state["history"]
        if generator is not None:
            generator.set_state(state["data_rng"])
    first = int(state["step"])
    meter = _Meter(logger, prefix, epoch_size) if logger is not None else None
    for step in loop if loop is not None else range(steps):
        if step < first:
            continue
        step_lr = lr_at(step, steps, warmup, lr)
        for group in opt.param_groups:
            group["lr"] = step_lr
        batch = next_batch(step)
        loss = ar_loss(net, _share(batch, rank, world).to(device))
        opt.zero_grad(set_to_none=True)
        if fabric is not None:
            fabric.backward(loss)
        else:
            loss.backward()
        opt.step()
        value = _global_mean(fabric, loss)
        losses.append(value)
        if meter is not None:
            meter.count(len(batch))
        if (step + 1) % log_every == 0 or step + 1 == steps:
            extra = (on_log(step + 1, value) if on_log is not None else None) or {}
            rows.append({"step": step + 1, "loss": value, **extra})
            if meter is not None:
                meter.row(step + 1, value, step_lr, extra)
        if checkpointer is not None:
            state.update(step=step + 1, history=list(rows))
            if generator is not None:
                state["data_rng"] = generator.get_state()
            if checkpointer.maybe_save(state, fabric) is None and step + 1 == steps:
                checkpointer.save(state, fabric)  # the end, so a resumed run goes straight to evaluation
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
    logger: Any = None,
    prefix: str = "",
    log_every: int = 200,
    epoch_size: int | None = None,
    generator: torch.Generator | None = None,
    fabric: Any = None,
    checkpointer: Any = None,
    resume: str | None = None,
) -> dict[str, Any]:
    """SGLD theta <- theta - eta g + sqrt(2 eta / beta) xi on the AR-NTP loss, logging ||g - g^J||^2 with g^J the
    gradient of the prior objective (batches of the prior corpus) at the same theta (spec §3.2 item 4).

    `logger`, `prefix`, `log_every`, `epoch_size`, `generator` (the one both batch functions draw from), `fabric`,
    `checkpointer`, `resume`: as in `train_ar`. With a fabric, each process takes the gradients of its slices and
    the two gradients are averaged over the processes by hand (one all-reduce each: DDP's hooks do not see
    `autograd.grad`); the noise comes from the same seeded generator on every rank, so the weights stay equal."""
    model.to(device).train()
    net, rank, world = model, 0, 1
    if fabric is not None:
        net, rank, world = fabric.setup_module(model), fabric.global_rank, fabric.world_size
        device = fabric.device
    gen = torch.Generator(device="cpu").manual_seed(seed)
    params = [p for p in model.parameters() if p.requires_grad]
    diffs: list[float] = []
    etas: list[float] = []
    losses: list[float] = []
    state: dict[str, Any] = {"model": net, "step": 0, "diffs": diffs, "etas": etas, "losses": losses}
    state["noise_rng"] = gen.get_state()
    if generator is not None:
        state["data_rng"] = generator.get_state()
    if checkpointer is not None:
        checkpointer.resume(resume, state, fabric)
        diffs, etas, losses = (list(state[k]) for k in ("diffs", "etas", "losses"))
        state.update(diffs=diffs, etas=etas, losses=losses)
        gen.set_state(state["noise_rng"])
        if generator is not None:
            generator.set_state(state["data_rng"])
    meter = _Meter(logger, prefix, epoch_size) if logger is not None else None

    def grad(batch: Tensor) -> tuple[Tensor, Tensor]:
        loss = ar_loss(net, _share(batch, rank, world).to(device))
        g = _flat_grad(model, loss)
        return loss, (g if fabric is None else fabric.all_reduce(g, reduce_op="mean"))

    for step in range(int(state["step"]), steps):
        # DDP's reducer stays idle (its hooks do not see autograd.grad): the gradients are averaged above
        with fabric.no_backward_sync(net) if fabric is not None else nullcontext():
            batch = next_batch(step)
            loss, g = grad(batch)
            _, g_prior = grad(next_prior_batch(step))
        diffs.append(float(((g - g_prior) ** 2).sum()))
        etas.append(lr)
        losses.append(_global_mean(fabric, loss))
        with torch.no_grad():
            offset = 0
            for p in params:
                n = p.numel()
                noise = torch.randn(p.shape, generator=gen).to(device)
                p.add_(-lr * g[offset : offset + n].view_as(p) + math.sqrt(2 * lr / beta) * noise)
                offset += n
        if meter is not None:
            meter.count(len(batch))
            if (step + 1) % log_every == 0 or step + 1 == steps:
                meter.row(step + 1, losses[-1], lr, {"grad_diff_sq": diffs[-1]})
        if checkpointer is not None:
            state.update(step=step + 1, noise_rng=gen.get_state())
            if generator is not None:
                state["data_rng"] = generator.get_state()
            if checkpointer.maybe_save(state, fabric) is None and step + 1 == steps:
                checkpointer.save(state, fabric)
    model.eval()
    return {"grad_diff_sq": diffs, "step_sizes": etas, "losses": losses}
