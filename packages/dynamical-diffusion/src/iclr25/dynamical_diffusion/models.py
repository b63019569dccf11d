"""Small eps-networks for Dynamical Diffusion (arXiv 2503.00951), standing in for the paper's video UNet.

- `FrameStackUNet`: frames stacked as channels, a circular-padding UNet in 1-D (`dims=1`, the CPU quick setting)
  or 2-D (`dims=2`); input (B, S, 2C+2, *sp) as built by `condition_input`, output (B, S, C, *sp).
- `TSDenoiser`: a 1-D convolutional residual network over the time axis for multivariate series, frames = time
  steps with D channels: input (B, L, 2D+2), output (B, L, D).

The official Turbulence model is an SVD-style video UNet in a VAE latent space (channels 64, mult [1,2,4,4],
attention); these are deliberately smaller pixel-space networks with the same conditioning input.
"""

from __future__ import annotations

import math

import torch
from torch import Tensor, nn
from torch.nn import functional as F


def timestep_embedding(t: Tensor, dim: int, max_period: float = 10000.0) -> Tensor:
    """Sinusoidal embedding of integer timesteps t (B,) -> (B, dim)."""
    half = dim // 2
    freqs = torch.exp(-math.log(max_period) * torch.arange(half, device=t.device, dtype=torch.float32) / half)
    args = t.float()[:, None] * freqs[None]
    return torch.cat([torch.cos(args), torch.sin(args)], dim=-1)


def _conv(dims: int, c_in: int, c_out: int, k: int = 3, circular: bool = True) -> nn.Module:
    conv = nn.Conv1d if dims == 1 else nn.Conv2d
    return conv(c_in, c_out, k, padding=k // 2, padding_mode="circular" if circular else "zeros")


def _groups(c: int, g: int = 8) -> int:
    while c % g:
        g -= 1
    return g


class ResBlock(nn.Module):
    """GroupNorm-SiLU-conv, + time embedding, GroupNorm-SiLU-conv, with a 1x1 skip when channels change."""

    def __init__(self, dims: int, c_in: int, c_out: int, t_dim: int, circular: bool = True) -> None:
        super().__init__()
        self.norm1, self.conv1 = nn.GroupNorm(_groups(c_in), c_in), _conv(dims, c_in, c_out, circular=circular)
        self.temb = nn.Linear(t_dim, c_out)
        self.norm2, self.conv2 = nn.GroupNorm(_groups(c_out), c_out), _conv(dims, c_out, c_out, circular=circular)
        self.skip = _conv(dims, c_in, c_out, k=1) if c_in != c_out else nn.Identity()
        self.dims = dims

    def forward(self, x: Tensor, temb: Tensor) -> Tensor:
        """x (B, C_in, *sp), temb (B, t_dim) -> (B, C_out, *sp)."""
        h = self.conv1(F.silu(self.norm1(x)))
        h = h + self.temb(temb).reshape(*temb.shape[:1], -1, *([1] * self.dims))
        h = self.conv2(F.silu(self.norm2(h)))
        return h + self.skip(x)


class FrameStackUNet(nn.Module):
    """UNet over frames-as-channels: (B, S, 2C+2, *sp), t (B,) -> (B, S, C, *sp); `dims` 1 or 2 spatial axes."""

    def __init__(
        self,
        n_frames: int,
        channels: int = 1,
        dims: int = 1,
        width: int = 32,
        ch_mult: tuple[int, ...] = (1, 2, 2),
        circular: bool = True,
    ) -> None:
        super().__init__()
        if dims not in (1, 2):
            raise ValueError(f"dims must be 1 or 2, got {dims}")
        self.n_frames, self.channels, self.dims, self.width = n_frames, channels, dims, width
        t_dim = 4 * width
        self.t_mlp = nn.Sequential(nn.Linear(width, t_dim), nn.SiLU(), nn.Linear(t_dim, t_dim))
        self.inp = _conv(dims, n_frames * (2 * channels + 2), width, circular=circular)
        self.down = nn.ModuleList()
        ch, skips = width, []
        for mult in ch_mult:
            self.down.append(ResBlock(dims, ch, width * mult, t_dim, circular))
            ch = width * mult
            skips.append(ch)
        self.mid = ResBlock(dims, ch, ch, t_dim, circular)
        self.up = nn.ModuleList()
        for mult in reversed(ch_mult):
            self.up.append(ResBlock(dims, ch + skips.pop(), width * mult, t_dim, circular))
            ch = width * mult
        self.out = nn.Sequential(nn.GroupNorm(_groups(ch), ch), nn.SiLU(), _conv(dims, ch, n_frames * channels))
        self.pool = F.avg_pool1d if dims == 1 else F.avg_pool2d

    def forward(self, x: Tensor, t: Tensor) -> Tensor:
        """Predict the (mixed) noise of every frame."""
        B, S = x.shape[:2]
        sp = x.shape[3:]
        if self.n_frames != S or len(sp) != self.dims:
            raise ValueError(f"expected (B, {self.n_frames}, C, {self.dims} spatial dims), got {tuple(x.shape)}")
        temb = self.t_mlp(timestep_embedding(t, self.width).to(x.dtype))  # float64 nets take float64 times
        h = self.inp(x.reshape(B, -1, *sp))  # (B, W, *sp)
        hs = []
        for i, block in enumerate(self.down):
            h = block(h, temb)
            hs.append(h)
            if i < len(self.down) - 1:
                h = self.pool(h, 2)
        h = self.mid(h, temb)
        for block in self.up:
            skip = hs.pop()
            if h.shape[2:] != skip.shape[2:]:
                h = F.interpolate(h, size=skip.shape[2:], mode="nearest")
            h = block(torch.cat([h, skip], dim=1), temb)
        return self.out(h).reshape(B, S, self.channels, *sp)


class TSDenoiser(nn.Module):
    """Residual 1-D conv net over time for multivariate series: (B, L, 2D+2), t (B,) -> (B, L, D)."""

    def __init__(self, dim: int, width: int = 64, depth: int = 4) -> None:
        super().__init__()
        self.dim, self.width = dim, width
        t_dim = 4 * width
        self.t_mlp = nn.Sequential(nn.Linear(width, t_dim), nn.SiLU(), nn.Linear(t_dim, t_dim))
        self.inp = nn.Conv1d(2 * dim + 2, width, 3, padding=1)
        self.blocks = nn.ModuleList(ResBlock(1, width, width, t_dim, circular=False) for _ in range(depth))
        self.out = nn.Sequential(nn.GroupNorm(_groups(width), width), nn.SiLU(), nn.Conv1d(width, dim, 3, padding=1))

    def forward(self, x: Tensor, t: Tensor) -> Tensor:
        """Predict the (mixed) noise of every time step."""
        if x.ndim != 3 or x.shape[2] != 2 * self.dim + 2:
            raise ValueError(f"expected (B, L, {2 * self.dim + 2}), got {tuple(x.shape)}")
        temb = self.t_mlp(timestep_embedding(t, self.width).to(x.dtype))  # float64 nets take float64 times
        h = self.inp(x.transpose(1, 2))  # (B, W, L)
        for block in self.blocks:
            h = block(h, temb)
        return self.out(h).transpose(1, 2)
