"""What the `train`, `predict` and `eval` verbs do (library functions; the CLI only parses)."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import numpy as np
import torch

from iclr25.shared.files import save_arrays, save_torch
from iclr25.shared.safeload import UnsafeFileError, load_checkpoint
from iclr25.tsc_net.data import build_clips, load_dataset, simulate_scenes
from iclr25.tsc_net.metrics import summarize
from iclr25.tsc_net.model import TSCConfig, TSCNet
from iclr25.tsc_net.training import AugmentedScenes, build_model, predict_clips, train_model

SDD_MAX_STEP = 90.0  # official preprocessing: drop trajectories with a future step > 90 px in x or y


def train_command(cfg: Any, kind: str, data: Path | None, folder: Path, seed: int, device: str) -> dict:
    """Train variant `kind` on `data` (a Y-Net folder) or on freshly simulated scenes; save `model.pt`."""

    torch.set_num_threads(max(1, cfg.threads))
    if data is None:
        df, masks, _ = simulate_scenes(cfg.train_scenes, seed, max_clips=cfg.clips_per_scene)
        clips = build_clips(df)
        mask_list = [masks[s] for s in clips.scene_ids]
    else:
        clips, mask_list, _ = load_dataset(data, "train", SDD_MAX_STEP if cfg.arch == "sdd" else None)
    arch = arch_config(cfg)
    torch.manual_seed(seed)
    model = build_model(kind, arch)
    scenes = AugmentedScenes(mask_list, arch.n_classes, arch.map_scale, cfg.augment)
    from iclr25.shared.device import pick_device

    info = train_model(
        model, clips, scenes, cfg.train_steps, cfg.lr, seed, cfg.batch_peds, cfg.batch_cap, device=pick_device(device)
    )
    model.cpu()
    save_torch(folder / "model.pt", {"state_dict": model.state_dict(), "arch": dataclasses.asdict(model.cfg)})
    return {"model": kind, "train_peds": len(clips), **info}


def load_model(path: Path) -> TSCNet:
    """A model written by `train` (weights-only load; the architecture dict is validated against TSCConfig)."""
    ckpt = load_checkpoint(path, required_keys=("state_dict", "arch"), what="TSC-Net model.pt written by `train`")
    arch = ckpt["arch"]
    names = {f.name for f in dataclasses.fields(TSCConfig)}
    if not isinstance(arch, dict) or set(arch) - names:
        raise UnsafeFileError(f"{path} is not a TSC-Net model.pt: unknown architecture fields")
    try:
        model = TSCNet(TSCConfig(**arch))
        model.load_state_dict(ckpt["state_dict"])
    except (TypeError, RuntimeError, ValueError) as e:
        raise UnsafeFileError(
            f"{path} does not match the TSC-Net architecture it names ({str(e).splitlines()[0]})"
        ) from e
    return model.eval()


def _data(model: TSCNet, folder: Path, split: str, max_peds: int):

    sdd = model.cfg.goal_window == TSCConfig.sdd().goal_window
    clips, masks, _ = load_dataset(folder, split, SDD_MAX_STEP if sdd else None)
    clips = cap_clips(clips, max_peds)
    return clips, masks, AugmentedScenes(masks, model.cfg.n_classes, model.cfg.map_scale, False)


def eval_command(model: TSCNet, folder: Path, split: str, k: int, max_peds: int, seed: int) -> dict:
    """minADE/minFDE/goal-FDE/violation rate of `model` on `<folder>/<split>.pkl`, overall and per subset."""
    clips, masks, scenes = _data(model, folder, split, max_peds)
    traj, goals, _ = predict_clips(model, clips, scenes, 5, k // 5, seed)
    return summarize(traj, goals, clips.pos[:, 8:], masks, clips.scene, clips.irregular)


def predict_command(model: TSCNet, folder: Path, split: str, k: int, max_peds: int, seed: int, out: Path) -> dict:
    """Sample K trajectories per pedestrian, save predictions.npz and a plot over the scene of the first clip."""

    clips, masks, scenes = _data(model, folder, split, max_peds)
    traj, goals, secs = predict_clips(model, clips, scenes, 5, k // 5, seed)
    save_arrays(out / "predictions.npz", {"traj": traj, "goals": goals, "obs": clips.pos[:, :8], "group": clips.group})
    plot_samples(out / "samples.png", clips, masks, {"TSC-Net": traj})
    return {"pedestrians": len(clips), "k": k, "seconds": round(secs, 2)}


def arch_config(cfg: Any):
    """The `TSCConfig` a reproduction config asks for (TSC-lite or the official SDD architecture)."""
    from iclr25.tsc_net.model import TSCConfig

    quirks = dict(
        keys_are_inputs=cfg.quirk_keys_input, softmax_then_divide=cfg.quirk_softmax_divide,
        ln_gain_normal=cfg.quirk_ln_normal, step_crop_at_target=cfg.quirk_step_crop_target,
    )  # fmt: skip
    if cfg.arch == "sdd":
        return TSCConfig.sdd(
            goal_window=cfg.goal_cells * cfg.goal_cell_px, n_goal=cfg.goal_cells, step_window=3 * cfg.step_cell_px,
            heads=cfg.heads, layers=cfg.layers, latent=cfg.latent, **quirks,
        )  # fmt: skip
    return TSCConfig.quick(
        d_model=cfg.d_model, goal_window=cfg.goal_cells * cfg.goal_cell_px, n_goal=cfg.goal_cells,
        step_window=3 * cfg.step_cell_px, heads=cfg.heads, layers=cfg.layers, latent=cfg.latent, **quirks,
    )  # fmt: skip


def cap_clips(clips, max_peds: int):
    """The first whole clips holding at most `max_peds` pedestrians (at least one clip)."""
    keep, total = [], 0
    for g in np.unique(clips.group):
        idx = np.flatnonzero(clips.group == g)
        if keep and total + len(idx) > max_peds:
            break
        keep.append(idx)
        total += len(idx)
    return clips.subset(np.sort(np.concatenate(keep)))


def plot_samples(path: Path, test, masks: list[np.ndarray], samples: dict[str, np.ndarray]) -> str:
    """Sampled trajectories of the first clip's pedestrians over its scene, one panel per method."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    g = test.group[0]
    sel = np.flatnonzero(test.group == g)
    mask = masks[test.scene[sel[0]]]
    fig, axes = plt.subplots(1, len(samples), figsize=(3.2 * len(samples), 3.4), squeeze=False)
    for ax, (name, traj) in zip(axes[0], samples.items(), strict=True):
        ax.imshow(mask, cmap="tab10", vmin=0, vmax=9, alpha=0.45)
        for i in sel:
            for k in range(traj.shape[0]):
                ax.plot(traj[k, i, :, 0], traj[k, i, :, 1], color="tab:red", lw=0.5, alpha=0.5)
            ax.plot(test.pos[i, :8, 0], test.pos[i, :8, 1], color="black", lw=1.5)
            ax.plot(test.pos[i, 7:, 0], test.pos[i, 7:, 1], color="tab:green", lw=1.5)
        ax.set_title(name, fontsize=9)
        ax.set_axis_off()
    fig.tight_layout()
    from iclr25.shared.results import save_figure

    save_figure(fig, path, dpi=70)
    plt.close(fig)
    return path.name
