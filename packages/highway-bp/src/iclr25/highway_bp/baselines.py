"""Baselines of the Highway-BP paper (Fagnou et al., ICLR 2025, arXiv 2501.17086, §5): exact backprop / BPTT,
fixed-point iteration (FPI, Wang & Ragni 2021) and truncated BPTT.

Backprop and FPI share the fast code paths of `highway` and `rnn` (`algo="bp"|"bptt"|"fpi"`); this module adds
thin named entry points and `truncated_bptt_backward`, a slow reference built by detaching the state
`h_{j−k−1}` for every loss term j (spec §3: FPI(k) is truncated BPTT in which the loss at step j reaches
the cells j−k, …, j).
"""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch import Tensor

from iclr25.highway_bp.highway import HighwayStack, highway_step
from iclr25.highway_bp.rnn import HighwayRNN, rnn_step


def backprop_step(model: HighwayStack, loss_fn: Callable[[Tensor, Tensor], Tensor], x: Tensor, y: Tensor) -> Tensor:
    """Exact backpropagation (Highway-BP with k = L); accumulates `.grad`."""
    return highway_step(model, loss_fn, x, y, 0, algo="bp")


def fpi_step(model: HighwayStack, loss_fn: Callable[[Tensor, Tensor], Tensor], x: Tensor, y: Tensor, k: int) -> Tensor:
    """Fixed-point iteration with k iterations (K = 0); accumulates `.grad`."""
    return highway_step(model, loss_fn, x, y, k, algo="fpi")


def bptt_step(rnn: HighwayRNN, x: Tensor, loss_fn: Callable[[Tensor], Tensor]) -> Tensor:
    """Exact backpropagation through time; accumulates `.grad`."""
    return rnn_step(rnn, x, loss_fn, algo="bptt")


def truncated_bptt_backward(
    rnn: HighwayRNN, x: Tensor, step_loss: Callable[[int, Tensor], Tensor | None], k: int
) -> Tensor:
    """Truncated BPTT: the loss at step j (1-based) back-propagates through cells j−k, …, j only.

    x: (T, B, I) inputs (their graph is kept, so an upstream embedding gets its gradient too).
    step_loss(j, h_j) returns the loss term of step j, or None. Accumulates `.grad`; returns the total loss.
    """
    if k < 0:
        raise ValueError(f"k must be >= 0, got {k}")
    xp = rnn.input_proj(x)  # (T, B, G·H)
    with torch.no_grad():
        states = rnn.run(xp.detach())  # (T+1, B, S)
    T = xp.shape[0]
    total = torch.zeros((), dtype=x.dtype)
    for j in range(1, T + 1):
        start = max(0, j - k - 1)  # h_{j−k−1} is detached: cells j−k … j carry the gradient
        s = states[start].detach()
        for t in range(start + 1, j + 1):
            s = rnn.combine(s, rnn.parts(s, xp[t - 1]))
        loss = step_loss(j, rnn.output(s))
        if loss is None:
            continue
        loss.backward(retain_graph=True)
        total = total + loss.detach()
    return total
