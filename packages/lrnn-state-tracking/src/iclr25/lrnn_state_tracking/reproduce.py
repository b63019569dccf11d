"""Reproduction of Grazzi, Siems et al., "Unlocking State-Tracking in Linear RNNs Through Negative Eigenvalues" (ICLR
2025, arXiv 2411.12537): the plan. Figure 1 (diagonal LRNN on parity, [0,1] vs [-1,1]), Table 3 (Mamba / DeltaNet ×
both ranges × parity / modular arithmetic without and with brackets, scaled accuracy at lengths 40–256), the theory
checks of §4 and the speed of the fast recurrences; the experiments are in `experiments`, the claims in `claims`.

Presets (values of one `Config`):
- `ci`: Figure-1 claim + theory + speed; the CI claim gate (`mamba=true` adds the reported Mamba pair).
- `quick`: `ci` plus a 1-layer DeltaNet on parity with both ranges (reported only: spec §6a).
- `full`: the Table-3 grid with the official hyper-parameters (one GPU).
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

from iclr25.lrnn_state_tracking.claims import declared
from iclr25.lrnn_state_tracking.config import PRESETS, Config
from iclr25.lrnn_state_tracking.experiments import measure
from iclr25.shared.claims import evaluate
from iclr25.shared.results import Report, save_figure
from iclr25.shared.run import Run, reproduction

SLUG = "lrnn-state-tracking"
__all__ = ["PRESETS", "SLUG", "Config", "preset", "run"]


@reproduction(SLUG, PRESETS, precision=True)
def run(active: Run) -> Report:
    """Run a preset, write results.json + report.md + figures into `out`, and return the Report.

    `scale_out` (`--devices`, `--resume auto`, ...): every training run goes through Lightning Fabric with the
    global batch split over the processes, and is checkpointed so that an interrupted run continues."""
    import torch

    threads_before = torch.get_num_threads()
    try:
        metrics, throughput, (curves, losses) = measure(active.config, active, active.seed)
        dev = active.device
        notes = _notes(active.config) + f"\nDevice: {dev}, {torch.get_num_threads()} torch thread(s)."
    finally:
        torch.set_num_threads(threads_before)  # do not leak the thread count into the caller's process
    figures = _figures(active.dir, curves, losses)
    claims = evaluate(declared(active.config, dev), metrics, active.config)
    return active.report(claims, metrics, throughput=throughput, figures=figures, notes=notes)


def _figures(run_dir: Path, curves: dict[str, tuple[list, list]], losses: dict[str, list]) -> list[str]:
    """Parity accuracy against length and the training losses; returns the file names."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = []
    losses = {k: v for k, v in losses.items() if v}
    if curves:
        fig, ax = plt.subplots(figsize=(6, 3.5))
        for label, (x, y) in curves.items():
            ax.plot(x, y, marker="o", label=label)
        ax.axhline(0.5, color="grey", ls=":", lw=1)
        ax.set(xlabel="sequence length (test: 40-256)", ylabel="parity accuracy", ylim=(0, 1.05))
        ax.legend(fontsize=7)
        save_figure(fig, run_dir / "parity_accuracy_vs_length.png")
        names.append("parity_accuracy_vs_length.png")
    if losses:
        fig, ax = plt.subplots(figsize=(6, 3.5))
        for label, rows in losses.items():
            if rows:
                ax.plot([r[0] for r in rows], [r[1] for r in rows], label=label)
        ax.set(xlabel="step", ylabel="training loss (lengths 3-40)", yscale="log")
        ax.legend(fontsize=7)
        save_figure(fig, run_dir / "training_loss.png")
        names.append("training_loss.png")
    return names


def _notes(config: Config) -> str:
    """The report's notes: the evaluation protocol and how far each setting is from the paper's."""
    lines = [
        "Scaled accuracy = (acc - 1/C)/(1 - 1/C) at the answer position, argmax over the whole vocabulary; "
        f"{config.eval_n} test sequences with lengths {config.eval_min_len}-{config.eval_max_len}.",
        f"Figure-1 model: dim {config.fig1_dim}, {config.fig1_steps} steps, batch {config.fig1_batch}, "
        f"{config.fig1_seeds} seeds per range (paper: dim 10, 20 000 steps, batch 256, 3 seeds).",
    ]
    if config.grid_tasks:
        lines.append(
            f"Grid: {config.grid_layers} layer(s), d_model {config.grid_d_model}, {config.grid_heads} heads, batch "
            f"{config.grid_batch}, {config.grid_steps_parity} parity steps (paper: 2 layers, d 128, 4 heads, batch "
            "256, 20 000 steps); the paper's values are 2-layer Table-3 numbers."
        )
    return "\n".join(lines)


def preset(scale: str, **overrides: Any) -> Config:
    """A preset with fields replaced, e.g. `preset("quick", fig1_steps=300)`."""
    if scale not in PRESETS:
        raise ValueError(f"scale must be one of {', '.join(PRESETS)}; got {scale!r}")
    return replace(PRESETS[scale], **overrides)
