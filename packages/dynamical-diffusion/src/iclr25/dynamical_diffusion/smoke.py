"""`iclr25 smoke`: the full preset's DyDiff network (FrameStackUNet width 64, mult (1, 2, 4, 4), 2-D, 4 + 11 frames
of 64x64 velocity (u, v), T = 1000, r = 0.5) on synthetic sequences, batch 16, AdamW 1e-4 (weight decay 0.01),
one step per call of the package's own DynamicalDiffusion loss, as `training.train` runs it. `reduced` (the CPU run
of CI) trains on one sequence a step, in one thread."""

from __future__ import annotations

from collections.abc import Callable

import torch

from iclr25.dynamical_diffusion.config import PRESETS
from iclr25.dynamical_diffusion.training import make_model

CPU_BATCH = 1


def build(device: str, reduced: bool) -> Callable[[], int]:
    c = PRESETS["full"]
    batch = CPU_BATCH if reduced else c.batch_size
    if reduced:  # the CI run on busy cores: two threads there are slower than one
        torch.set_num_threads(1)
    model = make_model(c, c.gamma_ratio).to(device)
    model.train()
    opt = torch.optim.AdamW(model.net.parameters(), lr=c.lr, weight_decay=c.weight_decay)
    channels = 2  # ns2d frames are velocity (u, v)
    x0 = torch.randn(batch, c.n_context + c.n_future, channels, c.size, c.size, device=device)
    gen = torch.Generator(device=device).manual_seed(0)

    def step() -> int:
        loss = model.loss(x0, generator=gen)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        return batch

    return step
