"""Reproduction of Dynamical Diffusion (arXiv 2503.00951): the plan. Preset -> experiments -> figures -> claims.

Exact checks (gated): the schedules' values, Dyn's inverse and marginal variance, r = 0 equal to plain diffusion bit
for bit, and the one-step DDIM identity ddim_step(q_sample(x0, t, eps), t, t', Dyn(eps)) = q_sample(x0, t', eps).
Benchmark (reported, not gated; the margin is within seed noise): DyDiff (r = 0.5) vs DPM (r = 0) with the same
network, data, batch sequence and sampling noise, on advection-diffusion forecasting, against persistence.
The experiments are in `experiments`, the claims and their margins in `claims`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from iclr25.dynamical_diffusion.claims import declared
from iclr25.dynamical_diffusion.config import PRESETS, Config, model_variants
from iclr25.dynamical_diffusion.experiments import measure
from iclr25.shared.claims import evaluate
from iclr25.shared.results import Report, save_figure
from iclr25.shared.run import Run, is_follower, reproduction

SLUG = "dynamical-diffusion"
__all__ = ["PRESETS", "SLUG", "Config", "run"]


@reproduction(SLUG, PRESETS, precision=True)
def run(run: Run) -> Report:
    """Run the exact checks and the DyDiff-vs-DPM benchmark of preset `scale`; write and return the Report.

    Seeds are independent (data, initial weights, batches and sampling noise all derive from the seed), so with
    `workers > 1` they run in parallel processes and give the same numbers as one after the other.
    `scale_out` (`--devices`, `--resume auto`, ...): every model trains through Lightning Fabric with the global
    batch split over the processes, and is checkpointed so that an interrupted run continues.
    """
    metrics, throughput, figure_data = measure(run)
    config = run.config
    figures = [] if is_follower() else _figures(run.dir, config, figure_data, metrics["per_seed"])
    notes = (
        "Sampled frames/s counts future frames of every ensemble member (DDIM "
        f"{config.ddim_steps} steps). The benchmark claims are reported, not gated: seed noise is larger "
        "than the DyDiff-DPM gap at this scale."
    )
    return run.report(
        evaluate(declared(config), metrics, config), metrics, throughput=throughput, figures=figures, notes=notes
    )


def _figures(run_dir: Path, config: Config, data: dict[str, Any], per_seed: list[dict[str, Any]]) -> list[str]:
    """Context/truth/sample strips and CRPS over lead time; returns the file names."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = []
    truth, n_ctx = data["truth"], config.n_context
    if config.dataset == "pde1d":
        fig, axes = plt.subplots(2, 4, figsize=(11, 4.5), sharey=True)
        for case in range(2):
            panels = [("truth", truth[case, :, 0])]
            panels += [
                (f"{m} sample {k}", data[m][k, case, :, 0]) for m, k in (("dpm", 0), ("dydiff", 0), ("dydiff", 1))
            ]
            for ax, (title, img) in zip(axes[case], panels, strict=True):
                shown = np.concatenate([truth[case, :n_ctx, 0], img[n_ctx:]]) if title != "truth" else img
                ax.imshow(shown, aspect="auto", cmap="RdBu_r", vmin=-1, vmax=1)
                ax.axhline(n_ctx - 0.5, color="k", lw=1)
                ax.set_title(f"case {case}: {title}", fontsize=8)
            axes[case, 0].set_ylabel("frame (context above line)")
        for ax in axes[-1]:
            ax.set_xlabel("cell")
    else:
        S = truth.shape[1]
        fig, axes = plt.subplots(3, S, figsize=(1.2 * S, 4))
        for row, (title, seq) in enumerate(
            (("truth", truth[0]), ("DPM", data["dpm"][0, 0]), ("DyDiff", data["dydiff"][0, 0]))
        ):
            for s in range(S):
                axes[row, s].imshow(seq[s, 0], cmap="RdBu_r", vmin=-1, vmax=1)
                axes[row, s].set_xticks([])
                axes[row, s].set_yticks([])
            axes[row, 0].set_ylabel(title)
    fig.suptitle("Context / truth / DDIM samples (first seed)")
    fig.tight_layout()
    save_figure(fig, run_dir / "samples.png")
    names.append("samples.png")

    fig, ax = plt.subplots(figsize=(5, 3.5))
    lead = np.arange(1, config.n_future + 1)
    for key, label in (("dpm", "DPM (r=0)"), ("dydiff", f"DyDiff (r={config.gamma_ratio})")):
        vals = np.array([row[key]["crps_per_lead"] for row in per_seed])
        ax.errorbar(lead, vals.mean(0), yerr=vals.std(0) if len(vals) > 1 else None, marker="o", capsize=3, label=label)
    for key, _, _ in model_variants(config)[2:]:  # ablations: means only, to keep the plot readable
        vals = np.array([row[key]["crps_per_lead"] for row in per_seed])
        ax.plot(lead, vals.mean(0), ":", marker=".", label=key)
    pers = np.array([row["persistence_crps_per_lead"] for row in per_seed]).mean(0)
    ax.plot(lead, pers, "k--", label="persistence (MAE)")
    ax.set_xlabel("lead time (frames)")
    ax.set_ylabel("CRPS")
    ax.set_yscale("log")
    ax.legend()
    ax.set_title(f"CRPS over lead time ({len(per_seed)} seeds, mean ± sd)")
    save_figure(fig, run_dir / "crps_lead.png")
    names.append("crps_lead.png")
    return names
