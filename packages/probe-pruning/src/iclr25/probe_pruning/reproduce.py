"""Reproduction plan: the preset's study (experiments.py), its figure, and the claims (claims.py) judged on it.

Quick / ci (CPU): tiny byte-level LLaMAs trained here, pruned and evaluated on Python source after calibration on
prose (`experiments.measure_tiny`). Full (GPU): a local LLaMA/OPT checkpoint on WikiText2 with C4 calibration
(`experiments.measure_full`).
"""

from __future__ import annotations

from typing import Any

from iclr25.probe_pruning.claims import declared
from iclr25.probe_pruning.config import PRESETS, Config
from iclr25.probe_pruning.experiments import PRUNED, measure_full, measure_tiny
from iclr25.shared.claims import evaluate
from iclr25.shared.results import Report
from iclr25.shared.run import Run, reproduction

SLUG = "probe-pruning"


def _check_full_files(scale: str, config: Config) -> None:
    """The full preset needs local model and data files: refuse it before a run folder is made."""
    if scale == "full" and not (config.model_dir and config.wikitext and config.c4):
        raise ValueError(
            "the full preset needs local files: model_dir=<HF LLaMA/OPT folder> wikitext=<wiki.test.raw> "
            "c4=<c4 json.gz shard> (see the README)"
        )


def check_split(config: Config) -> None:
    """A split over `devices` GPUs (or a `max_memory` budget) that cannot work is refused before any weight is read:
    more devices than decoder layers, budgets the weights do not fit (the model's config only, on the meta device)."""
    if config.devices == 1 and not config.max_memory:
        return
    import torch

    from iclr25.probe_pruning.model import ModelConfig
    from iclr25.probe_pruning.sharding import parse_max_memory, plan_config

    if config.model_dir:
        from iclr25.probe_pruning.hf_io import read_config

        model_cfg, dtype = read_config(config.model_dir), getattr(torch, config.dtype)
    else:
        model_cfg = ModelConfig(
            vocab_size=256, hidden_size=config.d_model, num_hidden_layers=config.n_layers,
            num_attention_heads=config.n_heads, num_key_value_heads=config.n_heads, intermediate_size=config.d_ff,
        )  # fmt: skip
        dtype = torch.float32
    budgets = parse_max_memory(config.max_memory, config.devices)
    plan_config(model_cfg, [f"device {i}" for i in range(config.devices)], budgets, dtype)


def _check(scale: str, config: Config) -> None:
    _check_full_files(scale, config)
    check_split(config)


@reproduction(SLUG, PRESETS, check=_check)
def run(r: Run) -> Report:
    """Run the `scale` preset (or `config`), write results.json/report.md/figures into `out`, return the report."""
    cfg: Config = r.config
    if cfg.model_dir:
        metrics, throughput = measure_full(cfg, r)
        figures: list[str] = []
        notes = "Full preset: a local HF checkpoint, WikiText2 test windows, C4 calibration windows."
    else:
        from contextlib import nullcontext

        from iclr25.shared.device import torch_threads

        # the tiny model's small matrices run fastest on one thread per process (seeds train in parallel)
        with torch_threads(1) if r.device == "cpu" else nullcontext():
            metrics, throughput = measure_tiny(cfg, r)
        figures = [figure(metrics, cfg, r.dir)]
        metrics["measure_wall_s"], metrics["measure_cpu_s"] = r.elapsed()  # CPU: this process and its finished workers
        notes = (
            "Tiny byte-level LLaMA trained here; domain A = English prose (Python docs topics), domain B = "
            "Python standard-library source. PPL = exp(mean batch loss). Probe FLOPs are analytic."
        )
    return r.report(evaluate(declared(cfg), metrics, cfg), metrics, throughput=throughput, figures=figures, notes=notes)


def figure(metrics: dict, cfg: Config, folder: Any) -> str:
    """Domain-B PPL of every method, one bar per trained model."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from iclr25.shared.results import save_figure

    seeds = [k for k in metrics if k.startswith("seed")]
    methods = ("dense", *PRUNED)
    fig, ax = plt.subplots(figsize=(7, 3.2))
    width = 0.8 / len(seeds)
    for j, s in enumerate(seeds):
        vals = [metrics[s]["ppl_B"][m] for m in methods]
        ax.bar([i + j * width for i in range(len(methods))], vals, width, label=s)
    ax.set_xticks([i + width * (len(seeds) - 1) / 2 for i in range(len(methods))], methods)
    ax.set_ylabel("domain-B PPL")
    ax.set_title(f"r = {cfg.ratio}, skip {list(cfg.skip_layers)}: Python source, calibrated on prose")
    ax.legend()
    save_figure(fig, folder / "ppl_domain_b.png")
    return "ppl_domain_b.png"
