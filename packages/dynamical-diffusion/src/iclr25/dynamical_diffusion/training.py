"""Training and evaluation loops for Dynamical Diffusion (arXiv 2503.00951) on in-memory sequence tensors.

Training follows the official recipe: AdamW (PyTorch defaults, weight decay 0.01), constant learning rate, no
gradient clipping, no weight EMA, uniform t, MSE on the mixed noise over all frames. Batches, timesteps and noise
come from one seeded generator, so DPM and DyDiff see the same batch sequence.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

import torch
from torch import Tensor

from iclr25.dynamical_diffusion.dydiff import DynamicalDiffusion
from iclr25.dynamical_diffusion.metrics import crps_pwm, crps_pwm_map, ensemble_mse, official_rmse
from iclr25.shared.device import synchronize
from iclr25.shared.progress import progress


@dataclass
class TrainStats:
    """What one training run measured."""

    steps: int
    seconds: float
    final_loss: float
    losses: list[float]

    @property
    def steps_per_s(self) -> float:
        """Optimiser steps per second."""
        return self.steps / self.seconds if self.seconds > 0 else 0.0


def train(
    model: DynamicalDiffusion,
    data: Tensor,
    steps: int,
    batch_size: int = 64,
    lr: float = 1e-3,
    weight_decay: float = 0.01,
    seed: int = 0,
    log_every: int = 100,
    logger: Any = None,
    tag: str = "",
) -> TrainStats:
    """Train `model` on sequences `data` (N, S, C, *sp) already on the model's device; returns timing and losses."""
    if steps < 1 or batch_size < 1:
        raise ValueError(f"steps and batch_size must be >= 1, got {steps}, {batch_size}")
    device = data.device
    opt = torch.optim.AdamW(model.net.parameters(), lr=lr, weight_decay=weight_decay)
    gen = torch.Generator(device=device).manual_seed(seed)
    idx_gen = torch.Generator().manual_seed(seed)
    model.train()
    losses, running = [], 0.0
    synchronize(device.type)
    start = time.perf_counter()
    for step in progress(range(1, steps + 1), desc=f"train {tag}".rstrip("/ "), unit="step"):
        idx = torch.randint(0, data.shape[0], (batch_size,), generator=idx_gen)
        loss = model.loss(data[idx.to(device)], generator=gen)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        running += loss.item()
        if step % log_every == 0 or step == steps:
            n = log_every if step % log_every == 0 else step % log_every
            losses.append(running / n)
            if logger is not None:
                logger.log({f"{tag}loss": running / n}, step=step)
            running = 0.0
    synchronize(device.type)
    seconds = time.perf_counter() - start
    model.eval()
    return TrainStats(steps=steps, seconds=seconds, final_loss=losses[-1], losses=losses)


def sample_batched(
    model: DynamicalDiffusion,
    cond: Tensor,
    n_frames: int,
    n_samples: int,
    ddim_steps: int,
    seed: int = 0,
    clip_x0: float | None = None,
    chunk: int = 256,
) -> tuple[Tensor, float]:
    """Sample (n_samples, B, S, C, *sp) in chunks of test cases; returns samples and seconds taken."""
    gen = torch.Generator(device=cond.device).manual_seed(seed)
    out = []
    synchronize(cond.device.type)
    start = time.perf_counter()
    for i in range(0, cond.shape[0], chunk):
        out.append(model.sample(cond[i : i + chunk], n_frames, n_samples, ddim_steps, clip_x0=clip_x0, generator=gen))
    synchronize(cond.device.type)
    return torch.cat(out, dim=1), time.perf_counter() - start


def evaluate(samples: Tensor, truth: Tensor, n_context: int) -> dict[str, Any]:
    """Metrics on the future frames: fair CRPS, ensemble-mean MSE, official RMSE, CRPS per lead time."""
    ens, y = samples[:, :, n_context:].float().cpu(), truth[:, n_context:].float().cpu()
    per_lead = crps_pwm_map(ens, y).flatten(2).mean(-1).mean(0)  # (S_out,)
    return {
        "crps": float(crps_pwm(ens, y)),
        "ens_mse": float(ensemble_mse(ens, y)),
        "official_rmse": float(official_rmse(ens, y).mean()),
        "crps_per_lead": [float(v) for v in per_lead],
        "max_abs_sample": float(ens.abs().max()),
    }
