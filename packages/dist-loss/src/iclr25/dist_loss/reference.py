"""Slow, obviously-correct forms of the Dist Loss pieces, for testing the fast ones.

Dist Loss (Nie, Tang, Hong, ICLR 2025, arXiv 2411.15216), Sec. 3, with the L2 soft sort of Blondel et
al. 2020 (arXiv 2002.08871), Eqs. 6-7.

- `reference_soft_sort`: the isotonic regression by its closed min-max form,
  u_i = min_{k <= i} max_{l >= i} mean(y_k..y_l) for the non-increasing fit (O(n^3)), built from torch
  min/max so that autograd gives the reference gradient as well.
- `reference_dist_loss`: the loss as an explicit loop over batch positions.
- `numpy_pipeline_soft_sort`: the structure of the official op (device -> CPU numpy, a pure-Python PAV
  on every call, blocks found as runs of equal values with tolerance 1e-9, back to the device), written
  here to measure the per-batch cost of that design; it is not the official code.
"""

from __future__ import annotations

import numpy as np
import torch

from iclr25.dist_loss.sorting import isotonic_decreasing

__all__ = ["numpy_pipeline_soft_sort", "reference_dist_loss", "reference_soft_sort"]


def _isotonic_minmax(y: torch.Tensor) -> torch.Tensor:
    """Non-increasing isotonic regression of a 1-D tensor by the min-max formula (differentiable)."""
    n = y.shape[0]
    out = []
    for i in range(n):
        candidates = []
        for k in range(i + 1):
            means = torch.stack([y[k : l + 1].mean() for l in range(i, n)])
            candidates.append(means.max())
        out.append(torch.stack(candidates).min())
    return torch.stack(out)


def reference_soft_sort(values: torch.Tensor, eps: float = 0.1) -> torch.Tensor:
    """Ascending L2 soft sort of a 1-D tensor, straight from Blondel et al. Eqs. 6-7 (slow)."""
    n = values.shape[0]
    perm = torch.argsort(-values, descending=True)  # argsort of a = -v, descending
    s = (-values)[perm]  # (n,) descending
    w = torch.arange(n, 0, -1, dtype=values.dtype) / eps  # (n,)
    return _isotonic_minmax(w - s) - w


def reference_dist_loss(
    pred: torch.Tensor,
    target: torch.Tensor,
    pseudo: torch.Tensor,
    lam: float = 1.0,
    eps: float = 0.1,
    weights: torch.Tensor | None = None,
) -> torch.Tensor:
    """Dist Loss with the L1 base loss, one batch position at a time (official weighting)."""
    sorted_pred = reference_soft_sort(pred, eps)
    terms = []
    for j in range(pred.shape[0]):
        w = 1.0 if weights is None else weights[j]
        terms.append(lam * w * (sorted_pred[j] - pseudo[j]).abs() + w * (pred[j] - target[j]).abs())
    return torch.stack(terms).mean()


class _NumpyPipeline(torch.autograd.Function):
    @staticmethod
    def forward(ctx, values: torch.Tensor, eps: float) -> torch.Tensor:
        device, dtype = values.device, values.dtype
        v = values.detach().cpu().numpy().astype(np.float64)
        n = v.shape[0]
        perm = np.argsort(v)  # ascending order of v
        y = np.arange(n, 0, -1) / eps + v[perm]
        u, _ = isotonic_decreasing(y)  # pure-Python PAV on every call, even when nothing pools
        ctx.save_for_backward(torch.as_tensor(perm), torch.as_tensor(u))
        ctx.device = device
        return torch.as_tensor(u - np.arange(n, 0, -1) / eps, dtype=dtype).to(device)

    @staticmethod
    def backward(ctx, grad: torch.Tensor) -> tuple[torch.Tensor, None]:
        perm, u = (t.numpy() for t in ctx.saved_tensors)
        g = grad.detach().cpu().numpy().astype(np.float64)
        # Blocks = runs of (numerically) equal fitted values.
        boundaries = np.flatnonzero(np.abs(np.diff(u)) > 1e-9) + 1
        out = np.empty_like(g)
        for block in np.split(np.arange(len(u)), boundaries):
            out[block] = g[block].mean()
        grad_in = np.empty_like(out)
        grad_in[perm] = out
        return torch.as_tensor(grad_in, dtype=grad.dtype).to(ctx.device), None


def numpy_pipeline_soft_sort(values: torch.Tensor, eps: float = 0.1) -> torch.Tensor:
    """Ascending soft sort of a 1-D tensor through a CPU numpy round trip with a Python PAV every call."""
    return _NumpyPipeline.apply(values, float(eps))
