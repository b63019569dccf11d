"""Training loop for the classifiers HD-Explain explains (official models/trainers.py: Adam + cross-entropy).

A plain custom loop (the networks are small; the method itself needs no training): Adam, shuffled
mini-batches from a seeded generator, optional random-crop + horizontal-flip augmentation for images.

Scale-out (`iclr25.shared.fabric`, passed in duck-typed): with a `fabric`, every process draws the same
permutation and augmentation and trains on its slice of each batch, so two processes with the batch split equal one
with the whole batch (batch norms become `iclr25.shared.global_batch.GlobalBatchNorm2d`: the statistics of the whole
batch, as SyncBatchNorm); with a `checkpointer`, model, optimizer, step, position in the epoch, the epoch's permutation and
the generator are saved every `checkpointer.every` steps and at the end, and `resume` continues exactly.

`train_new_classifier` builds a fresh MLP or ResNet-18 under a seed and trains it; `save_model` / `load_model` write
and read the model file (architecture dict and weights; read weights only).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F

from iclr25.hd_explain.models import MLP, ResNet18, build_model
from iclr25.shared.global_batch import to_global_batch_norm

MODEL_FILE = "checkpoint written by `iclr25-hd-explain train`"


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
    logger: Any = None,
    prefix: str = "",
    *,
    fabric: Any = None,
    checkpointer: Any = None,
    resume: str | None = None,
) -> dict[str, float]:
    """Train `model` in place with Adam on cross-entropy; returns train accuracy, loss and samples/s.

    `logger` (`.log(row, step)`) gets the shared training metrics (loss, lr, throughput, epoch) behind `prefix` at
    every epoch's end. With `fabric` (several processes), each process trains on its slice of every batch (the
    loss scaled so that the averaged gradients are the whole batch's; Fabric applies `--precision`); with
    `checkpointer`, the state is saved every `checkpointer.every` steps and at the end, and `resume` ("auto" or a
    file) continues from one exactly.
    """
    from iclr25.shared.logging import training_row

    if epochs < 0 or batch_size < 1 or not lr > 0:
        raise ValueError(f"need epochs >= 0, batch_size >= 1, lr > 0; got {epochs}, {batch_size}, {lr}")
    rank, world = (fabric.global_rank, fabric.world_size) if fabric is not None else (0, 1)
    if batch_size % world:
        raise ValueError(f"batch_size {batch_size} must be a multiple of the {world} processes")
    X = torch.as_tensor(np.asarray(X, dtype=np.float32))
    y = torch.as_tensor(np.asarray(y, dtype=np.int64))
    if fabric is not None:
        device = fabric.device
    model.to(device).train()
    opt = torch.optim.Adam(model.parameters(), lr=lr, weight_decay=weight_decay)
    net = model
    if fabric is not None:
        if world > 1:
            to_global_batch_norm(model)
        net, opt = fabric.setup(model, opt)
    gen = torch.Generator().manual_seed(int(seed))
    start, seen, loss = time.perf_counter(), 0, torch.tensor(float("nan"))
    state: dict[str, Any] = {"model": model, "optimizer": opt, "step": 0, "epoch": 0, "batch": 0, "seen": 0}
    state.update(loss=float("nan"), gen=gen.get_state(), perm=torch.empty(0, dtype=torch.long))
    if checkpointer is not None:
        checkpointer.resume(resume, state, fabric)
        gen.set_state(state["gen"])
        seen, loss = state["seen"], torch.tensor(state["loss"])
    epoch_iter = range(state["epoch"], epochs)
    epoch_iter = epoch_iter if progress is None else progress(epoch_iter)
    for epoch in epoch_iter:
        t_epoch, seen_epoch = time.perf_counter(), seen
        perm = state["perm"] if state["batch"] else torch.randperm(X.shape[0], generator=gen)
        for i in range(state["batch"], X.shape[0], batch_size):
            idx = perm[i : i + batch_size]
            xb, yb = X[idx].to(device), y[idx].to(device)
            if augment:
                xb = _augment(xb, gen)
            if fabric is None:
                loss = F.cross_entropy(model(xb), yb)
                opt.zero_grad(set_to_none=True)
                loss.backward()
            else:
                mine = torch.tensor_split(torch.arange(len(idx)), world)[rank]  # this process's share
                part = F.cross_entropy(net(xb[mine]), yb[mine], reduction="sum") * world / len(idx)
                opt.zero_grad(set_to_none=True)
                fabric.backward(part)
                loss = fabric.all_reduce(part.detach(), reduce_op="mean") if world > 1 else part.detach()
            opt.step()
            seen += len(idx)
            if checkpointer is not None:
                state.update(step=state["step"] + 1, batch=i + batch_size, seen=seen, loss=float(loss.detach()))
                state.update(gen=gen.get_state(), perm=perm)
                checkpointer.maybe_save(state, fabric)
        state.update(epoch=epoch + 1, batch=0)
        if logger is not None:
            speed = (seen - seen_epoch) / max(time.perf_counter() - t_epoch, 1e-9)
            row = training_row(float(loss.detach()), lr=lr, throughput=speed, epoch=epoch + 1, prefix=prefix)
            logger.log(row, step=(epoch + 1) * -(-X.shape[0] // batch_size))
    if checkpointer is not None:
        state.update(gen=gen.get_state(), perm=torch.empty(0, dtype=torch.long))
        checkpointer.save(state, fabric)  # the end: a resumed run goes straight on to the explanations
    elapsed = max(time.perf_counter() - start, 1e-9)
    model.eval()
    with torch.no_grad():
        correct = 0
        if fabric is None:
            for i in range(0, X.shape[0], 1024):
                correct += int((model(X[i : i + 1024].to(device)).argmax(1).cpu() == y[i : i + 1024]).sum())
        else:  # each process scores its share of the points; the counts are summed
            dtype = next(model.parameters()).dtype
            rows = torch.tensor_split(torch.arange(X.shape[0]), world)[rank]
            for i in range(0, len(rows), 1024):
                part = rows[i : i + 1024]
                correct += int((model(X[part].to(device, dtype)).argmax(1).cpu() == y[part]).sum())
            if world > 1:
                correct = int(fabric.all_reduce(torch.tensor(float(correct), device=device), reduce_op="sum"))
    return {
        "train_acc": correct / max(X.shape[0], 1),
        "final_loss": float(loss.detach()),
        "train_samples_per_s": seen / elapsed,
    }


def train_new_classifier(
    kind: str,
    X: Any,
    y: Any,
    n_classes: int,
    seed: int = 0,
    *,
    hidden: tuple[int, ...] = (64, 64),
    width: int = 64,
    **options: Any,
) -> tuple[MLP | ResNet18, dict[str, float]]:
    """A fresh classifier for `X`, initialised under torch seed `seed` and trained by `train_classifier` (its
    `options`: epochs, lr, batch_size, device, ...; the same `seed`): (model, train stats).

    kind: "mlp" (hidden widths `hidden`, on the flattened features) or "resnet18" (base `width`, for images
    (n, C, H, W)).
    """
    torch.manual_seed(seed)
    if kind == "mlp":
        model: MLP | ResNet18 = MLP(int(np.prod(np.shape(X)[1:])), hidden, n_classes)
    elif kind == "resnet18":
        if np.ndim(X) != 4:
            raise ValueError(f"a ResNet-18 needs images (n, C, H, W), got data of shape {np.shape(X)}")
        model = ResNet18(n_classes, np.shape(X)[1], width)
    else:
        raise ValueError(f"kind must be mlp or resnet18, got {kind!r}")
    return model, train_classifier(model, X, y, seed=seed, **options)


def save_model(model: MLP | ResNet18, path: Any) -> None:
    """Write `model`'s architecture dict and its weights (on the CPU) to `path`, through the guarded writer (into a
    run folder this process holds, or as a new file): the model file `load_model` reads."""
    from iclr25.shared.files import save_torch

    state = {k: v.detach().cpu() for k, v in model.state_dict().items()}
    save_torch(path, {"arch": model.arch, "state_dict": state})


def load_model(path: Any, device: Any = "cpu") -> tuple[MLP | ResNet18, int]:
    """(model in eval mode on `device`, its number of classes) from a file `save_model` wrote; a foreign, corrupt or
    unsafe file is a one-line error naming `path`.

    Weights only (`iclr25.shared.safeload`): the file holds an architecture dict and tensors; nothing in it runs.
    """
    from iclr25.shared.safeload import load_checkpoint

    ckpt = load_checkpoint(path, required_keys=("arch", "state_dict"), what=MODEL_FILE)
    try:
        model = build_model(ckpt["arch"])
        model.load_state_dict(ckpt["state_dict"])
    except (KeyError, TypeError, ValueError, RuntimeError) as e:
        raise ValueError(f"{path} does not match its architecture: {str(e).splitlines()[0][:200]}") from None
    model.to(device).eval()
    return model, int(ckpt["arch"]["n_classes"])
