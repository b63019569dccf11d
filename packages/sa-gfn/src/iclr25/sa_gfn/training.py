"""Training loop and metrics for SA-GFN (Madan et al., ICLR 2025) and its baselines (spec §6 metrics).

`fit` runs `iters` iterations of any trainer with a `train_step()` (GFlowNet, SAGFN, IntrinsicGFlowNet) and
logs, every `eval_every` iterations, on the sampler (the Behavior net for SA-GFN): exact l1_mean and TV to R/Z,
modes captured (P_T >= 0.05), modes found by its own samples and in all training data, and distinct states; for
SA-GFN also the Sibling's exact TV and the RND novelty's effective weight. `run_all` runs independent `Job`s
(method x seed x grid) over worker processes.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch

from iclr25.sa_gfn.gflownet import l1_mean, modes_captured, total_variation
from iclr25.shared.files import save_arrays
from iclr25.shared.validate import check_int_at_least, check_positive


def method_names() -> tuple[str, ...]:
    """Methods `build_method` knows."""
    return ("tb", "db", "subtb", "tb-rnd", "gafn", "sagfn")


def build_method(method: str, env, **kw: Any):
    """A trainer for `method` (tb | db | subtb | tb-rnd | gafn | sagfn) on `env`."""
    from iclr25.sa_gfn.baselines import gafn, tb_rnd
    from iclr25.sa_gfn.sagfn import SAGFN, GFlowNet

    if method in ("tb", "db", "subtb"):
        return GFlowNet(env, objective=method, **kw)
    if method == "tb-rnd":
        return tb_rnd(env, **kw)
    if method == "gafn":
        return gafn(env, **kw)
    if method == "sagfn":
        return SAGFN(env, **kw)
    raise ValueError(f"method must be one of {method_names()}, got {method!r}")


def method_options(
    method: str,
    objective: str = "tb",
    intrinsic_scale: float | None = None,
    sibling_reward: str = "terminal_logsumexp",
    rnd_normalize: str | None = None,
) -> dict[str, Any]:
    """Validated keyword arguments of `build_method` for the options a method takes (ValueError otherwise)."""
    from iclr25.sa_gfn.intrinsic import NORMALIZATIONS
    from iclr25.sa_gfn.sagfn import OBJECTIVES, SIBLING_REWARDS

    if objective not in OBJECTIVES:
        raise ValueError(f"objective must be one of {', '.join(OBJECTIVES)}; got {objective!r}")
    if sibling_reward not in SIBLING_REWARDS:
        raise ValueError(f"sibling_reward must be one of {', '.join(SIBLING_REWARDS)}; got {sibling_reward!r}")
    if rnd_normalize is not None and rnd_normalize not in NORMALIZATIONS:
        raise ValueError(f"rnd_normalize must be one of {', '.join(NORMALIZATIONS)}; got {rnd_normalize!r}")
    if intrinsic_scale is not None and not (intrinsic_scale >= 0 and math.isfinite(intrinsic_scale)):
        raise ValueError(f"intrinsic_scale must be a finite number >= 0; got {intrinsic_scale}")
    kw: dict[str, Any] = {}
    if method == "sagfn":
        kw |= dict(objective=objective, sibling_reward=sibling_reward)
        if sibling_reward == "gafn_edge" and objective != "tb":
            raise ValueError("sibling_reward='gafn_edge' needs objective='tb'")
    elif objective != "tb" or sibling_reward != "terminal_logsumexp":
        raise ValueError(f"objective and sibling_reward are SA-GFN options; method {method!r} does not take them")
    if intrinsic_scale is not None or rnd_normalize is not None:
        if method not in ("sagfn", "tb-rnd", "gafn"):
            raise ValueError(f"intrinsic_scale and rnd_normalize need a method with a novelty bonus, not {method!r}")
        if intrinsic_scale is not None:
            kw["intrinsic_scale"] = intrinsic_scale
        if rnd_normalize is not None:
            kw["rnd_normalize"] = rnd_normalize
    return kw


def evaluate(env, trainer) -> dict[str, float]:
    """Exact metrics of the trainer's sampler on a HyperGrid."""
    p = trainer.exact_distribution()
    target = env.true_distribution()
    return {
        "l1_mean": l1_mean(p, target),
        "tv": total_variation(p, target),
        "modes_captured": modes_captured(env, p),
        "log_Z": trainer.log_Z,
    }


class _Seen:
    """Distinct terminal states and mode regions seen in a stream of batches."""

    def __init__(self, env) -> None:
        self.env = env
        self.states: set[int] = set()
        self.modes: set[int] = set()

    def add(self, x: torch.Tensor) -> None:
        """Record a batch of terminal states."""
        if x.numel() == 0:
            return
        self.states.update(self.env.to_index(x).tolist())
        m = self.env.mode_mask(x)
        self.modes.update(self.env.mode_region(x[m]).tolist())


def fit(
    trainer,
    iters: int,
    eval_every: int = 100,
    log: Callable[[dict[str, Any], int], None] | None = None,
) -> dict[str, Any]:
    """Train for `iters` iterations on a HyperGrid; return final metrics and the evaluation history."""
    if iters < 0 or eval_every < 1:
        raise ValueError(f"iters must be >= 0 and eval_every >= 1, got {iters}, {eval_every}")
    env = trainer.env
    sampled, train = _Seen(env), _Seen(env)
    history: list[dict[str, Any]] = []
    start = time.perf_counter()
    out: dict[str, Any] = {}
    for it in range(1, iters + 1):
        out = trainer.train_step()
        sampled.add(out["sampled"])
        train.add(out["train_terminal"])
        if it % eval_every == 0 or it == iters:
            row = {
                "iter": it,
                "loss": out["loss"],
                **evaluate(env, trainer),
                "modes_found_sampler": len(sampled.modes),
                "modes_found_train": len(train.modes),
                "distinct_states_sampler": len(sampled.states),
                "distinct_states_train": len(train.states),
            }
            if "rnd_weight" in out:
                row["rnd_weight"] = out["rnd_weight"]  # effective weight of the raw RND error (c / normaliser)
            if hasattr(trainer, "sibling"):  # the Sibling's own exact P_T, to show it stays off target
                row["sibling_tv"] = total_variation(trainer.sibling.exact_distribution(), env.true_distribution())
            history.append(row)
            if log is not None:
                log(row, it)
    final = history[-1] if history else evaluate(env, trainer)
    return {"final": final, "history": history, "seconds": time.perf_counter() - start}


def train(
    method: str = "sagfn",
    ndim: int = 2,
    height: int = 16,
    reward: str = "sparse",
    R0: float = 1e-3,
    iters: int = 800,
    hidden: int = 128,
    eval_every: int = 100,
    objective: str = "tb",
    intrinsic_scale: float | None = None,
    sibling_reward: str = "terminal_logsumexp",
    rnd_normalize: str | None = None,
    out: str | Path | None = None,
    seed: int = 0,
    device: str = "auto",
    wandb: str = "off",
    overwrite: bool = False,
) -> dict[str, Any]:
    """Train `method` and write metrics (CSV/JSONL, wandb if asked), summary.json and P_T (.npz); return the summary.

    `objective` and `sibling_reward` apply to SA-GFN; `intrinsic_scale` (c) and `rnd_normalize` to the methods with
    a novelty bonus (sagfn, tb-rnd, gafn; None keeps each method's default).
    """

    from iclr25.sa_gfn.envs import HyperGrid
    from iclr25.shared.device import pick_device
    from iclr25.shared.logging import MetricsLogger
    from iclr25.shared.results import atomic_write_json
    from iclr25.shared.run import default_run_dir, open_run_folder
    from iclr25.shared.seed import seed_everything

    if method not in method_names():
        raise ValueError(f"method must be one of {', '.join(method_names())}; got {method!r}")
    check_positive("R0", R0)
    for name, value in (("iters", iters), ("hidden", hidden), ("eval_every", eval_every)):
        check_int_at_least(name, value, 1)
    device = pick_device(device)
    seed_everything(seed)
    env = HyperGrid(ndim, height, reward, R0=R0, device=device)
    kw = method_options(method, objective, intrinsic_scale, sibling_reward, rnd_normalize)
    config = dict(method=method, ndim=ndim, height=height, reward=reward, R0=R0, iters=iters, hidden=hidden, seed=seed)
    config |= kw
    target = out or default_run_dir("sa-gfn", "train", method)
    with open_run_folder(target, overwrite, paper="sa-gfn", command="train") as run_dir:
        trainer = build_method(method, env, seed=seed, hidden=hidden, **kw)
        with MetricsLogger(run_dir, wandb=wandb, project="iclr25-sa-gfn", name=f"train-{method}", config=config) as log:
            result = fit(trainer, iters, eval_every, log=lambda row, it: log.log(row, step=it))
        distributions = {
            "p": trainer.exact_distribution().cpu().numpy(),
            "target": env.true_distribution().cpu().numpy(),
        }
        save_arrays(run_dir / "terminal_distribution.npz", distributions)
        summary = {"config": config, "final": result["final"], "seconds": result["seconds"], "run_dir": str(target)}
        atomic_write_json(run_dir / "summary.json", summary)
    return summary


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
    from iclr25.sa_gfn.envs import HyperGrid

    if job.device == "cpu":
        torch.set_num_threads(1)
    env = HyperGrid(device=job.device, **job.env)
    trainer = build_method(job.method, env, seed=job.seed, **job.kwargs)
    out = fit(trainer, job.iters, job.eval_every)
    if job.keep_distribution:
        out["distribution"] = trainer.exact_distribution().cpu().tolist()
    out["name"] = job.name
    return out


def run_all(jobs: list[Job], workers: int) -> dict[str, dict[str, Any]]:
    """Run independent jobs, in `workers` spawned processes of one thread each when there are several
    (`iclr25.shared.parallel.map_in_processes`; longest first, so that the workers finish together); results by
    job name, in the order they ran."""
    from iclr25.shared.parallel import map_in_processes

    order = jobs if workers == 1 else sorted(jobs, key=lambda j: -j.iters * (2.2 if j.method == "sagfn" else 1.0))
    results = map_in_processes(run_job, order, workers, threads=1, desc="training runs", unit="run")
    return {job.name: result for job, result in zip(order, results, strict=True)}
