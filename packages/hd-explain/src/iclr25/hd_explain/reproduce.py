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
`experiments` measures each section; `claims` declares what is judged, with every threshold in `GATES`; this
module is the plan: which sections run, the figures, the report.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from iclr25.hd_explain.claims import declared
from iclr25.hd_explain.config import PRESETS, Config
from iclr25.hd_explain.experiments import measure_digits_and_mislabel, measure_images, measure_rectangular
from iclr25.shared.claims import evaluate
from iclr25.shared.results import Report, save_figure
from iclr25.shared.run import Run, is_follower, reproduction

SLUG = "hd-explain"


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


@reproduction(SLUG, PRESETS, precision=True)
def run(r: Run) -> Report:
    """Run the reproduction at `scale` (or with `config`), write results to `out`, return the Report."""
    cfg: Config = r.config
    import torch

    torch.set_num_threads(1)  # tiny MLPs: one thread is as fast and does not spin on a shared machine
    metrics: dict[str, Any] = {}
    rect_data = None
    throughput: dict[str, float] = {}
    if "rectangular" in cfg.sections:
        rect = measure_rectangular(cfg, r, r.seed)
        rect_data = rect.pop("data")
        metrics["rectangular"] = rect
        r.logger.log({"rect_hd_hit": rect["mean"]["hd"]["hit"]}, step=0)
    if "digits" in cfg.sections:
        digits_m, mislabel = measure_digits_and_mislabel(cfg, r, r.seed)
        metrics["digits"] = digits_m
        if mislabel is not None:
            metrics["mislabel"] = mislabel
        sec = digits_m["seconds"]["hd"]
        throughput["digits_hd_explanations_per_s"] = sec["explained"] / max(sec["fit_s"] + sec["explain_s"], 1e-9)
        throughput["digits_train_samples_per_s"] = digits_m["train_samples_per_s"]
    if "images" in cfg.sections:
        metrics["images"] = measure_images(cfg, r, r.seed)
        throughput["image_train_samples_per_s"] = metrics["images"]["train_samples_per_s"]
    if "rectangular" in metrics:
        sec = metrics["rectangular"]["seconds"]["hd"]
        throughput["rect_hd_explanations_per_s"] = sec["explained"] / max(sec["fit_s"] + sec["explain_s"], 1e-9)
    metrics["runtime_s"] = r.elapsed()[0]
    figures = _figures(metrics, rect_data, r.dir) if cfg.figures and not is_follower() else []
    notes = (
        "Hit rate / coverage: 100 pool points drawn with replacement per seed, uniform noise of half-width "
        "0.01 Var(selected), k = 3, seed means. Rectangular 'hd' uses h = dim(x); digits 'hd' uses the official "
        "h = dim(x) + C. IF = exact last-layer Hessian + 0.01 damping, cross-entropy. Mislabel: recall@#flipped "
        "of self-scores with the corrupted labels (gated with the retrained model). Timings ('seconds') are wall seconds on a shared 2-core CPU."
    )
    return r.report(evaluate(declared(cfg), metrics, cfg), metrics, throughput=throughput, figures=figures, notes=notes)
