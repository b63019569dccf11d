"""Training and evaluation loops of TSC-Net (spec §3 "Optimisation"): Adam, whole clips accumulated until >= 32
pedestrians (cap 64), x8 rotation/flip augmentation of maps and coordinates, best-of-K evaluation."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from typing import Any

import numpy as np
import torch

from iclr25.shared.logging import training_row
from iclr25.tsc_net.data import Clips
from iclr25.tsc_net.model import OBS, TSCConfig, TSCNet
from iclr25.tsc_net.scene import SceneCrop


def transform_map(mask: np.ndarray, t: int) -> np.ndarray:
    """Transform t in 0..7 of a map: horizontal flip if t >= 4, then t % 4 quarter turns (np.rot90)."""
    m = mask[:, ::-1] if t >= 4 else mask
    return np.ascontiguousarray(np.rot90(m, t % 4))


def transform_points(xy: np.ndarray, shape: tuple[int, int], t: int) -> np.ndarray:
    """The same transform applied to continuous pixel coordinates (x, y) of a map of `shape` (H, W)."""
    h, w = shape
    x, y = xy[..., 0], xy[..., 1]
    if t >= 4:
        x = w - x
    for _ in range(t % 4):  # np.rot90: (x, y) -> (y, W - x), the map becomes (W, H)
        x, y = y, w - x
        h, w = w, h
    return np.stack([x, y], -1)


class AugmentedScenes:
    """The 8 transforms of every scene in one `SceneCrop` bank (index scene * 8 + t)."""

    def __init__(self, masks: list[np.ndarray], n_classes: int, scale: float, augment: bool):
        self.masks, self.n = masks, 8 if augment else 1
        maps = [transform_map(m, t) for m in masks for t in range(self.n)]
        self.crop = SceneCrop(maps, n_classes, scale)


def make_batches(clips: Clips, rng: np.random.Generator, min_peds: int = 32, cap: int = 64) -> list[np.ndarray]:
    """Pedestrian indices of batches made of whole clips (shuffled), accumulated until >= min_peds (at most cap)."""
    groups = rng.permutation(np.unique(clips.group))
    members = {g: np.flatnonzero(clips.group == g) for g in groups}
    batches, cur = [], []
    for g in groups:
        idx = members[g][:cap]
        if cur and sum(map(len, cur)) + len(idx) > cap:
            batches.append(np.concatenate(cur))
            cur = []
        cur.append(idx)
        if sum(map(len, cur)) >= min_peds:
            batches.append(np.concatenate(cur))
            cur = []
    if cur:
        batches.append(np.concatenate(cur))
    return batches


def to_batch(clips: Clips, idx: np.ndarray, scenes: AugmentedScenes, rng: np.random.Generator | None, device="cpu"):
    """A model batch of pedestrians `idx`; with `rng`, one random transform of the 8 per clip."""
    pos = clips.pos[idx].copy()
    sid = clips.scene[idx] * scenes.n
    if rng is not None and scenes.n > 1:
        groups = np.unique(clips.group[idx])
        choice = dict(zip(groups, rng.integers(0, scenes.n, len(groups)), strict=True))
        t = np.array([choice[g] for g in clips.group[idx]])
        for tt in np.unique(t):
            sel = t == tt
            for s in np.unique(clips.scene[idx][sel]):
                both = sel & (clips.scene[idx] == s)
                pos[both] = transform_points(pos[both], scenes.masks[s].shape, int(tt))
        sid = sid + t
    return {
        "pos": torch.tensor(pos, dtype=torch.float32, device=device),
        "scene": torch.tensor(sid, dtype=torch.long),
        "group": torch.tensor(clips.group[idx], dtype=torch.long, device=device),
        "scenes": scenes.crop,
    }


def train_model(
    model: TSCNet, clips: Clips, scenes: AugmentedScenes, steps: int, lr: float, seed: int,
    min_peds: int = 32, cap: int = 64, progress: Callable | None = None, log: Callable | None = None,
    device: str = "cpu", checkpointer: Any = None, resume: str | None = None, fabric: Any = None,
) -> dict[str, float]:  # fmt: skip
    """Adam for `steps` batches (epochs of shuffled whole-clip batches); returns timing and the last losses.

    `log(row, step)` sees every 20th step and the last one: the shared training metrics (`loss` the total, `lr`,
    `throughput` in pedestrians/s, `epoch`) and each loss term as `loss/<term>`.

    `checkpointer` (an `iclr25.shared.fabric.Checkpointer`): save the loop's state (model, optimizer, step, epoch, the
    batch RNG and the batches left in the epoch, plus the global RNGs) every `checkpointer.every` steps and after the
    last one; `resume` ("auto": its newest checkpoint, or a file) continues from a saved state with the same batches.

    `fabric` (several processes, `iclr25.shared.fabric`): every process draws the same whole-clip batch, its
    augmentation and the CVAE noise of every pedestrian (`TSCNet.latent_noise`), then trains on its share of the
    clips (`rank_share`: whole clips, as pedestrian attention runs within a clip), its loss scaled by its share of
    the pedestrians times the number of processes. Every loss term is a mean over pedestrians, so DDP's averaged
    gradient is the whole batch's: 2 processes equal 1 on the same batches. A batch of fewer clips than processes is
    trained whole by every process (the same gradient everywhere, so the average is again the whole batch's)."""
    rng = np.random.default_rng(seed)
    net = model
    model.to(device)
    opt = torch.optim.Adam(model.parameters(), lr=lr)
    rank, world = (fabric.global_rank, fabric.world_size) if fabric is not None else (0, 1)
    if fabric is not None:
        model, opt = fabric.setup(model, opt)
        device = fabric.device
    model.train()
    batches: list[np.ndarray] = []
    seen, t0, last = 0, time.perf_counter(), {}
    start, epoch = 0, -1
    if checkpointer is not None:
        state = _loop_state(model, opt, 0, epoch, rng, batches)
        if checkpointer.resume(resume, state, fabric) is not None:
            start, epoch, batches = _restore_loop(state, rng)
    it = range(start, steps) if progress is None else progress(range(start, steps))
    for step in it:
        if not batches:
            batches = make_batches(clips, rng, min_peds, cap)
            epoch += 1
        idx = batches.pop()
        batch = to_batch(clips, idx, scenes, rng, device)
        if fabric is None:
            losses = model(batch)
            loss = losses["total"]
        else:
            batch["eps"] = net.latent_noise(len(idx)).to(device)  # the whole batch's draw, the same on every rank
            part, weight = rank_share(batch["group"], rank, world)
            losses = model(slice_batch(batch, part))
            loss = losses["total"] * weight
        opt.zero_grad(set_to_none=True)
        if fabric is None:
            loss.backward()
        else:
            fabric.backward(loss)
        opt.step()
        seen += len(idx)
        logged = log is not None and (step % 20 == 0 or step == steps - 1)
        if logged or step == steps - 1:
            if fabric is None:
                last = {k: float(v.detach()) for k, v in losses.items()}
            else:  # the whole batch's losses: the mean over ranks of the weighted shares
                names = list(losses)
                shares = torch.stack([losses[k].detach().double() * weight for k in names])
                last = dict(zip(names, fabric.all_reduce(shares, reduce_op="mean").tolist(), strict=True))
        if logged:
            throughput = seen / max(time.perf_counter() - t0, 1e-9)
            terms = {f"loss/{k}": v for k, v in last.items() if k != "total"}
            log(training_row(last["total"], lr=lr, throughput=throughput, epoch=epoch, **terms), step)
        if checkpointer is not None and step + 1 < steps:
            checkpointer.maybe_save(_loop_state(model, opt, step + 1, epoch, rng, batches), fabric)
    if checkpointer is not None and start < steps:
        checkpointer.save(_loop_state(model, opt, steps, epoch, rng, batches), fabric)
    wall = time.perf_counter() - t0
    return {"train_s": wall, "train_peds": seen, "train_peds_per_s": seen / max(wall, 1e-9), **last}


def rank_share(group: torch.Tensor, rank: int, world: int) -> tuple[torch.Tensor, float]:
    """The pedestrians (a boolean mask) of process `rank` of `world` in a batch of whole clips (`group`: clip ids
    in batch order), and the factor its mean loss is scaled by (its share of the pedestrians x `world`). Whole
    clips, contiguous, balanced by pedestrians, at least one per process; fewer clips than processes: every process
    takes the whole batch (factor 1)."""
    group = group.cpu()
    change = torch.ones(len(group), dtype=torch.bool)
    change[1:] = group[1:] != group[:-1]
    starts = torch.nonzero(change).flatten().tolist()  # first pedestrian of each clip
    n, clips = len(group), len(starts)
    if clips < world:
        return torch.ones(n, dtype=torch.bool), 1.0
    cuts = [0]
    for r in range(1, world):  # the clip boundary nearest r/world of the pedestrians, leaving a clip per rank
        target = r * n / world
        best = min(range(clips), key=lambda c: (abs(starts[c] - target), c))
        cuts.append(min(max(best, cuts[-1] + 1), clips - (world - r)))
    cuts.append(clips)
    lo = starts[cuts[rank]]
    hi = starts[cuts[rank + 1]] if cuts[rank + 1] < clips else n
    mask = torch.zeros(n, dtype=torch.bool)
    mask[lo:hi] = True
    return mask, (hi - lo) * world / n


def slice_batch(batch: dict, part: torch.Tensor) -> dict:
    """The pedestrians `part` (a boolean mask) of a model batch: every per-pedestrian tensor sliced."""
    return {k: v[part.to(v.device)] if isinstance(v, torch.Tensor) else v for k, v in batch.items()}


def _loop_state(
    model: TSCNet, opt: Any, step: int, epoch: int, rng: np.random.Generator, batches: list[np.ndarray]
) -> dict:
    """What `train_model` needs to continue exactly: tensors, numbers and strings only (a checkpoint is data)."""
    return {
        "model": model, "optimizer": opt, "step": step, "epoch": epoch,
        "batch_rng": json.dumps(rng.bit_generator.state),
        "batches": [torch.as_tensor(b, dtype=torch.long) for b in batches],
    }  # fmt: skip


def _restore_loop(state: dict, rng: np.random.Generator) -> tuple[int, int, list[np.ndarray]]:
    """The step, the epoch and the batches left in it of a loaded `_loop_state`; `rng` gets its saved state back."""
    rng.bit_generator.state = json.loads(state["batch_rng"])
    return int(state["step"]), int(state["epoch"]), [np.asarray(b, dtype=np.int64) for b in state["batches"]]


@torch.no_grad()
def predict_clips(
    model: TSCNet, clips: Clips, scenes: AugmentedScenes, n_cvae: int = 5, n_cell: int = 4, seed: int = 0,
    chunk: int = 64, device: str = "cpu",
) -> tuple[np.ndarray, np.ndarray, float]:  # fmt: skip
    """Best-of-K predictions for all pedestrians (whole clips per chunk): (traj (K, N, 12, 2), goals (K, N, 2), s)."""
    model.to(device).eval()
    torch.manual_seed(seed)
    k = n_cvae * n_cell
    dtype = next(model.parameters()).dtype
    traj = np.zeros((k, len(clips), 12, 2))
    goals = np.zeros((k, len(clips), 2))
    t0 = time.perf_counter()
    for idx in make_batches(clips, np.random.default_rng(0), chunk, chunk):
        batch = to_batch(clips, idx, scenes, None, device)
        batch["pos"] = batch["pos"].to(dtype)  # the precision the model was trained in (float32 unless asked)
        batch["pos"][:, OBS:] = float("nan")  # never available at inference
        out = model.predict(batch, n_cvae, n_cell)
        traj[:, idx], goals[:, idx] = out["traj"].float().cpu().numpy(), out["goals"].float().cpu().numpy()
    return traj, goals, time.perf_counter() - t0


def build_model(kind: str, cfg: TSCConfig) -> TSCNet:
    """tsc (TSC-Net), blind (scene-blind), goalreg (goal-regression CVAE) on architecture `cfg`."""
    from dataclasses import replace

    if kind == "tsc":
        return TSCNet(cfg)
    if kind == "blind":
        return TSCNet(replace(cfg, use_scene=False))
    if kind == "goalreg":
        return TSCNet(replace(cfg, goal_mode="regression"))
    raise ValueError(f"model must be tsc, blind or goalreg, got {kind!r}")
