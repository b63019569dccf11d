"""Reproduction of SA-GFN (Madan et al., "Towards Improving Exploration through Sibling Augmented GFlowNets", ICLR 2025).

Spec §6 and §9: (1) correctness on the standard 8x8 HyperGrid (TB, DB, SubTB and SA-GFN with zero intrinsic reward
reach exact l1_mean <= 2e-3); (2) the sparse 16x16 HyperGrid, where TB collapses onto the first target it finds and
SA-GFN's Behavior net, fed by the novelty-seeking Sibling, keeps mass on all three targets (exact P_T, every seed).
Independent runs (method x seed) are spread over worker processes on CPU. The full preset adds the paper's larger
grids and a bit-sequence task (reported only).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from iclr25.sa_gfn.config import PRESETS, Config, _parse_grid
from iclr25.shared.progress import progress
from iclr25.shared.results import Claim, Report, save_figure
from iclr25.shared.run import Run, reproduction

DECOUPLING_EVAL_EVERY = 25  # evaluation interval of the decoupling runs (their early curve)
SLUG = "sa-gfn"
CAPTURE_ALL = "all targets captured"


# --------------------------------------------------------------------------------------------- jobs
@dataclass(frozen=True)
class Job:
    """One independent training run."""

    name: str
    method: str
    seed: int
    env: dict[str, Any]
    kwargs: dict[str, Any] = field(default_factory=dict)
    iters: int = 800
    eval_every: int = 100
    device: str = "cpu"
    keep_distribution: bool = False


def run_job(job: Job) -> dict[str, Any]:
    """Train one method on one HyperGrid; return its final metrics, history and (optionally) P_T."""
    import torch

    from iclr25.sa_gfn.envs import HyperGrid
    from iclr25.sa_gfn.training import build_method, fit

    if job.device == "cpu":
        torch.set_num_threads(1)
    env = HyperGrid(device=job.device, **job.env)
    trainer = build_method(job.method, env, seed=job.seed, **job.kwargs)
    out = fit(trainer, job.iters, job.eval_every)
    if job.keep_distribution:
        out["distribution"] = trainer.exact_distribution().cpu().tolist()
    out["name"] = job.name
    return out


def run_bitseq(iters: int, seed: int, device: str, hidden: int) -> dict[str, Any]:
    """Bit sequences (length 120, words of 8 bits, 60 modes, spec §6b): modes found within distance 28 (reported)."""
    import torch

    from iclr25.sa_gfn.envs import BitSequence
    from iclr25.sa_gfn.training import build_method

    env = BitSequence(length=120, word_size=8, n_modes=60)
    env.device = torch.device(device)
    env.modes = env.modes.to(device)
    env._pow = env._pow.to(device)
    found: dict[str, int] = {}
    for method in ("tb", "sagfn"):
        trainer = build_method(method, env, seed=seed, hidden=hidden)
        seen = []
        for _ in range(iters):
            seen.append(trainer.train_step()["sampled"])
        found[method] = env.modes_found(torch.cat(seen), threshold=28)
    return found


def _run_all(jobs: list[Job], workers: int) -> dict[str, dict[str, Any]]:
    if workers <= 1 or len(jobs) <= 1:
        return {j.name: run_job(j) for j in progress(jobs, desc="training runs", unit="run")}
    import multiprocessing as mp
    from concurrent.futures import ProcessPoolExecutor

    # Longest jobs first so that the two workers finish together.
    order = sorted(jobs, key=lambda j: -j.iters * (2.2 if j.method == "sagfn" else 1.0))
    from concurrent.futures.process import BrokenProcessPool

    try:
        with ProcessPoolExecutor(max_workers=workers, mp_context=mp.get_context("spawn")) as pool:
            results = list(progress(pool.map(run_job, order), total=len(order), desc="training runs", unit="run"))
    except BrokenProcessPool:  # e.g. a __main__ script without an `if __name__ == "__main__"` guard
        results = [run_job(j) for j in progress(order, desc="training runs", unit="run")]
    return {r["name"]: r for r in results}


def decoupling_jobs(config: Config, seed: int, device: str, sa_kw: dict[str, Any]) -> list[Job]:
    """SA-GFN on the correctness grid with a Sibling held off target by a frozen novelty bonus: decoupled (the
    method) and coupled (`relabel=False`: the Behavior keeps the Sibling's reward on the Sibling's trajectories)."""
    env = dict(ndim=2, height=config.correctness_height, reward="standard", R0=config.correctness_R0)
    kw = dict(sa_kw, intrinsic_scale=config.decoupling_scale, rnd_normalize="mean", freeze_rnd=True)
    every = max(1, min(DECOUPLING_EVAL_EVERY, config.correctness_iters // 10))  # the early curve, finely
    return [
        Job(f"decouple/{name}", "sagfn", seed, env, dict(kw, relabel=relabel), config.correctness_iters, every, device)
        for name, relabel in (("decoupled", True), ("coupled", False))
    ]


def early_separation(history: list[dict[str, Any]], iters: int) -> dict[str, Any]:
    """The Sibling's distance to R/Z over the Behavior's (TV ratio = L1 ratio, TV = L1 / 2) along training: at 10%
    of the iterations (the first evaluation at or after it) and the first evaluation from which it stays >= 2."""
    curve = [{"iter": h["iter"], "tv": h["tv"], "sibling_tv": h["sibling_tv"]} for h in history]
    ratios = [c["sibling_tv"] / max(c["tv"], 1e-12) for c in curve]
    early = next(i for i, c in enumerate(curve) if c["iter"] >= iters / 10)
    start = max((i + 1 for i, r in enumerate(ratios) if r < 2.0), default=0)  # after the last evaluation below 2
    stays = curve[start]["iter"] if start < len(curve) else None
    return {"curve": curve, "early_iter": curve[early]["iter"], "early_ratio": ratios[early], "ratio_ge_2_from": stays}


# --------------------------------------------------------------------------------------------- throughput
def measure_throughput(device: str, config: Config) -> dict[str, float]:
    """Trajectories/s of the batched sampler and of TB and SA-GFN training steps (sparse 16x16)."""

    from iclr25.sa_gfn.envs import HyperGrid
    from iclr25.sa_gfn.gflownet import sample_trajectories
    from iclr25.sa_gfn.sagfn import SAGFN, GFlowNet
    from iclr25.shared.device import Throughput

    env = HyperGrid(config.ndim, config.height, "sparse", eps=config.eps, device=device)
    tb = GFlowNet(env, hidden=config.hidden, batch_size=config.batch_size)
    out: dict[str, float] = {}
    for n, reps in ((config.batch_size, 20), (1024, 3)):
        meter = Throughput(device)
        sample_trajectories(env, tb.policy, n)  # warm-up
        for _ in range(reps):
            with meter.measure(n):
                sample_trajectories(env, tb.policy, n)
        out[f"sampler_traj_per_s_batch{n}"] = meter.per_second
    meter = Throughput(device)
    tb.train_step()
    for _ in range(20):
        with meter.measure(config.batch_size):
            tb.train_step()
    out["tb_train_traj_per_s"] = meter.per_second
    sa = SAGFN(env, hidden=config.hidden, n_sibling=config.n_sibling, n_behavior=config.n_behavior)
    sa.train_step()
    meter = Throughput(device)
    for _ in range(20):
        with meter.measure(config.n_sibling + config.n_behavior):
            sa.train_step()
    out["sagfn_train_traj_per_s"] = meter.per_second
    out["sagfn_iters_per_s"] = meter.per_second / (config.n_sibling + config.n_behavior)
    return out


# --------------------------------------------------------------------------------------------- figures
def _figures(run_dir: Path, config: Config, results: dict[str, dict[str, Any]], methods: list[str]) -> list[str]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np
    import torch

    from iclr25.sa_gfn.envs import HyperGrid

    names: list[str] = []
    env = HyperGrid(config.ndim, config.height, "sparse", eps=config.eps)
    if config.ndim == 2:
        H = config.height
        panels = [("target R/Z", env.true_distribution().numpy())]
        panels += [(f"{m} (seed 0)", np.array(results[f"sparse/{m}/0"]["distribution"])) for m in methods]
        fig, axes = plt.subplots(1, len(panels), figsize=(3.2 * len(panels), 3.2))
        for ax, (title, p) in zip(axes, panels, strict=True):
            ax.imshow(p.reshape(H, H), cmap="viridis", origin="lower")
            ax.set_title(title, fontsize=9)
            ax.set_xticks([])
            ax.set_yticks([])
        fig.suptitle(f"Exact terminal distribution, sparse {H}x{H} HyperGrid, {config.iters} iterations", fontsize=10)
        names.append(save_figure(fig, run_dir / "terminal_distribution.png").name)
    fig, ax = plt.subplots(figsize=(5, 3.4))
    for m in methods:
        runs = [results[f"sparse/{m}/{s}"]["history"] for s in range(config.seeds)]
        its = [h["iter"] for h in runs[0]]
        tv = np.array([[h["tv"] for h in r] for r in runs])
        ax.plot(its, tv.mean(0), label=m)
        ax.fill_between(its, tv.min(0), tv.max(0), alpha=0.15)
    ax.set_xlabel("iteration")
    ax.set_ylabel("TV to R/Z (exact)")
    ax.set_title(f"Sparse {config.height}x{config.height}: mean and range over {config.seeds} seeds", fontsize=9)
    ax.legend(fontsize=8)
    names.append(save_figure(fig, run_dir / "tv_sparse.png").name)
    correct = [k for k in results if k.startswith("correct/")]
    if correct:
        fig, ax = plt.subplots(figsize=(5, 3.4))
        for k in correct:
            h = results[k]["history"]
            ax.semilogy([r["iter"] for r in h], [max(r["l1_mean"], 1e-7) for r in h], label=k.split("/", 1)[1])
        ax.axhline(config.l1_bound, color="k", ls="--", lw=0.8, label="bound 2e-3")
        ax.set_xlabel("iteration")
        ax.set_ylabel("l1_mean (exact)")
        ax.set_title(f"Standard reward {config.correctness_height}x{config.correctness_height}, R0=0.1", fontsize=9)
        ax.legend(fontsize=8)
        names.append(save_figure(fig, run_dir / "l1_correctness.png").name)
    if "decouple/decoupled" in results:
        fig, ax = plt.subplots(figsize=(5, 3.4))
        for k, label in (("decouple/decoupled", "Behavior (decoupled)"), ("decouple/coupled", "Behavior (coupled)")):
            h = results[k]["history"]
            ax.semilogy([r["iter"] for r in h], [r["tv"] for r in h], label=label)
        h = results["decouple/decoupled"]["history"]
        ax.semilogy([r["iter"] for r in h], [r["sibling_tv"] for r in h], "k--", label="Sibling (frozen bonus)")
        ax.axvline(config.correctness_iters / 10, color="grey", lw=0.8, ls=":")
        ax.set_xlabel("iteration")
        ax.set_ylabel("TV to R/Z (exact) = L1 / 2")
        ax.set_title(f"Decoupling, standard {config.correctness_height}x{config.correctness_height}", fontsize=9)
        ax.legend(fontsize=8)
        names.append(save_figure(fig, run_dir / "decoupling.png").name)
    del torch
    return names


# --------------------------------------------------------------------------------------------- run
@reproduction(SLUG, PRESETS)
def run(run: Run) -> Report:
    """Run the reproduction at `scale` (ci | quick | full) and write results.json, report.md and figures."""
    metrics, results, methods = measure(run)
    config = run.config
    throughput = measure_throughput(run.device, config) if config.throughput else {}
    figures = _figures(run.dir, config, results, methods)
    notes = (
        "All target-distribution metrics are exact (dynamic programming over the grid) and computed on the "
        "Behavior network for SA-GFN. The paper's numbers are not public (body not accessible, no official "
        f"code); the claims are the spec's acceptance checks. device={run.device}, workers={config.workers}."
    )
    return run.report(claims(metrics, config), metrics, throughput=throughput, figures=figures, notes=notes)


def measure(run: Run) -> tuple[dict[str, Any], dict[str, dict[str, Any]], list[str]]:
    """Train every (method, seed) job of the preset; return the metrics, the per-job results and the methods."""
    import torch

    from iclr25.shared.seed import seed_everything

    config, seed, device = run.config, run.seed, run.device
    if device == "cpu":
        torch.set_num_threads(1)  # tiny MLPs: threads only add contention; runs are spread over processes
    seed_everything(seed)
    workers = config.workers  # spawn-started workers also share one GPU well (small, launch-bound kernels)
    common = dict(hidden=config.hidden, n_layers=config.n_layers, uniform_pb=config.uniform_pb)
    sparse_env = dict(ndim=config.ndim, height=config.height, reward="sparse", eps=config.eps)
    sa_kw = dict(
        common,
        objective=config.objective,
        n_sibling=config.n_sibling,
        n_behavior=config.n_behavior,
        n_mix=config.n_mix,
        intrinsic_scale=config.intrinsic_scale,
        rnd_normalize=config.rnd_normalize,
        sibling_reward=config.sibling_reward,
    )
    methods: dict[str, tuple[str, dict[str, Any]]] = {
        "sagfn": ("sagfn", sa_kw),
        "tb": ("tb", dict(common, batch_size=config.batch_size)),
    }
    if config.equal_budget:
        methods["tb-equal-budget"] = ("tb", dict(common, batch_size=config.n_sibling + config.n_behavior))
    for b in config.baselines:
        methods[b] = (b, dict(common, batch_size=config.batch_size))
    jobs = [
        Job(
            f"sparse/{name}/{s}",
            m,
            seed + config.sparse_seed + s,
            sparse_env,
            kw,
            config.iters,
            config.eval_every,
            device,
            s == 0,
        )
        for name, (m, kw) in methods.items()
        for s in range(config.seeds)
    ]
    std_env = dict(ndim=2, height=config.correctness_height, reward="standard", R0=config.correctness_R0)
    for obj in config.correctness_objectives:
        jobs.append(Job(f"correct/{obj}", obj, seed, std_env, dict(common), config.correctness_iters, 100, device))
    if config.correctness_sagfn:
        kw = dict(sa_kw, intrinsic_scale=0.0)  # c = 0: r_i clamped to 1e-12, R_S ~ R_e (spec §9.5)
        jobs.append(Job("correct/sagfn-c0", "sagfn", seed, std_env, kw, config.correctness_iters, 100, device))
    if config.decoupling:
        jobs += decoupling_jobs(config, seed, device, sa_kw)
    for g in config.grids:
        d, h, reward, r0 = _parse_grid(g)
        env_kw = dict(ndim=d, height=h, reward=reward, **({"R0": r0} if reward == "standard" else {"eps": config.eps}))
        for m in config.sweep_methods:
            method = "sagfn" if m.startswith("sagfn") else m
            kw = dict(sa_kw, objective=m.split("-", 1)[1]) if "-" in m and method == "sagfn" else None
            kw = kw or (dict(sa_kw) if method == "sagfn" else dict(common))
            for s in range(config.sweep_seeds):
                jobs.append(
                    Job(
                        f"sweep/{g}/{m}/{s}",
                        method,
                        seed + s,
                        env_kw,
                        kw,
                        config.sweep_iters,
                        config.eval_every,
                        device,
                    )
                )
    results = _run_all(jobs, workers)

    metrics: dict[str, Any] = {}
    for name, r in results.items():
        for row in r["history"]:
            run.logger.log({f"{name}/{k}": v for k, v in row.items() if k != "iter"}, step=row["iter"])
    # sparse-grid summary per method
    for name in methods:
        finals = [results[f"sparse/{name}/{s}"]["final"] for s in range(config.seeds)]
        tv = [f["tv"] for f in finals]
        captured = [f["modes_captured"] for f in finals]
        metrics[f"sparse_{name}"] = {
            "tv_per_seed": tv,
            "tv_mean": sum(tv) / len(tv),
            "targets_captured_per_seed": captured,
            "seeds_all_captured": sum(c == 2**config.ndim - 1 for c in captured),
            "modes_found_sampler_per_seed": [f["modes_found_sampler"] for f in finals],
            "modes_found_train_per_seed": [f["modes_found_train"] for f in finals],
            "distinct_states_sampler_per_seed": [f["distinct_states_sampler"] for f in finals],
            "seconds_per_seed": [results[f"sparse/{name}/{s}"]["seconds"] for s in range(config.seeds)],
        }
    for k, r in results.items():
        if k.startswith("decouple/"):
            metrics[k] = {key: r["final"][key] for key in ("l1_mean", "tv", "sibling_tv", "rnd_weight")}
            metrics[k]["seconds"] = r["seconds"]
            metrics[k]["early"] = early_separation(r["history"], config.correctness_iters)
        if k.startswith(("correct/", "sweep/")):
            metrics[k] = {
                key: r["final"][key] for key in ("l1_mean", "tv", "modes_captured", "log_Z", "modes_found_sampler")
            }
            metrics[k]["seconds"] = r["seconds"]
    if config.bitseq_iters:
        metrics["bitseq_modes_found"] = run_bitseq(config.bitseq_iters, seed, device, config.hidden)

    return metrics, results, list(methods)


def claims(m: dict[str, Any], config: Config) -> list[Claim]:
    """The spec's acceptance checks, judged from the metrics; every threshold lives here."""
    claims: list[Claim] = []
    bound = config.l1_bound
    for obj in config.correctness_objectives:
        l1 = m[f"correct/{obj}"]["l1_mean"]
        claims.append(
            Claim(
                f"correct_{obj}_l1",
                f"{obj.upper()} reaches exact l1_mean <= {bound:g} on the {config.correctness_height}x"
                f"{config.correctness_height} standard grid (R0={config.correctness_R0}) in {config.correctness_iters} iterations",
                paper=f"<= {bound:g} (spec bound)",
                ours=round(l1, 6),
                margin=f"<= {bound:g}",
                holds=l1 <= bound,
                gated=True,
            )
        )
    if "tb" in config.correctness_objectives and config.correctness_height == 8 and config.correctness_R0 == 0.1:
        log_z = m["correct/tb"]["log_Z"]
        claims.append(
            Claim(
                "correct_tb_log_z",
                "TB's learned log Z matches log 22.4 = 3.1091 on the 8x8 grid",
                paper=round(math.log(22.4), 4),
                ours=round(log_z, 4),
                margin="|ours - 3.1091| <= 0.05",
                holds=abs(log_z - math.log(22.4)) <= 0.05,
                gated=True,
            )
        )
    if config.correctness_sagfn:
        l1 = m["correct/sagfn-c0"]["l1_mean"]
        claims.append(
            Claim(
                "sagfn_zero_intrinsic_l1",
                "SA-GFN with zero intrinsic reward (c = 0): the Behavior net still converges to R/Z",
                paper="converges (decoupling keeps the target)",
                ours=round(l1, 6),
                margin=f"<= {bound:g}",
                holds=l1 <= bound,
                gated=True,
            )
        )
    if config.decoupling:
        claims += decoupling_claims(m, config)
    S = config.seeds
    need_sa, max_tb = math.ceil(0.6 * S), max(1, S // 5)
    sa, tb = m["sparse_sagfn"], m["sparse_tb"]
    grid = f"sparse {config.height}x{config.height}, {S} seeds, {config.iters} iterations"
    claims.append(
        Claim(
            "sparse_sagfn_captures_all",
            f"SA-GFN's Behavior captures all {2**config.ndim - 1} targets (P_T >= {config.capture_threshold}) "
            f"in most seeds ({grid})",
            paper="not public (spec pilot: 4 of 5)",
            ours=f"{sa['seeds_all_captured']} of {S}",
            margin=f">= {need_sa} of {S}",
            holds=sa["seeds_all_captured"] >= need_sa,
            gated=True,
        )
    )
    claims.append(
        Claim(
            "sparse_tb_collapses",
            f"TB (batch {config.batch_size}) captures all targets in at most {max_tb} seed(s) ({grid})",
            paper="not public (spec pilot: 0 of 5)",
            ours=f"{tb['seeds_all_captured']} of {S}",
            margin=f"<= {max_tb} of {S}",
            holds=tb["seeds_all_captured"] <= max_tb,
            gated=True,
        )
    )
    gap = tb["tv_mean"] - sa["tv_mean"]
    claims.append(
        Claim(
            "sparse_tv_gap",
            f"mean TV to R/Z: SA-GFN at least 0.2 below TB ({grid}); ours = TV(TB) - TV(SA-GFN)",
            paper="not public (spec pilot: 0.6 - 0.23 = 0.37)",
            ours=round(gap, 4),
            margin=">= 0.2",
            holds=gap >= 0.2,
            gated=True,
        )
    )
    if "sparse_tb-equal-budget" in m:
        eq = m["sparse_tb-equal-budget"]
        gap_eq = eq["tv_mean"] - sa["tv_mean"]
        claims.append(
            Claim(
                "sparse_tv_gap_equal_budget",
                f"mean TV: SA-GFN below TB at equal sampling budget (batch {config.n_sibling + config.n_behavior}); "
                f"ours = TV(TB-{config.n_sibling + config.n_behavior}) - TV(SA-GFN); TB-"
                f"{config.n_sibling + config.n_behavior} captured all in {eq['seeds_all_captured']} of {S}",
                paper="not public (spec pilot: 0.49 - 0.23)",
                ours=round(gap_eq, 4),
                margin="> 0",
                holds=gap_eq > 0,
                gated=False,
            )
        )
    for b in config.baselines:
        base = m[f"sparse_{b}"]
        claims.append(
            Claim(
                f"sparse_tv_vs_{b}",
                f"mean TV: SA-GFN below {b} ({grid}); ours = TV({b}) - TV(SA-GFN)",
                paper="SA-GFN better than coupled baselines (abstract)",
                ours=round(base["tv_mean"] - sa["tv_mean"], 4),
                margin="> 0",
                holds=base["tv_mean"] > sa["tv_mean"],
                gated=False,
            )
        )
    return claims


def _early_claim(dec: dict[str, Any], where: str) -> list[Claim]:
    """Reported: early in training (10% of the iterations) the Sibling is already >= 2x farther from R/Z than the
    Behavior net (TV, i.e. L1 / 2, of the exact distributions)."""
    if "early" not in dec:
        return []
    e = dec["early"]
    since = "never" if e["ratio_ge_2_from"] is None else f"from iteration {e['ratio_ge_2_from']} on"
    return [
        Claim(
            "decoupled_sibling_far_early",
            f"early in training (iteration {e['early_iter']}, 10%) the Sibling's L1 distance to R/Z is >= 2x the "
            f"Behavior's; the ratio stays >= 2 {since} ({where})",
            paper="Sibling explores, Behavior follows R (Sec. 3)",
            ours=round(e["early_ratio"], 3),
            margin="Sibling / Behavior L1 >= 2",
            holds=e["early_ratio"] >= 2.0,
            gated=False,
        )
    ]


def decoupling_claims(m: dict[str, Any], config: Config) -> list[Claim]:
    """The Behavior net converges to R/Z while its Sibling stays far from it (frozen novelty bonus)."""
    dec, cpl, bound = m["decouple/decoupled"], m["decouple/coupled"], config.l1_bound
    where = (
        f"{config.correctness_height}x{config.correctness_height} standard grid, {config.correctness_iters} iterations,"
        f" Sibling on R_e + {config.decoupling_scale:g} * e(x) / mean e with the RND frozen"
    )
    return [
        Claim(
            "decoupled_behavior_l1",
            f"the Behavior net reaches exact l1_mean <= {bound:g} although the Sibling chases a frozen bonus ({where})",
            paper="Behavior unbiased (decoupling keeps the target)",
            ours=round(dec["l1_mean"], 6),
            margin=f"<= {bound:g}",
            holds=dec["l1_mean"] <= bound,
            gated=True,
        ),
        Claim(
            "decoupled_sibling_off_target",
            f"the Sibling's own P_T stays far from R/Z: TV >= {config.sibling_tv_min:g} and >= 10x the Behavior's "
            f"TV ({dec['tv']:.4f}) ({where})",
            paper="Sibling biased by design",
            ours=round(dec["sibling_tv"], 4),
            margin=f">= max({config.sibling_tv_min:g}, 10 x Behavior TV)",
            holds=dec["sibling_tv"] >= max(config.sibling_tv_min, 10 * dec["tv"]),
            gated=True,
        ),
        *_early_claim(dec, where),
        Claim(
            "coupled_ablation_biased",
            f"coupled ablation (the Behavior keeps the Sibling's reward on the Sibling's trajectories): l1_mean above "
            f"the bound ({where})",
            paper="coupling biases the sampler (abstract)",
            ours=round(cpl["l1_mean"], 6),
            margin=f"> {bound:g}",
            holds=cpl["l1_mean"] > bound,
            gated=False,
        ),
    ]


def with_overrides(config: Config, **changes: Any) -> Config:
    """A copy of `config` with fields replaced (validated)."""
    return replace(config, **changes)
