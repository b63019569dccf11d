"""Reproduction of Seq2Exp (Su et al., ICLR 2025) on planted regulatory elements (spec §6a, §9).

Per seed: a planted dataset; untrained checks (the generator-off mask's AUPRC and the MACS-style caller's precision
against the motif-level truth); then the predictors (seq-only, seq + signal, MACS-style mask, Seq2Exp soft/hard)
trained and tested. Plus the caller check on 100 kb tracks with planted boxes (spec §9.5). The plan: preset ->
`experiments.measure` -> figures -> the claims declared in `claims`, evaluated on the metrics.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from iclr25.seq2exp.claims import declared
from iclr25.seq2exp.config import PRESETS, Config
from iclr25.seq2exp.experiments import geneexp_files, measure
from iclr25.shared.claims import evaluate
from iclr25.shared.results import Report
from iclr25.shared.run import Run, reproduction

SLUG = "seq2exp"


def check_inputs(scale: str, cfg: Config) -> None:
    """Before any work: a config naming GeneExp files (data_root or any file's path) needs every GeneExp input file,
    and pyBigWig / h5py for bigWig tracks and Hi-C. One ValueError naming what is missing, where, and where to get
    it. Without GeneExp files the full preset trains on generated windows of its sizes (see `Config.data`)."""
    if not cfg.files_given:
        return
    import importlib.util

    from iclr25.seq2exp.data import GeneExpPaths

    paths = GeneExpPaths(Path(cfg.data_root), cfg.cell_type, geneexp_files(cfg))
    missing = paths.missing()
    if missing:
        raise ValueError(
            f"GeneExp input missing: {'; '.join(missing)}. Get the GeneExp data (Hugging Face dataset "
            "xingyusu/GeneExp, the official layout) and give data_root=DIR, or each file's path as key=value "
            "(fasta=, chr_length=, expression_csv=, split_csv=, gene_list=, h3k27ac=, dnase=, hic_dir=)"
        )
    needs = [("h5py", "the Hi-C .h5 files")]
    tracks = [paths.track("H3K27ac"), paths.track("DNase-seq")] + ([paths.peaks] if paths.peaks.is_file() else [])
    if any(t.suffix.lower() in (".bw", ".bigwig") for t in tracks):
        needs.append(("pyBigWig", "the bigWig tracks"))
    absent = [f"{m} (for {what})" for m, what in needs if importlib.util.find_spec(m) is None]
    if absent:
        raise ValueError(f"reading GeneExp needs {', '.join(absent)}: install the [genomics] extra")


@reproduction(SLUG, PRESETS, check=check_inputs, precision=True)
def run(r: Run) -> Report:
    """Run the reproduction at `scale` (ci / quick / full) and write results.json + report.md into `out`."""
    from iclr25.shared.run import is_follower

    cfg = r.config
    metrics = measure(cfg, r)
    s = metrics["summary"]
    figures = [] if is_follower() else _figures(metrics, cfg, r.dir)  # rank 0 alone writes files
    bps = {f"{k.split('/')[0]}_train_bases_per_s": v for k, v in s.items() if k.endswith("/bases_per_s")}
    sizes = (
        f"L={cfg.length}, backbone {cfg.backbone} d={cfg.d}, {cfg.epochs} epochs, batch {cfg.batch_size}, lr "
        f"{cfg.lr}, official schedule {cfg.official_schedule}; c={cfg.prior_scale}"
    )
    notes = (
        f"GeneExp {cfg.cell_type} fold {cfg.fold}: {sizes}"
        if cfg.files_given
        else f"GENERATED DATA, not GeneExp (no GeneExp files given: data_root=DIR reads them): {cfg.n_genes} windows "
        f"split 70/15/15, each made by the planted generator of spec §6a at the paper's sizes, {cfg.n_rna} RNA "
        f"features set to 0; the numbers measure the pipeline and its speed, not the paper's results. {sizes}"
        if cfg.real_data
        else f"planted data (spec §6a): N={cfg.n_genes}, L={cfg.length}, {cfg.seeds} seed(s), backbone {cfg.backbone} "
        f"d={cfg.d}, {cfg.epochs} epochs, batch {cfg.batch_size}; c={cfg.prior_scale}; truth={cfg.truth}; "
        f"learned-model claims {'gated' if cfg.learned_gates else 'reported (provisional, see README)'}"
    )
    return r.report(evaluate(declared(cfg), metrics, cfg), metrics, throughput=bps, figures=figures, notes=notes)


def _figures(metrics: dict[str, Any], cfg: Config, folder: Path) -> list[str]:
    """Test MSE per model (bar chart), when models were trained."""
    s = metrics["summary"]
    names = [n for n in ("seq", "seq-signal", "macs-mask", "seq2exp-soft", "seq2exp-hard") if f"{n}/mse" in s]
    if not names:
        return []
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from iclr25.shared.results import save_figure

    fig, ax = plt.subplots(figsize=(5.5, 3))
    ax.bar(names, [s[f"{n}/mse"] for n in names], color="tab:blue")
    if "var_y_test" in s:
        ax.axhline(s["var_y_test"], color="gray", ls="--", label="Var(y) of the test windows (predict the mean)")
    ax.set_ylabel("test MSE")
    trained = min(cfg.learn_seeds, cfg.seeds)
    genes = cfg.learn_genes or cfg.n_genes
    if cfg.files_given:
        ax.set_title(f"GeneExp {cfg.cell_type} fold {cfg.fold}: test MSE", fontsize=9)
    elif cfg.real_data:
        ax.set_title(f"generated windows of GeneExp's sizes (not GeneExp): test MSE, {genes} genes", fontsize=9)
    else:
        ax.set_title(f"planted data: models trained on {trained} seed(s), {genes} windows each", fontsize=9)
        ax.legend(fontsize=7)
    plt.setp(ax.get_xticklabels(), rotation=20, fontsize=7)
    save_figure(fig, folder / "test_mse.png")
    plt.close(fig)
    return ["test_mse.png"]
