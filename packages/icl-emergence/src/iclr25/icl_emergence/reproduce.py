"""Reproduction of "Towards Auto-Regressive Next-Token Prediction: In-Context Learning Emerges from
Generalization" (Gong, Hu, Tang, Liu; ICLR 2025), spec §6.

Quick (§6a): LDS topics (rotation2d, d = 2, sigma = 0.05, T = 32); a 2-layer d_model-64 causal transformer trained
by AR-NTP (AdamW 1e-3, 1 200 steps) on K in {1, 4, 16, 64} topics x N = 64 sequences, seeds 0 and 1, plus one run
with fresh topics every batch; evaluation on fixed sets of unseen topics and new sequences of the seen topics.
No-training checks: GINC Bayes-ICL accuracy vs n_examples, in-context least squares vs the oracle floor, and the
monotonicity of the two-level bound. Full (§6b) adds the orthogonal d = 5 grid, GINC pre-training and SGLD.
Independent training runs are spread over worker processes on CPU (one thread each), or, scaled out, train one
after another on the processes of a Lightning Fabric. `experiments` measures,
`claims` declares what is judged; this module is the plan: the preset's measurements, the figure, the report.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from iclr25.icl_emergence.claims import declared
from iclr25.icl_emergence.config import PRESETS, Config
from iclr25.icl_emergence.experiments import measure
from iclr25.icl_emergence.pretraining import FRESH
from iclr25.shared.claims import evaluate
from iclr25.shared.results import Report, save_figure
from iclr25.shared.run import Run, is_follower, reproduction

SLUG = "icl-emergence"


# --------------------------------------------------------------------------------------------- figures
def _figures(folder: Path, m: dict[str, Any], cfg: Config) -> list[str]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    runs, refs = m["runs"], m["references"]
    s0 = min(r["seed"] for r in runs.values())
    fig, ax = plt.subplots(1, 3, figsize=(14, 4))
    for K in cfg.Ks:
        r = runs.get(f"K{K}/s{s0}")
        if r:
            ax[0].plot(r["icl_curve"], label=f"K={K}")
    fresh = next((r for r in runs.values() if r["K"] == FRESH), None)
    if fresh:
        ax[0].plot(fresh["icl_curve"], "k:", label="fresh topics")
    for name, style in (("least_squares", "--"), ("oracle", "-."), ("zero", ":")):
        ax[0].plot(refs[name]["curve"], style, color="gray", label=name.replace("_", " "))
    ax[0].set(yscale="log", xlabel="prediction index t", ylabel="unseen-topic MSE", title=f"R_ICL(t), seed {s0}")
    ax[0].legend(fontsize=7)
    seeds = sorted({r["seed"] for r in runs.values() if r["K"] != FRESH})
    for s in seeds:
        ks = [K for K in cfg.Ks if f"K{K}/s{s}" in runs]
        ax[1].plot(ks, [runs[f"K{K}/s{s}"]["G_top"] for K in ks], "o-", label=f"G_top, seed {s}")
        ax[1].plot(ks, [runs[f"K{K}/s{s}"]["unseen_late"] for K in ks], "s--", label=f"unseen late, seed {s}")
    ax[1].set(xscale="log", yscale="symlog", xlabel="topics K", title="generalization vs K (N fixed)")
    ax[1].legend(fontsize=7)
    g = m["ginc"]
    for name in ("bayes_icl", "ignore_examples", "official_mixture", "true_hmm"):
        ax[2].plot(g["n"], g[name], "o-", label=name.replace("_", " "))
    ax[2].set(xlabel="n_examples", ylabel="accuracy", title=f"GINC ID prompts, k = {g['k']}")
    ax[2].legend(fontsize=7)
    fig.tight_layout()
    save_figure(fig, folder / "icl_emergence.png", dpi=80)
    plt.close(fig)
    return ["icl_emergence.png"]


@reproduction(SLUG, PRESETS, precision=True)
def run(run: Run) -> Report:
    """Run the reproduction at `scale` (ci | quick | full) and write results.json, report.md and a figure.

    `scale_out` (`--devices`, `--precision`, `--checkpoint-every`, `--resume auto`; or `checkpoint_every` in the
    config): every pre-training run goes through Lightning Fabric on the run's processes, one run after another,
    checkpointed into `checkpoints/<run>`; otherwise the runs are spread over CPU worker processes."""
    cfg, asked = run.config, run.scale_out
    scaled = asked.wants_fabric or bool(asked.checkpoint_every or cfg.checkpoint_every or asked.resume)
    options = (lambda name: run.training_options(name, cfg.checkpoint_every)) if scaled else None
    m = measure(cfg, run.seed, run.device, logger=run.logger, scale=options)
    figures = [] if is_follower() else _figures(run.dir, m, cfg)
    tps = [r["tokens_per_s"] for r in m["runs"].values()]
    throughput = {
        "train_tokens_per_s_per_run": sum(tps) / len(tps),
        "train_tokens_per_s_total": len(tps) * cfg.steps * cfg.batch * (cfg.T - 1) / m["lds_wall_s"],
        "ginc_bayes_prompts_per_s": len(m["ginc"]["n"]) * cfg.ginc_prompts / m["ginc"]["seconds"],
    }
    notes = (
        f"device={run.device}, {m['workers']} worker process(es), one thread each; LDS runs took "
        f"{m['lds_wall_s']:.0f} s wall. The paper gives no numeric tables (figures only) and its code was not "
        "retrievable, so 'paper' is empty: the gates are the spec's acceptance checks. Bounds are vacuous in "
        "absolute value (trend only). Bayes-ICL is our reference construction, not the paper's."
    )
    return run.report(evaluate(declared(cfg), m, cfg), m, throughput=throughput, figures=figures, notes=notes)
