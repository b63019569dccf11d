"""Reproduction of "Agree to Disagree" (Wang & Wang, ICLR 2025): the plan. `experiments.measure` trains the spec §6
ensembles and analyses them, `claims.declared` states the paper's claims as data (every threshold lives there), and
`run` ties both to the shared run layer and draws the figures.
"""

from __future__ import annotations

from typing import Any

from iclr25.ensemble_homogeneity.claims import declared
from iclr25.ensemble_homogeneity.config import IMAGE_DATASETS, PRESETS, Config, parse_run
from iclr25.ensemble_homogeneity.experiments import check_scale_out, measure
from iclr25.shared.claims import evaluate
from iclr25.shared.results import Report
from iclr25.shared.run import Run, is_follower, reproduction, resolve_preset

SLUG = "ensemble-homogeneity"


def _figures(config: Config, run: Run, metrics: dict[str, Any], pools: dict) -> list[str]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    from iclr25.ensemble_homogeneity.metrics import true_class_scores
    from iclr25.shared.results import save_figure

    names = list(pools)
    fig, axes = plt.subplots(2, len(names), figsize=(3.6 * len(names), 6.2), squeeze=False)
    for c, name in enumerate(names):
        probs, y = pools[name]
        s = true_class_scores(probs, y)
        ax = axes[0, c]
        bins = np.linspace(0, 1, 21)
        for m in range(min(4, len(s))):
            ax.hist(s[m], bins=bins, histtype="step", log=True, label=f"member {m}")
        de = metrics["runs"][name]["de"]
        ax.set(title=f"{name}\nKS median p={de['median_ks_p']:.2f}", xlabel="true-class score", ylabel="count")
        ax.legend(fontsize=6)
        ax = axes[1, c]
        ax.scatter(s[0], s[1], s=4, alpha=0.4)
        ax.set(
            xlabel="member 0 true-class score",
            ylabel="member 1",
            title=f"disagreement {100 * de['mean_disagreement']:.1f}%",
        )
    fig.tight_layout()
    save_figure(fig, run.dir / "distributional_equivalence.png", dpi=80)

    fig, axes = plt.subplots(1, len(names), figsize=(3.6 * len(names), 3.2), squeeze=False)
    for c, name in enumerate(names):
        r = metrics["runs"][name]
        cb = r["curve_brier_true"]
        ax = axes[0, c]
        ax.plot(r["sizes"], cb["exact"], "o-", label="exact subset mean")
        ax.plot(r["sizes"], cb["B_inf"] + cb["V"] / np.asarray(r["sizes"], float), "--", label="B∞ + V/M (all pairs)")
        ax.plot(cb["estimate_sizes"], cb["estimate"], "s", label=f"two-model est. ({config.n_pairs} pairs)")
        ax.axhline(r["losses"]["brier_true"]["best_member"], color="k", lw=0.8, ls=":", label="best member")
        ax.set(xscale="log", title=name, xlabel="ensemble size M", ylabel="true-class Brier")
        ax.legend(fontsize=6)
    fig.tight_layout()
    save_figure(fig, run.dir / "ensemble_curves.png", dpi=80)
    return ["distributional_equivalence.png", "ensemble_curves.png"]


@reproduction(SLUG, PRESETS, precision=True)
def _reproduce(active: Run) -> Report:
    """Run the `scale` preset (or `config`); writes results.json, report.md and figures; returns the report."""
    cfg = active.config
    metrics, throughput, pools = measure(cfg, active)
    figures = _figures(cfg, active, metrics, pools) if cfg.figures and not is_follower() else []
    notes = (
        "Members differ only in init seed and data order; ensemble = mean of member probabilities. "
        "KS tests pair two members scored on the same test points (conservative). "
        "The exact subset-mean curve is linear in 1/M for any pool (not evidence of homogeneity). "
        f"Data: {'; '.join(metrics['data'].values())}."
    )
    if any(parse_run(s)[0] in IMAGE_DATASETS for s in cfg.runs):
        notes += " Image runs use the CNN/ResNet18 of Nakkiran et al. (no augmentation)."
    claims = evaluate(declared(cfg), metrics, cfg)
    return active.report(claims, metrics, throughput=throughput, figures=figures, notes=notes)


def run(
    scale: str = "quick", out: Any = None, *, config: Config | None = None, scale_out: Any = None, **options
) -> Report:
    """Run the `scale` preset (or `config`); writes results.json, report.md and figures; returns the report.
    `options`: seed, device, wandb, overwrite (see `iclr25.shared.run.reproduction`); `scale_out`: the Fabric
    flags. Member workers combined with Fabric ranks are refused before the run folder is made."""
    check_scale_out(resolve_preset(PRESETS, scale, config), scale_out)
    return _reproduce(scale, out, config=config, scale_out=scale_out, **options)
