"""The experiments of the SA-GFN reproduction (spec §6, §9): the sparse-grid study (every method x seed), the
correctness runs on the standard grid, the decoupling runs, the paper's larger grids and bit sequences, throughput.

Independent runs (method x seed) are spread over worker processes on CPU (`training.run_all`). Plain metrics out.
"""

from __future__ import annotations

from typing import Any

from iclr25.sa_gfn.config import Config, _parse_grid
from iclr25.sa_gfn.training import Job, run_all
from iclr25.shared.run import Run

DECOUPLING_EVAL_EVERY = 25  # evaluation interval of the decoupling runs (their early curve)


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
    results = run_all(jobs, workers)

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
