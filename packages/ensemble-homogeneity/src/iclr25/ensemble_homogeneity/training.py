"""Training a batched homogeneous ensemble: plain SGD, no momentum, no weight decay, no augmentation (spec §3.6, §6a).

Each member draws its own permutation of the training set every epoch (independent shuffles), and all
members step together: the loss is the sum over members of each member's mean cross-entropy, so the
gradients of different members never mix. Training stops once *every* member fits the training set
(checked once per epoch, spec §6a: "interpolation ≈ collapse") or after `max_epochs` / `max_steps`.

Scale-out (`iclr25.shared.fabric`, passed in duck-typed): with a `fabric`, every process draws the same member
permutations and trains on its slice of each member's batch, so two processes with the batch split equal one with
the whole batch (batch norms become `iclr25.shared.global_batch.GlobalBatchNorm2d`: statistics of the whole batch, as
SyncBatchNorm); with a `checkpointer`, the model, the step, the position in the epoch and the members' data-order generators are
saved every `checkpointer.every` steps and at the end, and `resume` continues exactly. `train_homogeneous(...,
workers=n)` trains the members in `n` processes instead (chunks of members, each its own batched model), with the
members of the one-process run.
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
from torch import nn
from torch.nn import functional as F

from iclr25.shared.global_batch import to_global_batch_norm

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
    """Logits (M, N, C) of every member on inputs x (N, ...), in eval mode (inputs cast to the weights' dtype)."""
    was_training = model.training
    model.eval()
    x = x.to(next(model.parameters()).dtype)  # the same tensor unless a precision setting changed the weights
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


def _finished(state: dict[str, Any], settings: TrainSettings, min_epochs: int) -> bool:
    """Whether training stops at `state`: max_epochs, max_steps, or every member fits (at an epoch's end)."""
    if state["epoch"] >= settings.max_epochs:
        return True
    if state["batch"]:  # inside an epoch: finish it first
        return False
    if settings.max_steps is not None and state["step"] >= settings.max_steps:
        return True
    fits = state["epoch"] > 0 and bool(state["acc"].min() >= 1.0)
    return settings.until_interpolation and fits and state["epoch"] >= min_epochs


def _epoch_accuracy(model: nn.Module, x: torch.Tensor, y: torch.Tensor, fabric: Any) -> np.ndarray:
    """`member_accuracy` on the whole training set; with a fabric, each process scores its share of the points and
    the counts are summed (exact: whole numbers)."""
    if fabric is None:
        return member_accuracy(model, x, y)
    rows = torch.tensor_split(torch.arange(x.shape[0], device=x.device), fabric.world_size)[fabric.global_rank]
    correct = (predict_logits(model, x[rows]).argmax(-1) == y[rows][None]).double().sum(1)
    total = fabric.all_reduce(correct, reduce_op="sum") if fabric.world_size > 1 else correct
    return (total / x.shape[0]).cpu().numpy()


def train_ensemble(
    model: nn.Module,
    x: torch.Tensor,
    y: torch.Tensor,
    settings: TrainSettings,
    shuffle_seeds: Sequence[int],
    progress: Callable | None = None,
    logger: Any = None,
    prefix: str = "",
    *,
    fabric: Any = None,
    checkpointer: Any = None,
    resume: str | None = None,
    start: dict[str, Any] | None = None,
    min_epochs: int = 0,
) -> dict:
    """Train every member of a batched ensemble on (x, y) with its own data order; returns the history.

    x (N, ...) and y (N,) live on the model's device. `progress(iterable, **kw)` wraps the epoch loop; `logger`
    (`.log(row, step)`) gets the shared training metrics (loss, lr, throughput, epoch, min_train_acc) behind
    `prefix` at every epoch's end.

    Scale-out: with `fabric` (several processes), the members' batches are split over the processes and the loss is
    scaled so that the averaged gradients are those of the whole batch (torch.optim.SGD without momentum through
    Fabric, which applies `--precision`; batch norms use the global batch's statistics); without it, the update is
    written out (θ ← θ − lr ∇θ). With `checkpointer`, the state (model, step, epoch, position in the epoch, the
    generators' state at the epoch's start) is saved every `checkpointer.every` steps and at the end; `resume`
    ("auto" or a file) continues from one exactly. `start` (the returned `info["state"]`) continues in memory, and
    `min_epochs` trains on past an earlier interpolation to that epoch (the member workers of `train_homogeneous`).
    """
    from iclr25.shared.logging import training_row

    M = model.n_members
    if len(shuffle_seeds) != M:
        raise ValueError(f"need {M} shuffle seeds, got {len(shuffle_seeds)}")
    N = x.shape[0]
    rank, world = (fabric.global_rank, fabric.world_size) if fabric is not None else (0, 1)
    if settings.batch_size % world:
        raise ValueError(f"batch_size {settings.batch_size} must be a multiple of the {world} processes")
    gens = [np.random.default_rng(int(s)) for s in shuffle_seeds]
    net, optimizer = model, None
    if fabric is not None:
        if world > 1:
            to_global_batch_norm(model)
        optimizer = torch.optim.SGD(model.parameters(), lr=settings.lr)
        net, optimizer = fabric.setup(model, optimizer)
    params = [p for p in model.parameters() if p.requires_grad]
    state: dict[str, Any] = {
        "model": model,
        "step": 0,
        "epoch": 0,
        "batch": 0,
        "seen": 0,
        "seconds": 0.0,
        "loss": 0.0,
        "acc": torch.zeros(M, dtype=torch.float64),
        "history": "[]",
        "data_rng": json.dumps([g.bit_generator.state for g in gens]),
    }
    if start is not None:
        model.load_state_dict(start["model"])
        state.update({k: v for k, v in start.items() if k != "model"})
    if checkpointer is not None:
        checkpointer.resume(resume, state, fabric)
    for g, saved in zip(gens, json.loads(state["data_rng"]), strict=True):
        g.bit_generator.state = saved
    history = json.loads(state["history"])
    model.train()
    if not _finished(state, settings, min_epochs):
        epochs = range(state["epoch"], settings.max_epochs)
        if progress is not None:
            epochs = progress(epochs, desc=f"train M={M}", unit="epoch")
        for epoch in epochs:
            epoch_rng = json.dumps([g.bit_generator.state for g in gens])
            perms = torch.as_tensor(np.stack([g.permutation(N) for g in gens]), device=x.device)  # (M, N)
            start_time, seen0 = time.perf_counter(), state["seen"]
            for b in range(state["batch"], N, settings.batch_size):
                if settings.max_steps is not None and state["step"] >= settings.max_steps:
                    break
                idx = perms[:, b : b + settings.batch_size]  # (M, B)
                lr = settings.lr_at(state["step"])
                if fabric is None:
                    logits = model(x[idx])  # (M, B, C)
                    loss = F.cross_entropy(logits.flatten(0, 1), y[idx].flatten(), reduction="sum") / idx.shape[1]
                    grads = torch.autograd.grad(loss, params)
                    with torch.no_grad():  # plain SGD θ <- θ - lr ∇θ: no momentum, no weight decay (torch.optim
                        for p, g in zip(params, grads, strict=True):  # imports dynamo, seconds per process)
                            p.add_(g, alpha=-lr)
                    state["loss"] = loss.item() / M
                else:
                    mine = torch.tensor_split(idx, world, dim=1)[rank]  # this process's share of every batch
                    logits = net(x[mine])
                    ce = F.cross_entropy(logits.flatten(0, 1), y[mine].flatten(), reduction="sum")
                    loss = ce * world / idx.shape[1]  # the processes' mean gradient is the whole batch's
                    optimizer.zero_grad(set_to_none=True)
                    fabric.backward(loss)
                    for group in optimizer.param_groups:
                        group["lr"] = lr
                    optimizer.step()
                    total = fabric.all_reduce(loss.detach(), reduce_op="mean") if world > 1 else loss.detach()
                    state["loss"] = float(total) / M
                state["step"] += 1
                state["seen"] += idx.numel()
                state["batch"], state["data_rng"] = b + settings.batch_size, epoch_rng
                if checkpointer is not None:
                    checkpointer.maybe_save(state, fabric)
            if x.device.type == "cuda":
                torch.cuda.synchronize()
            seconds = time.perf_counter() - start_time
            state["seconds"] += seconds
            acc = _epoch_accuracy(model, x, y, fabric)
            row = {"epoch": epoch + 1, "step": state["step"], "loss": state["loss"], "min_train_acc": float(acc.min())}
            history.append(row)
            state.update(epoch=epoch + 1, batch=0, acc=torch.from_numpy(acc), history=json.dumps(history))
            state["data_rng"] = json.dumps([g.bit_generator.state for g in gens])
            if logger is not None:
                speed = (state["seen"] - seen0) / seconds if seconds > 0 else 0.0
                lr = settings.lr_at(max(state["step"] - 1, 0))
                extra = {"min_train_acc": row["min_train_acc"]}
                log = training_row(row["loss"], lr=lr, throughput=speed, epoch=epoch + 1, prefix=prefix, **extra)
                logger.log(log, step=state["step"])
            if _finished(state, settings, min_epochs):
                break
        if checkpointer is not None:
            checkpointer.save(state, fabric)  # the end: a resumed run goes straight on to evaluation
    acc = state["acc"].numpy()
    seconds = state["seconds"]
    return {
        "epochs": len(history),
        "steps": state["step"],
        "interpolated": bool(acc.min() >= 1.0),
        "train_acc": acc,
        "train_seconds": seconds,
        "member_samples_per_s": state["seen"] / seconds if seconds > 0 else 0.0,
        "history": history,
        "state": {k: (v.state_dict() if k == "model" else v) for k, v in state.items()},
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
    logger: Any = None,
    prefix: str = "",
    *,
    workers: int = 1,
    threads: int = 1,
    fabric: Any = None,
    checkpointer: Any = None,
    resume: str | None = None,
) -> tuple[np.ndarray, dict]:
    """Train a homogeneous M-ensemble on `data` (a `data.Dataset`); returns test probs (M, N, C) and info.

    Members differ only by init seed and data order (both from `member_seeds(seed, M)`); `identical` gives
    every member the same seeds, hence identical members (the negative control of spec §9.5).

    `workers` > 1 trains the members in that many spawned processes (`threads` torch threads each), in chunks of
    members, each chunk a batched model of its own: a member's training depends on its seeds alone, and the chunks
    meet at epoch ends until all of them stop at the same epoch (the first at which every member fits), so the
    members equal those of the one-process run (bit for bit for MLPs; for CNNs up to float rounding, as grouped
    convolutions with another number of groups round differently). `fabric`/`checkpointer`/`resume`: see
    `train_ensemble` (one process per chunk is the other way; the two are not combined).
    """
    if workers > 1 and n_members > 1:
        if fabric is not None or checkpointer is not None:
            raise ValueError("workers > 1 trains members in separate processes; with --devices/checkpoints use 1")
        probs, info = _train_in_workers(
            data, model, width, n_members, seed, settings, device, identical, workers, threads
        )
        if logger is not None:  # the members' epochs, once all chunks are done
            from iclr25.shared.logging import training_row

            for row in info["history"]:
                extra = {"min_train_acc": row["min_train_acc"]}
                log = training_row(row["loss"], epoch=row["epoch"], prefix=prefix, **extra)
                logger.log(log, step=row["step"])
        return probs, info
    from iclr25.ensemble_homogeneity.models import make_ensemble, member_seeds

    settings = settings or TrainSettings()
    init = member_seeds(seed, n_members, identical)
    shuffle = member_seeds(seed + 10_000, n_members, identical)
    dev = fabric.device if fabric is not None else device
    net = make_ensemble(model, width, data.n_classes, n_members, data.input_shape, seeds=init).to(dev)
    x = torch.as_tensor(data.x_train, device=dev)
    y = torch.as_tensor(data.y_train, device=dev)
    scale = {"fabric": fabric, "checkpointer": checkpointer, "resume": resume}
    info = train_ensemble(net, x, y, settings, shuffle, progress=progress, logger=logger, prefix=prefix, **scale)
    info.pop("state")
    probs = predict_probs(net, torch.as_tensor(data.x_test, device=dev))
    info["n_params_per_member"] = sum(p.numel() for p in net.parameters()) // n_members
    return probs, info


def _train_chunk(task: dict[str, Any]) -> dict[str, Any]:
    """One chunk of members (a worker's part of `train_homogeneous`): continue `task["state"]` (or start) until it
    stops at an epoch >= `task["min_epochs"]`; returns its state, info and test probabilities."""
    from iclr25.ensemble_homogeneity.models import make_ensemble

    data, device = task["data"], task["device"]
    net = make_ensemble(
        task["model"], task["width"], data.n_classes, len(task["init"]), data.input_shape, seeds=task["init"]
    ).to(device)
    x = torch.as_tensor(data.x_train, device=device)
    y = torch.as_tensor(data.y_train, device=device)
    info = train_ensemble(
        net, x, y, task["settings"], task["shuffle"], start=task["state"], min_epochs=task["min_epochs"]
    )
    info["state"]["model"] = {k: v.cpu() for k, v in info["state"]["model"].items()}
    info["probs"] = predict_probs(net, torch.as_tensor(data.x_test, device=device))
    info["n_params"] = sum(p.numel() for p in net.parameters())
    return info


def _train_in_workers(data, model, width, n_members, seed, settings, device, identical, workers, threads):
    """`train_homogeneous` with the members in `workers` chunks trained in spawned processes (rounds: every chunk
    trains until its members all fit at an epoch >= the latest stop of any chunk, until all stop at one epoch)."""
    from iclr25.ensemble_homogeneity.models import member_seeds
    from iclr25.shared.parallel import map_in_processes

    settings = settings or TrainSettings()
    init = member_seeds(seed, n_members, identical)
    shuffle = member_seeds(seed + 10_000, n_members, identical)
    chunks = [list(c) for c in np.array_split(np.arange(n_members), min(workers, n_members))]
    base = {"data": data, "model": model, "width": width, "settings": settings, "device": device}
    tasks = [{**base, "init": [init[i] for i in c], "shuffle": [shuffle[i] for i in c], "state": None} for c in chunks]
    target = 0
    while True:
        parts = map_in_processes(
            _train_chunk, [{**t, "min_epochs": target} for t in tasks], workers, threads=threads, desc="member chunks"
        )
        stops = [p["state"]["epoch"] for p in parts]
        for t, p in zip(tasks, parts, strict=True):
            t["state"] = p["state"]
        if len(set(stops)) == 1:
            break
        target = max(stops)
    seconds = sum(p["train_seconds"] for p in parts)
    seen = sum(p["state"]["seen"] for p in parts)
    history = [
        {**rows[0], "loss": sum(r["loss"] * len(c) for r, c in zip(rows, chunks, strict=True)) / n_members}
        | {"min_train_acc": min(r["min_train_acc"] for r in rows)}
        for rows in zip(*(p["history"] for p in parts), strict=True)
    ]
    acc = np.concatenate([p["train_acc"] for p in parts])
    info = {
        "epochs": len(history),
        "steps": parts[0]["steps"],
        "interpolated": bool(acc.min() >= 1.0),
        "train_acc": acc,
        "train_seconds": seconds,
        "member_samples_per_s": seen / seconds if seconds > 0 else 0.0,
        "history": history,
        "n_params_per_member": sum(p["n_params"] for p in parts) // n_members,
    }
    return np.concatenate([p["probs"] for p in parts]), info
