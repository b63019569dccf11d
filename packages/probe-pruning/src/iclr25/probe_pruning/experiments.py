"""The experiments of the reproduction: the tiny-model study (quick / ci) and the local-checkpoint study (full).

Quick / ci (CPU): a tiny byte-level LLaMA per seed, calibrated on domain A (English prose), pruned at r = 0.4 with
skip {0} (r' = 0.53, 2 of 4 heads and 88 of 176 MLP channels kept, multiple 8), probe 5% x 50%, EMA 0.99,
evaluated on 10 batches of 20 x 64 domain-B (Python source) windows: dense, Wanda-sp, FLAP, PP, Full-batch and the
controls random units and inverted PP. Full (GPU): a local LLaMA/OPT checkpoint, WikiText2, C4 calibration.
Each function returns plain metrics; the claims judge them (claims.py).
"""

from __future__ import annotations

import dataclasses
import math
import time
from typing import Any

from iclr25.probe_pruning.config import Config

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
FULL_METHODS = ("pp", "fullbatch", "wanda-sp", "flap")  # the methods of the full preset (Table 2)


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


def place_model(model: Any, cfg: Config, device: str, dtype: Any = None) -> Any:
    """`model` on `device`, or split over `cfg.devices` GPUs (sharding.py) under the `cfg.max_memory` budgets; the
    plan is checked (devices, layers, budgets) before any weight moves."""
    from iclr25.probe_pruning.sharding import cuda_devices, parse_max_memory, plan_model, shard_model

    devices = cuda_devices(cfg.devices, device)
    budgets = parse_max_memory(cfg.max_memory, cfg.devices)
    if cfg.devices == 1 and budgets is None:
        return model.to(device)
    return shard_model(model, plan_model(model, devices, budgets, dtype))


def _split_devices(runner: Any) -> tuple[Any, ...]:
    """The devices a split model (or a pruner of one) runs on, in order; () when it is not split."""
    model = runner if hasattr(runner, "layer_devices") else runner.model  # a DecoderLM, else a pruner
    return tuple(dict.fromkeys(model.layer_devices)) if getattr(model, "layer_devices", None) else ()


def _timed_ppl(runner: Any, batches: list, device: str) -> tuple[float, float]:
    """(PPL, seconds) of one pass over `batches` (CUDA events on a GPU; a model split over several GPUs: wall time
    between synchronisations of all of them)."""
    import torch

    from iclr25.probe_pruning.pruning import evaluate_ppl

    split = _split_devices(runner) if device == "cuda" else ()
    if len(split) > 1:
        for d in split:
            torch.cuda.synchronize(d)
        t0 = time.perf_counter()
        ppl = evaluate_ppl(runner, batches)
        for d in split:
            torch.cuda.synchronize(d)
        return ppl, time.perf_counter() - t0
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
def measure_tiny(cfg: Config, r: Any) -> tuple[dict, dict]:
    """The tiny-model study: (metrics, throughput) of every seed's model, method and domain."""
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
        if cfg.devices > 1 or cfg.max_memory:  # a split copy (the trained model stays cached as it is)
            import copy

            model = place_model(copy.deepcopy(model), cfg, device)
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
    return metrics, throughput


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


# ------------------------------------------------------------------------------------------------ full
def measure_full(cfg: Config, r: Any) -> tuple[dict, dict]:
    """The full study on a local checkpoint: (metrics, throughput) of dense and every method at every ratio."""
    import torch

    from iclr25.probe_pruning import data, hf_io

    device = r.device
    dtype = getattr(torch, cfg.dtype) if device == "cuda" else torch.float32
    from iclr25.probe_pruning.sharding import cuda_devices

    cuda_devices(cfg.devices, device)  # too many GPUs asked for: refused before the weights are read
    model = place_model(hf_io.from_pretrained_dir(cfg.model_dir, dtype=dtype), cfg, device, dtype)
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
    metrics: dict[str, Any] = {"model": model.cfg.to_dict(), "eval_windows": int(windows.shape[0]), "dtype": str(dtype)}
    if getattr(model, "device_plan", None) is not None:
        metrics["device_map"] = model.device_plan.to_dict()
    dense_ppl, dense_t = _timed_ppl(model, evals, device)
    metrics["dense"] = {"ppl": dense_ppl, "seconds": dense_t}
    for ratio in (cfg.ratio, *cfg.ratios):
        res = {}
        for method in FULL_METHODS:
            runner = make_pruner(model, method, cfg, stats, r.seed, ratio=ratio)
            ppl, secs = _timed_ppl(runner, evals, device)
            reduction = 1 - secs / dense_t
            res[method] = {"ppl": ppl, "seconds": secs, "prr": (ppl - dense_ppl) / dense_ppl / reduction if reduction > 0 else None}  # fmt: skip
        metrics[f"r{ratio}"] = res
    tokens = sum(b.numel() for b in evals)
    return metrics, {"dense_tokens_per_s": tokens / dense_t}
