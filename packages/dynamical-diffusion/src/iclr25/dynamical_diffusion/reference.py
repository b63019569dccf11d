"""Slow, obviously-correct reference forms for Dynamical Diffusion (arXiv 2503.00951), used by the tests.

- `dyn_loop` / `dyn_inverse_loop`: the frame recursion of Dyn (3) and its inverse (4), one frame at a time.
- `plain_q_sample` / `plain_ddim_sample`: standard DDPM noising and DDIM (eta = 0) sampling written without any
  temporal mixing; DyDiff with gamma ratio r = 0 must equal them exactly.
"""

from __future__ import annotations

import numpy as np
import torch
from torch import Tensor, nn

from iclr25.dynamical_diffusion.dydiff import condition_input, cumprod_schedule, ddim_timesteps, make_beta_schedule


def dyn_loop(x: Tensor, theta: float) -> Tensor:
    """Dyn_theta along dim 1 by its recursion: y^0 = x^0, y^s = sqrt(1-theta) y^{s-1} + sqrt(theta) x^s."""
    a, b = (1 - theta) ** 0.5, theta**0.5
    frames = [x[:, 0]]
    for s in range(1, x.shape[1]):
        frames.append(a * frames[-1] + b * x[:, s])
    return torch.stack(frames, dim=1)


def dyn_inverse_loop(y: Tensor, theta: float) -> Tensor:
    """Inverse of `dyn_loop`, frame by frame: x^s = (y^s - sqrt(1-theta) y^{s-1}) / sqrt(theta)."""
    a, b = (1 - theta) ** 0.5, theta**0.5
    frames = [y[:, 0]]
    for s in range(1, y.shape[1]):
        frames.append((y[:, s] - a * y[:, s - 1]) / b)
    return torch.stack(frames, dim=1)


def _plain_coefs(T: int) -> tuple[Tensor, Tensor]:
    abar = torch.from_numpy(cumprod_schedule(make_beta_schedule("cosine", T)))
    return abar.sqrt(), (1 - abar).sqrt()


def plain_q_sample(x0: Tensor, t: Tensor, noise: Tensor, T: int = 1000) -> Tensor:
    """Standard DDPM noising sqrt(abar_t) x0 + sqrt(1 - abar_t) eps (no temporal mixing)."""
    sa, s1a = _plain_coefs(T)
    view = (-1,) + (1,) * (x0.ndim - 1)
    return sa[t].to(x0.dtype).reshape(view) * x0 + s1a[t].to(x0.dtype).reshape(view) * noise


@torch.no_grad()
def plain_ddim_sample(
    net: nn.Module,
    cond: Tensor,
    n_frames: int,
    n_samples: int,
    ddim_steps: int,
    generator: torch.Generator | None = None,
    T: int = 1000,
) -> Tensor:
    """Standard deterministic DDIM (eta = 0) with white-noise prior; returns (n_samples, B, S, C, *sp)."""
    sa, s1a = _plain_coefs(T)
    ts = ddim_timesteps(ddim_steps, T)
    B = cond.shape[0]
    cond_rep = cond.repeat(n_samples, *([1] * (cond.ndim - 1)))
    x = torch.randn((n_samples * B, n_frames, *cond.shape[2:]), generator=generator, dtype=cond.dtype)
    for k in range(len(ts) - 1, -1, -1):
        t = int(ts[k])
        eps = net(condition_input(x, cond_rep), torch.full((x.shape[0],), t, dtype=torch.long))
        x0_hat = (x - s1a[t].to(x.dtype) * eps) / sa[t].to(x.dtype)
        if k == 0:
            x = x0_hat
        else:
            tp = int(ts[k - 1])
            x = sa[tp].to(x.dtype) * x0_hat + s1a[tp].to(x.dtype) * eps
    return x.reshape(n_samples, B, *x.shape[1:])


def theta_bar_unclipped(T: int, ratio: float) -> np.ndarray:
    """theta_bar_t = r * abar_t + (1 - r) evaluated from the continuous cosine (the schedule before clipping)."""
    s = 0.008
    u = np.arange(1, T + 1, dtype=np.float64)
    f = np.cos((u / T + s) / (1 + s) * np.pi / 2) ** 2
    f0 = np.cos(s / (1 + s) * np.pi / 2) ** 2
    return ratio * f / f0 + (1 - ratio)
