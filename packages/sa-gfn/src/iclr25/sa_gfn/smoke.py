"""`iclr25 smoke`: one SA-GFN training iteration of the full preset's sweep on its longest-trajectory grid
(2 x 64 HyperGrid, standard reward, R0 1e-3): the Sibling's and the Behavior's trajectory sampling and TB updates
with the RND novelty bonus (policy MLPs 2 x 128, 16 Sibling + 8 Behavior trajectories, 8 mixed), through the
package's own `build_method("sagfn", ...)` and `train_step`. On the CPU one torch thread, as `experiments.measure`
sets for these small networks."""

from __future__ import annotations

from collections.abc import Callable

import torch

from iclr25.sa_gfn.config import PRESETS, _parse_grid
from iclr25.sa_gfn.envs import HyperGrid
from iclr25.sa_gfn.training import build_method

GRID = "2x64:standard:0.001"  # one of the preset's grids


def build(device: str, reduced: bool) -> Callable[[], int]:
    c = PRESETS["full"]
    if device == "cpu":
        torch.set_num_threads(1)
    if GRID not in c.grids:
        raise ValueError(f"{GRID} is not among the full preset's grids {c.grids}")
    ndim, height, reward, r0 = _parse_grid(GRID)
    env = HyperGrid(ndim, height, reward, R0=r0, device=device)
    trainer = build_method(
        "sagfn",
        env,
        seed=0,
        hidden=c.hidden,
        n_layers=c.n_layers,
        uniform_pb=c.uniform_pb,
        objective=c.objective,
        n_sibling=c.n_sibling,
        n_behavior=c.n_behavior,
        n_mix=c.n_mix,
        intrinsic_scale=c.intrinsic_scale,
        rnd_normalize=c.rnd_normalize,
        sibling_reward=c.sibling_reward,
    )

    def step() -> int:
        trainer.train_step()
        return c.n_sibling + c.n_behavior

    return step
