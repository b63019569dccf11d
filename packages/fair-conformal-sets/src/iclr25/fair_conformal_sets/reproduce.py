"""Reproduction plan: the spec §6a synthetic study (quick), small-n ESS validity, a simulated human study, a digits
smoke run, and, when their files are given, the real tasks' model outputs and the released human-study data.

Paper: Cresswell et al., "Conformal Prediction Sets Can Cause Disparate Impact", ICLR 2025 (arXiv 2410.01888).
The experiments (`experiments.measure`) and the claims (`claims.declared`, evaluated by the shared layer) live
apart; this module runs them at a preset's scale and draws the figure.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from iclr25.fair_conformal_sets.claims import declared
from iclr25.fair_conformal_sets.config import PRESETS, Config
from iclr25.fair_conformal_sets.experiments import BASELINES, CONFORMAL, measure
from iclr25.shared.claims import evaluate
from iclr25.shared.results import Report, save_figure
from iclr25.shared.run import Run, reproduction

SLUG = "fair-conformal-sets"


def plot(m: dict[str, Any], cfg: Config, folder: Path) -> list[str]:
    """Per-group set size (before filling) and Delta per treatment, one panel pair per score."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    syn = m["synthetic"]
    fig, axes = plt.subplots(2, len(cfg.scores), figsize=(4.2 * len(cfg.scores), 6.2), squeeze=False)
    for j, score in enumerate(cfg.scores):
        names = [*CONFORMAL, *BASELINES]
        entries = [syn[score][n] if n in CONFORMAL else syn["baselines"][n] for n in names]
        x = np.arange(len(names))
        G = len(entries[0]["size_g"])
        for g in range(G):
            axes[0, j].bar(
                x + (g - (G - 1) / 2) * 0.8 / G, [e["size_g"][g] for e in entries], 0.8 / G, label=f"group {g}"
            )
        axes[0, j].set_xticks(x, names, fontsize=8)
        axes[0, j].set_title(f"{score.upper()}: mean set size (before filling)", fontsize=9)
        axes[0, j].legend(fontsize=7)
        axes[1, j].bar(x, [e["Delta"] for e in entries], yerr=[e["Delta_sd"] for e in entries], color="tab:red")
        axes[1, j].set_xticks(x, names, fontsize=8)
        axes[1, j].set_title("disparate impact Delta (simulated, filled sets)", fontsize=9)
    fig.tight_layout()
    save_figure(fig, folder / "size_and_delta.png", dpi=90)
    return ["size_and_delta.png"]


@reproduction(SLUG, PRESETS)
def run(r: Run) -> Report:
    """Run the reproduction at `scale` (or with `config`) into `out`; returns the written Report."""
    cfg = r.config
    m = measure(cfg, r, r.seed)
    figures = plot(m, cfg, r.dir)
    timing = m["timing"]
    return r.report(
        evaluate(declared(cfg), m, cfg),
        m,
        throughput={"set_items_per_s": timing["items_per_s"], "synthetic_s": timing["synthetic_s"]},
        figures=figures,
        notes=(
            "Synthetic classifier of spec §6a (our design); the decision-maker is a model (spec §3.6), not "
            "people; ESS is our design. Coverage/size before top-1 filling; Delta on filled sets. "
            "Run on 2 shared CPU cores."
        ),
    )
