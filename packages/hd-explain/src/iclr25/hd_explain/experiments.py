"""The experiments (the spec's Sec. 6 plan): each `measure_*` runs one section and returns plain metrics.

A section trains its classifiers (`training.train_new_classifier`), draws its probe sets and measures every method's
hit rate / coverage with `evaluation.evaluate_explainers` (each method fitted on the pool once); the mislabel section
measures the recall of flipped labels with `evaluation.mislabel_recall_curves`. `reproduce` decides which sections
run and `claims` judges what they measured.
"""

from __future__ import annotations

from functools import partial
from typing import Any

import numpy as np

from iclr25.hd_explain.config import Config

IMAGE_METHODS = ("hd", "hd_imq", "hd_linear", "hd_star", "hd_star_imq", "if", "tracin", "rps")
IMAGE_METHODS += ("sim_input_rbf", "sim_repr_cosine")
DEBUG_METHODS = ("hd", "hd_star", "if", "rps", "tracin")  # the mislabel section's self-scores


def _methods(cfg: Config, section: str) -> dict[str, tuple[str, dict[str, Any]]]:
    """Method name -> (registry name, options) measured in a section (rectangular, digits, images or mislabel)."""
    last_layer = {"loss": cfg.loss}
    core: dict[str, tuple[str, dict[str, Any]]] = {
        "if": ("if", {**last_layer, "damping": cfg.if_damping}),
        "tracin": ("tracin", last_layer),
        "rps": ("rps", {"lmbd": cfg.rps_lambda, "max_iter": cfg.rps_iters}),
        "sim_input_rbf": ("sim", {"space": "input", "metric": "rbf"}),
    }
    if section == "rectangular":
        return {
            "hd": ("hd", {"bandwidth": cfg.rect_bandwidth}),
            "hd_dim_d": ("hd", {"bandwidth": "dim_d"}),
            "hd_imq": ("hd", {"kernel": "imq"}),
            "hd_star": ("hd*", {"bandwidth": cfg.rect_bandwidth}),
            **core,
        }
    methods = {
        "hd": ("hd", {"bandwidth": "dim_d"}),  # the official default
        "hd_dim_x": ("hd", {"bandwidth": "dim_x"}),
        "hd_imq": ("hd", {"kernel": "imq"}),
        "hd_linear": ("hd", {"kernel": "linear"}),
        "hd_term1": ("hd", {"rbf_parts": ("score",)}),  # ablation: k s.s' only
        "hd_star": ("hd*", {}),
        "hd_star_imq": ("hd*", {"kernel": "imq"}),
        **core,
        "sim_input_cosine": ("sim", {"space": "input", "metric": "cosine"}),
        "sim_repr_rbf": ("sim", {"space": "representation", "metric": "rbf"}),
        "sim_repr_cosine": ("sim", {"space": "representation", "metric": "cosine"}),
    }
    chosen = {"images": IMAGE_METHODS, "mislabel": DEBUG_METHODS}.get(section)
    return methods if chosen is None else {name: methods[name] for name in chosen}


def _summary(per_seed: dict[str, list[list[float]]], spread: bool = True) -> dict[str, dict[str, float]]:
    """Each method's mean hit rate and coverage over its [hit, coverage] rows (`spread`: and the hit rate's sd, min)."""
    out = {}
    for name, rows in per_seed.items():
        a = np.asarray(rows, dtype=float)
        out[name] = {"hit": float(a[:, 0].mean()), "coverage": float(a[:, 1].mean())}
        if spread:
            out[name].update(hit_sd=float(a[:, 0].std()), hit_min=float(a[:, 0].min()))
    return out


class _Rows:
    """A logger that keeps the rows of a seed's training (in a worker process) for the run's logger."""

    def __init__(self) -> None:
        self.rows: list[tuple[dict[str, Any], int]] = []

    def log(self, row: dict[str, Any], step: int) -> None:
        self.rows.append((row, step))


def _seeds(run: Any, cfg: Config, function: Any, seeds: range, desc: str) -> list[dict[str, Any]]:
    """`function(s)` for every seed, in `cfg.workers` spawned processes (each seed depends on its seed alone, so the
    results are those of one process); each seed's training rows go to the run's logger in seed order."""
    from iclr25.shared.parallel import map_in_processes

    def log(_: int, result: dict[str, Any]) -> None:
        for row, step in result["rows"]:
            run.logger.log(row, step=step)

    return map_in_processes(function, seeds, cfg.workers, desc=desc, unit="seed", on_result=log)


def _mlp_seed(cfg: Config, section: str, X: np.ndarray, y: np.ndarray, n_classes: int, s: int) -> dict[str, Any]:
    """One seed of an MLP section: its MLP, trained whole in this process (seconds on one CPU core: not split over
    Fabric processes), every method's [hit, coverage] per probe set (`hit`), the timings and the training rows. A
    digits seed measures its probes at both noise scales (`hit` rows: easy, hard) and, with the mislabel section,
    runs `_mislabel_seed` on its model (`mislabel`)."""
    from iclr25.hd_explain.evaluation import evaluate_explainers, probe_sets
    from iclr25.hd_explain.training import train_new_classifier

    if section == "rectangular":
        hidden, scales = cfg.rect_hidden, (cfg.noise_scale,)
        train = {"epochs": cfg.rect_epochs, "lr": cfg.rect_lr, "batch_size": cfg.rect_batch, "device": "cpu"}
    else:
        hidden, scales = cfg.digits_hidden, (cfg.noise_scale, cfg.hard_noise_scale)
        train = {"epochs": cfg.digits_epochs, "lr": cfg.digits_lr, "batch_size": cfg.digits_batch, "device": "cpu"}
    rows, times = _Rows(), {}
    log = {"logger": rows, "prefix": f"{section}/seed{s}/"}
    model, stats = train_new_classifier("mlp", X, y, n_classes, s, hidden=hidden, **train, **log)
    probes = [pset for scale in scales for pset in probe_sets(X, cfg.probes, [s], "noise", scale)]
    hit = evaluate_explainers(model, X, y, n_classes, _methods(cfg, section), probes, cfg.k, times=times)
    part = {"hit": hit, "stats": stats, "times": times, "rows": rows.rows}
    if section == "digits" and "mislabel" in cfg.sections:
        part["mislabel"] = _mislabel_seed(cfg, model, X, y, train, rows, s)
    return part


def _digits_seed(cfg: Config, s: int) -> dict[str, Any]:
    """One digits seed (`_mlp_seed`) on its own pool of the 8 x 8 digits."""
    from iclr25.hd_explain.data import digits

    X, y, _, _ = digits(cfg.digits_pool, s)
    return _mlp_seed(cfg, "digits", X, y, 10, s)


def _mislabel_seed(cfg: Config, model: Any, X: np.ndarray, y: np.ndarray, train: dict, rows: _Rows, s: int) -> tuple:
    """A digits seed's mislabel section: flip `cfg.n_flipped` labels, retrain the MLP on them, and each debugging
    method's recall@k curve for the clean ("official") and the retrained ("realistic") model."""
    from iclr25.hd_explain.data import flip_labels
    from iclr25.hd_explain.evaluation import mislabel_recall_curves
    from iclr25.hd_explain.training import train_new_classifier

    y_bad, flipped = flip_labels(y, cfg.n_flipped, 10, s)
    log = {"logger": rows, "prefix": f"mislabel/seed{s}/"}
    seed = s + cfg.realistic_seed_offset
    retrained, rstats = train_new_classifier("mlp", X, y_bad, 10, seed, hidden=cfg.digits_hidden, **train, **log)
    nets = {"official": model, "realistic": retrained}
    return rstats["train_acc"], mislabel_recall_curves(nets, X, y_bad, flipped, 10, _methods(cfg, "mislabel"))


def _training(parts: list[dict[str, Any]]) -> dict[str, Any]:
    """The seeds' mean training accuracy and speed, and every method's seconds summed over the seeds."""
    times: dict[str, dict[str, float]] = {}
    for part in parts:
        for name, rec in part["times"].items():
            into = times.setdefault(name, {"fit_s": 0.0, "explain_s": 0.0, "explained": 0})
            for key, value in rec.items():
                into[key] += value
    return {
        "train_acc": float(np.mean([p["stats"]["train_acc"] for p in parts])),
        "train_samples_per_s": float(np.mean([p["stats"]["train_samples_per_s"] for p in parts])),
        "seconds": {m: {kk: round(v, 4) for kk, v in t.items()} for m, t in times.items()},
    }


def _per_seed(parts: list[dict[str, Any]], j: int) -> dict[str, list[list[float]]]:
    """Method name -> its [hit, coverage] on probe set `j` of every seed."""
    return {name: [p["hit"][name][j] for p in parts] for name in parts[0]["hit"]}


def measure_rectangular(cfg: Config, run: Any, seed: int) -> dict[str, Any]:
    """Rectangular 2-D: every method's hit rate / coverage over `cfg.rect_seeds` trained MLPs (and the data)."""
    from iclr25.hd_explain.data import rectangular

    X, y = rectangular(cfg.rect_points, (cfg.rect_grid, cfg.rect_grid), cfg.rect_classes, cfg.rect_data_seed)
    one = partial(_mlp_seed, cfg, "rectangular", X, y, cfg.rect_classes)
    parts = _seeds(run, cfg, one, range(seed, seed + cfg.rect_seeds), "rectangular")
    per_seed = _per_seed(parts, 0)
    training = _training(parts)
    return {"mean": _summary(per_seed), "per_seed": per_seed, **training, "data": {"X": X, "y": y}}


def measure_digits_and_mislabel(cfg: Config, run: Any, seed: int) -> tuple[dict[str, Any], dict[str, Any] | None]:
    """Digits hit rate / coverage (easy and hard noise) per method and seed; with the mislabel section, the
    recall of flipped labels by self-scores of the clean and of the retrained model (else None)."""
    parts = _seeds(run, cfg, partial(_digits_seed, cfg), range(seed, seed + cfg.digits_seeds), "digits")
    per_seed, per_seed_hard = _per_seed(parts, 0), _per_seed(parts, 1)
    training = _training(parts)
    digits_metrics = {
        "mean": _summary(per_seed),
        "per_seed": per_seed,
        "hard_noise": {"scale": cfg.hard_noise_scale, "mean": _summary(per_seed_hard), "per_seed": per_seed_hard},
        **training,
    }
    if "mislabel" not in cfg.sections:
        return digits_metrics, None
    recalls: dict[str, dict[str, list[float]]] = {"official": {}, "realistic": {}}
    curves: dict[str, dict[str, list[float]]] = {"official": {}, "realistic": {}}
    for _, by_model in (p["mislabel"] for p in parts):
        for variant, by_method in by_model.items():
            for name, recall in by_method.items():
                recalls[variant].setdefault(name, []).append(float(recall[cfg.n_flipped - 1]))
                curves[variant].setdefault(name, []).append(recall.tolist())
    mislabel = {
        "n_flipped": cfg.n_flipped,
        "chance_recall": cfg.n_flipped / cfg.digits_pool,
        "recall_at_flipped": {v: {m: float(np.mean(r)) for m, r in d.items()} for v, d in recalls.items()},
        "recall_at_flipped_per_seed": recalls,
        "realistic_train_acc_on_corrupted": float(np.mean([p["mislabel"][0] for p in parts])),
        "curves": {v: {m: np.mean(c, 0).tolist() for m, c in d.items()} for v, d in curves.items()},
    }
    return digits_metrics, mislabel


def measure_images(cfg: Config, run: Any, seed: int) -> dict[str, Any]:
    """ResNet-18 on CIFAR-10 (or synthetic images): hit rate / coverage per perturbation, method and RBF
    temperature, and each method's seconds per 100 explanations."""
    from iclr25.hd_explain.data import cifar10_or_synthetic
    from iclr25.hd_explain.evaluation import evaluate_explainers, probe_sets
    from iclr25.hd_explain.training import train_new_classifier

    X, y, source = cifar10_or_synthetic(cfg.image_dataset, cfg.data_dir, cfg.image_train_size, cfg.image_size, seed)
    model, stats = train_new_classifier(
        "resnet18",
        X,
        y,
        10,
        seed,
        width=cfg.image_width,
        epochs=cfg.image_epochs,
        lr=cfg.image_lr,
        batch_size=cfg.image_batch,
        device=run.device,
        augment=source == "cifar10",
        progress=lambda it: run.progress(it, desc="train resnet18", unit="epoch"),
        logger=run.logger,
        prefix="resnet18/",
        **run.training_options("resnet18", cfg.checkpoint_every),
    )
    model.float()  # explained in float32 whatever --precision trained it in (a no-op without one)
    pool, pool_y = X[:: cfg.pool_every], y[:: cfg.pool_every]
    n, seeds = cfg.image_seeds, range(seed, seed + cfg.image_seeds)
    probes = [pset for p in cfg.perturbations for pset in probe_sets(pool, cfg.probes, seeds, p, cfg.noise_scale)]
    times: dict[str, dict[str, float]] = {}
    hit = evaluate_explainers(
        model,
        pool,
        pool_y,
        10,
        _methods(cfg, "images"),
        probes,
        cfg.k,
        temperatures=cfg.temperatures,
        times=times,
        progress=lambda it: run.progress(it, desc="image methods", unit="method"),
    )
    results, seconds = {}, {}
    for j, p in enumerate(cfg.perturbations):  # the probes come grouped by perturbation, n seeds each
        results[p] = _summary({name: rows[j * n : (j + 1) * n] for name, rows in hit.items()}, spread=False)
    for name, t in times.items():
        per_100 = t["fit_s"] + t["explain_s"] * 100 / t["explained"]
        seconds[name] = {"fit_s": t["fit_s"], "explain_s": t["explain_s"], "per_100_explanations_s": per_100}
    return {
        "source": source,
        "n_train": len(X),
        "pool": len(pool),
        "train_acc": stats["train_acc"],
        "train_samples_per_s": stats["train_samples_per_s"],
        "results": results,
        "seconds": seconds,
    }
