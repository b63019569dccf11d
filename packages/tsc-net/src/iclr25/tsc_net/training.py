"""Training and evaluation loops of TSC-Net (spec §3 "Optimisation"): Adam, whole clips accumulated until >= 32
pedestrians (cap 64), x8 rotation/flip augmentation of maps and coordinates, best-of-K evaluation."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from typing import Any

import numpy as np
import torch

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
    device: str = "cpu", checkpointer: Any = None, resume: str | None = None,
) -> dict[str, float]:  # fmt: skip
    """Adam for `steps` batches (epochs of shuffled whole-clip batches); returns timing and the last losses.

    `checkpointer` (an `iclr25.shared.fabric.Checkpointer`): save the loop's state (model, optimizer, step, the batch
    RNG and the batches left in the epoch, plus the global RNGs) every `checkpointer.every` steps and after the last
    one; `resume` ("auto": its newest checkpoint, or a file) continues from a saved state with the same batches."""
    rng = np.random.default_rng(seed)
    model.to(device)
    opt = torch.optim.Adam(model.parameters(), lr=lr)
    model.train()
    batches: list[np.ndarray] = []
    seen, t0, last = 0, time.perf_counter(), {}
    start = 0
    if checkpointer is not None:
        state = _loop_state(model, opt, 0, rng, batches)
        if checkpointer.resume(resume, state) is not None:
            start, batches = _restore_loop(state, rng)
    it = range(start, steps) if progress is None else progress(range(start, steps))
    for step in it:
        if not batches:
            batches = make_batches(clips, rng, min_peds, cap)
        idx = batches.pop()
        losses = model(to_batch(clips, idx, scenes, rng, device))
        opt.zero_grad(set_to_none=True)
        losses["total"].backward()
        opt.step()
        seen += len(idx)
        last = {k: float(v.detach()) for k, v in losses.items()}
        if log is not None and (step % 20 == 0 or step == steps - 1):
            log({f"loss/{k}": v for k, v in last.items()}, step)
        if checkpointer is not None and step + 1 < steps:
            checkpointer.maybe_save(_loop_state(model, opt, step + 1, rng, batches))
    if checkpointer is not None and start < steps:
        checkpointer.save(_loop_state(model, opt, steps, rng, batches))
    wall = time.perf_counter() - t0
    return {"train_s": wall, "train_peds": seen, "train_peds_per_s": seen / max(wall, 1e-9), **last}


def _loop_state(model: TSCNet, opt: Any, step: int, rng: np.random.Generator, batches: list[np.ndarray]) -> dict:
    """What `train_model` needs to continue exactly: tensors, numbers and strings only (a checkpoint is data)."""
    return {
        "model": model, "optimizer": opt, "step": step, "batch_rng": json.dumps(rng.bit_generator.state),
        "batches": [torch.as_tensor(b, dtype=torch.long) for b in batches],
    }  # fmt: skip


def _restore_loop(state: dict, rng: np.random.Generator) -> tuple[int, list[np.ndarray]]:
    """The step and the batches left in the epoch of a loaded `_loop_state`; `rng` gets its saved state back."""
    rng.bit_generator.state = json.loads(state["batch_rng"])
    return int(state["step"]), [np.asarray(b, dtype=np.int64) for b in state["batches"]]


@torch.no_grad()
def predict_clips(
    model: TSCNet, clips: Clips, scenes: AugmentedScenes, n_cvae: int = 5, n_cell: int = 4, seed: int = 0,
    chunk: int = 64, device: str = "cpu",
) -> tuple[np.ndarray, np.ndarray, float]:  # fmt: skip
    """Best-of-K predictions for all pedestrians (whole clips per chunk): (traj (K, N, 12, 2), goals (K, N, 2), s)."""
    model.to(device).eval()
    torch.manual_seed(seed)
    k = n_cvae * n_cell
    traj = np.zeros((k, len(clips), 12, 2))
    goals = np.zeros((k, len(clips), 2))
    t0 = time.perf_counter()
    for idx in make_batches(clips, np.random.default_rng(0), chunk, chunk):
        batch = to_batch(clips, idx, scenes, None, device)
        batch["pos"][:, OBS:] = float("nan")  # never available at inference
        out = model.predict(batch, n_cvae, n_cell)
        traj[:, idx], goals[:, idx] = out["traj"].cpu().numpy(), out["goals"].cpu().numpy()
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
