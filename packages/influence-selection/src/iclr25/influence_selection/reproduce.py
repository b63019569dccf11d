"""Reproduction of "Enhancing Prediction Performance through Influence Measure" (ICLR 2025): spec 6a / 6b.

The plan: `experiments.measure` runs the preset's experiments and returns plain numbers, `plot` draws them, and the
claims of claims.py judge them (gated claims are asserted by the tests; the others are reported, holding or not).
"""

from __future__ import annotations

from typing import Any

from iclr25.influence_selection.claims import declared
from iclr25.influence_selection.config import PRESETS, Config
from iclr25.influence_selection.experiments import check_scale_out, measure
from iclr25.shared.claims import evaluate
from iclr25.shared.results import Report
from iclr25.shared.run import Run, is_follower, reproduction, resolve_preset

SLUG = "influence-selection"


def plot(m: dict[str, Any], config: Config, folder: Any) -> list[str]:
    """Figures: accuracy after trimming vs b, flipped fraction under label noise, active-learning curves."""
    import matplotlib
    import numpy as np

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from iclr25.shared.results import save_figure

    names = []
    fig, ax = plt.subplots(1, 3, figsize=(13, 3.6))
    bs = list(config.budgets)
    for key, lab in (("fi", "FI (top-b)"), ("iv", "IV (bottom-b)"), ("random", "random"), ("fi_bottom", "FI bottom-b")):
        ax[0].plot(bs, [m["linear"][f"b{b}"][key] for b in bs], "o-", label=lab)
    ax[0].axhline(m["linear"]["untrimmed"], color="k", ls="--", lw=0.8, label="untrimmed")
    ax[0].set(xlabel="points removed b", ylabel="test accuracy (%)", title="2-D linear (30 seeds)")
    ax[0].legend(fontsize=7)
    keys = ("fi", "fi_bottom", "fi_main_text", "fi_drop_n", "iv", "random")
    nb = m["noise"]["b10"]
    ax[1].bar(range(len(keys)), [nb[k] for k in keys])
    ax[1].set_xticks(range(len(keys)), ["FI", "FI bottom", "Alg.1 J", "no 1/n", "IV", "random"], fontsize=7)
    ax[1].set(ylabel="flipped fraction of removals", title="10 % label noise, b = 10")
    for name, r in m["al"].items():
        if isinstance(r, dict):
            sizes = config.al_init + config.al_acquire * np.arange(len(r["curve"]))
            ax[2].plot(sizes, r["curve"], label=f"{name} ({r['auc']:.3f})")
    ax[2].set(xlabel="labelled points", ylabel="test accuracy", title="active learning, digits")
    ax[2].legend(fontsize=7)
    fig.tight_layout()
    save_figure(fig, folder / "summary.png")
    names.append("summary.png")
    plt.close(fig)
    return names


@reproduction(SLUG, PRESETS, precision=True)
def _reproduce(run: Run) -> Report:
    """Run the `scale` preset (or `config`), write results.json + report.md into the run folder, return the report."""
    from iclr25.influence_selection.threads import one_thread

    # One BLAS and one torch thread on every machine: the numbers must not depend on the thread count (the IV
    # active-learning arm did, see threads.py); the matrices are small, so threads would only contend anyway.
    with one_thread():
        metrics = measure(run.config, run)
    cfg = run.config
    figures = plot(metrics, cfg, run.dir) if cfg.figures and not is_follower() else []
    throughput = {k: round(float(v), 1) for k, v in metrics["speed"].items()}
    notes = (
        "Accuracies in %, AUC = normalised area under the accuracy-per-round curve. Single-threaded BLAS "
        "and torch on every machine (the numbers do not depend on the thread count). The IV of the active-learning runs is the tree-regressed IV "
        "recomputed every round. Paper values are read in Tables 1, 2 and 8; the others have none."
    )
    return run.report(
        evaluate(declared(cfg), metrics, cfg), metrics, throughput=throughput, figures=figures, notes=notes
    )


def run(
    scale: str = "quick", out: Any = None, *, config: Config | None = None, scale_out: Any = None, **options
) -> Report:
    """Run the `scale` preset (or `config`), write results.json + report.md into the run folder, return the report.
    `options`: seed, device, wandb, overwrite (see `iclr25.shared.run.reproduction`); `scale_out`: the Fabric flags
    of the CNN retraining, refused before the run folder is made where the preset trains no CNN."""
    check_scale_out(resolve_preset(PRESETS, scale, config), scale_out)
    return _reproduce(scale, out, config=config, scale_out=scale_out, **options)
