"""Training and evaluation loop for the Chomsky-hierarchy tasks of Grazzi, Siems et al., "Unlocking State-Tracking in
Linear RNNs Through Negative Eigenvalues" (ICLR 2025, arXiv 2411.12537), §5.1 and App. E.

Protocol (spec §3.5–§3.6): train on lengths 3–40, one supervised answer position per sequence, cross-entropy with
ignore_index -1; AdamW, linear warmup then cosine decay to lr·1e-3; test on lengths 40–256 with the scaled accuracy
(acc - 1/C)/(1 - 1/C). A plain PyTorch loop (no Lightning: the models are small and the batches are generated online).
"""

from __future__ import annotations

import math
import time
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from iclr25.lrnn_state_tracking.baselines import build_model
from iclr25.lrnn_state_tracking.config import TrainConfig
from iclr25.lrnn_state_tracking.data import Task, get_task
from iclr25.shared.files import save_torch


@dataclass
class TrainResult:
    """A trained model, its loss/accuracy history and the measured training throughput."""

    model: nn.Module
    config: TrainConfig
    history: list[dict[str, float]] = field(default_factory=list)
    seconds: float = 0.0
    train_tokens: int = 0

    @property
    def tokens_per_s(self) -> float:
        """Training tokens (cropped batch length × batch size) per second."""
        return self.train_tokens / self.seconds if self.seconds > 0 else 0.0


def make_model(cfg: TrainConfig) -> nn.Module:
    """The model a config names, for the config's task vocabulary."""
    task = get_task(cfg.task)
    kwargs: dict[str, Any] = {}
    if cfg.model == "deltanet":
        kwargs["use_short_conv"] = cfg.use_short_conv
        kwargs["mode"] = cfg.deltanet_mode
    return build_model(cfg.model, task.vocab_size, cfg.d_model, cfg.n_layers, cfg.n_heads, cfg.eig_range, **kwargs)


def lr_at(step: int, cfg: TrainConfig) -> float:
    """Linear warmup, then constant or cosine decay to lr·min_lr_ratio."""
    if cfg.warmup and step < cfg.warmup:
        return cfg.lr * (step + 1) / cfg.warmup
    if cfg.schedule == "constant":
        return cfg.lr
    progress = min(1.0, (step - cfg.warmup) / max(1, cfg.steps - cfg.warmup))
    low = cfg.lr * cfg.min_lr_ratio
    return low + 0.5 * (cfg.lr - low) * (1 + math.cos(math.pi * progress))


def _param_groups(model: nn.Module, weight_decay: float) -> list[dict[str, Any]]:
    decay, no_decay = [], []
    for p in model.parameters():
        (no_decay if getattr(p, "_no_weight_decay", False) else decay).append(p)
    return [{"params": decay, "weight_decay": weight_decay}, {"params": no_decay, "weight_decay": 0.0}]


def _autocast(device: str, amp: bool) -> Any:
    enabled = amp and device == "cuda"
    return torch.autocast(device_type="cuda" if device == "cuda" else "cpu", dtype=torch.bfloat16, enabled=enabled)


@torch.no_grad()
def evaluate(
    model: nn.Module,
    task: Task | str,
    n: int = 8_192,
    lengths: tuple[int, int] = (40, 256),
    seed: int = 12_345,
    batch_size: int = 1_024,
    device: str = "cpu",
    mult: bool = True,
    amp: bool = False,
) -> dict[str, Any]:
    """Scaled accuracy at the answer position over `n` fresh sequences with lengths in `lengths`, plus per-sample data."""
    from iclr25.shared.progress import progress

    task = get_task(task) if isinstance(task, str) else task
    if n < 1 or batch_size < 1:
        raise ValueError(f"n and batch_size must be >= 1, got n={n}, batch_size={batch_size}")
    rng = np.random.default_rng(seed)
    was_training = model.training
    model.eval()
    correct, seq_lengths = [], []
    for start in progress(range(0, n, batch_size), desc="eval", unit="batch"):
        inputs, targets = task.sample(min(batch_size, n - start), lengths, rng, mult)
        inputs, targets = inputs.to(device), targets.to(device)
        with _autocast(device, amp):
            logits = model(inputs)
        sel = targets != -1
        pos = sel.float().argmax(1)  # the answer position (one per sequence)
        rows = torch.arange(len(pos), device=device)
        correct.append((logits[rows, pos].argmax(-1) == targets[rows, pos]).cpu())
        seq_lengths.append((pos + 2).cpu())  # target index + 2 = sequence length L (L - 1 for brackets)
    model.train(was_training)
    ok = torch.cat(correct).float()
    acc = ok.mean().item()
    C = task.num_answers
    return {
        "scaled_accuracy": (acc - 1 / C) / (1 - 1 / C),
        "accuracy": acc,
        "correct": ok.numpy(),
        "lengths": torch.cat(seq_lengths).numpy(),
    }


def train(
    cfg: TrainConfig,
    device: str = "cpu",
    log_every: int = 0,
    logger: Any = None,
    desc: str = "train",
    *,
    fabric: Any = None,
    checkpointer: Any = None,
    resume: str | None = None,
) -> TrainResult:
    """Train `cfg.model` on `cfg.task` (lengths 3–`cfg.train_max_len`, 40 by default) with online data; returns the
    model and history.

    With `fabric` (several processes, `iclr25.shared.fabric`), every process draws the same global batch of
    `cfg.batch_size` sequences and trains on its own slice; as each sequence has one supervised position, the
    averaged gradients equal one process's on the whole batch. With `checkpointer`, the model, the optimizer, the
    step and the data generator's state are saved every `checkpointer.every` steps and at the end; `resume`
    ("auto" or a checkpoint file) continues from one. Progress shows on a terminal, as a line every ~30 s in logs.
    """
    from iclr25.shared.progress import progress

    task = get_task(cfg.task)
    torch.manual_seed(cfg.seed)
    model = make_model(cfg).to(device)
    optimizer = torch.optim.AdamW(_param_groups(model, cfg.weight_decay), lr=cfg.lr, betas=(0.9, 0.999))
    rank, world = (fabric.global_rank, fabric.world_size) if fabric is not None else (0, 1)
    if cfg.batch_size % world:
        raise ValueError(f"batch_size {cfg.batch_size} must be a multiple of the {world} processes")
    if fabric is not None:
        model, optimizer = fabric.setup(model, optimizer)
    rng = np.random.default_rng([cfg.seed, 1])
    state: dict[str, Any] = {"model": model, "optimizer": optimizer, "step": 0, "data_rng": rng.bit_generator.state}
    if checkpointer is not None:
        checkpointer.resume(resume, state, fabric)
        rng.bit_generator.state = state["data_rng"]
    result = TrainResult(getattr(model, "module", model), cfg)
    model.train()
    start = time.perf_counter()
    share = cfg.batch_size // world
    for step in progress(range(state["step"], cfg.steps), desc=desc, unit="step"):
        for group in optimizer.param_groups:
            group["lr"] = lr_at(step, cfg)
        inputs, targets = task.sample(cfg.batch_size, (task.train_lengths[0], cfg.train_max_len), rng, cfg.mult)
        inputs, targets = inputs[rank * share : (rank + 1) * share], targets[rank * share : (rank + 1) * share]
        inputs, targets = inputs.to(device), targets.to(device)
        with _autocast(device, cfg.amp):
            logits = model(inputs)
        loss = F.cross_entropy(logits.float().flatten(0, 1), targets.flatten(), ignore_index=-1)
        optimizer.zero_grad(set_to_none=True)
        if fabric is not None:
            fabric.backward(loss)
        else:
            loss.backward()
        if cfg.grad_clip > 0:
            torch.nn.utils.clip_grad_norm_(model.parameters(), cfg.grad_clip)
        optimizer.step()
        result.train_tokens += inputs.numel() * world
        if log_every and (step + 1) % log_every == 0:
            sel = targets != -1
            row = {
                "step": step + 1,
                "loss": loss.item(),
                "train_accuracy": (logits.argmax(-1)[sel] == targets[sel]).float().mean().item(),
            }
            result.history.append(row)
            if logger is not None:
                logger.log({k: v for k, v in row.items() if k != "step"}, step=step + 1)
        if checkpointer is not None:
            state["step"], state["data_rng"] = step + 1, rng.bit_generator.state
            checkpointer.maybe_save(state, fabric)
    if checkpointer is not None and not (checkpointer.every and cfg.steps % checkpointer.every == 0):
        state["step"], state["data_rng"] = cfg.steps, rng.bit_generator.state
        checkpointer.save(state, fabric)  # the end of training, so a resumed run skips straight to evaluation
    if device == "cuda":
        torch.cuda.synchronize()
    result.seconds = time.perf_counter() - start
    return result


def save_checkpoint(result: TrainResult, path: Any, *, overwrite: bool = False) -> None:
    """Save the model weights and its config (a plain dict) to `path`, through the guarded writer (into a run
    folder this process holds, or as a new file)."""
    state = {"config": asdict(result.config), "state_dict": result.model.state_dict()}
    save_torch(path, state, overwrite=overwrite)


def load_checkpoint(path: Any, device: str = "cpu") -> tuple[nn.Module, TrainConfig]:
    """Rebuild a model saved by `save_checkpoint`; a foreign, corrupt or unsafe file is a one-line ValueError.

    Weights only (`iclr25.shared.safeload`): a checkpoint holds a config dict and tensors; nothing in it runs.
    """
    from iclr25.shared.safeload import load_checkpoint as safe_load

    what = "checkpoint written by `train`"
    data = safe_load(path, map_location=device, required_keys=("config", "state_dict"), what=what)
    try:
        cfg = TrainConfig(**data["config"])
        model = make_model(cfg).to(device)
        model.load_state_dict(data["state_dict"])
    except (RuntimeError, KeyError, TypeError, ValueError) as e:
        first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise ValueError(f"{path} is not a {what} ({first})") from None
    return model, cfg
