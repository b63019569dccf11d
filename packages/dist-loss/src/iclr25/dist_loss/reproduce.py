"""Reproduction of Dist Loss (Nie, Tang, Hong, ICLR 2025, arXiv 2411.15216): the plan, presets, speed.

Every seed runs the two-stage protocol of `experiments` (the synthetic task, a user's table, or the DIR
images), the losses are timed, means over seeds are the metrics, and the claims declared in `claims` are
evaluated on them. The end-to-end variant (the whole MLP trained with Dist Loss) is measured and reported,
not gated.

Gated claims (RRT+Dist vs RRT+L1): few-shot MAE <= 0.92x, many-shot MAE <= 1.10x, std of the train
predictions >= 1.05x, Wasserstein-1(train predictions, train labels) <= 0.95x.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from iclr25.dist_loss.claims import declared
from iclr25.dist_loss.config import GATE_METHODS, PRESETS, Config
from iclr25.dist_loss.experiments import benchmark_loss, fits_per_seed, load_task, stage1_and_heads
from iclr25.shared.claims import evaluate
from iclr25.shared.results import Report, save_figure
from iclr25.shared.run import Run, is_follower, reproduction

SLUG = "dist-loss"
__all__ = ["GATE_METHODS", "PRESETS", "SLUG", "Config", "benchmark_loss", "measure", "run"]


def _check_data(scale: str, config: Config) -> None:
    """A user's data file is read and checked before the run folder is made (one line on a bad file)."""
    if config.data_file:
        load_task(config, 0)


def _mean_std(values: list[dict[str, float]]) -> dict[str, dict[str, float]]:
    keys = values[0].keys()
    return {
        k: {"mean": float(np.mean([v[k] for v in values])), "std": float(np.std([v[k] for v in values]))} for k in keys
    }


def _figures(
    run_dir: Path, preds: dict[str, Any], methods: tuple[str, ...], min_label: float = 0.0, step: float = 1.0
) -> list[str]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = []
    fig, ax = plt.subplots(figsize=(6, 3.5))
    top = max(float(np.max(preds[k])) for k in ("y_train", "rrt_l1", "rrt_dist"))
    bins = np.arange(min_label - 0.5 * step, top + 2 * step, 2 * step)
    ax.hist(preds["y_train"], bins=bins, color="0.8", label="train labels")
    for key, colour in (("rrt_l1", "tab:blue"), ("rrt_dist", "tab:red")):
        ax.hist(preds[key], bins=bins, histtype="step", lw=1.5, color=colour, label=f"{key} predictions")
    ax.set_xlabel("label")
    ax.set_ylabel("count (train split, seed 0)")
    ax.legend(frameon=False)
    save_figure(fig, run_dir / "prediction_histogram.png")
    names.append("prediction_histogram.png")

    fig, ax = plt.subplots(figsize=(6, 3.5))
    y = preds["y_test"]
    bins = np.floor((y - min_label) / step + 1e-9)
    ages = np.unique(bins)
    for m in [m for m in ("l1", "dist", "inverse", "dist_inverse") if m in methods]:
        err = np.abs(preds[f"rrt_{m}_test"] - y)
        ax.plot(min_label + step * ages, [err[bins == a].mean() for a in ages], lw=1.2, label=f"rrt_{m}")
    ax.set_xlabel("test label (bin start)")
    ax.set_ylabel("MAE (seed 0)")
    ax.legend(frameon=False)
    save_figure(fig, run_dir / "mae_per_age.png")
    names.append("mae_per_age.png")
    return names


def _notes(config: Config) -> str:
    if config.data_dir:
        setting = (f"the DIR images in {Path(config.data_dir).name} (ResNet; FDS skipped)", "ResNet")
    elif config.data_file:
        grid = f"label grid {config.min_label:g}..{config.max_label:g} step {config.step:g}"
        setting = (f"{Path(config.data_file).name} ({grid}; claims reported, not gated)", "MLP")
    else:
        setting = ("the AgeDB-DIR-shaped synthetic task", "MLP")
    return (
        f"Means (std) over seeds of test metrics on {setting[0]}; rrt_* = stage 2 "
        f"(last layer retrained on frozen stage-1 features), e2e_* = whole {setting[1]} trained with the loss. "
        "official_style = the official op's design (CPU numpy round trip, Python PAV each call) "
        "re-implemented here for timing."
    )


def _scale_out(active: Any, config: Config) -> Any:
    """name -> the fabric/checkpointer/resume keywords of that fit (none unless asked for); None without a run."""
    options = getattr(active, "scale_out", None)
    if options is None:
        return None

    def kwargs(name: str) -> dict[str, Any]:
        out: dict[str, Any] = {}
        if options.distributed:
            out["fabric"] = active.fabric
        if options.checkpoint_every or config.checkpoint_every or options.resume:
            out["checkpointer"] = active.checkpointer(every=config.checkpoint_every or 10, name=name)
            out["resume"] = options.resume
        return out

    return kwargs


def measure(config: Config, active: Any, seed: int = 0) -> tuple[dict[str, Any], dict[str, float], list[str]]:
    """Train and evaluate every seed, time the losses: (metrics, throughput, figure names); per-seed metrics go
    to the run's logger, figures into its folder."""
    import torch

    from iclr25.shared.device import configure_torch

    dev = active.device
    configure_torch(dev, threads=config.threads or None)
    per_seed: dict[str, list[dict[str, float]]] = {}
    speeds: list[dict[str, float]] = []
    first_preds: dict[str, Any] = {}
    if config.data_dir:
        bar = active.progress(range(seed, seed + config.seeds), desc="seeds", unit="seed")
    else:
        bar = active.progress(total=config.seeds * fits_per_seed(config), desc="train", unit="fit")
    for s in range(seed, seed + config.seeds):
        if config.data_dir:
            from iclr25.dist_loss.images import image_stage1_and_heads

            metrics, preds, speed = image_stage1_and_heads(config, s, dev, scale=_scale_out(active, config))
            bar.update()
        else:
            metrics, preds, speed = stage1_and_heads(config, s, dev, bar, scale=_scale_out(active, config))
        for method, values in metrics.items():
            per_seed.setdefault(method, []).append(values)
            active.logger.log({"seed": s, "method": method, **values})
        speeds.append(speed)
        first_preds = first_preds or preds
    bar.close()
    summary = {method: _mean_std(values) for method, values in per_seed.items()}
    bench = benchmark_loss(config.bench_batches, config.bench_repeats, dev, config.eps)
    throughput = {k: float(np.mean([s[k] for s in speeds])) for k in speeds[0]}
    throughput.update(bench)
    figures = []
    if config.figures and not is_follower():
        figures = _figures(active.dir, first_preds, config.methods, config.min_label, config.step)
    metrics = {"test": summary, "device": dev, "torch_threads": torch.get_num_threads()}
    if "shots" in first_preds:
        metrics["shot_thresholds"] = first_preds["shots"]
    return metrics, throughput, figures


@reproduction(SLUG, PRESETS, check=_check_data)
def run(active: Run) -> Report:
    """Run the preset `scale` (or `config`), write results.json + report.md + figures, return the Report.

    `scale_out` (`--devices`, `--resume auto`, ...): every fit (stage 1, the RRT heads, end to end; MLP or
    ResNet) goes through Lightning Fabric with each batch split over the processes (the loss stays the whole
    batch's), and is checkpointed at epoch ends so that an interrupted run continues."""
    metrics, throughput, figures = measure(active.config, active, active.seed)
    return active.report(
        evaluate(declared(active.config), metrics, active.config, throughput=throughput),  # speed claims read it
        metrics,
        throughput=throughput,
        figures=figures,
        notes=_notes(active.config),
    )
