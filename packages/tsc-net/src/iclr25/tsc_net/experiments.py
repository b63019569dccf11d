"""TSC-Net's experiments (spec §6a, §9.7): plain metrics in, plain metrics out.

Simulated scenes (`measure`): the simulator's ground truth checked against the masks, CV, CV-K20 and the
non-learned geodesic-exits reference, then each learned model trained and evaluated. Real data (`measure_sdd`):
the Y-Net SDD pickles and masks in `data_dir`, the official architecture trained with checkpoints, minADE20 /
minFDE20 overall and per scene.
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from iclr25.shared.parallel import map_in_processes
from iclr25.shared.run import is_follower
from iclr25.tsc_net.config import WORKERS_AND_SCALE_OUT, Config
from iclr25.tsc_net.workflows import arch_config, cap_clips, plot_samples

CHECKPOINT_EVERY = 2000  # training steps between checkpoints of the real-data run (`--checkpoint-every` overrides it)
SDD_SOURCE = (
    "get Y-Net's preprocessed SDD (github.com/HarshayuGirase/Human-Path-Prediction, ynet README, Google Drive link): "
    "data/SDD/{train,test}_trajnet.pkl and data/SDD_semantic_maps/{train,test}_masks/<sceneId>_mask.png, all put "
    "in that one folder"
)


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

    if cfg.workers > 1 and run.scale_out.wants_fabric:  # before the data work
        raise ValueError(WORKERS_AND_SCALE_OUT)
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
    metrics.update(_train_and_predict(cfg, run, train, test, train_masks, test_masks, ev, device, samples, throughput))
    figures = []
    if cfg.plot and not is_follower():  # rank 0 writes the figure
        figures.append(plot_samples(run.dir / "samples.png", test, test_masks, samples))
    return metrics, throughput, figures


def _train_and_predict(
    cfg: Config, run: Any, train, test, train_masks, test_masks, ev, device: str,
    samples: dict[str, np.ndarray], throughput: dict[str, float], checkpoints: bool = False,
) -> dict[str, Any]:  # fmt: skip
    """Train every model of `cfg.models` at each seed, predict the test clips, and return its summary (one seed's
    row, or the mean over seeds); the first seed's predictions go into `samples`, its speeds into `throughput`.
    With `checkpoints` every training run saves into the run folder and continues on `--resume auto`. With
    `cfg.workers` > 1 the runs (independent: each seeded by its own seed alone) train in spawned processes
    (`iclr25.shared.parallel.map_in_processes`), their logged rows and results taken in the sequential order."""
    jobs = [(kind, s) for kind in cfg.models for s in range(cfg.seeds)]
    runs: dict[str, list[dict[str, Any]]] = {kind: [] for kind in cfg.models}

    def logger(kind: str, s: int):
        return lambda row, step: run.logger.log({f"{kind}/seed{s}/{n}": v for n, v in row.items()}, step)

    def finished(index: int, fitted: tuple) -> None:
        kind, s = jobs[index]
        info, traj, goals, secs = fitted[:4]
        row = ev(traj, goals)
        row["train"] = {k: info[k] for k in ("train_s", "train_peds", "train_peds_per_s", "total") if k in info}
        row["predict_s"] = secs
        runs[kind].append(row)
        if s == 0:
            samples[kind] = traj
            throughput[f"{kind}_train_peds_per_s"] = info["train_peds_per_s"]
            throughput[f"{kind}_predict_peds_per_s"] = len(test) / max(secs, 1e-9)

    if cfg.workers > 1:  # the simulated presets only (Config refuses workers > 1 on real data, which checkpoints)

        def logged(index: int, fitted: tuple) -> None:
            for step, row in fitted[4]:
                logger(*jobs[index])(row, step)
            finished(index, fitted)

        items = [(kind, run.seed + s, cfg, train, test, train_masks, test_masks, device) for kind, s in jobs]
        map_in_processes(
            fit_in_worker, items, cfg.workers, threads=cfg.threads, desc="train", unit="model", on_result=logged
        )
    else:
        scenes = augmented_scenes(cfg, train_masks, test_masks)
        for index, (kind, s) in enumerate(jobs):
            if checkpoints:  # several processes, a precision, checkpoints every CHECKPOINT_EVERY steps, resume
                options = run.training_options(f"{kind}-seed{s}", CHECKPOINT_EVERY)
            else:  # several processes and a precision only: the simulated presets are not checkpointed
                options = {"fabric": run.fabric} if run.scale_out.wants_fabric else {}
            progress = lambda it, k=kind: run.progress(it, desc=f"train {k}", unit="step")  # noqa: E731
            fitted = fit(kind, run.seed + s, cfg, train, test, *scenes, device, logger(kind, s), progress, options)
            finished(index, fitted)
    return {kind: rows[0] if cfg.seeds == 1 else _mean_runs(rows) for kind, rows in runs.items()}


def augmented_scenes(cfg: Config, train_masks: list[np.ndarray], test_masks: list[np.ndarray]) -> tuple[Any, Any]:
    """The `AugmentedScenes` of the training maps (x 8 when `cfg.augment`) and of the test maps (as they are)."""
    from iclr25.tsc_net.training import AugmentedScenes

    arch = arch_config(cfg)
    return (
        AugmentedScenes(train_masks, arch.n_classes, arch.map_scale, cfg.augment),
        AugmentedScenes(test_masks, arch.n_classes, arch.map_scale, False),
    )


def fit(
    kind: str, seed: int, cfg: Config, train, test, train_scenes, test_scenes, device: str,
    log: Callable | None = None, progress: Callable | None = None, options: dict[str, Any] | None = None,
) -> tuple[dict[str, float], np.ndarray, np.ndarray, float]:  # fmt: skip
    """Train model `kind` of `cfg` from `seed` on `train` (`options`: `fabric`, `checkpointer`, `resume`), then
    sample best-of-K for `test`: (training info, trajectories, goals, prediction seconds)."""
    import torch

    from iclr25.tsc_net.training import build_model, predict_clips, train_model

    options = options or {}
    torch.manual_seed(seed)
    model = build_model(kind, arch_config(cfg))
    info = train_model(
        model, train, train_scenes, cfg.train_steps, cfg.lr, seed, cfg.batch_peds, cfg.batch_cap,
        progress=progress, log=log, device=device, **options,
    )  # fmt: skip
    here = options["fabric"].device if "fabric" in options else device  # this process's device
    return (info, *predict_clips(model, test, test_scenes, cfg.n_cvae, cfg.n_cell, seed, device=here))


def fit_in_worker(job: tuple) -> tuple:
    """`fit` in a worker process, `job` = (kind, seed, cfg, train, test, train_masks, test_masks, device): its scenes
    built here, its logged rows appended to the result as [(step, row)] for the parent to log."""
    kind, seed, cfg, train, test, train_masks, test_masks, device = job
    rows: list[tuple[int, dict[str, float]]] = []
    scenes = augmented_scenes(cfg, train_masks, test_masks)
    fitted = fit(kind, seed, cfg, train, test, *scenes, device, log=lambda row, step: rows.append((step, row)))
    return (*fitted, rows)


def _mean_runs(runs: list[dict]) -> dict:
    """Mean over seeds of each numeric entry (plus the per-seed rows)."""

    def avg(items):
        if isinstance(items[0], dict):
            return {k: avg([i[k] for i in items]) for k in items[0]}
        return float(np.mean(items))

    return {**avg(runs), "per_seed": runs}


def sdd_pickle(folder: Path, split: str) -> str | None:
    """The name (without .pkl) of `split`'s pickle in `folder`: `<split>.pkl` or Y-Net's `<split>_trajnet.pkl`."""
    for name in (split, f"{split}_trajnet"):
        if (folder / f"{name}.pkl").is_file():
            return name
    return None


def missing_sdd_files(folder: Path) -> str | None:
    """What a real-data run would lack in `folder` (one line, with where to get it), or None when all is there:
    the folder, `train.pkl` and `test.pkl` (or Y-Net's `*_trajnet.pkl`), and every scene's `<sceneId>_mask.png`."""
    from iclr25.tsc_net.data import load_ynet_pickle

    where = f"{folder} ({folder.resolve()})"
    if not folder.is_dir():
        return f"dataset=sdd: data_dir {where} is not a folder; {SDD_SOURCE}"
    names = {split: sdd_pickle(folder, split) for split in ("train", "test")}
    lacking = [f"{split}.pkl (or {split}_trajnet.pkl)" for split, name in names.items() if name is None]
    if lacking:
        return f"dataset=sdd: data_dir {where} lacks {' and '.join(lacking)}; {SDD_SOURCE}"
    for name in names.values():
        scenes = sorted(map(str, load_ynet_pickle(folder / f"{name}.pkl")["sceneId"].unique()))
        absent = [s for s in scenes if not (folder / f"{s}_mask.png").is_file()]
        if absent:
            shown = ", ".join(f"{s}_mask.png" for s in absent[:3]) + (", ..." if len(absent) > 3 else "")
            return (
                f"dataset=sdd: data_dir {where} lacks the masks of {len(absent)} of the {len(scenes)} scenes of "
                f"{name}.pkl ({shown}); {SDD_SOURCE}"
            )
    return None


def measure_sdd(cfg: Config, run: Any) -> tuple[dict[str, Any], dict[str, float], list[str]]:
    """Real data: load the SDD train/test splits from `cfg.data_dir` (official filter: no future step > 90 px),
    evaluate CV and CV-K20, train each model of `cfg.models` with checkpoints (`--resume auto` continues them) and
    evaluate best-of-K (K = n_cvae x n_cell) overall and per scene; (metrics, throughput, figures)."""
    import torch

    from iclr25.tsc_net.baselines import ConstantVelocity
    from iclr25.tsc_net.data import load_dataset
    from iclr25.tsc_net.metrics import summarize
    from iclr25.tsc_net.workflows import SDD_MAX_STEP

    device = run.device  # resolving the device configures torch's threads: set ours after it
    torch.set_num_threads(max(1, cfg.threads))
    folder = Path(cfg.data_dir)
    train, train_masks, _ = load_dataset(folder, sdd_pickle(folder, "train") or "train", SDD_MAX_STEP)
    test, test_masks, _ = load_dataset(folder, sdd_pickle(folder, "test") or "test", SDD_MAX_STEP)
    test = cap_clips(test, cfg.max_test_peds)
    obs, fut = test.pos[:, :8], test.pos[:, 8:]
    metrics: dict[str, Any] = {
        "data": {
            "data_dir": str(folder.resolve()), "train_peds": len(train), "train_clips": len(np.unique(train.group)),
            "train_scenes": len(train.scene_ids), "test_peds": len(test), "test_clips": len(np.unique(test.group)),
            "test_scenes": len(np.unique(test.scene)),
            "gt_on_obstacles": gt_on_obstacles(train, train_masks) + gt_on_obstacles(test, test_masks),
        }
    }  # fmt: skip

    def ev(pred, goals=None):
        row = summarize(pred, goals, fut, test_masks, test.scene, test.irregular)
        scenes = {}
        for s in np.unique(test.scene):
            sel = test.scene == s
            part = summarize(pred[:, sel], None if goals is None else goals[:, sel], fut[sel], test_masks,
                             test.scene[sel], test.irregular[sel])["all"]  # fmt: skip
            scenes[test.scene_ids[s]] = {k: part[k] for k in ("minADE", "minFDE", "n")}
        row["per_scene"] = scenes
        row["scene_mean"] = {k: float(np.mean([v[k] for v in scenes.values()])) for k in ("minADE", "minFDE")}
        return row

    rng = np.random.default_rng(run.seed)
    metrics["cv"] = ev(ConstantVelocity().predict(obs))
    metrics["cv_k20"] = ev(ConstantVelocity(cfg.n_cvae * cfg.n_cell).predict(obs, rng))
    throughput: dict[str, float] = {}
    samples: dict[str, np.ndarray] = {}
    metrics.update(
        _train_and_predict(
            cfg, run, train, test, train_masks, test_masks, ev, device, samples, throughput, checkpoints=True
        )
    )
    figures = []
    if cfg.plot and samples and not is_follower():
        figures.append(plot_samples(run.dir / "samples.png", test, test_masks, samples))
    return metrics, throughput, figures
