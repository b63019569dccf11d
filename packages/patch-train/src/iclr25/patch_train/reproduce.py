"""Reproduction of arXiv 2407.12665: cost accounting, the mechanics of Eqs. 1-2 and the stage switch,
and the four-run benchmark (token-only, patch at equal compute, scratch on the remainder, patch at equal
data; Table 1, Table 4, Fig. 5) with wall times and throughput.

Gated claims (asserted in CI): the exact cost and step accounting, the patch loss against its loop form,
exact mean pooling at patch positions, the stage switch (same weights, fresh optimizer, lr 0, next
unread data) and a smoke run (the patch loss falls; the patch-trained model, read at token level, beats
the uniform log V). The direction of the benchmark is reported, not gated: at CPU scale patch training
is expected to lose (the paper needs >= 180B tokens to win at equal data, Table 4).
"""

from __future__ import annotations

import math
import os
import time
from pathlib import Path
from typing import Any

from iclr25.patch_train.config import PRESETS, Config
from iclr25.shared.fabric import ScaleOut
from iclr25.shared.results import Claim, Report
from iclr25.shared.run import RUN_DIR_ENV, Run, is_follower, start_run

SLUG = "patch-train"


# Paper numbers (arXiv v1): WikiText-103 test PPL of the 370M model.
PAPER_TABLE4 = {"token_45B": 12.50, "patch_90B": 11.80}  # equal compute: token on 45B vs patch on 90B tokens
PAPER_TABLE1 = {"token": 10.9, "patch_lam_2_3": 10.7}  # equal data (360B tokens), patch at 0.5x cost
COST_CASES = ((0.5, 4), (2 / 3, 4), (0.8, 4))  # (lam, K): exact costs 0.625, 0.5, 0.4


def _tokenizer(config: Config) -> Any:
    from iclr25.patch_train.data import ByteTokenizer, HFTokenizer

    return ByteTokenizer() if config.tokenizer == "byte" else HFTokenizer.from_file(config.tokenizer)


def _train_tokens(config: Config, tok: Any, seed: int) -> Any:
    """The training token stream: a memory-mapped .bin/.npy token file, or a corpus encoded in memory."""
    from iclr25.patch_train.data import corpus_texts, encode_documents, load_token_file

    if config.corpus.endswith((".bin", ".npy")):
        return load_token_file(config.corpus, "uint16" if tok.vocab_size <= 65_536 else "uint32")
    return encode_documents(corpus_texts(config.corpus, "train", seed), tok)


def mechanics_checks(seed: int = 0) -> dict[str, Any]:
    """The exact quantities of spec §9.1-9.3: costs, official step counts, equal-compute FLOPs, Eqs. 1-2
    (judged by `claims`)."""
    import torch

    from iclr25.patch_train.patch import (
        flops_per_position_dims,
        llama_params,
        make_llama,
        patch_forward,
        patch_lm_loss,
        patch_position_ids,
        patchify,
        token_lm_loss,
        training_cost,
    )
    from iclr25.patch_train.plan import plan_flops, plan_token_only, plan_two_stage
    from iclr25.patch_train.reference import patch_lm_loss_loop

    checks: dict[str, Any] = {"costs": {(lam, K): training_cost(lam, K) for lam, K in COST_CASES}}
    tps = 2**21
    eq_data = plan_two_stage(4, 2 / 3, 2048, tps, total_tokens=135_000 * tps)
    eq_comp = plan_two_stage(4, 2 / 3, 2048, tps, compute_budget=135_000)
    checks["steps_equal_data"] = [(p.steps, p.seqs_per_step, p.block_tokens) for p in eq_data]
    checks["steps_equal_compute"] = [p.steps for p in eq_comp]
    fpp = flops_per_position_dims(llama_params("370m", 32_000), 24, 1024, 2048)
    checks["flops_ratio"] = plan_flops(eq_comp, fpp) / plan_flops(plan_token_only(2048, tps, 135_000), fpp)
    checks["data_ratio"] = sum(p.tokens for p in eq_comp) / (135_000 * tps)

    g = torch.Generator().manual_seed(seed)
    logits = torch.randn(3, 9, 17, generator=g)
    labels = torch.randint(0, 17, (3, 9), generator=g)
    checks["k1_diff"] = float((patch_lm_loss(logits, labels, 1) - token_lm_loss(logits, labels)).abs())
    logits4 = torch.randn(2, 6, 17, generator=g)
    labels4 = torch.randint(0, 17, (2, 24), generator=g)
    labels4[0, 5] = labels4[1, 9] = labels4[1, 13] = -100  # columns with different numbers of ignored targets
    loop = patch_lm_loss_loop(logits4, labels4, 4)
    checks["eq2_diff"] = float((patch_lm_loss(logits4, labels4, 4).double() - loop).abs())

    torch.manual_seed(seed)
    model = make_llama("tiny", 64, 64).eval()
    ids = torch.randint(0, 64, (2, 32), generator=g)
    with torch.no_grad():
        patch_logits, _ = patch_forward(model, ids, 4)
        mean_emb = patchify(model.get_input_embeddings()(ids), 4)
        ref = model(inputs_embeds=mean_emb, position_ids=patch_position_ids(2, 8)).logits
        manual = model.get_input_embeddings()(ids).view(2, 8, 4, -1).sum(2) / 4
        ref2 = model(inputs_embeds=manual).logits  # default positions are 0 ... T-1 too
    checks["patchify_err"] = float(max((patch_logits - ref).abs().max(), (patch_logits - ref2).abs().max()))
    return checks


def mechanics_claims(seed: int = 0) -> list[Claim]:
    """The exact checks of spec §9.1-9.3 as claims: cost, official step counts, equal-compute FLOPs, Eqs. 1-2."""
    return _mechanics_claims(mechanics_checks(seed))


def _run_one(
    name: str, plans: list[Any], config: Config, seed: int, train_ids: Any, valid_ids: Any, run_dir: Path,
    device: str, wandb: str, scale_out: Any = None,
) -> dict[str, Any]:  # fmt: skip
    import torch

    from iclr25.patch_train.data import TokenStream
    from iclr25.patch_train.evaluate import evaluate_nll
    from iclr25.patch_train.patch import make_llama
    from iclr25.patch_train.train import OptimConfig, train_two_stage

    torch.manual_seed(seed)
    vocab = 256 if config.tokenizer == "byte" else _tokenizer(config).vocab_size
    model = make_llama(config.model, vocab, config.max_len or config.T, **config.extra)
    model.to(device)

    def eval_fn(m: Any) -> dict[str, float]:
        nll, ppl = evaluate_nll(m, valid_ids, config.T, config.eval_windows, seed=1234)
        return {"nll": nll, "ppl": ppl}

    start = time.perf_counter()
    stages = train_two_stage(
        model,
        TokenStream(train_ids),
        plans,
        run_dir / f"seed{seed}" / name,
        optim=OptimConfig(micro_batch=config.micro_batch or None),
        device=device,
        wandb=wandb,
        seed=seed,
        threads=config.threads or None,
        eval_fn=eval_fn,
        scale_out=scale_out,
    )
    wall = time.perf_counter() - start
    return {"stages": stages, "wall_s": wall, "nll": stages[-1].eval["nll"], "train_s": sum(s.wall_s for s in stages)}


def run(
    scale: str = "quick",
    out: str | Path | None = None,
    *,
    seed: int = 0,
    device: str = "auto",
    wandb: str = "off",
    overwrite: bool = False,
    config: Config | None = None,
    scale_out: ScaleOut | None = None,
) -> Report:
    """Run the reproduction at `scale` (or with `config`), write results.json + report.md + figures.

    `scale_out` (`--devices`, `--num-nodes`, `--strategy`, `--precision`, `--resume auto`, `--checkpoint-every`):
    every stage trains on a Lightning Trainer with those options; each optimizer step's micro-batches are split
    over the processes, and with checkpoints an interrupted run continues from each stage's last.ckpt."""
    if scale_out is not None and scale_out.resume not in (None, "auto"):
        raise ValueError("reproduce trains many models: --resume takes 'auto' (continue the run in --out)")
    with start_run(
        SLUG,
        scale,
        PRESETS,
        out=out,
        seed=seed,
        device=device,
        wandb=wandb,
        overwrite=overwrite,
        config=config,
        scale_out=scale_out,
    ) as run:
        if run.scale_out.distributed:  # the processes Lightning starts share this run folder
            os.environ[RUN_DIR_ENV] = str(Path(run.dir).resolve())
        metrics, checks, throughput, results = measure(run)
        figures = [] if is_follower() else _figures(results, run.config, run.dir, run.seed)
        notes = _notes(metrics, run.config) + f" device={run.device}."
        return run.report(
            claims(metrics, run.config, checks), metrics, throughput=throughput, figures=figures, notes=notes
        )


def measure(run: Run) -> tuple[dict[str, Any], dict[str, Any], dict[str, float], dict[str, list[dict[str, Any]]]]:
    """The exact checks, the four-run benchmark (every seed) and the step benchmark; returns the metrics, the
    checks `claims` judges, the throughput and the per-run results (for the figures)."""
    import numpy as np
    import torch

    from iclr25.patch_train.baselines import comparison_plans
    from iclr25.patch_train.data import corpus_texts, encode_documents, shuffle_chunks
    from iclr25.shared.device import peak_flops

    config, seed, dev = run.config, run.seed, run.device
    if config.threads:
        torch.set_num_threads(config.threads)
    checks = mechanics_checks(seed)

    tok = _tokenizer(config)
    train_all = _train_tokens(config, tok, seed)
    if config.valid_corpus:
        from iclr25.patch_train.data import load_texts

        valid_ids = encode_documents(load_texts(config.valid_corpus), tok)
    else:
        valid_ids = encode_documents(corpus_texts(config.corpus, "valid", seed), tok)
    plans = comparison_plans(config.K, config.lam, config.T, config.tokens_per_step, config.token_steps, config.lr,
                             config.warmup)  # fmt: skip
    need = max(sum(p.tokens for p in plans[r]) for r in config.runs)
    if len(train_all) < need:
        raise ValueError(f"corpus {config.corpus!r} has {len(train_all)} training tokens; the runs need {need}")

    results: dict[str, list[dict[str, Any]]] = {r: [] for r in config.runs}
    with run.progress(total=config.seeds * len(config.runs), desc="training runs", unit="run") as bar:
        for s in range(seed, seed + config.seeds):
            stream = shuffle_chunks(train_all, config.chunk, seed=s) if config.chunk else train_all
            for name in config.runs:
                ids = stream
                if name == "scratch":  # the patch run's remainder: the tokens after its patch stage
                    ids = stream[plans["patch"][0].tokens :]
                results[name].append(_run_one(name, plans[name], config, s, ids, valid_ids, run.dir, dev, run.wandb,
                                                  run.scale_out))  # fmt: skip
                bar.update(1)

    # ---- smoke / stage-switch evidence from the first seed's patch run
    st1, st2 = results["patch"][0]["stages"][:2]
    k = max(1, len(st1.losses) // 10)
    checks["stage1"] = {
        "first_loss": float(np.mean(st1.losses[:k])),
        "last_loss": float(np.mean(st1.losses[-k:])),
        "token_nll": st1.eval["nll"],
        "log_vocab": math.log(tok.vocab_size),
        "stream_start": st1.stream_start,
        "stream_end": st1.stream_end,
        "end_fingerprint": st1.end_fingerprint,
    }
    checks["stage2"] = {"start_info": dict(st2.start_info), "stream_start": st2.stream_start}

    # ---- benchmark (reported)
    def stat(name: str, key: str = "nll") -> tuple[float, float]:
        vals = [r[key] for r in results[name]]
        return float(np.mean(vals)), float(np.std(vals))

    metrics: dict[str, Any] = {"val_nll": {}, "val_nll_std": {}, "wall_s": {}, "tokens_read": {}, "positions_run": {}}
    for name in config.runs:
        metrics["val_nll"][name], metrics["val_nll_std"][name] = stat(name)
        metrics["wall_s"][name] = stat(name, "train_s")[0]
        metrics["tokens_read"][name] = sum(p.tokens for p in plans[name])
        metrics["positions_run"][name] = sum(p.positions for p in plans[name])
    metrics["val_nll_per_seed"] = {n: [r["nll"] for r in results[n]] for n in config.runs}
    metrics["patch_stage1_token_nll"] = float(np.mean([r["stages"][0].eval["nll"] for r in results["patch"]]))
    metrics["train_tokens_available"] = len(train_all)
    metrics["valid_tokens"] = len(valid_ids)
    metrics["plans"] = {n: [p.to_dict() for p in plans[n]] for n in config.runs}

    # ---- throughput: an interleaved benchmark of token- and patch-level training steps (same model size)
    from iclr25.patch_train.patch import make_llama
    from iclr25.patch_train.train import step_throughput

    probe = make_llama(config.model, tok.vocab_size, config.max_len or config.T, **config.extra)
    bench_tokens = config.bench_tokens_per_step or (config.micro_batch or config.tokens_per_step // config.T) * config.T
    bench_tokens = max(bench_tokens // (config.K * config.T), 1) * config.K * config.T
    bench = step_throughput(probe, config.K, config.T, bench_tokens, steps=config.bench_steps, device=dev)
    del probe
    checks["step_speedup"] = bench["patch_over_token_tokens_per_s"]
    fpp = flops_per_position_dims_for(config, tok.vocab_size)
    peak = peak_flops(dev)
    throughput = dict(bench)
    throughput["token_step_gflops_per_s"] = bench["token_step_tokens_per_s"] * fpp / 1e9
    throughput["patch_step_gflops_per_s"] = bench["patch_step_tokens_per_s"] / config.K * fpp / 1e9
    if peak:
        throughput["token_step_mfu"] = bench["token_step_tokens_per_s"] * fpp / peak
        throughput["patch_step_mfu"] = bench["patch_step_tokens_per_s"] / config.K * fpp / peak
    # the same measure inside the Lightning runs (first seed, patch run): includes per-step trainer overhead
    throughput["lightning_token_step_tokens_per_s"] = st2.tokens_per_s
    throughput["lightning_patch_step_tokens_per_s"] = st1.tokens_per_s
    metrics["flops_per_position"] = fpp
    return metrics, checks, throughput, results


def _mechanics_claims(c: dict[str, Any]) -> list[Claim]:
    claims = []
    ok = all(
        math.isclose(c["costs"][case], v, rel_tol=1e-12) for case, v in zip(COST_CASES, (0.625, 0.5, 0.4), strict=True)
    )
    claims.append(
        Claim("cost_lam2/3_K4", "two-stage cost C(2/3, 4) = 2/3/4 + 1/3 (and 0.625, 0.4 for lam 1/2, 4/5)",
              0.5, c["costs"][(2 / 3, 4)], "|ours - 0.5| <= 1e-12 (all three)", ok, True)
    )  # fmt: skip
    got, got_c = c["steps_equal_data"], c["steps_equal_compute"]
    ok = got == [(90_000, 256, 8192), (45_000, 1024, 2048)] and got_c == [180_000, 90_000]
    claims.append(
        Claim("official_step_counts", "135k-step data: 90k patch steps (256x8192) + 45k token steps (1024x2048); "
              "135k-step compute budget: 180k + 90k", "90000+45000; 180000+90000",
              f"{got[0][0]}+{got[1][0]}; {got_c[0]}+{got_c[1]}", "exact", ok, True)
    )  # fmt: skip
    ratio, data_ratio = c["flops_ratio"], c["data_ratio"]
    claims.append(
        Claim("equal_compute_flops_ratio", "equal-compute patch plan (370M, T=2048) costs the token plan's FLOPs "
              f"while reading {data_ratio:.3f}x the tokens", 1.0, ratio, "|ours - 1| <= 0.02 and data ratio 2.0 +- 1e-6",
              abs(ratio - 1) <= 0.02 and abs(data_ratio - 2.0) <= 1e-6, True)
    )  # fmt: skip
    k1, diff, err = c["k1_diff"], c["eq2_diff"], c["patchify_err"]
    claims.append(Claim("patch_loss_K1_is_ce", "with K=1 the patch loss is the shifted next-token cross-entropy",
                        0.0, k1, "|diff| <= 1e-6", k1 <= 1e-6, True))  # fmt: skip
    claims.append(Claim("patch_loss_eq2", "K=4 patch loss equals the loop form of Eq. 2 (per-k means, ignored labels)",
                        0.0, diff, "|diff| <= 1e-5", diff <= 1e-5, True))  # fmt: skip
    claims.append(Claim("patchify_exact_mean", "patch-mode logits = token-mode logits on averaged embeddings at "
                        "positions 0..T-1", 0.0, err, "max |diff| <= 1e-5", err <= 1e-5, True))  # fmt: skip
    return claims


def claims(metrics: dict[str, Any], config: Config, checks: dict[str, Any]) -> list[Claim]:
    """Every claim, judged from the metrics and the exact checks of `measure`; every threshold lives here."""
    claims = _mechanics_claims(checks)
    st1, st2 = checks["stage1"], checks["stage2"]
    first, last = st1["first_loss"], st1["last_loss"]
    claims.append(Claim("patch_loss_falls", "the patch-stage loss falls (mean of last vs first 10% of steps)",
                        None, last - first, "ours < 0", last < first, True))  # fmt: skip
    log_v, nll = st1["log_vocab"], st1["token_nll"]
    claims.append(Claim("token_nll_after_patch_stage", f"after stage 1 the model read at token level (K=1) beats "
                        f"uniform log V = {log_v:.3f}", None, nll, f"ours < {log_v:.3f}", nll < log_v, True))  # fmt: skip
    info = st2["start_info"]
    switch_ok = (
        info["optimizer_state_entries"] == 0
        and info["lr"] == 0.0
        and info["weights_fingerprint"] == st1["end_fingerprint"]
        and st2["stream_start"] == st1["stream_end"]
        and st1["stream_start"] == 0
    )
    claims.append(Claim("stage_switch", "stage 2 starts from stage 1's exact weights with an empty AdamW state, lr 0 "
                        "and the next unread tokens", "same weights, fresh optimizer, lr 0",
                        f"state entries {info['optimizer_state_entries']}, lr {info['lr']}, "
                        f"stream {st1['stream_end']}->{st2['stream_start']}", "all exact", switch_ok, True))  # fmt: skip

    paper_delta_c = math.log(PAPER_TABLE4["patch_90B"] / PAPER_TABLE4["token_45B"])
    paper_delta_d = math.log(PAPER_TABLE1["patch_lam_2_3"] / PAPER_TABLE1["token"])
    if "token" in config.runs:
        d = metrics["val_nll"]["patch"] - metrics["val_nll"]["token"]
        claims.append(Claim("patch_equal_compute_vs_token", "patch (K=4, lam=2/3) at equal compute reaches a lower "
                            "token-level NLL than token-only (paper: Table 4, 370M, 45B vs 90B tokens; nats)",
                            round(paper_delta_c, 4), d, "ours < 0 (reported: scale-dependent)", d < 0, False))  # fmt: skip
        ratio_t = metrics["wall_s"]["patch"] / metrics["wall_s"]["token"]
        claims.append(Claim("equal_compute_wall_time", "at equal compute the patch and token runs take the same "
                            "wall time (patch / token)", 1.0, ratio_t, "|ours - 1| <= 0.25 (reported: noisy)",
                            abs(ratio_t - 1) <= 0.25, False))  # fmt: skip
    if "patch_equal_data" in config.runs and "token" in config.runs:
        d = metrics["val_nll"]["patch_equal_data"] - metrics["val_nll"]["token"]
        claims.append(Claim("patch_equal_data_vs_token", "patch at equal data (0.5x cost) matches token-only "
                            "(paper: Table 1, 370M, 360B tokens; Δ nats)", round(paper_delta_d, 4), d,
                            "ours <= 0.02 (reported)", d <= 0.02, False))  # fmt: skip
    if "scratch" in config.runs:
        d = metrics["val_nll"]["patch"] - metrics["val_nll"]["scratch"]
        claims.append(Claim("patch_init_vs_scratch", "patch initialisation beats token training from scratch on the "
                            "remaining (1-lam) data (paper Fig. 5; Δ nats)", None, d, "ours < 0 (reported)",
                            d < 0, False))  # fmt: skip
    speed = checks["step_speedup"]
    claims.append(Claim("patch_step_speedup", "a patch-level step reads about K times more tokens per second than a "
                        "token-level step (ideal K = 4)", float(config.K), speed, f">= {config.K / 2:g} (reported: timings)",
                        speed >= config.K / 2, False))  # fmt: skip
    return claims


def flops_per_position_dims_for(config: Config, vocab: int) -> float:
    """Analytic training FLOPs per sequence position of the configured model at context T."""
    return _analytic_fpp(config, vocab)


def _analytic_fpp(config: Config, vocab: int) -> float:
    from iclr25.patch_train.patch import MODEL_SIZES, flops_per_position_dims, llama_params

    dims = {**MODEL_SIZES[config.model], **config.extra}
    n = llama_params(config.model, vocab) if not config.extra else _params_with(dims, vocab)
    return flops_per_position_dims(n, dims["n_layers"], dims["d_model"], config.T)


def _params_with(dims: dict[str, int], vocab: int) -> int:
    d, ff, n_layers = dims["d_model"], dims["d_ff"], dims["n_layers"]
    return n_layers * (4 * d * d + 3 * d * ff + 2 * d) + d + d * vocab


def _notes(metrics: dict[str, Any], config: Config) -> str:
    nll = metrics["val_nll"]
    parts = [f"{n}: {v:.4f} ± {metrics['val_nll_std'][n]:.4f} nats/token" for n, v in nll.items()]
    return (
        f"Token-level validation NLL ({config.seeds} seeds, {config.corpus} corpus, byte tokens, model {config.model}): "
        + "; ".join(parts)
        + ". The direction of the benchmark is reported, never gated: the paper's gain appears at >= 180B tokens "
        "(Table 4), far beyond a CPU budget."
    )


def _figures(results: dict[str, list[dict[str, Any]]], config: Config, run_dir: Path, seed: int = 0) -> list[str]:
    import numpy as np

    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:  # figures are optional
        return []
    from iclr25.shared.results import save_figure

    fig, ax = plt.subplots(figsize=(6, 3.6))
    for name, runs in results.items():
        x0, xs, ys = 0, [], []
        for st in runs[0]["stages"]:
            steps = len(st.losses)
            flops_per_step = st.plan.positions_per_step
            smooth = np.convolve(st.losses, np.ones(20) / 20, mode="valid") if steps >= 20 else np.asarray(st.losses)
            offset = steps - len(smooth)
            for i, v in enumerate(smooth):
                xs.append((x0 + (i + offset) * flops_per_step) / 1e3)
                ys.append(v)
            x0 += steps * flops_per_step
        ax.plot(xs, ys, label=name, lw=1.0)
    ax.set_xlabel("sequence positions run (x1000) ∝ compute")
    ax.set_ylabel("training loss, 20-step mean (stage 1: patch loss)")
    ax.set_title(f"seed {seed}: K={config.K}, λ={config.lam:.3g}")
    ax.legend(fontsize=8)
    save_figure(fig, run_dir / "loss_curves.png")

    fig, ax = plt.subplots(figsize=(5, 3.2))
    names = list(results)
    means = [sum(r["nll"] for r in results[n]) / len(results[n]) for n in names]
    ax.bar(names, means, color=["C0", "C1", "C2", "C3"][: len(names)])
    for n_i, n in enumerate(names):
        ax.scatter([n_i] * len(results[n]), [r["nll"] for r in results[n]], color="k", s=8, zorder=3)
    lo = min(min(r["nll"] for r in results[n]) for n in names)
    ax.set_ylim(lo - 0.2, max(means) + 0.1)
    ax.set_ylabel("validation NLL (nats/token)")
    ax.set_title("token-level validation NLL")
    save_figure(fig, run_dir / "val_nll.png")
    return ["loss_curves.png", "val_nll.png"]
