"""Reproduction of SA-GFN (Madan et al., "Towards Improving Exploration through Sibling Augmented GFlowNets", ICLR 2025).

Spec §6 and §9: (1) correctness on the standard 8x8 HyperGrid (TB, DB, SubTB and SA-GFN with zero intrinsic reward
reach exact l1_mean <= 2e-3); (2) the sparse 16x16 HyperGrid, where TB collapses onto the first target it finds and
SA-GFN's Behavior net, fed by the novelty-seeking Sibling, keeps mass on all three targets (exact P_T, every seed).
Independent runs (method x seed) are spread over worker processes on CPU. The full preset adds the paper's larger
grids and a bit-sequence task (reported only). The plan: preset -> `experiments.measure` -> figures -> the claims
declared in `claims`, evaluated on the metrics.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from iclr25.sa_gfn.claims import declared
from iclr25.sa_gfn.config import PRESETS, Config
from iclr25.sa_gfn.experiments import measure, measure_throughput
from iclr25.shared.claims import evaluate
from iclr25.shared.results import Report, save_figure
from iclr25.shared.run import Run, reproduction

SLUG = "sa-gfn"


# --------------------------------------------------------------------------------------------- figures
def _figures(run_dir: Path, config: Config, results: dict[str, dict[str, Any]], methods: list[str]) -> list[str]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np
    import torch

    from iclr25.sa_gfn.envs import HyperGrid

    names: list[str] = []
    env = HyperGrid(config.ndim, config.height, "sparse", eps=config.eps)
    if config.ndim == 2:
        H = config.height
        panels = [("target R/Z", env.true_distribution().numpy())]
        panels += [(f"{m} (seed 0)", np.array(results[f"sparse/{m}/0"]["distribution"])) for m in methods]
        fig, axes = plt.subplots(1, len(panels), figsize=(3.2 * len(panels), 3.2))
        for ax, (title, p) in zip(axes, panels, strict=True):
            ax.imshow(p.reshape(H, H), cmap="viridis", origin="lower")
            ax.set_title(title, fontsize=9)
            ax.set_xticks([])
            ax.set_yticks([])
        fig.suptitle(f"Exact terminal distribution, sparse {H}x{H} HyperGrid, {config.iters} iterations", fontsize=10)
        names.append(save_figure(fig, run_dir / "terminal_distribution.png").name)
    fig, ax = plt.subplots(figsize=(5, 3.4))
    for m in methods:
        runs = [results[f"sparse/{m}/{s}"]["history"] for s in range(config.seeds)]
        its = [h["iter"] for h in runs[0]]
        tv = np.array([[h["tv"] for h in r] for r in runs])
        ax.plot(its, tv.mean(0), label=m)
        ax.fill_between(its, tv.min(0), tv.max(0), alpha=0.15)
    ax.set_xlabel("iteration")
    ax.set_ylabel("TV to R/Z (exact)")
    ax.set_title(f"Sparse {config.height}x{config.height}: mean and range over {config.seeds} seeds", fontsize=9)
    ax.legend(fontsize=8)
    names.append(save_figure(fig, run_dir / "tv_sparse.png").name)
    correct = [k for k in results if k.startswith("correct/")]
    if correct:
        fig, ax = plt.subplots(figsize=(5, 3.4))
        for k in correct:
            h = results[k]["history"]
            ax.semilogy([r["iter"] for r in h], [max(r["l1_mean"], 1e-7) for r in h], label=k.split("/", 1)[1])
        ax.axhline(config.l1_bound, color="k", ls="--", lw=0.8, label="bound 2e-3")
        ax.set_xlabel("iteration")
        ax.set_ylabel("l1_mean (exact)")
        ax.set_title(f"Standard reward {config.correctness_height}x{config.correctness_height}, R0=0.1", fontsize=9)
        ax.legend(fontsize=8)
        names.append(save_figure(fig, run_dir / "l1_correctness.png").name)
    if "decouple/decoupled" in results:
        fig, ax = plt.subplots(figsize=(5, 3.4))
        for k, label in (("decouple/decoupled", "Behavior (decoupled)"), ("decouple/coupled", "Behavior (coupled)")):
            h = results[k]["history"]
            ax.semilogy([r["iter"] for r in h], [r["tv"] for r in h], label=label)
        h = results["decouple/decoupled"]["history"]
        ax.semilogy([r["iter"] for r in h], [r["sibling_tv"] for r in h], "k--", label="Sibling (frozen bonus)")
        ax.axvline(config.correctness_iters / 10, color="grey", lw=0.8, ls=":")
        ax.set_xlabel("iteration")
        ax.set_ylabel("TV to R/Z (exact) = L1 / 2")
        ax.set_title(f"Decoupling, standard {config.correctness_height}x{config.correctness_height}", fontsize=9)
        ax.legend(fontsize=8)
        names.append(save_figure(fig, run_dir / "decoupling.png").name)
    del torch
    return names


# --------------------------------------------------------------------------------------------- run
@reproduction(SLUG, PRESETS)
def run(run: Run) -> Report:
    """Run the reproduction at `scale` (ci | quick | full) and write results.json, report.md and figures."""
    metrics, results, methods = measure(run)
    config = run.config
    throughput = measure_throughput(run.device, config) if config.throughput else {}
    figures = _figures(run.dir, config, results, methods)
    notes = (
        "All target-distribution metrics are exact (dynamic programming over the grid) and computed on the "
        "Behavior network for SA-GFN. The paper's numbers are not public (body not accessible, no official "
        f"code); the claims are the spec's acceptance checks. device={run.device}, workers={config.workers}."
    )
    return run.report(
        evaluate(declared(config), metrics, config), metrics, throughput=throughput, figures=figures, notes=notes
    )
