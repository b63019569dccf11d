"""`train`: one method of SA-GFN (Madan et al., ICLR 2025) or a baseline on a HyperGrid, logged to a run folder."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from iclr25.shared.cli import default_run_dir
from iclr25.shared.results import atomic_write_json, prepare_run_dir


def train(
    method: str = "sagfn",
    ndim: int = 2,
    height: int = 16,
    reward: str = "sparse",
    R0: float = 1e-3,
    iters: int = 800,
    hidden: int = 128,
    eval_every: int = 100,
    out: str | Path | None = None,
    seed: int = 0,
    device: str = "auto",
    wandb: str = "off",
    overwrite: bool = False,
) -> dict[str, Any]:
    """Train `method` and write metrics (CSV/JSONL, wandb if asked), summary.json and P_T (.npz); return the summary."""
    import numpy as np

    from iclr25.sa_gfn.envs import HyperGrid
    from iclr25.sa_gfn.training import build_method, fit, method_names
    from iclr25.shared.device import pick_device
    from iclr25.shared.logging import MetricsLogger
    from iclr25.shared.seed import seed_everything

    if method not in method_names():
        raise ValueError(f"method must be one of {method_names()}, got {method!r}")
    device = pick_device(device)
    seed_everything(seed)
    env = HyperGrid(ndim, height, reward, R0=R0, device=device)
    run_dir = prepare_run_dir(out or default_run_dir("sa-gfn", "train", method), overwrite)
    trainer = build_method(method, env, seed=seed, hidden=hidden)
    config = dict(method=method, ndim=ndim, height=height, reward=reward, R0=R0, iters=iters, hidden=hidden, seed=seed)
    with MetricsLogger(run_dir, wandb=wandb, project="iclr25-sa-gfn", name=f"train-{method}", config=config) as log:
        result = fit(trainer, iters, eval_every, log=lambda row, it: log.log(row, step=it))
    np.savez(
        run_dir / "terminal_distribution.npz",
        p=trainer.exact_distribution().cpu().numpy(),
        target=env.true_distribution().cpu().numpy(),
    )
    summary = {"config": config, "final": result["final"], "seconds": result["seconds"], "run_dir": str(run_dir)}
    atomic_write_json(run_dir / "summary.json", summary)
    return summary
