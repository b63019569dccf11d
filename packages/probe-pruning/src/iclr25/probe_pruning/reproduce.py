"""Reproduction: `run(scale)` measures the claims of spec §6 / §9.6 and `claims(metrics, config)` judges them.

Quick / ci (CPU): a tiny byte-level LLaMA per seed, calibrated on domain A (English prose), pruned at r = 0.4 with
skip {0} (r' = 0.53, 2 of 4 heads and 88 of 176 MLP channels kept, multiple 8), probe 5% x 50%, EMA 0.99,
evaluated on 10 batches of 20 x 64 domain-B (Python source) windows: dense, Wanda-sp, FLAP, PP, Full-batch and the
controls random units and inverted PP. Full (GPU): a local LLaMA/OPT checkpoint, WikiText2, C4 calibration.
"""

from __future__ import annotations

import dataclasses
import math
import time
from typing import Any

from iclr25.probe_pruning.config import PRESETS, Config
from iclr25.shared.results import Claim, Report
from iclr25.shared.run import Run, reproduction

SLUG = "probe-pruning"
PRUNED = ("wanda-sp", "flap", "pp", "fullbatch", "random", "inverted")
ABLATIONS = {
    "pp_probe_only": {"fusion": "probe_only"},
    "pp_history_only": {"fusion": "history_only"},
    "pp_fixed_rho_0.5": {"fusion": "fixed:0.5"},
    "pp_random_probe": {"probe_select": "random"},
    "pp_first_tokens_probe": {"probe_select": "first"},
    "pp_no_ema": {"ema": 1.0},
}
# Table 2 of the paper (WikiText2 PPL, LLaMA-2-7B), for the full preset
PAPER_TABLE2 = {
    0.2: {"dense": 6.0, "fullbatch": 7.3, "wanda-sp": 10.6, "flap": 10.3, "pp": 8.1},
    0.4: {"dense": 6.0, "fullbatch": 13.6, "wanda-sp": 43.8, "flap": 38.9, "pp": 16.8},
}


def _check_full_files(scale: str, config: Config) -> None:
    """The full preset needs local model and data files: refuse it before a run folder is made."""
    if scale == "full" and not (config.model_dir and config.wikitext and config.c4):
        raise ValueError(
            "the full preset needs local files: model_dir=<HF LLaMA/OPT folder> wikitext=<wiki.test.raw> "
            "c4=<c4 json.gz shard> (see the README)"
        )


@reproduction(SLUG, PRESETS, check=_check_full_files)
def run(r: Run) -> Report:
    """Run the `scale` preset (or `config`), write results.json/report.md/figures into `out`, return the report."""
    cfg: Config = r.config
    if cfg.model_dir:
        metrics, throughput, figures = _measure_full(cfg, r)
        notes = "Full preset: a local HF checkpoint, WikiText2 test windows, C4 calibration windows."
    else:
        from contextlib import nullcontext

        from iclr25.shared.device import torch_threads

        # the tiny model's small matrices run fastest on one thread per process (seeds train in parallel)
        with torch_threads(1) if r.device == "cpu" else nullcontext():
            metrics, throughput, figures = _measure_tiny(cfg, r)
        notes = (
            "Tiny byte-level LLaMA trained here; domain A = English prose (Python docs topics), domain B = "
            "Python standard-library source. PPL = exp(mean batch loss). Probe FLOPs are analytic."
        )
    return r.report(claims(metrics, cfg), metrics, throughput=throughput, figures=figures, notes=notes)


# ------------------------------------------------------------------------------------------------ helpers
def _pp_config(cfg: Config, method: str, seed: int, **extra: Any) -> Any:
    from iclr25.probe_pruning.pruning import PPConfig

    kw: dict[str, Any] = {
        "ratio": cfg.ratio,
        "probe_seq": cfg.probe_seq,
        "probe_bsz": cfg.probe_bsz,
        "ema": cfg.ema,
        "skip_layers": cfg.skip_layers,
        "round_multiple": cfg.round_multiple,
        "fusion": cfg.fusion,
        "seed": seed,
    }
    if method == "fullbatch":
        kw.update(probe_seq=1.0, probe_bsz=1.0)
    elif method in ("random", "inverted"):
        kw["control"] = method
    kw.update(extra)
    return PPConfig(**kw)


def make_pruner(model: Any, method: str, cfg: Config, stats: dict, seed: int, ratio: float | None = None, **extra: Any):
    """A calibrated runner for `method` (dense: the model itself)."""
    from iclr25.probe_pruning.baselines import StaticPruner
    from iclr25.probe_pruning.pruning import ProbePruner

    if ratio is not None:
        cfg = dataclasses.replace(cfg, ratio=ratio)
    if method == "dense":
        return model
    if method in ("wanda-sp", "flap"):
        return StaticPruner(model, method, cfg.ratio, cfg.skip_layers, cfg.round_multiple).set_stats(stats)
    return ProbePruner(model, _pp_config(cfg, method, seed, **extra)).set_history(stats)


def _kept(pruner: Any) -> dict[str, int]:
    return {f"{i}.{k}": int(v.numel()) for (i, k), v in sorted(pruner.last_kept.items())}


def _timed_ppl(runner: Any, batches: list, device: str) -> tuple[float, float]:
    """(PPL, seconds) of one pass over `batches` (CUDA events on a GPU)."""
    import torch

    from iclr25.probe_pruning.pruning import evaluate_ppl

    if device == "cuda":
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        ppl = evaluate_ppl(runner, batches)
        end.record()
        torch.cuda.synchronize()
        return ppl, start.elapsed_time(end) / 1000
    t0 = time.perf_counter()
    ppl = evaluate_ppl(runner, batches)
    return ppl, time.perf_counter() - t0


# ------------------------------------------------------------------------------------------------ quick / ci
def _measure_tiny(cfg: Config, r: Any) -> tuple[dict, dict, list[str]]:
    import torch

    from iclr25.probe_pruning import data
    from iclr25.probe_pruning.pruning import collect_stats, flops_report, keep_count
    from iclr25.probe_pruning.training import train_seeds

    device = r.device
    prose = data.to_tokens(data.prose_text(cfg.corpus_bytes))
    code = data.to_tokens(data.python_source_text(cfg.corpus_bytes))
    a_train, a_test = data.split_tokens(prose)
    b_train, b_test = data.split_tokens(code)
    metrics: dict[str, Any] = {"corpus_tokens": {"A": len(prose), "B": len(code)}}
    n_eval = cfg.eval_batches * cfg.eval_batch
    train_sps, eval_sps = [], []
    seeds = [r.seed + k for k in range(cfg.seeds)]
    bar = r.progress(total=cfg.seeds, desc=f"train {cfg.seeds} tiny LLaMA(s), {cfg.train_steps} steps", unit="model")
    trained = train_seeds(
        [a_train, b_train], seeds, cfg.workers, d_model=cfg.d_model, n_layers=cfg.n_layers, n_heads=cfg.n_heads,
        d_ff=cfg.d_ff, steps=cfg.train_steps, batch=cfg.train_batch, seq=cfg.seq_len, lr=cfg.lr, warmup=cfg.warmup,
        weight_decay=cfg.weight_decay, device=device,
    )  # fmt: skip
    bar.update(cfg.seeds)
    bar.close()
    for k, (seed, (model, log)) in enumerate(zip(seeds, trained, strict=True)):
        train_sps.append(log["train_samples_per_s"])
        calib = [b.to(device) for b in data.batches(data.random_windows(a_train, cfg.calib_windows, cfg.seq_len, seed + 101), cfg.calib_batch)]  # fmt: skip
        evals = {"B": data.batches(data.random_windows(b_test, n_eval, cfg.seq_len, seed + 202), cfg.eval_batch)}
        if cfg.domain_a:
            evals["A"] = data.batches(data.random_windows(a_test, n_eval, cfg.seq_len, seed + 303), cfg.eval_batch)
        evals = {d: [b.to(device) for b in bs] for d, bs in evals.items()}
        pruned_layers = tuple(i for i in range(cfg.n_layers) if i not in cfg.skip_layers)
        with torch.no_grad():
            stats = collect_stats(model, calib, pruned_layers)
        entry: dict[str, Any] = {"train": log}
        for domain, batches in evals.items():
            ppl: dict[str, float] = {}
            for method in ("dense", *PRUNED):
                runner = make_pruner(model, method, cfg, stats, seed)
                t0 = time.perf_counter()
                ppl[method] = _timed_ppl(runner, batches, device)[0]
                eval_sps.append(n_eval / (time.perf_counter() - t0))
                if method == "pp" and domain == "B":
                    entry["r_adjusted"] = runner.r_adj
                    entry["kept_units"] = _kept(runner)
                    entry["probe_b_idx_last_batch"] = {f"{i}.{kd}": d.b_idx.tolist() for (i, kd), d in runner.decisions.items()}  # fmt: skip
                    entry["probe_s_idx_last_batch_layer1_mlp"] = runner.decisions[
                        (pruned_layers[0], "mlp")
                    ].s_idx.tolist()
                if method == "flap" and domain == "B":
                    entry["flap_kept_units"] = runner.kept_counts()
            entry[f"ppl_{domain}"] = ppl
        if cfg.ablations:
            entry["ablations_B"] = {
                name: _timed_ppl(make_pruner(model, "pp", cfg, stats, seed, **kw), evals["B"], device)[0]
                for name, kw in ABLATIONS.items()
            }
        metrics[f"seed{seed}"] = entry
        r.log_scalars({**entry, "train": log}, step=seed)  # each model's perplexities and training summary
        if k == 0 and cfg.latency_reps:
            metrics["latency"] = _latency(model, cfg, stats, evals["B"], seed, device)
    n_b = min(cfg.eval_batch, max(1, math.ceil(cfg.probe_bsz * cfg.eval_batch)))
    n_s = min(cfg.seq_len, max(math.ceil(cfg.probe_seq * cfg.seq_len), 2))
    from iclr25.probe_pruning.pruning import adjusted_ratio, heads_kept

    r_adj = adjusted_ratio(cfg.ratio, cfg.n_layers, cfg.skip_layers)
    kept = {}
    for i in range(cfg.n_layers):
        if i not in cfg.skip_layers:
            kept[(i, "attn")] = heads_kept(cfg.n_heads, r_adj)
            kept[(i, "mlp")] = keep_count(cfg.d_ff, r_adj, cfg.round_multiple)
    model_cfg = model.cfg
    fl = flops_report(model_cfg, cfg.eval_batch, cfg.seq_len, kept, (n_b, n_s), cfg.skip_layers)
    full = flops_report(model_cfg, cfg.eval_batch, cfg.seq_len, kept, (cfg.eval_batch, cfg.seq_len), cfg.skip_layers)
    metrics["flops"] = {
        "probe_fraction_pp": fl["probe_fraction"],
        "probe_fraction_fullbatch": full["probe_fraction"],
        "kept_fraction": fl["kept_fraction"],
        "probe_shape": [n_b, n_s],
        "r_adjusted": r_adj,
    }
    throughput = {
        "train_samples_per_s": sum(train_sps) / len(train_sps),
        "eval_samples_per_s": sum(eval_sps) / len(eval_sps),
    }
    if "latency" in metrics:
        throughput.update({f"{k}_tokens_per_s": v["tokens_per_s"] for k, v in metrics["latency"].items()})
    figures = [_figure(metrics, cfg, r.dir)]
    metrics["measure_wall_s"], metrics["measure_cpu_s"] = r.elapsed()  # CPU: this process and its finished workers
    return metrics, throughput, figures


def _latency(model: Any, cfg: Config, stats: dict, batches: list, seed: int, device: str) -> dict[str, Any]:
    """Wall time and tokens/s of the dense, PP (probing included) and sliced static forward over `batches`."""
    out = {}
    tokens = sum(b.numel() for b in batches)
    for method in ("dense", "pp", "wanda-sp"):
        times = []
        for _ in range(cfg.latency_reps):
            runner = make_pruner(model, method, cfg, stats, seed)
            times.append(_timed_ppl(runner, batches, device)[1])
        best = min(times)
        out[method] = {"seconds": best, "tokens_per_s": tokens / best}
    return out


def _figure(metrics: dict, cfg: Config, folder: Any) -> str:
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


# ------------------------------------------------------------------------------------------------ full
def _measure_full(cfg: Config, r: Any) -> tuple[dict, dict, list[str]]:
    import torch

    from iclr25.probe_pruning import data, hf_io

    device = r.device
    dtype = getattr(torch, cfg.dtype) if device == "cuda" else torch.float32
    model = hf_io.from_pretrained_dir(cfg.model_dir, dtype=dtype).to(device)
    tok_path = f"{cfg.model_dir}/tokenizer.json"
    tokenize = data.load_tokenizer(tok_path)
    if not cfg.wikitext or not cfg.c4:
        raise ValueError("the full preset needs wikitext= (wiki.test.raw) and c4= (a c4 json.gz shard)")
    test = data.to_tokens(data.load_wikitext(cfg.wikitext), tokenize)
    windows = data.ordered_windows(test, cfg.seq_len, cfg.eval_batches * cfg.eval_batch)
    evals = [b.to(device) for b in data.batches(windows, cfg.eval_batch)]
    calib = data.load_c4_windows(cfg.c4, cfg.calib_windows, cfg.seq_len, r.seed, tokenize)
    from iclr25.probe_pruning.pruning import collect_stats

    layers = tuple(i for i in range(model.cfg.num_hidden_layers) if i not in cfg.skip_layers)
    with torch.no_grad():
        stats = collect_stats(model, [b.to(device) for b in data.batches(calib, cfg.calib_batch)], layers)
    metrics: dict[str, Any] = {"model": model.cfg.to_dict(), "eval_windows": int(windows.shape[0])}
    dense_ppl, dense_t = _timed_ppl(model, evals, device)
    metrics["dense"] = {"ppl": dense_ppl, "seconds": dense_t}
    for ratio in (cfg.ratio, *cfg.ratios):
        res = {}
        for method in ("pp", "fullbatch", "wanda-sp", "flap"):
            runner = make_pruner(model, method, cfg, stats, r.seed, ratio=ratio)
            ppl, secs = _timed_ppl(runner, evals, device)
            reduction = 1 - secs / dense_t
            res[method] = {"ppl": ppl, "seconds": secs, "prr": (ppl - dense_ppl) / dense_ppl / reduction if reduction > 0 else None}  # fmt: skip
        metrics[f"r{ratio}"] = res
    tokens = sum(b.numel() for b in evals)
    return metrics, {"dense_tokens_per_s": tokens / dense_t}, []


# ------------------------------------------------------------------------------------------------ claims
def claims(metrics: dict[str, Any], config: Config) -> list[Claim]:
    """The gated and reported claims (spec §9.6) from the measured metrics."""
    if config.model_dir:
        return _full_claims(metrics, config)
    out: list[Claim] = []
    seeds = sorted(k for k in metrics if k.startswith("seed"))
    for s in seeds:
        p = metrics[s]["ppl_B"]
        worst = min(p[m] for m in PRUNED)
        out += [
            Claim(f"dense_le_pruned_{s}", "dense PPL <= every pruned PPL (domain B)", "dense best (Table 2)",
                  round(p["dense"], 3), f"<= min pruned = {worst:.3f}", p["dense"] <= worst, True),
            Claim(f"pp_lt_random_{s}", "PPL(PP) < PPL(random units), domain B", "not in paper (spec control)",
                  round(p["pp"] / p["random"], 4), "PP / random < 1", p["pp"] < p["random"], True, 0.05),
            Claim(f"pp_vs_inverted_{s}", "PPL(PP) <= 0.9 PPL(inverted PP), domain B", "not in paper (spec control)",
                  round(p["pp"] / p["inverted"], 4), "PP / inverted <= 0.9", p["pp"] <= 0.9 * p["inverted"], True, 0.05),
            Claim(f"fullbatch_vs_pp_{s}", "PPL(Full-batch) <= 1.05 PPL(PP), domain B", "13.6 vs 16.8 (L2-7B, 40%)",
                  round(p["fullbatch"] / p["pp"], 4), "full / PP <= 1.05", p["fullbatch"] <= 1.05 * p["pp"], True, 0.05),
            Claim(f"pp_vs_wanda_sp_{s}", "PP beats Wanda-sp (paper's headline), domain B", "16.8 vs 43.8",
                  round(p["pp"] / p["wanda-sp"], 4), "PP / Wanda-sp < 1", p["pp"] < p["wanda-sp"], False, 0.1),
            Claim(f"pp_vs_flap_{s}", "PP beats FLAP (paper's headline), domain B", "16.8 vs 38.9",
                  round(p["pp"] / p["flap"], 4), "PP / FLAP < 1", p["pp"] < p["flap"], False, 0.1),
        ]  # fmt: skip
        if "ppl_A" in metrics[s]:
            a = metrics[s]["ppl_A"]
            out.append(
                Claim(f"fullbatch_vs_pp_domain_a_{s}", "PPL(Full-batch) <= 1.05 PPL(PP), domain A (in distribution)",
                      "13.6 vs 16.8", round(a["fullbatch"] / a["pp"], 4), "full / PP <= 1.05",
                      a["fullbatch"] <= 1.05 * a["pp"], False, 0.1)
            )  # fmt: skip
    fl = metrics["flops"]
    out.append(
        Claim("probe_flops_fraction", "analytic probe FLOPs <= 5% of the dense forward", "about 1.5% (paper)",
              round(fl["probe_fraction_pp"], 5), "<= 0.05", fl["probe_fraction_pp"] <= 0.05, True, 0.0)
    )  # fmt: skip
    out.append(
        Claim("kept_flops_fraction", "analytic FLOPs of the pruned forward / dense", "not given for this setting",
              round(fl["kept_fraction"], 4), "reported", True, False, 0.0)
    )  # fmt: skip
    if "measure_wall_s" in metrics:
        wall = metrics["measure_wall_s"]
        out.append(
            Claim("wall_time_s", "the whole run (2 seeds, training included) takes <= 3 min", "spec: quick <= 3 min",
                  round(wall, 1), "<= 180 s (on the machine and load of the run)", wall <= 180, False, 1e4)
        )  # fmt: skip
    if "measure_cpu_s" in metrics:  # the load-independent cost: CPU seconds <= 180 fits 3 min even on one idle core
        cpu = metrics["measure_cpu_s"]
        out.append(
            Claim("cpu_time_s", "CPU seconds of the whole run, training workers included (independent of the load)",
                  "spec: quick <= 3 min", round(cpu, 1), "<= 180 CPU s (3 min on one idle core)", cpu <= 180, False,
                  1e4)
        )  # fmt: skip
    if "latency" in metrics:
        lat = metrics["latency"]
        ratio = lat["pp"]["seconds"] / lat["dense"]["seconds"]
        out.append(
            Claim("pp_latency_vs_dense", "PP forward (probing included) time / dense time, CPU tiny model",
                  "faster than dense on LLaMA-2-7B (GPU)", round(ratio, 3), "< 1", ratio < 1, False, 1.0)
        )  # fmt: skip
    return out


def _full_claims(metrics: dict[str, Any], config: Config) -> list[Claim]:
    out = [
        Claim("dense_ppl", "dense WikiText2 PPL (LLaMA-2-7B)", 6.0, round(metrics["dense"]["ppl"], 3), "|ours - 6.0| <= 2",
              abs(metrics["dense"]["ppl"] - 6.0) <= 2, False, 0.5)
    ]  # fmt: skip
    for ratio in (config.ratio, *config.ratios):
        paper = PAPER_TABLE2.get(round(ratio, 2), {})
        for method, res in metrics[f"r{ratio}"].items():
            ref = paper.get(method)
            ok = ref is not None and abs(res["ppl"] - ref) <= 2
            out.append(
                Claim(f"{method}_ppl_r{ratio}", f"{method} WikiText2 PPL at {ratio:.0%}", ref, round(res["ppl"], 3),
                      "|ours - paper| <= 2", ok, False, 1.0)
            )  # fmt: skip
    return out
