"""Where the paper's gain appears: a data-size sweep of patch vs token training at equal compute (Table 4).

For each token-level budget S (optimizer steps of `tokens_per_step` tokens) and each seed, the token-only run
(S steps, reads D = S x tokens_per_step tokens) and the two-stage patch run at equal compute (K=4, lam=2/3:
reads 2D) train interleaved from the same initial weights on the same shuffled stream (`train.seed_runs`);
both are scored by token-level validation NLL. The x-axis is the token run's tokens per model parameter
(D / N), the quantity that separates the paper's regime (370M on 45B-360B tokens: 120-970 tokens per
parameter) from a CPU's. `crossover` interpolates, in log(D / N), where the mean difference changes sign.
"""

from __future__ import annotations

import json
import math
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

from iclr25.patch_train.config import PRESETS, Config
from iclr25.shared.files import append_text, write_text

# Table 4 (arXiv v1, 370M LLaMA, WikiText-103 test PPL) by token-level data in billions of tokens
PAPER_TABLE4_TOKEN = {45: 12.50, 90: 11.71, 180: 11.28, 360: 10.94}
PAPER_TABLE4_PATCH = {45: 12.84, 90: 11.80, 180: 11.17, 360: 10.68}  # lam = 2/3, K = 4, same data (0.5x cost)
PAPER_PARAMS = 370e6
BUDGETS = (12, 25, 50, 100, 200, 400)  # token steps of 1,024 tokens (the quick preset's model and step)


def paper_rows() -> list[dict[str, float]]:
    """Table 4 as Δ NLL (nats) of patch minus token at equal compute (token on D vs patch on 2D, the same FLOPs)
    and at equal data (both on D), by the token run's tokens per parameter."""
    rows = []
    for d, ppl in PAPER_TABLE4_TOKEN.items():
        row = {"tokens_b": d, "tokens_per_param": d * 1e9 / PAPER_PARAMS, "token_ppl": ppl,
               "delta_equal_data": math.log(PAPER_TABLE4_PATCH[d] / ppl)}  # fmt: skip
        if 2 * d in PAPER_TABLE4_PATCH:
            row["delta_equal_compute"] = math.log(PAPER_TABLE4_PATCH[2 * d] / ppl)
        rows.append(row)
    return rows


def crossover(x: list[float], delta: list[float]) -> tuple[float, str] | None:
    """Where `delta` first changes sign (log-interpolated x) and which way ("patch stops winning" when it goes
    from < 0 to >= 0, "patch starts winning" the other way, as in the paper's Table 4); None if it never does."""
    for (x0, d0), (x1, d1) in zip(zip(x, delta, strict=True), zip(x[1:], delta[1:], strict=True), strict=False):
        if (d0 < 0) != (d1 < 0):
            f = d0 / (d0 - d1)
            way = "patch stops winning" if d0 < 0 else "patch starts winning"
            return math.exp(math.log(x0) + f * (math.log(x1) - math.log(x0))), way
    return None


def run_sweep(
    out: str | Path, budgets: tuple[int, ...] = BUDGETS, seeds: int = 2, config: Config | None = None,
    device: str = "cpu",
) -> dict[str, Any]:  # fmt: skip
    """Train token and patch (equal compute) runs at every budget and seed into `out` (a run folder this process
    holds, or a new folder); rows.jsonl grows as pairs finish; write sweep.json and sweep.png."""
    import torch

    from iclr25.patch_train.baselines import comparison_plans
    from iclr25.patch_train.data import ByteTokenizer, corpus_texts, encode_documents, shuffle_chunks
    from iclr25.patch_train.patch import count_params
    from iclr25.patch_train.train import make_model, seed_runs
    from iclr25.shared.progress import progress

    base = replace(config or PRESETS["quick"], runs=("token", "patch"))
    if base.tokenizer != "byte":
        raise ValueError("the sweep runs on the byte-level corpora (tokenizer=byte)")
    if base.threads:
        torch.set_num_threads(base.threads)
    out = Path(out)
    tok = ByteTokenizer()
    train_all = encode_documents(corpus_texts(base.corpus, "train", 0), tok)
    valid_ids = encode_documents(corpus_texts(base.corpus, "valid", 0), tok)
    n_params = count_params(make_model(base, tok.vocab_size), include_embedding=True)
    wall0, cpu0 = time.perf_counter(), time.process_time()
    rows: list[dict[str, Any]] = []
    write_text(out / "rows.jsonl", "")
    with progress(total=len(budgets) * seeds, desc="sweep (budget x seed)", unit="pair") as bar:
        for S in budgets:
            cfg = replace(base, token_steps=S)
            plans = comparison_plans(cfg.K, cfg.lam, cfg.T, cfg.tokens_per_step, S, cfg.lr, cfg.warmup)
            need = sum(p.tokens for p in plans["patch"])
            if len(train_all) < need:
                raise ValueError(f"budget {S} needs {need} training tokens; the corpus has {len(train_all)}")
            for s in range(seeds):
                stream = shuffle_chunks(train_all, cfg.chunk, seed=s) if cfg.chunk else train_all
                done = seed_runs(plans, cfg, s, stream, valid_ids, out, device, "off")
                rows.append({
                    "token_steps": S, "seed": s, "tokens_token_run": S * cfg.tokens_per_step,
                    "tokens_per_param": S * cfg.tokens_per_step / n_params,
                    "token_nll": done["token"]["nll"], "patch_nll": done["patch"]["nll"],
                    "token_train_s": done["token"]["train_s"], "patch_train_s": done["patch"]["train_s"],
                    "token_cpu_s": done["token"]["train_cpu_s"], "patch_cpu_s": done["patch"]["train_cpu_s"],
                })  # fmt: skip
                append_text(out / "rows.jsonl", json.dumps(rows[-1]) + "\n")  # partial results as they come
                bar.update(1)
    result = {
        "config": {k: v for k, v in vars(base).items() if k != "extra"} | {"extra": dict(base.extra)},
        "n_params": n_params, "seeds": seeds, "rows": rows, "budgets": list(budgets),
        "wall_s": time.perf_counter() - wall0, "cpu_s": time.process_time() - cpu0,
    }  # fmt: skip
    return summarize(result, out)


def summarize(result: dict[str, Any], out: str | Path, *, write_rows: bool = False) -> dict[str, Any]:
    """Add the per-budget means, the crossover and the paper's Table 4 to a sweep's rows; write sweep.json and
    sweep.png (and, with `write_rows`, rows.jsonl) into `out`. (`iclr25-patch-train sweep --resummarize` redoes
    this from a saved sweep.json.)"""
    import numpy as np

    out, rows = Path(out), result["rows"]
    summary = []
    for S in sorted({r["token_steps"] for r in rows}):
        sel = [r for r in rows if r["token_steps"] == S]
        d = [r["patch_nll"] - r["token_nll"] for r in sel]
        summary.append({
            "token_steps": S, "tokens_per_param": sel[0]["tokens_per_param"],
            "token_nll": float(np.mean([r["token_nll"] for r in sel])),
            "patch_nll": float(np.mean([r["patch_nll"] for r in sel])),
            "delta": float(np.mean(d)), "delta_sd": float(np.std(d)), "delta_per_seed": d,
            "wall_ratio": float(np.mean([r["patch_train_s"] / r["token_train_s"] for r in sel])),
            "cpu_ratio": float(np.mean([r["patch_cpu_s"] / r["token_cpu_s"] for r in sel])),
        })  # fmt: skip
    cross = crossover([r["tokens_per_param"] for r in summary], [r["delta"] for r in summary])
    result = {**result, "summary": summary, "paper_table4": paper_rows(),
              "crossover_tokens_per_param": cross[0] if cross else None,
              "crossover_direction": cross[1] if cross else None}  # fmt: skip
    if write_rows:
        write_text(out / "rows.jsonl", "".join(json.dumps(r) + "\n" for r in rows))
    write_text(out / "sweep.json", json.dumps(result, indent=1, default=str) + "\n")
    _plot(result, out / "sweep.png")
    return result


def _plot(result: dict[str, Any], path: Path) -> None:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:  # figures are optional
        return
    from iclr25.shared.results import save_figure

    summary, paper = result["summary"], result["paper_table4"]
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(10, 3.8))
    x = [r["tokens_per_param"] for r in summary]
    ax1.plot(x, [r["token_nll"] for r in summary], "o-", label="token-only (D tokens)")
    ax1.plot(x, [r["patch_nll"] for r in summary], "s-", label="patch K=4, λ=2/3 (2D tokens, equal compute)")
    ax1.set_xscale("log")
    ax1.set_xlabel("token run's tokens per parameter (D / N)")
    ax1.set_ylabel("validation NLL (nats/byte)")
    ax1.set_title("ours: byte-level LLaMA, CPU")
    ax1.legend(fontsize=7)
    ax2.axhline(0, color="k", lw=0.6)
    ax2.errorbar(x, [r["delta"] for r in summary], yerr=[r["delta_sd"] for r in summary], fmt="o-",
                 label=f"ours, equal compute ({result['seeds']} seeds)")  # fmt: skip
    px = [r["tokens_per_param"] for r in paper if "delta_equal_compute" in r]
    ax2.plot(px, [r["delta_equal_compute"] for r in paper if "delta_equal_compute" in r], "s--",
             label="paper Table 4, equal compute (370M)")  # fmt: skip
    ax2.plot([r["tokens_per_param"] for r in paper], [r["delta_equal_data"] for r in paper], "^:",
             label="paper Table 4, equal data (370M)")  # fmt: skip
    ax2.set_xscale("log")
    ax2.set_xlabel("token run's tokens per parameter (D / N)")
    ax2.set_ylabel("Δ NLL, patch − token (nats)")
    ax2.set_title("below 0: patch training wins")
    ax2.legend(fontsize=7)
    fig.tight_layout()
    save_figure(fig, path)
