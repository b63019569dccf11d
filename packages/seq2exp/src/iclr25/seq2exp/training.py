"""Training and evaluation loops (plain torch) for Seq2Exp and the baselines on in-memory arrays.

Quick (spec §6a): Adam lr 1e-3, batch 32, model selection by validation MSE. Full (spec §3 / official configs):
AdamW lr 5e-4, betas (0.9, 0.95), weight decay 1e-6, linear warmup from 1e-5 then cosine to 1e-4, grad clip 1.0.
"""

from __future__ import annotations

import copy
import math
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
from torch import nn

from iclr25.seq2exp.baselines import BaselineSeqOnly, BaselineSeqSignal, MaskedPredictor
from iclr25.seq2exp.config import Config, Seq2ExpConfig
from iclr25.seq2exp.seq2exp import Seq2Exp, center_slice, seq2exp_loss


def build_model(name: str, config: Seq2ExpConfig) -> nn.Module:
    """seq2exp-soft | seq2exp-hard | generator-off | seq | seq-signal | macs-mask | seq2exp-retrain."""
    if name in ("seq2exp-soft", "seq2exp-hard", "generator-off"):
        return Seq2Exp(config)
    if name == "seq":
        return BaselineSeqOnly(config)
    if name == "seq-signal":
        return BaselineSeqSignal(config)
    if name in ("macs-mask", "seq2exp-retrain"):
        return MaskedPredictor(config)
    raise ValueError(f"unknown model {name!r}")


@dataclass
class Arrays:
    """In-memory tensors of a dataset split (seq codes, raw signals, rna features, targets, blacklist, fixed mask)."""

    seq: torch.Tensor
    signals: torch.Tensor
    rna: torch.Tensor
    y: torch.Tensor
    blacklist: torch.Tensor
    mask: torch.Tensor | None = None

    @classmethod
    def from_numpy(cls, data: dict[str, np.ndarray], idx: np.ndarray, mask: np.ndarray | None = None) -> Arrays:
        """Select rows `idx` of a dataset dict."""
        return cls(
            torch.from_numpy(np.ascontiguousarray(data["seq"][idx])),
            torch.from_numpy(np.ascontiguousarray(data["signals"][idx], dtype=np.float32)),
            torch.from_numpy(np.ascontiguousarray(data["rna"][idx], dtype=np.float32)),
            torch.from_numpy(np.ascontiguousarray(data["y"][idx], dtype=np.float32)),
            torch.from_numpy(np.ascontiguousarray(data["blacklist"][idx])),
            None if mask is None else torch.from_numpy(np.ascontiguousarray(mask[idx])),
        )

    def __len__(self) -> int:
        return int(self.y.shape[0])

    def batches(self, batch_size: int, perm: torch.Tensor | None = None) -> Iterable[dict[str, torch.Tensor]]:
        """Mini-batches as dicts (of the rows `perm` lists, in its order, when given)."""
        order = perm if perm is not None else torch.arange(len(self))
        for i in range(0, len(order), batch_size):
            j = order[i : i + batch_size]
            batch = {
                "seq": self.seq[j],
                "signals": self.signals[j],
                "rna_feat": self.rna[j],
                "y": self.y[j],
                "blacklist": self.blacklist[j],
            }
            if self.mask is not None:
                batch["mask"] = self.mask[j]
            yield batch


class WindowArrays:
    """The `Arrays` interface over GeneExp windows (`GeneWindowDataset`), read batch by batch: a 200 kb window per
    gene does not fit in memory for a whole split. `mask_fn(batch)` gives the fixed mask of a masked predictor."""

    def __init__(
        self,
        dataset: Any,
        max_genes: int = 0,
        mask_fn: Callable[[dict[str, torch.Tensor]], torch.Tensor] | None = None,
    ) -> None:
        self.dataset, self.mask_fn = dataset, mask_fn
        self.n = len(dataset) if not max_genes else min(max_genes, len(dataset))
        self.y = torch.tensor([dataset.target(i) for i in range(self.n)], dtype=torch.float32)
        self.mask = None

    def __len__(self) -> int:
        return self.n

    def batches(self, batch_size: int, perm: torch.Tensor | None = None) -> Iterable[dict[str, torch.Tensor]]:
        """Mini-batches as dicts (of the windows `perm` lists, in its order, when given), read from the files."""
        order = perm if perm is not None else torch.arange(self.n)
        for i in range(0, len(order), batch_size):
            items = [self.dataset[int(k)] for k in order[i : i + batch_size]]
            batch = {
                "seq": torch.from_numpy(np.stack([it["seq"] for it in items])),
                "signals": torch.from_numpy(np.stack([it["signals"] for it in items]).astype(np.float32)),
                "rna_feat": torch.from_numpy(np.stack([it["rna_feat"] for it in items]).astype(np.float32)),
                "y": torch.tensor([float(it["y"]) for it in items], dtype=torch.float32),
                "blacklist": torch.from_numpy(np.stack([it["blacklist"] for it in items])),
                "peak_mask": torch.from_numpy(np.stack([it["peak_mask"] for it in items])),
            }
            if self.mask_fn is not None:
                batch["mask"] = self.mask_fn(batch)
            batch.pop("peak_mask")
            yield batch


def _forward(
    model: nn.Module, batch: dict[str, torch.Tensor], device: Any, raw: nn.Module | None = None
) -> tuple[torch.Tensor, dict]:
    kwargs = {k: v.to(device) for k, v in batch.items() if k != "y"}
    if not isinstance(raw if raw is not None else model, MaskedPredictor):
        kwargs.pop("mask", None)
    return model(**kwargs)


def cosine_lr(step: int, total: int, lr: float, warmup: int = 0, lr_init: float = 1e-5, lr_min: float = 1e-4) -> float:
    """Linear warmup from lr_init to lr over `warmup` steps, then cosine decay to lr_min (official schedule)."""
    if step < warmup:
        return lr_init + (lr - lr_init) * step / max(warmup, 1)
    t = (step - warmup) / max(total - warmup, 1)
    return lr_min + 0.5 * (lr - lr_min) * (1 + math.cos(math.pi * min(t, 1.0)))


@torch.no_grad()
def predict(
    model: nn.Module,
    data: Arrays | WindowArrays,
    batch_size: int = 64,
    device: str = "cpu",
    keep_mask: bool = False,
    ratio_outside: np.ndarray | None = None,
) -> dict[str, np.ndarray]:
    """Eval-mode predictions y_hat, and for Seq2Exp E[m] (before forcing) and the mask used (`keep_mask`), or only
    the fraction of mask > 0.5 over the positions `ratio_outside` marks False ("mask_ratio", no masks kept)."""
    model.eval()
    ys, means, masks = [], [], []
    kept, total = 0, 0
    for batch in data.batches(batch_size):
        y_hat, aux = _forward(model, batch, device)
        ys.append(y_hat.float().cpu().numpy())
        if keep_mask and "mean" in aux:
            means.append(aux["mean"].float().cpu().numpy())
            masks.append(aux["mask"].float().cpu().numpy())
        if ratio_outside is not None and "mean" in aux:
            inside = aux["mask"][:, torch.from_numpy(~ratio_outside).to(aux["mask"].device)]
            kept, total = kept + int((inside > 0.5).sum()), total + inside.numel()
    out = {"y_hat": np.concatenate(ys)}
    if means:
        out["mean"], out["mask"] = np.concatenate(means), np.concatenate(masks)
    if total:
        out["mask_ratio"] = np.float64(kept / total)
    return out


def fit(
    model: nn.Module,
    train: Arrays | WindowArrays,
    valid: Arrays | WindowArrays,
    *,
    epochs: int = 15,
    batch_size: int = 32,
    lr: float = 1e-3,
    lam: float = 0.01,
    seed: int = 0,
    device: str = "cpu",
    official_schedule: bool = False,
    progress: Callable[[Iterable[Any]], Iterable[Any]] | None = None,
    log: Callable[[dict[str, float], int], None] | None = None,
    fabric: Any = None,
    checkpointer: Any = None,
    resume: str | None = None,
) -> dict[str, Any]:
    """Train with SmoothL1 + lambda * KL (zero KL for baselines); keep the weights of the best validation MSE.

    Returns {"best_val_mse", "epochs", "bases_per_s", "history"}; the model holds the selected weights. After every
    epoch `log(row, epoch)` gets the shared training names (`loss`, `lr`, `throughput` in bases/s, `epoch`) and
    `val_mse`.

    With `fabric` (several processes, `iclr25.shared.fabric`), every process draws the same permutation and the
    same global batch of `batch_size` windows and trains on its own contiguous share, its loss weighted by its
    share of the batch, so the averaged gradients equal one process's on the whole batch; Seq2Exp's mask is then
    drawn per window from a seed of (seed, step, position in the batch), so a window's draw does not depend on the
    process it lands on (a run with a Fabric therefore draws other masks than one without); the hard mode pads the
    packed kept bases of every share to the longest kept row of the whole global batch (a max over the processes),
    as one process pads the whole batch, so its predictions do not depend on the split either. Validation runs
    whole on every process. With `checkpointer`, the model, the optimiser, the step, the epoch's permutation
    generator, the best weights so far and the history are saved every `checkpointer.every` steps and at the end;
    `resume` ("auto" or a checkpoint file) continues from one, ending with the same weights as an uninterrupted run.
    """
    from iclr25.shared.logging import training_row

    raw = model
    if fabric is not None:
        device = fabric.device
    else:
        model.to(device)
    gen = torch.Generator().manual_seed(seed)
    if official_schedule:
        opt = torch.optim.AdamW(model.parameters(), lr=lr, betas=(0.9, 0.95), weight_decay=1e-6)
    else:
        opt = torch.optim.Adam(model.parameters(), lr=lr)
    if fabric is not None:
        model, opt = fabric.setup(model, opt)
    steps_per_epoch = math.ceil(len(train) / batch_size)
    total = epochs * steps_per_epoch
    warmup = min(5000, total // 10) if official_schedule else 0
    state: dict[str, Any] = {
        "model": model,
        "optimizer": opt,
        "step": 0,
        "done_epochs": 0,  # epochs trained and validated
        "pos": 0,  # batches of the current epoch already trained
        "epoch_gen": gen.get_state(),  # the generator before the current epoch's permutation
        "losses": [],
        "best": math.inf,
        "best_state": None,
        "history": [],
        "bases": 0,
        "seconds": 0.0,
    }
    if checkpointer is not None:
        checkpointer.resume(resume, state, fabric)
        gen.set_state(state["epoch_gen"])
    best, best_state, history, step = float(state["best"]), state["best_state"], list(state["history"]), state["step"]
    bases, seconds = int(state["bases"]), float(state["seconds"])
    epochs_iter: Iterable[int] = range(epochs)
    if progress is not None:
        epochs_iter = progress(epochs_iter)
    for epoch in epochs_iter:
        if epoch < state["done_epochs"]:
            continue  # trained before the checkpoint this run resumed from
        model.train()
        t0 = time.perf_counter()
        epoch_gen = gen.get_state()
        perm = torch.randperm(len(train), generator=gen)
        first = int(state["pos"]) if epoch == state["done_epochs"] else 0
        losses = list(state["losses"]) if first else []
        epoch_bases = 0
        for b, batch in enumerate(train.batches(batch_size, perm[first * batch_size :]), start=first):
            if official_schedule:
                for group in opt.param_groups:
                    group["lr"] = cosine_lr(step, total, lr, warmup)
            if fabric is None:
                y_hat, aux = _forward(model, batch, device)
                loss = seq2exp_loss(y_hat, batch["y"].to(device), aux, lam)
            else:
                loss = _share_loss(model, raw, batch, device, lam, fabric, seed, step, b * batch_size)
            opt.zero_grad(set_to_none=True)
            if fabric is not None:
                fabric.backward(loss)
            else:
                loss.backward()
            if official_schedule:
                if fabric is not None:
                    fabric.clip_gradients(model, opt, max_norm=1.0)
                else:
                    nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            opt.step()
            losses.append(float(loss.detach()) if fabric is None else _batch_loss(fabric, loss))
            bases += int(batch["seq"].numel())
            epoch_bases += int(batch["seq"].numel())
            step += 1
            if checkpointer is not None:
                state.update(step=step, pos=b + 1, epoch_gen=epoch_gen, losses=losses, bases=bases)
                state.update(seconds=seconds + time.perf_counter() - t0, history=history, best=best)
                state["best_state"] = best_state
                checkpointer.maybe_save(state, fabric)
        elapsed = time.perf_counter() - t0
        seconds += elapsed
        val = predict(raw, valid, device=device)["y_hat"]
        val_mse = float(np.mean((val - valid.y.numpy()) ** 2))
        history.append({"epoch": epoch, "train_loss": float(np.mean(losses)), "val_mse": val_mse})
        if log is not None:
            rate = epoch_bases / max(elapsed, 1e-9) if epoch_bases else None
            row = training_row(history[-1]["train_loss"], lr=opt.param_groups[0]["lr"], throughput=rate, epoch=epoch)
            log({**row, "val_mse": val_mse}, epoch)
        if val_mse < best:
            best, best_state = val_mse, copy.deepcopy(raw.state_dict())
        state.update(done_epochs=epoch + 1, pos=0, losses=[], epoch_gen=gen.get_state())
    if checkpointer is not None:
        state.update(step=step, bases=bases, seconds=seconds, history=history, best=best, best_state=best_state)
        checkpointer.save(state, fabric)  # the end, so a resumed run goes straight to testing
    if best_state is not None:
        raw.load_state_dict(best_state)
    return {"best_val_mse": best, "epochs": epochs, "bases_per_s": bases / max(seconds, 1e-9), "history": history}


def _share_loss(
    model: nn.Module,
    raw: nn.Module,
    batch: dict[str, torch.Tensor],
    device: Any,
    lam: float,
    fabric: Any,
    seed: int,
    step: int,
    offset: int,
) -> torch.Tensor:
    """This process's share of a global batch: rows [rank c, (rank + 1) c) with c = ceil(n / world), its mean loss
    weighted by world * share / n, so that the mean of the processes' gradients is the gradient of the whole batch's
    mean loss. A process left without rows trains on the batch's first row with weight 0 (every process must take
    part in the gradient average). Seq2Exp's masks are drawn from one seed per row (global position `offset` + i),
    and its hard mode pads every share to the longest kept row of the whole batch (a max over the processes)."""
    rank, world = fabric.global_rank, fabric.world_size
    n = int(batch["y"].shape[0])
    c = -(-n // world)
    lo, hi = min(rank * c, n), min((rank + 1) * c, n)
    weight = world * (hi - lo) / n
    rows = slice(lo, hi) if hi > lo else slice(0, 1)
    part = {k: v[rows] for k, v in batch.items()}
    if hasattr(raw, "row_seeds"):
        raw.row_seeds = [
            int(np.random.SeedSequence([seed, step, offset + i]).generate_state(1)[0])
            for i in range(rows.start, rows.stop)
        ]
        # every process runs one forward per step (an empty share too), so each joins this all-reduce once
        raw.pack_length = lambda longest: fabric.all_reduce(longest.clone(), reduce_op="max")
    try:
        y_hat, aux = _forward(model, part, device, raw)
    finally:
        if hasattr(raw, "row_seeds"):
            raw.row_seeds, raw.pack_length = None, None
    return seq2exp_loss(y_hat, part["y"].to(device), aux, lam) * weight


def _batch_loss(fabric: Any, loss: torch.Tensor) -> float:
    """The whole batch's mean loss: the sum over processes of the weighted shares, divided by their number."""
    from iclr25.shared.fabric import all_reduce_mean

    return all_reduce_mean(fabric, loss.detach())


def promoter_exclusion(length: int, center_len: int) -> np.ndarray:
    """Bool (L,) marking the forced promoter window (excluded from mask metrics)."""
    out = np.zeros(length, dtype=bool)
    out[center_slice(length, center_len)] = True
    return out


def model_config(cfg: Config, name: str) -> Seq2ExpConfig:
    """The Seq2ExpConfig a reproduction model uses (quick: cnn backbone, c = 1; hard: the official hard setting)."""
    common = dict(
        d=cfg.d,
        backbone=cfg.backbone,
        n_layers=cfg.n_layers,
        n_rna=cfg.n_rna,
        center_len=cfg.center_len,
        max_len=cfg.length,
    )
    if name == "seq2exp-hard":
        return Seq2ExpConfig.hard(
            **common,
            prior_scale=cfg.hard_prior_scale,
            beta_min=cfg.hard_beta_min,
            mu=cfg.hard_mu,
            marginal_scale=cfg.hard_marginal_scale,
            lam=cfg.lam,
            hard_mask_multiply=cfg.hard_mask_multiply,
        )
    return Seq2ExpConfig.soft(
        **common,
        prior_scale=cfg.prior_scale,
        beta_min=cfg.beta_min,
        mu=cfg.mu,
        marginal_scale=cfg.marginal_scale,
        lam=cfg.lam,
        generator_off=name == "generator-off",
    )


def train_and_test(
    name: str,
    cfg: Config,
    data: dict[str, np.ndarray],
    fixed_mask: np.ndarray | None,
    seed: int,
    device: str = "cpu",
    progress: Callable[[Iterable[Any]], Iterable[Any]] | None = None,
    log: Callable[[dict[str, float], int], None] | None = None,
    *,
    fabric: Any = None,
    checkpointer: Any = None,
    resume: str | None = None,
) -> dict[str, Any]:
    """Train model `name` on split 0 (selecting on split 1) and test on split 2: MSE/MAE/Pearson, throughput, and
    for Seq2Exp the AUPRC of E[m] (promoter excluded) and the mask ratio; the trained model under "_model".
    `fabric`, `checkpointer`, `resume`: see `fit` (several processes, checkpoints, resume)."""
    from iclr25.seq2exp.metrics import mask_metrics, regression_metrics

    if fabric is not None:
        device = fabric.device

    split = data["split"]
    parts = [Arrays.from_numpy(data, np.flatnonzero(split == k), fixed_mask) for k in range(3)]
    torch.manual_seed(seed)
    model = build_model(name, model_config(cfg, name))
    t0 = time.perf_counter()
    fitted = fit(
        model,
        parts[0],
        parts[1],
        epochs=cfg.epochs,
        batch_size=cfg.batch_size,
        lr=cfg.lr,
        lam=cfg.lam,
        seed=seed,
        device=device,
        progress=progress,
        log=log,
        fabric=fabric,
        checkpointer=checkpointer,
        resume=resume,
    )
    out = predict(model, parts[2], device=device, keep_mask=True)
    result: dict[str, Any] = regression_metrics(out["y_hat"], parts[2].y.numpy())
    result.update(
        train_s=time.perf_counter() - t0,
        bases_per_s=fitted["bases_per_s"],
        best_val_mse=fitted["best_val_mse"],
        history=fitted["history"],
    )
    if "mean" in out:
        excl = np.broadcast_to(promoter_exclusion(cfg.length, cfg.center_len), out["mean"].shape)
        truth = data["true_mask"][split == 2] if cfg.truth == "motif" else data["bump_mask"][split == 2]
        result["mask_auprc"] = mask_metrics(out["mean"], truth, excl)["auprc"]
        result["mask_ratio"] = float((out["mask"][~excl] > 0.5).mean())
    result["_model"] = model
    return result
