"""The reproduction plan: which parts run at which scale (`cfg.parts`), the figure, and the claims table.

The parts are measured in `experiments` (plain metrics), the claims are declared as data in `claims` and
evaluated here on what was measured, on the shared run layer.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import numpy as np

from iclr25.shared.claims import evaluate
from iclr25.shared.results import Report
from iclr25.shared.run import Run, reproduction

from .claims import declared
from .config import PRESETS, Config
from .experiments import (
    measure_mdn,
    measure_qhat,
    measure_real,
    measure_rosenbrock,
    measure_synthetic,
    measure_toy2d,
    measure_validity,
    measure_wsc,
    train_quantiles,
)

SLUG = "conditional-conformal"


def measure(cfg: Config, run: Any = None, seed: int = 0) -> dict[str, Any]:
    """Every part of the plan listed in `cfg.parts`; timings per part."""
    progress = run.progress if run is not None else None
    metrics: dict[str, Any] = {"timing_s": {}}

    def timed(part: str, fn, *args, **kwargs):
        t0 = time.perf_counter()
        metrics[part] = fn(*args, **kwargs)
        metrics["timing_s"][part] = time.perf_counter() - t0
        if run is not None:  # each part's scalars and its time, as the part ends
            run.log_scalars({**metrics[part], "seconds": metrics["timing_s"][part]}, prefix=f"{part}/")

    quantiles = None
    if cfg.cqr and ("synthetic" in cfg.parts or "mdn" in cfg.parts):
        t0 = time.perf_counter()
        quantiles = train_quantiles(cfg, seed)
        metrics["timing_s"]["cqr_training"] = time.perf_counter() - t0
    if "validity" in cfg.parts:
        timed("validity", measure_validity, cfg, seed, progress)
    if "synthetic" in cfg.parts:
        timed("synthetic", measure_synthetic, cfg, seed, quantiles=quantiles)
    if "qhat" in cfg.parts:
        timed("qhat", measure_qhat, cfg, seed)
    if "wsc" in cfg.parts:
        timed("wsc", measure_wsc, cfg, seed)
    if "mdn" in cfg.parts:
        timed("mdn", measure_mdn, cfg, seed, quantiles)
    if "toy2d" in cfg.parts:
        timed("toy2d", measure_toy2d, cfg, seed)
    if "rosenbrock" in cfg.parts:
        timed("rosenbrock", measure_rosenbrock, cfg, seed)
    if "real" in cfg.parts:
        timed("real", measure_real, cfg, seed)
    return metrics


# ------------------------------------------------------------------------------------------------ figures
def plot_bins(metrics: dict[str, Any], cfg: Config, folder: Path) -> list[str]:
    """Coverage per x-bin, one panel per estimator (mean over seeds)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from iclr25.shared.results import save_figure

    panels = [(k, v) for k, v in metrics.get("synthetic", {}).items() if k.startswith("sd_x")]
    if "mdn" in metrics:
        panels.append(("MDN", metrics["mdn"]["seeds"]))
    if not panels:
        return []
    fig, axes = plt.subplots(1, len(panels), figsize=(4 * len(panels), 3.2), sharey=True)
    axes = np.atleast_1d(axes)
    centres = np.linspace(-4, 4, cfg.n_bins + 1)
    centres = 0.5 * (centres[1:] + centres[:-1])
    for ax, (name, rows) in zip(axes, panels, strict=True):
        for meth in rows[0]:
            ax.plot(centres, np.array([r[meth]["bins"] for r in rows]).mean(0), marker="o", ms=3, label=meth)
        ax.axhline(1 - cfg.alpha, color="k", lw=0.8, ls="--")
        ax.set_title("Π = P" if name == "sd_x1" else ("Π: σ×" + name[4:] if name != "MDN" else "Π = MDN"))
        ax.set_xlabel("x")
        ax.set_ylim(0.5, 1.01)
    axes[0].set_ylabel("coverage in x-bin")
    axes[-1].legend(fontsize=7, loc="lower right")
    fig.tight_layout()
    save_figure(fig, folder / "bin_coverage.png")
    plt.close(fig)
    return ["bin_coverage.png"]


# ------------------------------------------------------------------------------------------------ entry point
@reproduction(SLUG, PRESETS)
def run(r: Run) -> Report:
    """Run a preset (`ci`, `quick`, `full`) or a given Config; write results.json, report.md and figures."""
    cfg: Config = r.config
    metrics = measure(cfg, r, r.seed)
    figures = plot_bins(metrics, cfg, r.dir)
    throughput = {}
    if "synthetic" in metrics:
        throughput["synthetic_points_per_s"] = metrics["synthetic"].pop("points_per_s")
    if "mdn" in metrics:
        throughput["mdn_train_samples_per_s"] = metrics["mdn"]["train_samples_per_s"]
    notes = (
        "Synthetic: bimodal_hetero (spec §6a), oracle Gaussian-mixture samplers (Π = P, σ×1.5, σ×0.7) and an MDN; "
        f"M = {cfg.n_samples}, M̃ = {cfg.n_samples_tau} (M̃ assumed), α = {cfg.alpha}. Lengths are means over the "
        f"first {cfg.hpd_length_points} test points (CP²-HPD on a y-grid of step {cfg.hpd_grid_step})."
    )
    return r.report(evaluate(declared(cfg), metrics, cfg), metrics, throughput=throughput, figures=figures, notes=notes)
