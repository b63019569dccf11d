"""Reproduction of TSC-Net's claims (spec §6a, §9.7) on simulated scenes: `run(scale)` and `claims(metrics, cfg)`.

Gated (no training, deterministic): the simulator puts no ground-truth point on a non-walkable pixel; CV-K20 beats
CV; the non-learned geodesic-exits reference beats 0.8 x CV-K20 with fewer obstacle violations. Reported: TSC-lite vs
CV-K20, scene-aware vs scene-blind, cell goals vs goal regression on irregular agents (benchmark).
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

import numpy as np

from iclr25.shared.results import Claim, Report
from iclr25.shared.run import Run, reproduction
from iclr25.tsc_net.config import PRESETS, Config
from iclr25.tsc_net.workflows import arch_config, cap_clips, plot_samples

SLUG = "tsc-net"


def gt_on_obstacles(clips, masks: list[np.ndarray]) -> int:
    """Number of ground-truth points on non-walkable pixels (or outside the map)."""
    from iclr25.tsc_net.data import pixel_of, walkable

    bad = 0
    for s in np.unique(clips.scene):
        px = pixel_of(clips.pos[clips.scene == s]).reshape(-1, 2)
        h, w = masks[s].shape
        inside = (px[:, 0] >= 0) & (px[:, 0] < w) & (px[:, 1] >= 0) & (px[:, 1] < h)
        bad += int((~inside).sum()) + int((~walkable(masks[s])[px[inside, 1], px[inside, 0]]).sum())
    return bad


def load_data(cfg: Config, seed: int, folder: Path):
    """Simulate train/test scenes, write them as Y-Net pickles + mask PNGs, read them back through the loaders."""
    from iclr25.tsc_net.data import load_dataset, simulate_scenes, write_ynet

    kw = dict(size=cfg.scene_size, irregular_frac=cfg.irregular_frac, steps=cfg.sim_steps, clip_stride=cfg.clip_stride)
    df, masks, exits = simulate_scenes(cfg.train_scenes, seed, max_clips=cfg.clips_per_scene, prefix="train", **kw)
    write_ynet(folder, "train", df, masks, exits)
    df, masks, exits = simulate_scenes(
        cfg.test_scenes, seed + 10_000, max_clips=cfg.test_clips_per_scene, prefix="test", **kw
    )
    write_ynet(folder, "test", df, masks, exits)
    train, train_masks, _ = load_dataset(folder, "train")
    test, test_masks, exits = load_dataset(folder, "test")
    return train, train_masks, test, test_masks, [exits[s] for s in test.scene_ids]


def measure(cfg: Config, run: Any) -> tuple[dict[str, Any], dict[str, float], list[str]]:
    """Simulate, evaluate the baselines, train and evaluate the learned models; (metrics, throughput, figures)."""
    import torch

    from iclr25.tsc_net.baselines import ConstantVelocity, geodesic_exits
    from iclr25.tsc_net.metrics import summarize
    from iclr25.tsc_net.training import AugmentedScenes, build_model, predict_clips, train_model

    device = run.device  # resolving the device configures torch's threads: set ours after it
    torch.set_num_threads(max(1, cfg.threads))
    with tempfile.TemporaryDirectory() as tmp:
        train, train_masks, test, test_masks, exits = load_data(cfg, run.seed, Path(tmp))
    test = cap_clips(test, cfg.max_test_peds)
    obs, fut = test.pos[:, :8], test.pos[:, 8:]
    metrics: dict[str, Any] = {
        "data": {
            "train_peds": len(train), "train_clips": len(np.unique(train.group)), "test_peds": len(test),
            "test_clips": len(np.unique(test.group)), "test_irregular": int(test.irregular.sum()),
            "gt_on_obstacles": gt_on_obstacles(train, train_masks) + gt_on_obstacles(test, test_masks),
        }
    }  # fmt: skip
    ev = lambda pred, goals=None: summarize(pred, goals, fut, test_masks, test.scene, test.irregular)  # noqa: E731
    rng = np.random.default_rng(run.seed)
    metrics["cv"] = ev(ConstantVelocity().predict(obs))
    metrics["cv_k20"] = ev(ConstantVelocity(20).predict(obs, rng))
    geo = geodesic_exits(obs, test.scene, test_masks, exits)
    metrics["geodesic_exits"] = ev(geo)
    throughput: dict[str, float] = {}
    samples = {"geodesic_exits": geo}
    arch = arch_config(cfg)
    train_scenes = AugmentedScenes(train_masks, arch.n_classes, arch.map_scale, cfg.augment)
    test_scenes = AugmentedScenes(test_masks, arch.n_classes, arch.map_scale, False)
    for kind in cfg.models:
        runs = []
        for s in range(cfg.seeds):
            seed = run.seed + s
            torch.manual_seed(seed)
            model = build_model(kind, arch)
            log = lambda d, step, k=kind, s=s: run.logger.log({f"{k}/seed{s}/{n}": v for n, v in d.items()}, step)  # noqa: E731
            info = train_model(
                model, train, train_scenes, cfg.train_steps, cfg.lr, seed, cfg.batch_peds, cfg.batch_cap,
                progress=lambda it, k=kind: run.progress(it, desc=f"train {k}", unit="step"), log=log,
                device=device,
            )  # fmt: skip
            traj, goals, secs = predict_clips(model, test, test_scenes, cfg.n_cvae, cfg.n_cell, seed, device=device)
            row = ev(traj, goals)
            row["train"] = {k: info[k] for k in ("train_s", "train_peds", "train_peds_per_s", "total")}
            row["predict_s"] = secs
            runs.append(row)
            if s == 0:
                samples[kind] = traj
                throughput[f"{kind}_train_peds_per_s"] = info["train_peds_per_s"]
                throughput[f"{kind}_predict_peds_per_s"] = len(test) / max(secs, 1e-9)
        metrics[kind] = runs[0] if cfg.seeds == 1 else _mean_runs(runs)
    figures = []
    if cfg.plot:
        figures.append(plot_samples(run.dir / "samples.png", test, test_masks, samples))
    return metrics, throughput, figures


def _mean_runs(runs: list[dict]) -> dict:
    """Mean over seeds of each numeric entry (plus the per-seed rows)."""

    def avg(items):
        if isinstance(items[0], dict):
            return {k: avg([i[k] for i in items]) for k in items[0]}
        return float(np.mean(items))

    return {**avg(runs), "per_seed": runs}


def claims(metrics: dict[str, Any], cfg: Config) -> list[Claim]:
    """Gated simulator/baseline checks and the reported learned-model comparisons (spec §9.7)."""
    cv, cvk, geo = (metrics[k]["all"] for k in ("cv", "cv_k20", "geodesic_exits"))
    bad = metrics["data"]["gt_on_obstacles"]
    out = [
        Claim("sim_gt_walkable", "the simulator puts no ground-truth point on a non-walkable pixel", None, bad,
              "== 0 points", bad == 0, True),
        Claim("cvk20_beats_cv", "CV-K20 minFDE20 < CV minFDE (px)", None, round(cvk["minFDE"], 3),
              f"< CV {cv['minFDE']:.3f}", cvk["minFDE"] < cv["minFDE"], True, 0.5),
        Claim("geodesic_vs_cvk20", "geodesic-exits minFDE20 / CV-K20 minFDE20 (the scene matters)", None,
              round(geo["minFDE"] / cvk["minFDE"], 4), f"< {cfg.geo_ratio}", geo["minFDE"] < cfg.geo_ratio * cvk["minFDE"],
              True, 0.1),
        Claim("geodesic_violations", "geodesic-exits obstacle-violation rate < CV-K20's", None,
              round(geo["violation"], 4), f"< CV-K20 {cvk['violation']:.4f}", geo["violation"] < cvk["violation"], True,
              0.02),
    ]  # fmt: skip
    if "tsc" in metrics:
        tsc = metrics["tsc"]["all"]
        out.append(
            Claim("tsc_vs_cvk20", "TSC-lite minFDE20 / CV-K20 minFDE20", None, round(tsc["minFDE"] / cvk["minFDE"], 4),
                  f"<= {cfg.tsc_ratio}", tsc["minFDE"] <= cfg.tsc_ratio * cvk["minFDE"], False, 1.0)
        )  # fmt: skip
    if "tsc" in metrics and "blind" in metrics:
        tsc, blind = metrics["tsc"]["all"], metrics["blind"]["all"]
        out += [
            Claim("violations_scene_vs_blind", "obstacle-violation rate, scene-aware TSC-lite < scene-blind", None,
                  round(tsc["violation"], 4), f"< blind {blind['violation']:.4f}", tsc["violation"] < blind["violation"],
                  False, 1.0),
            Claim("fde_scene_vs_blind", "TSC-lite minFDE20 / scene-blind minFDE20", None,
                  round(tsc["minFDE"] / blind["minFDE"], 4), f"<= {cfg.blind_ratio}",
                  tsc["minFDE"] <= cfg.blind_ratio * blind["minFDE"], False, 1.0),
        ]  # fmt: skip
    if "tsc" in metrics and "goalreg" in metrics and "irregular" in metrics["tsc"]:
        a, b = metrics["tsc"]["irregular"]["minFDE"], metrics["goalreg"]["irregular"]["minFDE"]
        out.append(
            Claim("cells_vs_regression_irregular", "irregular agents: minFDE20 of cell goals < goal regression", None,
                  round(a, 3), f"< regression {b:.3f}", a < b, False, 5.0)
        )  # fmt: skip
    return out


def _check_dataset(scale: str, config: Config) -> None:
    """Refuse a real-data preset before a run folder is made: only the simulated scenes are built."""
    if config.dataset != "sim":
        raise ValueError(
            f"dataset={config.dataset}: the real-data reproduction is not built yet; use `train --data` with the "
            "loaders (see README, Not done)"
        )


@reproduction(SLUG, PRESETS, check=_check_dataset)
def run(r: Run) -> Report:
    """Run the `scale` preset (ci, quick, benchmark, full) into `out`; returns the Report with its claims."""
    cfg = r.config
    metrics, throughput, figures = measure(cfg, r)
    notes = (
        "Simulated scenes (spec §6a); numbers in pixels. The paper's tables were not found: no paper values. "
        "CPU, torch threads = config.threads."
    )
    return r.report(claims(metrics, cfg), metrics, throughput=throughput, figures=figures, notes=notes)


__all__ = ["claims", "measure", "run"]
