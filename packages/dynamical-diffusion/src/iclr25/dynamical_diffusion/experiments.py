"""The experiments of the Dynamical Diffusion reproduction (arXiv 2503.00951): the exact checks of the method and the
DyDiff-vs-DPM benchmark, each returning plain metrics (the claims judge them in `claims`, the plan is `reproduce`).

Exact checks: the schedules' values, Dyn's inverse and marginal variance, r = 0 equal to plain diffusion bit for bit,
and the one-step DDIM identity. Benchmark: every model variant (`config.model_variants`) trained and sampled on every
seed with the same network, data, batch sequence and sampling noise, against persistence.
"""

from __future__ import annotations

import sys
from typing import Any

import numpy as np

from iclr25.dynamical_diffusion.config import DDIM_BUGS, Config, model_variants
from iclr25.shared.progress import is_quiet
from iclr25.shared.run import Run, is_follower

__all__ = ["LOG_EVERY", "exact_checks", "measure", "sampler_noise_drift"]
LOG_EVERY = 100  # training steps per logged mean loss


# -- exact checks -------------------------------------------------------------------------------------------------


def exact_checks(seed: int = 0) -> dict[str, float]:
    """The spec's exact checks; returns the measured errors (all should be ~0) and the wrong-variant sizes."""
    import torch

    from iclr25.dynamical_diffusion import reference
    from iclr25.dynamical_diffusion.dydiff import (
        DynamicalDiffusion,
        cumprod_schedule,
        dyn,
        dyn_inverse,
        make_beta_schedule,
        make_theta_schedule,
    )
    from iclr25.dynamical_diffusion.models import FrameStackUNet

    out: dict[str, float] = {}
    g = torch.Generator().manual_seed(seed)
    # Schedules (check 3).
    theta = cumprod_schedule(make_theta_schedule("cosine", 1000, ratio=0.5))
    abar = cumprod_schedule(make_beta_schedule("cosine", 1000))
    ref_theta = np.array([0.923506, 0.746922, 0.572136, 0.5])
    ref_abar = np.array([0.847012, 0.493844])
    out["schedule_err"] = float(
        max(np.abs(theta[[249, 499, 749, 999]] - ref_theta).max(), np.abs(abar[[249, 499]] - ref_abar).max())
    )
    # Dyn (check 2): inverse, the worked example, marginal variance.
    x = torch.randn(4, 6, 1, 5, generator=g, dtype=torch.float64)
    out["dyn_roundtrip_err"] = max(float((dyn_inverse(dyn(x, th), th) - x).abs().max()) for th in (0.05, 0.5, 1.0))
    example = dyn(torch.tensor([[1.0, 2.0, 3.0, 4.0]], dtype=torch.float64), 0.25)
    out["dyn_example_err"] = float((example - torch.tensor([[1.0, 1.8660254, 3.1160254, 4.6985572]])).abs().max())
    var = dyn(torch.randn(100_000, 6, generator=g), 0.25).var(0)
    out["dyn_variance_err"] = float((var - 1).abs().max())
    # r = 0 is plain diffusion, bit for bit (check 1).
    S, n_ctx = 5, 2
    net = FrameStackUNet(S, 1, 1, width=8, ch_mult=(1, 2)).eval()
    dpm = DynamicalDiffusion(net, gamma_ratio=0.0, n_context=n_ctx)
    x0 = torch.randn(3, S, 1, 8, generator=g)
    eps = torch.randn(3, S, 1, 8, generator=g)
    t = torch.tensor([0, 480, 999])
    xt, eps_mix = dpm.q_sample(x0, t, eps)
    diffs = [
        float((xt - reference.plain_q_sample(x0, t, eps)).abs().max()),
        float((eps_mix - eps).abs().max()),
        float((dpm.theta_bar - 1).abs().max()),
    ]
    a = dpm.sample(x0[:, :n_ctx], S, n_samples=2, ddim_steps=10, generator=torch.Generator().manual_seed(1))
    b = reference.plain_ddim_sample(net, x0[:, :n_ctx], S, 2, 10, generator=torch.Generator().manual_seed(1))
    diffs.append(float((a - b).abs().max()))
    out["r0_max_abs_diff"] = max(diffs)
    # One DDIM step lands exactly on the previous noised sample (check 4).
    x0 = torch.randn(2, 5, 1, 8, 8, generator=g)
    eps = torch.randn(2, 5, 1, 8, 8, generator=g)
    errs = []
    for r in (0.0, 0.5, 0.9, 1.0):
        dd = DynamicalDiffusion(torch.nn.Identity(), gamma_ratio=r, n_context=2)
        for t_, tp in ((501, 481), (981, 961), (21, 1), (21, None)):
            xt, _ = dd.q_sample(x0, t_, eps)
            e_mix = dyn(eps, dd.theta_bar[t_])
            target = x0 if tp is None else dd.q_sample(x0, tp, eps)[0]
            errs.append(float((dd.ddim_step(xt, t_, tp, e_mix) - target).abs().max()))
    out["ddim_step_max_err"] = max(errs)
    # The package's own sampler with each bug injected (DDIM_BUGS) misses the same identity (spec: re-mixing with
    # theta_bar_t ~0.08, not unmixing the noise ~0.04) ...
    xt, _ = DynamicalDiffusion(torch.nn.Identity(), gamma_ratio=0.5, n_context=2).q_sample(x0, 501, eps)
    e_mix = dyn(eps, DynamicalDiffusion(torch.nn.Identity(), gamma_ratio=0.5).theta_bar[501])
    for bug in DDIM_BUGS:
        buggy = DynamicalDiffusion(torch.nn.Identity(), gamma_ratio=0.5, n_context=2, ddim_bug=bug)
        target = buggy.q_sample(x0, 481, eps)[0]
        out[f"ddim_{bug}_err"] = float((buggy.ddim_step(xt, 501, 481, e_mix) - target).abs().max())
    # ... and the whole sample() loop: with a perfect noise predictor, deterministic DDIM keeps the noise it implies,
    # (Dyn^-1_{theta_t}(x_t) - sqrt(abar_t) x0) / sqrt(1 - abar_t), the same at every step; each bug makes it drift.
    for bug in (None, *DDIM_BUGS):
        out[f"sampler_drift_{bug or 'exact'}"] = sampler_noise_drift(bug, seed)
    return out


def sampler_noise_drift(ddim_bug: str | None = None, seed: int = 0, gamma_ratio: float = 0.5) -> float:
    """Max change, over the steps of `DynamicalDiffusion.sample` (20 DDIM steps, float64), of the standard noise
    implied by x_t when the network predicts the exact mixed noise of a fixed x0: ~1e-15 for the exact sampler."""
    import torch

    from iclr25.dynamical_diffusion.dydiff import DynamicalDiffusion, dyn, dyn_inverse

    g = torch.Generator().manual_seed(seed)
    n_ctx, S = 2, 6
    x0 = torch.randn(3, S, 1, 8, generator=g, dtype=torch.float64)
    abar = DynamicalDiffusion(torch.nn.Identity(), gamma_ratio=gamma_ratio).abar
    theta_bar = DynamicalDiffusion(torch.nn.Identity(), gamma_ratio=gamma_ratio).theta_bar
    implied: list[torch.Tensor] = []

    class Oracle(torch.nn.Module):
        """Predicts the exact mixed noise (x_t - sqrt(abar_t) Dyn(x0)) / sqrt(1 - abar_t) and records the noise."""

        def forward(self, net_input: torch.Tensor, t: torch.Tensor) -> torch.Tensor:
            x, th = net_input[:, :, :1], theta_bar[int(t[0])]
            sa, s1a = abar[int(t[0])].sqrt(), (1 - abar[int(t[0])]).sqrt()
            implied.append((dyn_inverse(x, th) - sa * x0) / s1a)
            return (x - sa * dyn(x0, th)) / s1a

    model = DynamicalDiffusion(Oracle(), gamma_ratio=gamma_ratio, n_context=n_ctx, ddim_bug=ddim_bug)
    model.sample(x0[:, :n_ctx], S, n_samples=1, ddim_steps=20, generator=g)
    return max(float((e - implied[0]).abs().max()) for e in implied[1:])


# -- the experiment -----------------------------------------------------------------------------------------------


def measure(run: Run) -> tuple[dict[str, Any], dict[str, float], dict[str, Any]]:
    """The exact checks, then every model variant trained and sampled on every seed; returns the metrics, the
    throughput and the first seed's samples (for the figures)."""
    from iclr25.shared.device import configure_torch
    from iclr25.shared.seed import seed_everything

    config, seed, dev = run.config, run.seed, run.device
    configure_torch(dev, threads=config.threads)
    seed_everything(seed)
    checks = exact_checks(seed)

    seeds = [seed + i for i in range(config.seeds)]
    logger = run.logger
    scaled = run.scale_out.wants_fabric or bool(run.scale_out.checkpoint_every or config.checkpoint_every)
    scaled = scaled or run.scale_out.resume is not None
    if scaled and config.workers > 1 and len(seeds) > 1:
        raise ValueError("workers > 1 runs seeds in separate processes; with --devices/checkpoints use workers=1")
    if config.workers == 1 or len(seeds) == 1:
        results = [
            _run_seed(config, s, str(dev), figures_of=seeds[0], logger=logger, scale=_scale_out(run, config, s))
            for s in run.progress(seeds, desc="seeds", unit="seed")
        ]
    else:
        results = _run_seeds_in_processes(config, seeds, str(dev), logger)
    per_seed = [r["row"] for r in results]
    timing = {k: sum(r["timing"][k] for r in results) for k in results[0]["timing"]}
    return _metrics(config, checks, per_seed), _throughput(config, timing), results[0]["figure_data"]


def _run_seeds_in_processes(config: Config, seeds: list[int], device: str, logger: Any) -> list[dict[str, Any]]:
    """`_run_seed` for every seed in `config.workers` spawned processes of `config.threads` threads each
    (`iclr25.shared.parallel.map_in_processes`); logs each seed's curves and metrics in seed order as it finishes."""
    from functools import partial

    from iclr25.shared.parallel import map_in_processes

    return map_in_processes(
        partial(_run_seed, config, device=device, figures_of=seeds[0]),
        seeds,
        config.workers,
        threads=config.threads,
        desc="seeds",
        unit="seed",
        on_result=lambda _, result: _log_seed(logger, result, config),
    )


def _scale_out(run: Run, config: Config, seed: int) -> dict[str, Any]:
    """`train`'s fabric and, per model, checkpointer/resume for one seed (none unless asked for)."""
    options = run.scale_out
    scale: dict[str, Any] = {}
    if options.wants_fabric:  # several processes, or a precision that Fabric applies
        scale["fabric"] = run.fabric
    if options.checkpoint_every or config.checkpoint_every or options.resume:
        scale["checkpointer"] = lambda name: run.checkpointer(every=config.checkpoint_every, name=f"seed{seed}-{name}")
        scale["resume"] = options.resume
    return scale


def _run_seed(
    config: Config,
    seed: int,
    device: str,
    figures_of: int | None = None,
    logger: Any = None,
    scale: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Train and sample every model variant on seed `seed`'s data; returns the seed's metrics, timings and curves.

    Everything random derives from `seed`, so the result does not depend on which process runs it. The figures show
    seed `figures_of`: on it the test sequences and the first samples are returned too. With `logger`
    the training curves are logged live; otherwise they are returned for the caller to log. `scale`: the fabric
    (several processes train each model on shares of its batches; each samples the whole test set), and a
    checkpointer per model name with the resume choice.
    """
    import torch

    from iclr25.dynamical_diffusion.baselines import persistence
    from iclr25.dynamical_diffusion.metrics import crps_pwm_map
    from iclr25.dynamical_diffusion.training import evaluate, make_data, make_model, sample_batched, train
    from iclr25.shared.device import configure_torch

    configure_torch(device, threads=config.threads)
    scale = dict(scale or {})
    fabric = scale.get("fabric")
    dev = fabric.device if fabric is not None else torch.device(device)
    train_np, test_np = make_data(config, seed, device)
    train_x = torch.from_numpy(train_np).to(dev)
    test_x = torch.from_numpy(test_np).to(dev)
    cond = test_x[:, : config.n_context]
    S = config.n_context + config.n_future
    row: dict[str, Any] = {"seed": seed}
    pers = persistence(cond, config.n_future)[None].cpu()  # 1-member ensemble
    y_future = test_x[:, config.n_context :].cpu()
    row["persistence_mse"] = float(((pers[0] - y_future) ** 2).mean())
    row["persistence_crps_per_lead"] = [float(v) for v in crps_pwm_map(pers, y_future).flatten(2).mean(-1).mean(0)]
    timing = dict.fromkeys(("train_steps", "train_s", "sample_frames", "sample_s"), 0.0)
    curves: dict[str, list[float]] = {}
    figures = seed == figures_of
    figure_data: dict[str, Any] = {"truth": test_x[:4].cpu().numpy()} if figures else {}
    for name, r, dependent in model_variants(config):
        torch.manual_seed(seed)  # same initial weights for every model
        model = make_model(config, r, dependent).to(dev)
        tag = f"seed{seed}/{name}/"
        stats = train(
            model,
            train_x,
            config.steps,
            config.batch_size,
            config.lr,
            config.weight_decay,
            seed=seed,
            log_every=LOG_EVERY,
            logger=logger,
            tag=tag,
            fabric=fabric,
            checkpointer=scale["checkpointer"](name) if "checkpointer" in scale else None,
            resume=scale.get("resume"),
        )
        curves[tag] = stats.losses
        timing["train_steps"] += stats.steps
        timing["train_s"] += stats.seconds
        samples, secs = sample_batched(model, cond, S, config.n_samples, config.ddim_steps, seed=seed)
        timing["sample_frames"] += samples.shape[0] * samples.shape[1] * config.n_future
        timing["sample_s"] += secs
        metrics = evaluate(samples, test_x, config.n_context)
        metrics["final_loss"] = stats.final_loss
        if config.clip_ablation is not None:
            clipped, _ = sample_batched(
                model, cond, S, config.n_samples, config.ddim_steps, seed=seed, clip_x0=config.clip_ablation
            )
            clip_m = evaluate(clipped, test_x, config.n_context)
            metrics["clip_crps"], metrics["clip_ens_mse"] = clip_m["crps"], clip_m["ens_mse"]
        row[name] = metrics
        if figures and name in ("dpm", "dydiff"):
            figure_data[name] = samples[:, :4].cpu().numpy()
        if logger is not None:
            logger.log({f"{tag}crps": metrics["crps"], f"{tag}ens_mse": metrics["ens_mse"]})
        if not is_quiet() and not is_follower():
            print(
                f"seed {seed} {name}: {stats.steps} steps in {stats.seconds:.0f} s, final loss {stats.final_loss:.4f}, "
                f"CRPS {metrics['crps']:.4f}",
                file=sys.stderr,
                flush=True,
            )
    return {"row": row, "timing": timing, "curves": curves, "figure_data": figure_data}


def _log_seed(logger: Any, result: dict[str, Any], config: Config) -> None:
    """Log a seed's training curves and metrics after the fact (for seeds run in another process)."""
    for tag, losses in result["curves"].items():
        for i, loss in enumerate(losses):
            logger.log({f"{tag}loss": loss}, step=min((i + 1) * LOG_EVERY, config.steps))
    row = result["row"]
    for name, _, _ in model_variants(config):
        logger.log(
            {
                f"seed{row['seed']}/{name}/crps": row[name]["crps"],
                f"seed{row['seed']}/{name}/ens_mse": row[name]["ens_mse"],
            }
        )


def _metrics(config: Config, checks: dict[str, float], per_seed: list[dict[str, Any]]) -> dict[str, Any]:
    crps = {m: [row[m]["crps"] for row in per_seed] for m in ("dpm", "dydiff")}
    mse = {m: [row[m]["ens_mse"] for row in per_seed] for m in ("dpm", "dydiff")}
    pers = [row["persistence_mse"] for row in per_seed]
    mean = {k: float(np.mean(v)) for k, v in crps.items()}
    wins = sum(d < p for d, p in zip(crps["dydiff"], crps["dpm"], strict=True))
    metrics: dict[str, Any] = {
        "exact_checks": checks,
        "crps_mean": mean,
        "ens_mse_mean": {k: float(np.mean(v)) for k, v in mse.items()},
        "persistence_mse_mean": float(np.mean(pers)),
        "dydiff_wins": f"{wins}/{len(per_seed)}",
        "per_seed": per_seed,
    }
    variants = model_variants(config)
    if len(variants) > 2:  # DyDiff and its ablations, each against DPM on the same seeds
        metrics["ablations"] = {}
        for name, r, dependent in variants[1:]:
            vals = [row[name]["crps"] for row in per_seed]
            metrics["ablations"][name] = {
                "gamma_ratio": r,
                "dependent_noise": dependent,
                "crps_mean": float(np.mean(vals)),
                "ens_mse_mean": float(np.mean([row[name]["ens_mse"] for row in per_seed])),
                "crps_vs_dpm": float(np.mean(vals)) / mean["dpm"],
                "wins_vs_dpm": f"{sum(v < d for v, d in zip(vals, crps['dpm'], strict=True))}/{len(per_seed)}",
            }
    if len(per_seed) > 1:  # seed by seed (stats.py): every DyDiff variant vs DPM, every ablation vs DyDiff (Holm)
        from iclr25.dynamical_diffusion.stats import paired_report

        paired = paired_report(per_seed, [name for name, _, _ in variants])
        metrics["paired_vs_dpm"] = paired["vs_dpm"]
        if "vs_dydiff" in paired:
            metrics["paired_vs_dydiff"] = paired["vs_dydiff"]
    if config.clip_ablation is not None:
        metrics["clip_crps_mean"] = {m: float(np.mean([row[m]["clip_crps"] for row in per_seed])) for m in crps}
    return metrics


def _throughput(config: Config, timing: dict[str, float]) -> dict[str, float]:
    train_s, sample_s = timing["train_s"], timing["sample_s"]
    return {  # per process: with workers > 1 the machine's total is about `workers` times this
        "train_steps_per_s": timing["train_steps"] / train_s if train_s else 0.0,
        "train_sequences_per_s": timing["train_steps"] * config.batch_size / train_s if train_s else 0.0,
        "sampled_frames_per_s": timing["sample_frames"] / sample_s if sample_s else 0.0,
    }
