"""Reproduction of arXiv 2407.12665: cost accounting, the mechanics of Eqs. 1-2 and the stage switch,
and the four-run benchmark (token-only, patch at equal compute, scratch on the remainder, patch at equal
data; Table 1, Table 4, Fig. 5) with wall times and throughput.

Gated claims (asserted in CI; `tests/test_gates.py` shows each one failing on a deliberately broken variant): the
cost and the official step counts, the patch loss against its loop form, `patch_forward`'s logits against a LLaMA
written out from the equations (`reference.llama_patch_logits_reference`), and, from probes recorded inside the
runs, the stage switch (fresh AdamW and schedule, next unread data, same weights), equal compute (positions run x
FLOPs counted by torch) and a smoke run (the patch loss falls; the patch-trained model, read at token level, beats
log V). The direction of the benchmark and the timings are reported, not gated.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from iclr25.patch_train.config import PRESETS, Config
from iclr25.shared.results import Claim, Report
from iclr25.shared.run import Run, is_follower, reproduction

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
        patch_lm_loss,
        token_lm_loss,
        training_cost,
    )
    from iclr25.patch_train.plan import plan_two_stage
    from iclr25.patch_train.reference import patch_lm_loss_loop

    checks: dict[str, Any] = {"costs": {(lam, K): training_cost(lam, K) for lam, K in COST_CASES}}
    tps = 2**21
    eq_data = plan_two_stage(4, 2 / 3, 2048, tps, total_tokens=135_000 * tps)
    eq_comp = plan_two_stage(4, 2 / 3, 2048, tps, compute_budget=135_000)
    checks["steps_equal_data"] = [(p.steps, p.seqs_per_step, p.block_tokens) for p in eq_data]
    checks["steps_equal_compute"] = [p.steps for p in eq_comp]

    g = torch.Generator().manual_seed(seed)
    logits = torch.randn(3, 9, 17, generator=g)
    labels = torch.randint(0, 17, (3, 9), generator=g)
    checks["k1_diff"] = float((patch_lm_loss(logits, labels, 1) - token_lm_loss(logits, labels)).abs())
    logits4 = torch.randn(2, 6, 17, generator=g)
    labels4 = torch.randint(0, 17, (2, 24), generator=g)
    labels4[0, 5] = labels4[1, 9] = labels4[1, 13] = -100  # columns with different numbers of ignored targets
    loop = patch_lm_loss_loop(logits4, labels4, 4)
    checks["eq2_diff"] = float((patch_lm_loss(logits4, labels4, 4).double() - loop).abs())

    checks["parity"] = patch_parity(seed)
    return checks


def patch_parity(seed: int = 0) -> dict[str, float]:
    """Relative max |error| of `patch_forward`'s logits, on the Hugging Face model and on `llama.FastLlama` (same
    weights), against the LLaMA written out in `reference.llama_patch_logits_reference` (Eq. 1, positions 0..T-1),
    at K = 4 and K = 1. The weights are drawn with a large scale (std 1/sqrt(fan-in), norms around 1) so that the
    attention is sharp and a wrong patch position or pooling moves the logits far beyond float32 round-off."""
    import torch

    from iclr25.patch_train.llama import from_hf
    from iclr25.patch_train.patch import make_llama, patch_forward
    from iclr25.patch_train.reference import llama_patch_logits_reference

    torch.manual_seed(seed)
    hf = make_llama("tiny", 64, 64).eval()
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for p in hf.parameters():
            if p.dim() == 2:
                p.copy_(torch.randn(p.shape, generator=g) / p.shape[1] ** 0.5)
            else:
                p.copy_(1.0 + 0.2 * torch.randn(p.shape, generator=g))
        p_emb = hf.get_input_embeddings().weight
        p_emb.copy_(torch.randn(p_emb.shape, generator=g))
    fast = from_hf(hf).eval()
    heads = hf.config.num_attention_heads
    out = {}
    for K, L in ((4, 4 * 16), (1, 16)):
        ids = torch.randint(0, 64, (2, L), generator=g)
        ref = llama_patch_logits_reference(hf.state_dict(), heads, ids, K, eps=hf.config.rms_norm_eps)
        scale = float(ref.abs().max())
        for name, model in (("hf", hf), ("fast", fast)):
            with torch.no_grad():
                logits, _ = patch_forward(model, ids, K)
            out[f"{name}_K{K}"] = float((logits.double() - ref).abs().max()) / scale
    return out


def mechanics_claims(seed: int = 0) -> list[Claim]:
    """The exact checks of spec §9.1-9.3 as claims: cost, official step counts, equal-compute FLOPs, Eqs. 1-2."""
    return _mechanics_claims(mechanics_checks(seed))


def _seed_runs(
    plans: dict[str, list[Any]], config: Config, seed: int, stream: Any, valid_ids: Any, run_dir: Path, device: str,
    wandb: str, scale_out: Any = None,
) -> dict[str, dict[str, Any]]:  # fmt: skip
    """Train the configured runs of one seed from the same initial weights. With `engine="torch"` they train
    interleaved step by step at equal fractions of their compute (`train.run_interleaved`), so the machine's load
    falls on all alike and their wall and CPU times compare; with `"lightning"` one after the other."""
    import torch

    from iclr25.patch_train.data import TokenStream
    from iclr25.patch_train.evaluate import evaluate_nll
    from iclr25.patch_train.train import OptimConfig, TwoStageLoop, run_interleaved, train_two_stage

    vocab = 256 if config.tokenizer == "byte" else _tokenizer(config).vocab_size
    optim = OptimConfig(micro_batch=config.micro_batch or None)

    def eval_fn(m: Any) -> dict[str, float]:
        nll, ppl = evaluate_nll(m, valid_ids, config.T, config.eval_windows, seed=1234)
        return {"nll": nll, "ppl": ppl}

    def data(name: str) -> Any:  # "scratch" trains on the patch run's remainder: the tokens after its patch stage
        return TokenStream(stream[plans["patch"][0].tokens :] if name == "scratch" else stream)

    stages: dict[str, list[Any]] = {}
    if config.engine == "torch":
        if config.threads:
            torch.set_num_threads(config.threads)
        loops = {}
        for name in config.runs:
            torch.manual_seed(seed)
            model = _make_model(config, vocab).to(device)
            loops[name] = TwoStageLoop(model, data(name), plans[name], optim=optim, device=device, seed=seed,
                                       eval_fn=eval_fn, desc=f"seed {seed} {name}: ")  # fmt: skip
        run_interleaved(loops)
        stages = {name: loop.results for name, loop in loops.items()}
    else:
        for name in config.runs:
            torch.manual_seed(seed)
            model = _make_model(config, vocab).to(device)
            stages[name] = train_two_stage(
                model, data(name), plans[name], run_dir / f"seed{seed}" / name, optim=optim, device=device,
                wandb=wandb, seed=seed, threads=config.threads or None, eval_fn=eval_fn, scale_out=scale_out,
                engine="lightning",
            )  # fmt: skip
    return {
        name: {
            "stages": st,
            "nll": st[-1].eval["nll"],
            "train_s": sum(s.wall_s for s in st),
            "train_cpu_s": sum(s.cpu_s for s in st),
        }
        for name, st in stages.items()
    }


def _make_model(config: Config, vocab: int) -> Any:
    """The configured LLaMA: the Hugging Face class (`impl="hf"`) or the same weights in `llama.FastLlama`."""
    from iclr25.patch_train.llama import from_hf
    from iclr25.patch_train.patch import make_llama

    model = make_llama(config.model, vocab, config.max_len or config.T, **config.extra)
    return from_hf(model) if config.impl == "torch" else model


@reproduction(SLUG, PRESETS, precision=True)
def run(run: Run) -> Report:
    """Run the reproduction at `scale` (or with `config`), write results.json + report.md + figures.

    `scale_out` (`--devices`, `--num-nodes`, `--strategy`, `--precision`, `--resume auto`, `--checkpoint-every`):
    every stage trains on a Lightning Trainer with those options; each optimizer step's micro-batches are split
    over the processes, and with checkpoints an interrupted run continues from each stage's last.ckpt."""
    metrics, checks, throughput, results = measure(run)
    figures = [] if is_follower() else _figures(results, run.config, run.dir, run.seed)
    notes = _notes(metrics, run.config) + f" device={run.device}."
    return run.report(claims(metrics, run.config, checks), metrics, throughput=throughput, figures=figures, notes=notes)


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
    with run.progress(total=config.seeds, desc="seeds (every run of a seed)", unit="seed") as bar:
        for s in range(seed, seed + config.seeds):
            stream = shuffle_chunks(train_all, config.chunk, seed=s) if config.chunk else train_all
            if s == seed:
                first_stream = stream
            done = _seed_runs(plans, config, s, stream, valid_ids, run.dir, dev, run.wandb, run.scale_out)
            for name in config.runs:
                results[name].append(done[name])
            bar.update(1)

    # ---- smoke, stage-switch and equal-compute evidence from the first seed's runs, recorded inside them
    st1 = results["patch"][0]["stages"][0]
    checks["stage1"] = smoke_checks(st1, math.log(tok.vocab_size))
    checks["switch"] = switch_checks(results["patch"][0]["stages"], first_stream)
    if "token" in config.runs:
        fpp_run = _measured_fpp(config, tok.vocab_size, dev)
        checks["compute"] = compute_checks({n: results[n][0]["stages"] for n in ("token", "patch")}, fpp_run)

    # ---- benchmark (reported)
    def stat(name: str, key: str = "nll") -> tuple[float, float]:
        vals = [r[key] for r in results[name]]
        return float(np.mean(vals)), float(np.std(vals))

    metrics: dict[str, Any] = {"val_nll": {}, "val_nll_std": {}, "wall_s": {}, "cpu_s": {}, "run_tokens_per_s": {},
                               "tokens_read": {}, "positions_run": {}}  # fmt: skip
    for name in config.runs:
        metrics["val_nll"][name], metrics["val_nll_std"][name] = stat(name)
        metrics["wall_s"][name] = stat(name, "train_s")[0]
        metrics["cpu_s"][name] = stat(name, "train_cpu_s")[0]
        metrics["run_tokens_per_s"][name] = sum(p.tokens for p in plans[name]) / metrics["wall_s"][name]
        metrics["tokens_read"][name] = sum(p.tokens for p in plans[name])
        metrics["positions_run"][name] = sum(p.positions for p in plans[name])
    metrics["val_nll_per_seed"] = {n: [r["nll"] for r in results[n]] for n in config.runs}
    # what each run did, counted by its probes (first seed): optimizer steps and forward + backward passes per stage
    metrics["optimizer_steps"] = {n: [len(st.probe["lrs"]) for st in results[n][0]["stages"]] for n in config.runs}
    metrics["forward_backward_calls"] = {n: [len(st.losses) for st in results[n][0]["stages"]] for n in config.runs}
    metrics["train_s_per_seed"] = {n: [r["train_s"] for r in results[n]] for n in config.runs}
    metrics["train_cpu_s_per_seed"] = {n: [r["train_cpu_s"] for r in results[n]] for n in config.runs}
    if "token" in config.runs:  # training time of the equal-compute patch run over the token run's, seed by seed
        pairs = list(zip(results["patch"], results["token"], strict=True))
        metrics["wall_ratio_per_seed"] = [p["train_s"] / t["train_s"] for p, t in pairs]
        metrics["cpu_ratio_per_seed"] = [p["train_cpu_s"] / t["train_cpu_s"] for p, t in pairs]
    metrics["engine"], metrics["impl"] = config.engine, config.impl
    metrics["patch_stage1_token_nll"] = float(np.mean([r["stages"][0].eval["nll"] for r in results["patch"]]))
    metrics["train_tokens_available"] = len(train_all)
    metrics["valid_tokens"] = len(valid_ids)
    metrics["plans"] = {n: [p.to_dict() for p in plans[n]] for n in config.runs}

    # ---- throughput: an interleaved benchmark of token- and patch-level training steps (same model size)
    from iclr25.patch_train.train import step_throughput

    probe = _make_model(config, tok.vocab_size)
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
    # the same measure inside the training runs (first seed, patch run): includes the per-step loop overhead
    for name in ("token", "patch"):  # whole runs: tokens read over training wall / CPU time (seed means)
        if name in config.runs:
            throughput[f"{name}_run_tokens_per_s"] = metrics["run_tokens_per_s"][name]
            throughput[f"{name}_run_tokens_per_cpu_s"] = metrics["tokens_read"][name] / metrics["cpu_s"][name]
    st2 = results["patch"][0]["stages"][1]
    throughput["run_token_step_tokens_per_s"] = st2.tokens_per_s
    throughput["run_patch_step_tokens_per_s"] = st1.tokens_per_s
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
    k1, diff, err = c["k1_diff"], c["eq2_diff"], max(c["parity"].values())
    claims.append(Claim("patch_loss_K1_is_ce", "with K=1 the patch loss is the shifted next-token cross-entropy",
                        0.0, k1, "|diff| <= 1e-6", k1 <= 1e-6, True))  # fmt: skip
    claims.append(Claim("patch_loss_eq2", "K=4 patch loss equals the loop form of Eq. 2 (per-k means, ignored labels)",
                        0.0, diff, "|diff| <= 1e-5", diff <= 1e-5, True))  # fmt: skip
    claims.append(Claim("patch_forward_parity", "patch_forward's logits (Hugging Face LLaMA and the plain-torch model, "
                        "K=4 and K=1) equal a LLaMA written out from Eq. 1 and the architecture (patches at positions "
                        "0..T-1), relative max error", 0.0, err, "<= 1e-5", err <= 1e-5, True))  # fmt: skip
    return claims


def claims(metrics: dict[str, Any], config: Config, checks: dict[str, Any]) -> list[Claim]:
    """Every claim, judged from the metrics and the exact checks of `measure`; every threshold lives here."""
    claims = _mechanics_claims(checks)
    claims += _smoke_claims(checks)
    claims.append(_switch_claim(checks["switch"]))
    if "compute" in checks:
        claims.append(_compute_claim(checks["compute"]))

    paper_delta_c = math.log(PAPER_TABLE4["patch_90B"] / PAPER_TABLE4["token_45B"])
    paper_delta_d = math.log(PAPER_TABLE1["patch_lam_2_3"] / PAPER_TABLE1["token"])
    if "token" in config.runs:
        d = metrics["val_nll"]["patch"] - metrics["val_nll"]["token"]
        claims.append(Claim("patch_equal_compute_vs_token", "patch (K=4, lam=2/3) at equal compute reaches a lower "
                            "token-level NLL than token-only (paper: Table 4, 370M, 45B vs 90B tokens; nats)",
                            round(paper_delta_c, 4), d, "ours < 0 (reported: scale-dependent)", d < 0, False))  # fmt: skip
        ratio_t = metrics["wall_s"]["patch"] / metrics["wall_s"]["token"]
        ratio_c = metrics["cpu_s"]["patch"] / metrics["cpu_s"]["token"]
        how = "interleaved step by step" if config.engine == "torch" else "one after the other"
        claims.append(Claim("equal_compute_wall_time", f"at equal compute the patch and token runs ({how}) take the "
                            "same training wall time (patch / token, seed-mean times)", 1.0, ratio_t,
                            "|ours - 1| <= 0.15 (reported: timings)", abs(ratio_t - 1) <= 0.15, False))  # fmt: skip
        claims.append(Claim("equal_compute_cpu_time", "the same ratio in CPU time (user + system) of the training "
                            "steps", 1.0, ratio_c, "|ours - 1| <= 0.15 (reported: timings)", abs(ratio_c - 1) <= 0.15,
                            False))  # fmt: skip
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


def smoke_checks(stage1: Any, log_vocab: float) -> dict[str, float]:
    """The patch stage's loss at its start and end (means of its first and last 10% of micro-batches) and the
    token-level validation NLL of the model it leaves (K=1 read-out)."""
    import numpy as np

    k = max(1, len(stage1.losses) // 10)
    return {
        "first_loss": float(np.mean(stage1.losses[:k])),
        "last_loss": float(np.mean(stage1.losses[-k:])),
        "token_nll": stage1.eval["nll"],
        "log_vocab": log_vocab,
    }


SMOKE_DROP = 0.5  # nats: a learning stage must move well past the ~0.05-nat batch-to-batch noise of a frozen model


def _smoke_claims(checks: dict[str, Any]) -> list[Claim]:
    st1 = checks["stage1"]
    fall, log_v, nll = st1["last_loss"] - st1["first_loss"], st1["log_vocab"], st1["token_nll"]
    return [
        Claim("patch_loss_falls", "the patch-stage loss falls (mean of last vs first 10% of steps; nats)", None,
              fall, f"ours <= -{SMOKE_DROP}", fall <= -SMOKE_DROP, True),
        Claim("token_nll_after_patch_stage", f"after stage 1 the model read at token level (K=1) beats uniform "
              f"log V = {log_v:.3f}", None, nll, f"ours <= {log_v - SMOKE_DROP:.3f} (log V - {SMOKE_DROP})",
              nll <= log_v - SMOKE_DROP, True),
    ]  # fmt: skip


def switch_checks(stages: list[Any], stream_ids: Any) -> dict[str, Any]:
    """The stage switch as the run's own probes recorded it (`stage.StageProbe`), for both stages of a two-stage
    run: optimizer state before the first step, AdamW step counts and moments after it, every step's lr against
    the schedule written out (`reference.hf_cosine_lr_loop`), the first ids against the raw stream (stage 2 must
    start right after the tokens stage 1's plan reads) and the weights stage 2 starts from."""
    import numpy as np

    from iclr25.patch_train.reference import hf_cosine_lr_loop

    out: dict[str, Any] = {}
    offset = 0
    for i, st in enumerate(stages[:2]):
        probe, plan = st.probe, st.plan
        expected = [hf_cosine_lr_loop(s, plan.lr, plan.warmup, plan.steps) for s in range(plan.steps)]
        lrs = probe.get("lrs", [])
        lr_err = (
            max(abs(a - b) for a, b in zip(lrs, expected, strict=True)) / plan.lr
            if len(lrs) == len(expected)
            else math.inf
        )
        want = [int(v) for v in np.asarray(stream_ids[offset : offset + len(probe.get("first_ids", []))])]
        out[f"stage{i + 1}"] = {
            "state_entries_before_first_step": probe.get("state_entries_before_first_step", -1),
            "adam_steps_after_first_step": probe.get("adam_steps_after_first_step", []),
            "moment_ratio_err": probe.get("moment_ratio_err", math.nan),
            "first_lr": lrs[0] if lrs else math.nan,
            "lr_err": lr_err,
            "steps": len(lrs),
            "first_ids_match": bool(want) and probe.get("first_ids") == want,
        }
        offset += plan.tokens
    out["same_weights"] = stages[1].start_info.get("weights_fingerprint") == stages[0].end_fingerprint
    return out


def compute_checks(runs: dict[str, list[Any]], fpp: dict[int, float]) -> dict[str, Any]:
    """FLOPs and tokens of the token and patch runs as they ran: the sequence positions each stage's probe counted
    (from the logits the model returned) times the FLOPs per position torch's counter measured at that patch size,
    and the tokens each stage read."""
    flops = {n: float(sum(st.probe["positions"] * fpp[st.plan.K] for st in stages)) for n, stages in runs.items()}
    tokens = {n: int(sum(st.probe["tokens"] for st in stages)) for n, stages in runs.items()}
    return {
        "flops": flops,
        "tokens": tokens,
        "flops_per_position": {str(k): v for k, v in fpp.items()},
        "flops_ratio": flops["patch"] / flops["token"],
        "data_ratio": tokens["patch"] / tokens["token"],
    }


def _measured_fpp(config: Config, vocab: int, device: str) -> dict[int, float]:
    """FLOPs per position counted by torch on the configured model at K = 1 and K = config.K."""
    import torch

    from iclr25.patch_train.stage import measured_flops_per_position

    torch.manual_seed(0)
    model = _make_model(config, vocab).to(device)
    return {k: measured_flops_per_position(model, k, config.T) for k in (1, config.K)}


def _switch_claim(sw: dict[str, Any]) -> Claim:
    def fresh(st: dict[str, Any]) -> bool:
        return (
            st["state_entries_before_first_step"] == 0
            and st["adam_steps_after_first_step"] == [1.0]
            and st["moment_ratio_err"] <= 1e-4
            and st["first_lr"] == 0.0
            and st["lr_err"] <= 1e-9
            and st["first_ids_match"]
        )

    s2 = sw["stage2"]
    ok = fresh(sw["stage1"]) and fresh(s2) and sw["same_weights"]
    ours = (
        f"stage 2: {s2['state_entries_before_first_step']} state entries before step 1, AdamW steps "
        f"{s2['adam_steps_after_first_step']} and m^2/v error {s2['moment_ratio_err']:.1e} after it, lr(0) "
        f"{s2['first_lr']}, lr error {s2['lr_err']:.1e} over {s2['steps']} steps, next ids "
        f"{'match' if s2['first_ids_match'] else 'DIFFER'}, weights {'same' if sw['same_weights'] else 'DIFFER'}"
    )
    return Claim("stage_switch", "recorded inside the run: each stage starts a fresh AdamW (no state before its first "
                 "step; after it step 1 and m^2/v = (1-b1)^2/(1-b2)), runs its own warmup + cosine from lr 0 (every "
                 "step's lr = the schedule written out), stage 2 reads the tokens right after stage 1's and starts "
                 "from stage 1's weights", "fresh optimizer and schedule, next data, same weights", ours,
                 "state 0, steps [1], m^2/v err <= 1e-4, lr err <= 1e-9 x lr, ids and weights exact", ok, True)  # fmt: skip


def _compute_claim(c: dict[str, Any]) -> Claim:
    ratio, data = c["flops_ratio"], c["data_ratio"]
    return Claim("equal_compute_flops_ratio", "measured in the runs: positions the model ran x FLOPs per position "
                 f"counted by torch; the patch run (K=4, lam=2/3) costs the token run's FLOPs while reading "
                 f"{data:.3f}x its tokens", 1.0, ratio, "|ours - 1| <= 0.02 and tokens read 2.0 +- 1e-6",
                 abs(ratio - 1) <= 0.02 and abs(data - 2.0) <= 1e-6, True)  # fmt: skip


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
