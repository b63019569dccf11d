"""Differentiable soft sort with L2 regularisation (Blondel et al. 2020), as used by Dist Loss.

Dist Loss (Nie, Tang, Hong, ICLR 2025, arXiv 2411.15216) turns the batch predictions into
"pseudo-predictions" with the soft sort of "Fast Differentiable Sorting and Ranking" (Blondel et al.,
ICML 2020, arXiv 2002.08871), L2 regulariser, strength eps. For v in R^n (ascending output):

    s = sort_desc(-v),  w = (n, n-1, ..., 1) / eps                              (Blondel et al. Eq. 6)
    u* = argmin_{u_1 >= ... >= u_n} 1/2 ||u - (w - s)||^2                        (isotonic regression, Eq. 7)
    soft_sort(v) = u* - w

The isotonic problem is solved with pool-adjacent-violators (PAV). Its Jacobian is block-diagonal:
within each PAV block every output is the block mean, so the vector-Jacobian product averages the
cotangent over each block (Blondel et al. Lemma 2) and scatters it back through the sort permutation.

Differences from the official code (which vendors google-research/fast-soft-sort): the op runs in torch
on any device; when no constraint is active (every gap between sorted values <= 1/eps, the usual case
for the paper's eps) PAV is skipped entirely; blocks are the PAV blocks themselves rather than runs of
equal values detected with a 1e-9 tolerance (they differ only when adjacent blocks coincide by chance).
"""

from __future__ import annotations

import numpy as np
import torch

__all__ = ["isotonic_decreasing", "soft_sort"]


def isotonic_decreasing(y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """PAV for argmin_{u_1>=...>=u_n} 1/2||u - y||^2 of a 1-D array: returns (u, block id per entry)."""
    y = np.asarray(y, dtype=np.float64)
    n = y.shape[0]
    # Stack of blocks: start index, length, sum. A new block merges with its predecessor while the
    # predecessor's mean is <= its mean (that would violate the non-increasing constraint).
    starts: list[int] = []
    sizes: list[int] = []
    sums: list[float] = []
    for i in range(n):
        start, size, total = i, 1, float(y[i])
        while sums and sums[-1] / sizes[-1] <= total / size:
            start = starts.pop()
            size += sizes.pop()
            total += sums.pop()
        starts.append(start)
        sizes.append(size)
        sums.append(total)
    counts = np.asarray(sizes)
    means = np.asarray(sums) / counts
    ids = np.repeat(np.arange(len(counts)), counts)
    return means[ids], ids


class _SoftSort(torch.autograd.Function):
    """Ascending L2 soft sort along the last dim of a (R, n) tensor; backward = PAV-block averaging."""

    @staticmethod
    def forward(ctx, values: torch.Tensor, eps: float) -> torch.Tensor:
        rows, n = values.shape
        sorted_vals, perm = torch.sort(values, dim=-1)  # (R, n) ascending, so s = -sorted_vals
        # In ascending order (index j = 0..n-1): y_j = w_j - s_j with w = (n..1)/eps and s = -sorted.
        w = torch.arange(n, 0, -1, device=values.device, dtype=values.dtype) / eps  # (n,)
        y = w + sorted_vals  # (R, n), must be non-increasing to be its own projection
        ids = torch.arange(n, device=values.device).expand(rows, n).contiguous()  # (R, n) singleton blocks
        violated = (y[:, 1:] > y[:, :-1]).any(dim=-1)  # (R,)
        if bool(violated.any()):
            u = y.clone()
            y_cpu = y.detach().to("cpu", torch.float64).numpy()
            for r in torch.nonzero(violated).flatten().tolist():
                u_r, ids_r = isotonic_decreasing(y_cpu[r])  # Blondel et al. Eq. 7
                u[r] = torch.as_tensor(u_r, dtype=values.dtype, device=values.device)
                ids[r] = torch.as_tensor(ids_r, device=values.device)
        else:
            u = y
        out = u - w  # (R, n) ascending soft-sorted values
        ctx.save_for_backward(perm, ids)
        ctx.pooled = bool(violated.any())
        return out

    @staticmethod
    def backward(ctx, grad_out: torch.Tensor) -> tuple[torch.Tensor, None]:
        perm, ids = ctx.saved_tensors
        g = grad_out
        if ctx.pooled:  # average the cotangent within each PAV block (Blondel et al. Lemma 2)
            sums = torch.zeros_like(g).scatter_add_(-1, ids, g)
            counts = torch.zeros_like(g).scatter_add_(-1, ids, torch.ones_like(g))
            g = sums.gather(-1, ids) / counts.gather(-1, ids)
        grad_in = torch.zeros_like(g).scatter_(-1, perm, g)  # back to the original positions
        return grad_in, None


def soft_sort(values: torch.Tensor, eps: float = 0.1, descending: bool = False) -> torch.Tensor:
    """L2 soft sort of the last dimension (ascending by default); differentiable, any leading shape.

    `eps` is the regularisation strength (the official `regularization_strength`, default 0.1 in its
    trainer): neighbouring sorted values stay untouched while their gap is <= 1/eps; larger gaps are
    pooled into arithmetic progressions of step 1/eps. eps -> 0 is the hard sort.
    """
    if not isinstance(values, torch.Tensor):
        raise ValueError(f"soft_sort expects a torch.Tensor, got {type(values).__name__}")
    if values.ndim == 0:
        raise ValueError("soft_sort needs a tensor with at least one dimension")
    if not values.is_floating_point():
        raise ValueError(f"soft_sort needs a floating-point tensor, got {values.dtype}")
    if not eps > 0:
        raise ValueError(f"eps must be > 0, got {eps!r}")
    if descending:
        return -soft_sort(-values, eps=eps)
    shape = values.shape
    flat = values.reshape(-1, shape[-1])  # (R, n)
    return _SoftSort.apply(flat, float(eps)).reshape(shape)
