"""Reproduction of Highway-BP (Fagnou et al., ICLR 2025, arXiv 2501.17086): the plan (presets, parts, figures).

Parts (spec §6a, §9 checks 5–6), measured by `experiments.measure` and judged by `claims.declared`:
1. gradient fidelity at initialisation of a 16-block residual MLP (float64, 256 training digits):
   cosine of the Highway-BP(k) parameter gradient to the exact one, k = 0..L (and FPI for comparison);
2. `digits-resmlp`: BP against Highway-BP(k) training of that MLP on scikit-learn's digits;
3. `digits-gru`: BPTT, Highway-BP(k) and FPI(k) on pixel-sequence digits (64 steps, loss at the end),
   the small-scale analogue of the paper's pixel-CIFAR GRU (Fig. 4), plus wall time per step (Table 3).
4. pre-act ResNet32 / ResNet110 on CIFAR-10 with the App. G downsampling (Table 4 settings), BP vs Highway-BP(k)
   (`full` only; the `full` GRU runs on pixel-CIFAR-10, L = 1024, Table 5 settings, from local pickles);
5. a character-level GRU/LSTM language model with a loss at every step (Table 2, Fig. 4): BPTT, Highway-BP(k)
   and FPI(k), bits per character and ms per step.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from iclr25.highway_bp.claims import declared
from iclr25.highway_bp.config import PRESETS, Config
from iclr25.highway_bp.experiments import measure
from iclr25.shared.claims import evaluate
from iclr25.shared.results import Report
from iclr25.shared.run import Run, is_follower, reproduction

SLUG = "highway-bp"
__all__ = ["PRESETS", "SLUG", "Config", "run"]


def _check_data(scale: str, config: Config) -> None:
    """Refuse a config whose parts need data it does not name (checked before any work)."""
    if config.gru and config.gru_task == "cifar" and not config.data_dir:
        raise ValueError("gru_task='cifar' needs data_dir=<folder with the CIFAR-10 python pickles>")


def _figures(run_dir: Path, metrics: dict[str, Any], config: Config) -> list[str]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from iclr25.shared.results import save_figure

    names = []
    if "fidelity" in metrics:
        fig, ax = plt.subplots(figsize=(5, 3.2))
        for algo, style in (("hbp", "o-"), ("fpi", "s--")):
            if algo not in metrics["fidelity"]:
                continue
            cos = metrics["fidelity"][algo]
            ks = sorted(int(k) for k in cos)
            ax.plot(ks, [cos[str(k)] if str(k) in cos else cos[k] for k in ks], style, label=algo.upper(), ms=3)
        ax.set_xlabel("k (iterations)")
        ax.set_ylabel("cosine to exact gradient")
        ax.set_title(f"Residual MLP, L={config.mlp_depth}, at initialisation")
        ax.grid(alpha=0.3)
        ax.legend()
        save_figure(fig, run_dir / "fidelity_cosine.png")
        names.append("fidelity_cosine.png")
    if "gru" in metrics:
        fig, ax = plt.subplots(figsize=(5, 3.2))
        acc = metrics["gru"]["acc"]
        for algo, style in (("hbp", "o-"), ("fpi", "s--")):
            ks = sorted(int(key.split("_k")[1]) for key in acc if key.startswith(algo))
            ax.plot(ks, [acc[f"{algo}_k{k}"] for k in ks], style, label=algo.upper())
        if "bptt" in acc:
            ax.axhline(acc["bptt"], color="k", ls=":", label="BPTT")
        ax.set_xlabel("k (iterations)")
        ax.set_ylabel("test accuracy")
        ax.set_title(f"GRU on pixel-sequence {config.gru_task}")
        ax.grid(alpha=0.3)
        ax.legend()
        save_figure(fig, run_dir / "gru_accuracy_vs_k.png")
        names.append("gru_accuracy_vs_k.png")
    return names


@reproduction(SLUG, PRESETS, check=_check_data)
def run(active: Run) -> Report:
    """Run the reproduction at `scale` (or with `config`), write results.json/report.md/figures, return the Report.

    `scale_out` (`--devices`, `--resume auto`, ...): every training run (MLP, GRU/LSTM, ResNets) goes through
    Lightning Fabric with each batch split over the processes, and is checkpointed so that an interrupted run
    continues."""
    config = active.config
    metrics, throughput = measure(config, active, active.seed)
    figures = _figures(active.dir, metrics, config) if config.figures and not is_follower() else []
    notes = (
        "Accuracies are means over seeds; step times are mean wall-clock ms per training step "
        f"(forward + backward + Adam) on device {active.device} with {config.threads} threads."
    )
    claims = evaluate(declared(config), metrics, config)
    return active.report(claims, metrics, throughput=throughput, figures=figures, notes=notes)
