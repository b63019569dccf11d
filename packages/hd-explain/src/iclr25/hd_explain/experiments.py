"""The experiments (the spec's Sec. 6 plan): each `measure_*` runs one section and returns plain metrics.

Rectangular and digits share `_evaluate` (every method fitted on the pool once, then the hit rate / coverage of
each probe set); `reproduce` decides which sections run and `claims` judges what they measured.
"""

from __future__ import annotations

import copy
import time
from pathlib import Path
from typing import Any

import numpy as np

from iclr25.hd_explain.config import Config


def _methods(cfg: Config, section: str) -> dict[str, tuple[str, dict[str, Any]]]:
    """Method name -> (registry name, options) measured in a section."""
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
    return methods


def _train_mlp(
    X: np.ndarray, y: np.ndarray, hidden: tuple[int, ...], n_classes: int, seed: int, cfg_train: dict, **log: Any
):
    """A seed's MLP, trained whole in this process (seconds on one CPU core: not split over Fabric processes);
    `log`: the run's logger and the metric prefix."""
    import torch

    from iclr25.hd_explain.models import MLP
    from iclr25.hd_explain.training import train_classifier

    torch.manual_seed(seed)
    model = MLP(int(np.prod(X.shape[1:])), hidden, n_classes)
    stats = train_classifier(model, X, y, seed=seed, device="cpu", **cfg_train, **log)
    return model, stats


def _evaluate(model, X, y, n_classes, methods, probe_sets, k, times) -> dict[str, list[list[float]]]:
    """Fit every method on the pool once and measure (hit, coverage) on each probe set."""
    from iclr25.hd_explain.baselines import make_explainer
    from iclr25.hd_explain.evaluation import hit_rate_coverage

    out: dict[str, list[list[float]]] = {}
    for name, (method, options) in methods.items():
        t0 = time.perf_counter()
        ex = make_explainer(method, model, n_classes, **options).fit(X, y)
        t1 = time.perf_counter()
        for probe_idx, perturbed in probe_sets:
            out.setdefault(name, []).append(list(hit_rate_coverage(ex, probe_idx, perturbed, k)))
        t2 = time.perf_counter()
        rec = times.setdefault(name, {"fit_s": 0.0, "explain_s": 0.0, "explained": 0})
        rec["fit_s"] += t1 - t0
        rec["explain_s"] += t2 - t1
        rec["explained"] += sum(len(p) for p, _ in probe_sets)
    return out


def _summary(per_seed: dict[str, list[list[float]]]) -> dict[str, dict[str, float]]:
    out = {}
    for name, rows in per_seed.items():
        a = np.asarray(rows, dtype=float)
        out[name] = {
            "hit": float(a[:, 0].mean()),
            "coverage": float(a[:, 1].mean()),
            "hit_sd": float(a[:, 0].std()),
            "hit_min": float(a[:, 0].min()),
        }
    return out


class _Rows:
    """A logger that keeps the rows of a seed's training (in a worker process) for the run's logger."""

    def __init__(self) -> None:
        self.rows: list[tuple[dict[str, Any], int]] = []

    def log(self, row: dict[str, Any], step: int) -> None:
        self.rows.append((row, step))


def _seeds(run: Any, cfg: Config, function: Any, seeds: range, desc: str) -> list[Any]:
    """`function(s)` for every seed, in `cfg.workers` spawned processes (each seed depends on its seed alone, so the
    results are those of one process); each seed's training rows go to the run's logger in seed order."""
    from iclr25.shared.parallel import map_in_processes

    def log(_: int, result: Any) -> None:
        for row, step in result[-1]:
            run.logger.log(row, step=step)

    return map_in_processes(function, seeds, cfg.workers, desc=desc, unit="seed", on_result=log)


def _rect_seed(cfg: Config, X: np.ndarray, y: np.ndarray, s: int) -> tuple[Any, ...]:
    """One Rectangular seed: its MLP, every method's (hit, coverage), the timings and the training rows."""
    from iclr25.hd_explain.evaluation import perturb_noise, probe_indices

    train = {"epochs": cfg.rect_epochs, "lr": cfg.rect_lr, "batch_size": cfg.rect_batch}
    rows, times = _Rows(), {}
    model, stats = _train_mlp(
        X, y, cfg.rect_hidden, cfg.rect_classes, s, train, logger=rows, prefix=f"rectangular/seed{s}/"
    )
    probe = probe_indices(len(X), cfg.probes, s)
    probe_sets = [(probe, perturb_noise(X[probe], s, cfg.noise_scale))]
    res = _evaluate(model, X, y, cfg.rect_classes, _methods(cfg, "rectangular"), probe_sets, cfg.k, times)
    return res, stats, times, rows.rows


def _add_times(total: dict[str, dict[str, float]], times: dict[str, dict[str, float]]) -> None:
    for name, rec in times.items():
        into = total.setdefault(name, {"fit_s": 0.0, "explain_s": 0.0, "explained": 0})
        for key, value in rec.items():
            into[key] += value


def measure_rectangular(cfg: Config, run: Any, seed: int) -> dict[str, Any]:
    """Rectangular 2-D: every method's hit rate / coverage over `cfg.rect_seeds` trained MLPs (and the data)."""
    from functools import partial

    from iclr25.hd_explain.data import rectangular

    X, y = rectangular(cfg.rect_points, (cfg.rect_grid, cfg.rect_grid), cfg.rect_classes, cfg.rect_data_seed)
    per_seed: dict[str, list[list[float]]] = {}
    times: dict[str, dict[str, float]] = {}
    accs, train_rates = [], []
    seeds = range(seed, seed + cfg.rect_seeds)
    for res, stats, seed_times, _ in _seeds(run, cfg, partial(_rect_seed, cfg, X, y), seeds, "rectangular"):
        accs.append(stats["train_acc"])
        train_rates.append(stats["train_samples_per_s"])
        _add_times(times, seed_times)
        for name, rows in res.items():
            per_seed.setdefault(name, []).extend(rows)
    return {
        "mean": _summary(per_seed),
        "per_seed": per_seed,
        "train_acc": float(np.mean(accs)),
        "train_samples_per_s": float(np.mean(train_rates)),
        "seconds": {m: {kk: round(v, 4) for kk, v in t.items()} for m, t in times.items()},
        "data": {"X": X, "y": y},
    }


def _digits_seed(cfg: Config, s: int) -> tuple[Any, ...]:
    """One digits seed: its MLP's (hit, coverage) per method at both noise scales, the timings, with the mislabel
    section each debugging method's recall@k curve for the clean and the retrained model, and the training rows."""
    from iclr25.hd_explain.baselines import make_explainer
    from iclr25.hd_explain.data import digits, flip_labels
    from iclr25.hd_explain.evaluation import mislabel_detection, perturb_noise, probe_indices

    debug_methods = {
        "hd": ("hd", {}),
        "hd_star": ("hd*", {}),
        "if": ("if", {"loss": cfg.loss, "damping": cfg.if_damping}),
        "rps": ("rps", {"lmbd": cfg.rps_lambda, "max_iter": cfg.rps_iters}),
        "tracin": ("tracin", {"loss": cfg.loss}),
    }
    train = {"epochs": cfg.digits_epochs, "lr": cfg.digits_lr, "batch_size": cfg.digits_batch}
    rows, times = _Rows(), {}
    X, y, _, _ = digits(cfg.digits_pool, s)
    model, stats = _train_mlp(X, y, cfg.digits_hidden, 10, s, train, logger=rows, prefix=f"digits/seed{s}/")
    probe = probe_indices(len(X), cfg.probes, s)
    probe_sets = [
        (probe, perturb_noise(X[probe], s, cfg.noise_scale)),
        (probe, perturb_noise(X[probe], s, cfg.hard_noise_scale)),
    ]
    res = _evaluate(model, X, y, 10, _methods(cfg, "digits"), probe_sets, cfg.k, times)
    if "mislabel" not in cfg.sections:
        return res, stats, times, None, rows.rows
    y_bad, flipped = flip_labels(y, cfg.n_flipped, 10, s)
    log = {"logger": rows, "prefix": f"mislabel/seed{s}/"}
    retrained, rstats = _train_mlp(X, y_bad, cfg.digits_hidden, 10, s + cfg.realistic_seed_offset, train, **log)
    curves: dict[str, dict[str, np.ndarray]] = {"official": {}, "realistic": {}}
    for variant, net in (("official", model), ("realistic", retrained)):
        for name, (method, options) in debug_methods.items():
            scores = make_explainer(method, net, 10, **options).fit(X, y_bad).debug_scores().numpy()
            curves[variant][name] = mislabel_detection(scores, flipped)["recall"]
    return res, stats, times, (rstats["train_acc"], curves), rows.rows


def measure_digits_and_mislabel(cfg: Config, run: Any, seed: int) -> tuple[dict[str, Any], dict[str, Any] | None]:
    """Digits hit rate / coverage (easy and hard noise) per method and seed; with the mislabel section, the
    recall of flipped labels by self-scores of the clean and of the retrained model (else None)."""
    from functools import partial

    per_seed: dict[str, list[list[float]]] = {}
    per_seed_hard: dict[str, list[list[float]]] = {}
    times: dict[str, dict[str, float]] = {}
    accs, train_rates = [], []
    recalls: dict[str, dict[str, list[float]]] = {"official": {}, "realistic": {}}
    curves: dict[str, dict[str, list[float]]] = {"official": {}, "realistic": {}}
    realistic_acc = []
    seeds = range(seed, seed + cfg.digits_seeds)
    for res, stats, seed_times, mislabel_part, _ in _seeds(run, cfg, partial(_digits_seed, cfg), seeds, "digits"):
        accs.append(stats["train_acc"])
        train_rates.append(stats["train_samples_per_s"])
        _add_times(times, seed_times)
        for name, (row, hard_row) in res.items():
            per_seed.setdefault(name, []).append(row)
            per_seed_hard.setdefault(name, []).append(hard_row)
        if mislabel_part is None:
            continue
        realistic_acc.append(mislabel_part[0])
        for variant, by_method in mislabel_part[1].items():
            for name, recall in by_method.items():
                recalls[variant].setdefault(name, []).append(float(recall[cfg.n_flipped - 1]))
                curves[variant].setdefault(name, []).append(recall.tolist())
    digits_metrics = {
        "mean": _summary(per_seed),
        "per_seed": per_seed,
        "hard_noise": {"scale": cfg.hard_noise_scale, "mean": _summary(per_seed_hard), "per_seed": per_seed_hard},
        "train_acc": float(np.mean(accs)),
        "train_samples_per_s": float(np.mean(train_rates)),
        "seconds": {m: {kk: round(v, 4) for kk, v in t.items()} for m, t in times.items()},
    }
    if "mislabel" not in cfg.sections:
        return digits_metrics, None
    mislabel = {
        "n_flipped": cfg.n_flipped,
        "chance_recall": cfg.n_flipped / cfg.digits_pool,
        "recall_at_flipped": {v: {m: float(np.mean(r)) for m, r in d.items()} for v, d in recalls.items()},
        "recall_at_flipped_per_seed": recalls,
        "realistic_train_acc_on_corrupted": float(np.mean(realistic_acc)),
        "curves": {v: {m: np.mean(c, 0).tolist() for m, c in d.items()} for v, d in curves.items()},
    }
    return digits_metrics, mislabel


def _image_data(cfg: Config, seed: int) -> tuple[np.ndarray, np.ndarray, str]:
    from iclr25.hd_explain.data import CIFAR10_MEAN, CIFAR10_STD, load_cifar10, normalize_images

    if cfg.image_dataset == "cifar10" and cfg.data_dir and (Path(cfg.data_dir) / "data_batch_1").is_file():
        X, y = load_cifar10(cfg.data_dir, train=True)
        if cfg.image_train_size:
            X, y = X[: cfg.image_train_size], y[: cfg.image_train_size]
        return normalize_images(X, CIFAR10_MEAN, CIFAR10_STD), y, "cifar10"
    n = cfg.image_train_size or 5000
    rng = np.random.default_rng(seed)
    why = "synthetic" if cfg.image_dataset == "synthetic" else "synthetic (no CIFAR-10 batches in data_dir)"
    return (
        rng.standard_normal((n, 3, cfg.image_size, cfg.image_size)).astype(np.float32),
        rng.integers(0, 10, n).astype(np.int64),
        why,
    )


def measure_images(cfg: Config, run: Any, seed: int) -> dict[str, Any]:
    """ResNet-18 on CIFAR-10 (or synthetic images): hit rate / coverage per perturbation, method and RBF
    temperature, and each method's seconds per 100 explanations."""
    import torch

    from iclr25.hd_explain.baselines import make_explainer
    from iclr25.hd_explain.evaluation import hit_rate_coverage, perturb_flip, perturb_noise, probe_indices
    from iclr25.hd_explain.models import ResNet18
    from iclr25.hd_explain.training import train_classifier

    X, y, source = _image_data(cfg, seed)
    torch.manual_seed(seed)
    model = ResNet18(10, 3, cfg.image_width)
    stats = train_classifier(
        model,
        X,
        y,
        cfg.image_epochs,
        cfg.image_lr,
        cfg.image_batch,
        seed=seed,
        device=run.device,
        augment=source == "cifar10",
        progress=lambda it: run.progress(it, desc="train resnet18", unit="epoch"),
        logger=run.logger,
        prefix="resnet18/",
        **run.training_options("resnet18", cfg.checkpoint_every),
    )
    model.float()  # explained in float32 whatever --precision trained it in (a no-op without one)
    pool, pool_y = X[:: cfg.pool_every], y[:: cfg.pool_every]
    methods = {
        "hd": ("hd", {}),
        "hd_imq": ("hd", {"kernel": "imq"}),
        "hd_linear": ("hd", {"kernel": "linear"}),
        "hd_star": ("hd*", {}),
        "hd_star_imq": ("hd*", {"kernel": "imq"}),
        "if": ("if", {"loss": cfg.loss, "damping": cfg.if_damping}),
        "tracin": ("tracin", {"loss": cfg.loss}),
        "rps": ("rps", {"lmbd": cfg.rps_lambda, "max_iter": cfg.rps_iters}),
        "sim_input_rbf": ("sim", {"space": "input", "metric": "rbf"}),
        "sim_repr_cosine": ("sim", {"space": "representation", "metric": "cosine"}),
    }
    probe_sets: dict[str, list[tuple[np.ndarray, np.ndarray]]] = {p: [] for p in cfg.perturbations}
    for s in range(seed, seed + cfg.image_seeds):
        idx = probe_indices(len(pool), cfg.probes, s)
        for p in cfg.perturbations:
            probe_sets[p].append(
                (idx, perturb_noise(pool[idx], s, cfg.noise_scale) if p == "noise" else perturb_flip(pool[idx]))
            )
    results: dict[str, Any] = {p: {} for p in cfg.perturbations}
    seconds: dict[str, dict[str, float]] = {}
    for name, (method, options) in run.progress(list(methods.items()), desc="image methods", unit="method"):
        t0 = time.perf_counter()
        ex = make_explainer(method, model, 10, **options).fit(pool, pool_y)
        fit_s = time.perf_counter() - t0
        explain_s = 0.0
        variants = [(name, ex)]
        if method in ("hd", "hd*") and options.get("kernel", "rbf") == "rbf":
            for temp in cfg.temperatures:
                clone = copy.copy(ex)
                clone.temperature, clone.h = temp, temp * ex.D.shape[1]
                variants.append((f"{name}_T{temp:g}", clone))
        for p, sets in probe_sets.items():
            for vname, vex in variants:
                t1 = time.perf_counter()
                rows = [hit_rate_coverage(vex, i, xp, cfg.k) for i, xp in sets]
                if vname == name:
                    explain_s += time.perf_counter() - t1
                a = np.asarray(rows)
                results[p][vname] = {"hit": float(a[:, 0].mean()), "coverage": float(a[:, 1].mean())}
        n_explained = sum(len(i) for sets in probe_sets.values() for i, _ in sets)
        seconds[name] = {
            "fit_s": fit_s,
            "explain_s": explain_s,
            "per_100_explanations_s": fit_s + explain_s * 100 / n_explained,
        }
    return {
        "source": source,
        "n_train": len(X),
        "pool": len(pool),
        "train_acc": stats["train_acc"],
        "train_samples_per_s": stats["train_samples_per_s"],
        "results": results,
        "seconds": seconds,
    }
