"""Reproduction of "Data-centric Prediction Explanation via Kernelized Stein Discrepancy" (arXiv 2403.15576).

Sections (the spec's Sec. 6 plan; `Config.sections`):
- rectangular: the paper's 2-D synthetic set, MLP 2-10-10-4 (Adam 0.01, batch 100, 100 epochs), the hit
  rate / coverage protocol (100 noisy probes drawn with replacement, k = 3), 10 seeds (model init,
  shuffling and probes use the seed; the data seed stays 42), RBF bandwidth h = dim(x) and the official
  current h = dim(x) + C;
- digits: sklearn digits, a random 1,400-image pool per seed, MLP 64-64-64-10 (Adam 1e-3, batch 32,
  30 epochs), every method, 5 seeds;
- mislabel: 70 pool labels flipped y -> (y + 1) mod 10; self-scores of the clean model with the corrupted
  labels (official protocol), and of a model retrained on the corrupted labels (realistic variant);
- images (full): ResNet-18 on CIFAR-10 (or random-label synthetic images), pool = every 10th training
  image, 30 probe seeds x {noise, flip}, every method and kernel, RBF temperatures 0.03-6, timing.
`run` measures; `claims` judges, with every threshold in `GATES`.
"""

from __future__ import annotations

import copy
import time
from pathlib import Path
from typing import Any

import numpy as np

from iclr25.hd_explain.config import PRESETS, Config
from iclr25.shared.results import Claim, Report, save_figure
from iclr25.shared.run import Run, reproduction

SLUG = "hd-explain"

# Gated thresholds (issue 24 / spec Sec. 6a and 9), in one place.
GATES = {
    "rect_hit_gap": 0.25,  # HD hit >= max(IF, TracIn, RPS) + this
    "rect_coverage_gap": 0.10,  # HD coverage >= max(IF, TracIn, RPS) + this
    "rect_dim_d_hit_max": 0.20,  # "dim_d" hit < this (and below "dim_x")
    "digits_hit_min": 0.80,
    "digits_hit_gap": 0.40,  # HD hit >= best of IF/TracIn/RPS + this
    "digits_coverage_min": 0.60,  # never gate absolute coverage above 0.6
    "digits_coverage_gap_rps": 0.20,
    "digits_imq_slack": 0.05,  # IMQ hit >= RBF hit - this
    "mislabel_recall_min": 0.90,  # recall@#flipped, official protocol (reported: every method reaches 1.0)
    # recall@#flipped with the model retrained on the corrupted labels (gated: RPS stays near chance there)
    "mislabel_realistic_min": {"hd": 0.60, "hd_star": 0.55},
    "mislabel_realistic_gap_rps": 0.30,  # ... and at least this above RPS
}
PARAMETER_BASELINES = ("if", "tracin", "rps")


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


def _train_mlp(X: np.ndarray, y: np.ndarray, hidden: tuple[int, ...], n_classes: int, seed: int, cfg_train: dict):
    import torch

    from iclr25.hd_explain.models import MLP
    from iclr25.hd_explain.training import train_classifier

    torch.manual_seed(seed)
    model = MLP(int(np.prod(X.shape[1:])), hidden, n_classes)
    stats = train_classifier(model, X, y, seed=seed, device="cpu", **cfg_train)
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


def _rectangular(cfg: Config, run: Any, seed: int) -> dict[str, Any]:
    from iclr25.hd_explain.data import rectangular
    from iclr25.hd_explain.evaluation import perturb_noise, probe_indices

    X, y = rectangular(cfg.rect_points, (cfg.rect_grid, cfg.rect_grid), cfg.rect_classes, cfg.rect_data_seed)
    methods = _methods(cfg, "rectangular")
    per_seed: dict[str, list[list[float]]] = {}
    times: dict[str, dict[str, float]] = {}
    accs, train_rates = [], []
    train = {"epochs": cfg.rect_epochs, "lr": cfg.rect_lr, "batch_size": cfg.rect_batch}
    for s in run.progress(range(seed, seed + cfg.rect_seeds), desc="rectangular", unit="seed"):
        model, stats = _train_mlp(X, y, cfg.rect_hidden, cfg.rect_classes, s, train)
        accs.append(stats["train_acc"])
        train_rates.append(stats["train_samples_per_s"])
        probe = probe_indices(len(X), cfg.probes, s)
        res = _evaluate(
            model, X, y, cfg.rect_classes, methods, [(probe, perturb_noise(X[probe], s, cfg.noise_scale))], cfg.k, times
        )
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


def _digits_and_mislabel(cfg: Config, run: Any, seed: int) -> tuple[dict[str, Any], dict[str, Any] | None]:
    from iclr25.hd_explain.baselines import make_explainer
    from iclr25.hd_explain.data import digits, flip_labels
    from iclr25.hd_explain.evaluation import mislabel_detection, perturb_noise, probe_indices

    methods = _methods(cfg, "digits")
    per_seed: dict[str, list[list[float]]] = {}
    per_seed_hard: dict[str, list[list[float]]] = {}
    times: dict[str, dict[str, float]] = {}
    accs, train_rates = [], []
    debug_methods = {
        "hd": ("hd", {}),
        "hd_star": ("hd*", {}),
        "if": ("if", {"loss": cfg.loss, "damping": cfg.if_damping}),
        "rps": ("rps", {"lmbd": cfg.rps_lambda, "max_iter": cfg.rps_iters}),
        "tracin": ("tracin", {"loss": cfg.loss}),
    }
    recalls: dict[str, dict[str, list[float]]] = {"official": {}, "realistic": {}}
    curves: dict[str, dict[str, list[float]]] = {"official": {}, "realistic": {}}
    realistic_acc = []
    do_mislabel = "mislabel" in cfg.sections
    train = {"epochs": cfg.digits_epochs, "lr": cfg.digits_lr, "batch_size": cfg.digits_batch}
    for s in run.progress(range(seed, seed + cfg.digits_seeds), desc="digits", unit="seed"):
        X, y, _, _ = digits(cfg.digits_pool, s)
        model, stats = _train_mlp(X, y, cfg.digits_hidden, 10, s, train)
        accs.append(stats["train_acc"])
        train_rates.append(stats["train_samples_per_s"])
        probe = probe_indices(len(X), cfg.probes, s)
        probe_sets = [
            (probe, perturb_noise(X[probe], s, cfg.noise_scale)),
            (probe, perturb_noise(X[probe], s, cfg.hard_noise_scale)),
        ]
        res = _evaluate(model, X, y, 10, methods, probe_sets, cfg.k, times)
        for name, (row, hard_row) in res.items():
            per_seed.setdefault(name, []).append(row)
            per_seed_hard.setdefault(name, []).append(hard_row)
        if not do_mislabel:
            continue
        y_bad, flipped = flip_labels(y, cfg.n_flipped, 10, s)
        retrained, rstats = _train_mlp(X, y_bad, cfg.digits_hidden, 10, s + cfg.realistic_seed_offset, train)
        realistic_acc.append(rstats["train_acc"])
        for variant, net in (("official", model), ("realistic", retrained)):
            for name, (method, options) in debug_methods.items():
                scores = make_explainer(method, net, 10, **options).fit(X, y_bad).debug_scores().numpy()
                det = mislabel_detection(scores, flipped)
                recalls[variant].setdefault(name, []).append(float(det["recall"][cfg.n_flipped - 1]))
                curves[variant].setdefault(name, []).append(det["recall"].tolist())
    digits_metrics = {
        "mean": _summary(per_seed),
        "per_seed": per_seed,
        "hard_noise": {"scale": cfg.hard_noise_scale, "mean": _summary(per_seed_hard), "per_seed": per_seed_hard},
        "train_acc": float(np.mean(accs)),
        "train_samples_per_s": float(np.mean(train_rates)),
        "seconds": {m: {kk: round(v, 4) for kk, v in t.items()} for m, t in times.items()},
    }
    if not do_mislabel:
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


def _images(cfg: Config, run: Any, seed: int) -> dict[str, Any]:
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
    )
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


def _claim(name: str, statement: str, paper: Any, ours: Any, margin: str, holds: bool, gated: bool) -> Claim:
    return Claim(name, statement, paper, None if ours is None else round(float(ours), 4), margin, bool(holds), gated)


def claims(m: dict[str, Any], cfg: Config) -> list[Claim]:
    """The paper's claims, judged on the measured metrics (thresholds in `GATES`)."""
    g = GATES
    out: list[Claim] = []
    if "rectangular" in m:
        r = m["rectangular"]["mean"]
        best_hit = max(r[b]["hit"] for b in PARAMETER_BASELINES)
        best_cov = max(r[b]["coverage"] for b in PARAMETER_BASELINES)
        out += [
            _claim(
                "rect_hit_vs_baselines",
                f"Rectangular ({cfg.rect_seeds} seeds, h = {cfg.rect_bandwidth}): HD-Explain hit rate beats the best "
                f"of IF/TracIn/RPS ({best_hit:.3f}) by >= {g['rect_hit_gap']}",
                "official CSV: 0.512 vs 0.130 (IF)",
                r["hd"]["hit"],
                f"ours >= {best_hit:.3f} + {g['rect_hit_gap']}",
                r["hd"]["hit"] >= best_hit + g["rect_hit_gap"],
                True,
            ),
            _claim(
                "rect_coverage_vs_baselines",
                f"Rectangular: HD-Explain coverage beats the best of IF/TracIn/RPS ({best_cov:.3f}) by >= "
                f"{g['rect_coverage_gap']}",
                "official CSV: 0.391 vs 0.219 (IF)",
                r["hd"]["coverage"],
                f"ours >= {best_cov:.3f} + {g['rect_coverage_gap']}",
                r["hd"]["coverage"] >= best_cov + g["rect_coverage_gap"],
                True,
            ),
            _claim(
                "rect_bandwidth_dim_d_collapses",
                f"Rectangular with the official current bandwidth h = dim(x) + C: hit rate < {g['rect_dim_d_hit_max']} "
                f"and below h = dim(x) ({r['hd']['hit']:.3f})",
                None,
                r["hd_dim_d"]["hit"],
                f"ours < {g['rect_dim_d_hit_max']} and ours < {r['hd']['hit']:.3f}",
                r["hd_dim_d"]["hit"] < g["rect_dim_d_hit_max"] and r["hd_dim_d"]["hit"] < r["hd"]["hit"],
                True,
            ),
            _claim(
                "rect_imq_and_star",
                "Rectangular: HD-Explain IMQ and HD-Explain* hit rates (min of the two) also beat IF/TracIn/RPS",
                None,
                min(r["hd_imq"]["hit"], r["hd_star"]["hit"]),
                f"ours > {best_hit:.3f}",
                min(r["hd_imq"]["hit"], r["hd_star"]["hit"]) > best_hit,
                False,
            ),
        ]
    if "digits" in m:
        d = m["digits"]["mean"]
        best_hit = max(d[b]["hit"] for b in PARAMETER_BASELINES)
        hd = d["hd"]
        out += [
            _claim(
                "digits_hit",
                f"digits ({cfg.digits_seeds} seeds): HD-Explain (RBF) hit >= {g['digits_hit_min']} and >= best of "
                f"IF/TracIn/RPS ({best_hit:.3f}) + {g['digits_hit_gap']}",
                "official CSV, CIFAR-10: 0.994 vs 0.014 (RPS)",
                hd["hit"],
                f"ours >= max({g['digits_hit_min']}, {best_hit:.3f} + {g['digits_hit_gap']})",
                hd["hit"] >= max(g["digits_hit_min"], best_hit + g["digits_hit_gap"]),
                True,
            ),
            _claim(
                "digits_coverage",
                f"digits: HD-Explain coverage >= {g['digits_coverage_min']} and >= RPS ({d['rps']['coverage']:.3f}) "
                f"+ {g['digits_coverage_gap_rps']}",
                "official CSV, CIFAR-10: 0.918 vs 0.117 (RPS)",
                hd["coverage"],
                f"ours >= max({g['digits_coverage_min']}, {d['rps']['coverage']:.3f} + {g['digits_coverage_gap_rps']})",
                hd["coverage"] >= max(g["digits_coverage_min"], d["rps"]["coverage"] + g["digits_coverage_gap_rps"]),
                True,
            ),
            _claim(
                "digits_imq_vs_rbf",
                f"digits: IMQ hit >= RBF hit ({hd['hit']:.3f}) - {g['digits_imq_slack']}",
                "official CSV, SVHN: 1.000 (IMQ) vs 0.780 (RBF)",
                d["hd_imq"]["hit"],
                f"ours >= {hd['hit']:.3f} - {g['digits_imq_slack']}",
                d["hd_imq"]["hit"] >= hd["hit"] - g["digits_imq_slack"],
                True,
            ),
            _claim(
                "digits_input_similarity",
                "digits: plain input-space RBF similarity also reaches hit 1.0 (the noise is ~1 % of a pixel's std, "
                "so the digits hit rate shows the gap to the baselines, not the Stein kernel's correctness)",
                None,
                d["sim_input_rbf"]["hit"],
                "ours >= 0.99",
                d["sim_input_rbf"]["hit"] >= 0.99,
                False,
            ),
            _claim(
                "digits_linear_below_rbf",
                f"digits: the linear Stein kernel is weaker than RBF (hit {hd['hit']:.3f})",
                "official CSV, SVHN: 0.282 (linear) vs 0.780 (RBF)",
                d["hd_linear"]["hit"],
                f"ours < {hd['hit']:.3f}",
                d["hd_linear"]["hit"] < hd["hit"],
                False,
            ),
        ]
        if "hard_noise" in m["digits"]:
            hn = m["digits"]["hard_noise"]
            dh = hn["mean"]
            best_h = max(dh[b]["hit"] for b in PARAMETER_BASELINES)
            out += [
                _claim(
                    "digits_hard_noise_hd_vs_baselines",
                    f"digits, noise half-width {hn['scale']:g} Var (hard probes): HD-Explain hit vs the best of "
                    f"IF/TracIn/RPS ({best_h:.3f})",
                    None,
                    dh["hd"]["hit"],
                    f"ours > {best_h:.3f}",
                    dh["hd"]["hit"] > best_h,
                    False,
                ),
                _claim(
                    "digits_hard_noise_hd_vs_similarity",
                    f"digits, hard probes: HD-Explain hit vs plain input-space RBF similarity "
                    f"({dh['sim_input_rbf']['hit']:.3f}), which no longer saturates there",
                    None,
                    dh["hd"]["hit"],
                    f"ours >= {dh['sim_input_rbf']['hit']:.3f}",
                    dh["hd"]["hit"] >= dh["sim_input_rbf"]["hit"],
                    False,
                ),
            ]
    if "mislabel" in m:
        rec = m["mislabel"]["recall_at_flipped"]
        n = cfg.n_flipped
        real = rec["realistic"]
        for key, label, spec in (("hd", "HD-Explain", "0.56-0.79"), ("hd_star", "HD-Explain*", "0.50-0.69")):
            need = max(g["mislabel_realistic_min"][key], real["rps"] + g["mislabel_realistic_gap_rps"])
            out.append(
                _claim(
                    f"mislabel_realistic_{key}",
                    f"digits, {n} flipped labels, model retrained on the corrupted labels ({cfg.digits_seeds} seeds): "
                    f"{label} self-score recall@{n} >= {g['mislabel_realistic_min'][key]} and >= RPS "
                    f"({real['rps']:.3f}) + {g['mislabel_realistic_gap_rps']} (chance "
                    f"{m['mislabel']['chance_recall']:.3f}; spec re-simulation {spec})",
                    None,
                    real[key],
                    f"ours >= max({g['mislabel_realistic_min'][key]}, {real['rps']:.3f} + "
                    f"{g['mislabel_realistic_gap_rps']})",
                    real[key] >= need,
                    True,
                )
            )
        for key, label, paper in (("hd", "HD-Explain", "0.185"), ("hd_star", "HD-Explain*", "0.984")):
            out.append(
                _claim(
                    f"mislabel_{key}",
                    f"digits, {n} flipped labels, model trained on clean labels (official protocol; every method "
                    f"reaches 1.0 here): {label} self-score recall@{n} >= {g['mislabel_recall_min']}",
                    f"official CSV, CIFAR-10 recall@100: {paper}",
                    rec["official"][key],
                    f"ours >= {g['mislabel_recall_min']}",
                    rec["official"][key] >= g["mislabel_recall_min"],
                    False,
                )
            )
        out += [
            _claim(
                "mislabel_rps",
                f"RPS debugging (alpha_i[y_i] ascending), clean model: recall@{n}",
                "official CSV, CIFAR-10 recall@100: 0.905",
                rec["official"]["rps"],
                "ours >= 0.9",
                rec["official"]["rps"] >= 0.9,
                False,
            ),
            _claim(
                "mislabel_if",
                f"IF self-influence, clean model: recall@{n}",
                "official CSV, CIFAR-10 recall@100: 0.777",
                rec["official"]["if"],
                "ours >= 0.9",
                rec["official"]["if"] >= 0.9,
                False,
            ),
        ]
    if "images" in m:
        im = m["images"]
        src = im["source"]
        for p, res in im["results"].items():
            out.append(
                _claim(
                    f"images_{p}_hd_vs_baselines",
                    f"{src} ({p}): HD-Explain hit vs the best of IF/TracIn/RPS",
                    "official CSV, CIFAR-10 noise: 0.994 vs 0.014"
                    if p == "noise"
                    else "official CSV, CIFAR-10 flip: 0.435",
                    res["hd"]["hit"],
                    f"ours > {max(res[b]['hit'] for b in PARAMETER_BASELINES):.3f}",
                    res["hd"]["hit"] > max(res[b]["hit"] for b in PARAMETER_BASELINES),
                    False,
                )
            )
            out.append(
                _claim(
                    f"images_{p}_imq_vs_rbf",
                    f"{src} ({p}): IMQ hit >= RBF hit ({res['hd']['hit']:.3f})",
                    "paper: IMQ >= RBF (no single number)",
                    res["hd_imq"]["hit"],
                    f"ours >= {res['hd']['hit']:.3f}",
                    res["hd_imq"]["hit"] >= res["hd"]["hit"],
                    False,
                )
            )
        sec = im["seconds"]
        out.append(
            _claim(
                "images_speed_hd_vs_if",
                f"{src}: seconds for 100 explanations (fit + explain), HD-Explain vs exact-Hessian IF "
                f"({sec['if']['per_100_explanations_s']:.1f} s)",
                "official CSV, CIFAR-10: 13 s vs 201 s",
                sec["hd"]["per_100_explanations_s"],
                f"ours < {sec['if']['per_100_explanations_s']:.1f}",
                sec["hd"]["per_100_explanations_s"] < sec["if"]["per_100_explanations_s"],
                False,
            )
        )
    if "runtime_s" in m and cfg == PRESETS["quick"]:
        out.append(
            _claim(
                "quick_runtime",
                "the quick reproduction finishes within 3 minutes (wall clock, shared 2-core CPU)",
                None,
                m["runtime_s"],
                "ours <= 180",
                m["runtime_s"] <= 180,
                False,
            )
        )
    return out


def _figures(m: dict[str, Any], rect_data: dict[str, Any] | None, folder: Path) -> list[str]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    files = []
    panels = [s for s in ("rectangular", "digits") if s in m]
    if panels:
        fig, axes = plt.subplots(1, len(panels), figsize=(6 * len(panels), 3.6), squeeze=False)
        for ax, s in zip(axes[0], panels, strict=True):
            mean = m[s]["mean"]
            names = list(mean)
            xs = np.arange(len(names))
            ax.bar(xs - 0.2, [mean[n]["hit"] for n in names], 0.4, label="hit rate")
            ax.bar(xs + 0.2, [mean[n]["coverage"] for n in names], 0.4, label="coverage")
            ax.set_xticks(xs, names, rotation=45, ha="right", fontsize=7)
            ax.set(ylim=(0, 1.05), title=f"{s}: noise probes, k = 3 (seed mean)")
            ax.legend(fontsize=7)
        files.append(save_figure(fig, folder / "hit_coverage.png").name)
    if "mislabel" in m:
        fig, axes = plt.subplots(1, 2, figsize=(10, 3.4), sharey=True)
        for ax, variant in zip(axes, ("official", "realistic"), strict=True):
            for name, curve in m["mislabel"]["curves"][variant].items():
                ax.plot(np.arange(1, len(curve) + 1), curve, label=name)
            ax.axvline(m["mislabel"]["n_flipped"], color="grey", ls=":", lw=0.8)
            ax.set(xlabel="k (inspected training points)", title=f"mislabel recall@k ({variant} model)")
        axes[0].set_ylabel("recall")
        axes[0].legend(fontsize=7)
        files.append(save_figure(fig, folder / "mislabel_recall.png").name)
    if rect_data is not None:
        X, y = rect_data["X"], rect_data["y"]
        fig, ax = plt.subplots(figsize=(4.2, 4.2))
        ax.scatter(X[:, 0], X[:, 1], c=y, cmap="tab10", s=6, vmin=0, vmax=9)
        ax.set(title="Rectangular data (seed 42): 4 x 4 cells, 4 classes", xlim=(-2, 2), ylim=(-2, 2))
        files.append(save_figure(fig, folder / "rectangular.png").name)
    return files


@reproduction(SLUG, PRESETS)
def run(r: Run) -> Report:
    """Run the reproduction at `scale` (or with `config`), write results to `out`, return the Report."""
    cfg: Config = r.config
    import torch

    torch.set_num_threads(1)  # tiny MLPs: one thread is as fast and does not spin on a shared machine
    metrics: dict[str, Any] = {}
    rect_data = None
    throughput: dict[str, float] = {}
    if "rectangular" in cfg.sections:
        rect = _rectangular(cfg, r, r.seed)
        rect_data = rect.pop("data")
        metrics["rectangular"] = rect
        r.logger.log({"rect_hd_hit": rect["mean"]["hd"]["hit"]}, step=0)
    if "digits" in cfg.sections:
        digits_m, mislabel = _digits_and_mislabel(cfg, r, r.seed)
        metrics["digits"] = digits_m
        if mislabel is not None:
            metrics["mislabel"] = mislabel
        sec = digits_m["seconds"]["hd"]
        throughput["digits_hd_explanations_per_s"] = sec["explained"] / max(sec["fit_s"] + sec["explain_s"], 1e-9)
        throughput["digits_train_samples_per_s"] = digits_m["train_samples_per_s"]
    if "images" in cfg.sections:
        metrics["images"] = _images(cfg, r, r.seed)
        throughput["image_train_samples_per_s"] = metrics["images"]["train_samples_per_s"]
    if "rectangular" in metrics:
        sec = metrics["rectangular"]["seconds"]["hd"]
        throughput["rect_hd_explanations_per_s"] = sec["explained"] / max(sec["fit_s"] + sec["explain_s"], 1e-9)
    metrics["runtime_s"] = r.elapsed()[0]
    figures = _figures(metrics, rect_data, r.dir) if cfg.figures else []
    notes = (
        "Hit rate / coverage: 100 pool points drawn with replacement per seed, uniform noise of half-width "
        "0.01 Var(selected), k = 3, seed means. Rectangular 'hd' uses h = dim(x); digits 'hd' uses the official "
        "h = dim(x) + C. IF = exact last-layer Hessian + 0.01 damping, cross-entropy. Mislabel: recall@#flipped "
        "of self-scores with the corrupted labels (gated with the retrained model). Timings ('seconds') are wall seconds on a shared 2-core CPU."
    )
    return r.report(claims(metrics, cfg), metrics, throughput=throughput, figures=figures, notes=notes)
