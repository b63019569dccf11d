"""Baselines for Dynamical Diffusion (arXiv 2503.00951): DPM (the same model with gamma ratio r = 0) and persistence.

The paper pairs every DyDiff result with DPM on the same backbone; in the official code DPM is the identical
model with r = 0 (theta_bar = 1, no temporal mixing).
"""

from __future__ import annotations

import torch
from torch import Tensor, nn

from iclr25.dynamical_diffusion.dydiff import DynamicalDiffusion


def make_dpm(net: nn.Module, n_context: int, T: int = 1000) -> DynamicalDiffusion:
    """Standard diffusion (DPM): DynamicalDiffusion with gamma ratio 0, i.e. no temporal mixing."""
    return DynamicalDiffusion(net, T=T, gamma_ratio=0.0, n_context=n_context)


def persistence(cond: Tensor, n_future: int) -> Tensor:
    """Repeat the last context frame: cond (B, S_in, C, *sp) -> (B, n_future, C, *sp)."""
    last = cond[:, -1:]
    return last.expand(-1, n_future, *last.shape[2:]).clone()


def persistence_mse(seq: Tensor, n_context: int) -> Tensor:
    """MSE of persistence on the future frames of full sequences (B, S, C, *sp)."""
    pred = persistence(seq[:, :n_context], seq.shape[1] - n_context)
    return torch.mean((pred - seq[:, n_context:]) ** 2)
