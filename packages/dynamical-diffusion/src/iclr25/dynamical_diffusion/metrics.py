"""Probabilistic forecast metrics used to evaluate Dynamical Diffusion (arXiv 2503.00951), as in its official code.

- `crps_pwm`: the fair (probability-weighted-moment) ensemble CRPS, mean_m |x_m - y| + beta0 - 2 beta1 with
  beta1 = sum_i i x_(i) / (M (M - 1)); M = 1 gives the MAE. `nonneg_mask=True` reproduces the official quirk of
  scoring only pixels whose truth is >= 0.
- `pooled_crps`: CRPS after average/max pooling members and truth (kernel k, stride (k + 2) // 4).
- `ensemble_mse`: MSE of the ensemble mean. `official_rmse`: the official "MSE", the square root of the squared
  error averaged over all members and pixels together, per case and (frame, channel), then averaged over cases.
- `csi`, `pooled_csi`: critical success index hits / (hits + misses + false alarms) at a threshold.
- `crps_sum`: CRPS of the sum over series dimensions (quantile-loss approximation, GluonTS convention).
"""

from __future__ import annotations

import numpy as np
import torch
from torch import Tensor
from torch.nn import functional as F


def _t(x: Tensor | np.ndarray) -> Tensor:
    return x if isinstance(x, Tensor) else torch.as_tensor(np.asarray(x))


def crps_pwm_map(ens: Tensor | np.ndarray, y: Tensor | np.ndarray, member_dim: int = 0) -> Tensor:
    """Pointwise fair/PWM CRPS of ensemble `ens` against `y` (shape of `ens` without `member_dim`)."""
    ens, y = _t(ens), _t(y)
    ens = ens.movedim(member_dim, 0)
    if ens.shape[1:] != y.shape:
        raise ValueError(f"ensemble shape {tuple(ens.shape)} (members first) does not match truth {tuple(y.shape)}")
    M = ens.shape[0]
    mae = (ens - y).abs().mean(0)
    if M == 1:
        return mae
    xs = ens.sort(dim=0).values
    i = torch.arange(M, dtype=xs.dtype, device=xs.device).reshape(-1, *([1] * y.ndim))
    beta0 = xs.mean(0)
    beta1 = (i * xs).sum(0) / (M * (M - 1))
    return mae + beta0 - 2 * beta1


def crps_pwm(
    ens: Tensor | np.ndarray, y: Tensor | np.ndarray, member_dim: int = 0, nonneg_mask: bool = False
) -> Tensor:
    """Mean fair/PWM CRPS over all entries (or, with `nonneg_mask`, over entries with y >= 0, as officially)."""
    y = _t(y)
    crps = crps_pwm_map(ens, y, member_dim)
    if nonneg_mask:
        mask = y >= 0
        return crps[mask].mean() if mask.any() else crps.new_tensor(float("nan"))
    return crps.mean()


def _pool(x: Tensor, kernel: int, mode: str, n_spatial: int) -> Tensor:
    """Pool the last `n_spatial` (1 or 2) axes with kernel k and stride (k + 2) // 4."""
    if mode not in ("avg", "max"):
        raise ValueError(f"pooling mode must be 'avg' or 'max', got {mode!r}")
    stride = max((kernel + 2) // 4, 1)
    lead = x.shape[:-n_spatial]
    flat = x.reshape(-1, 1, *x.shape[-n_spatial:])
    if n_spatial == 1:
        fn = F.avg_pool1d if mode == "avg" else F.max_pool1d
    elif n_spatial == 2:
        fn = F.avg_pool2d if mode == "avg" else F.max_pool2d
    else:
        raise ValueError(f"pooling needs 1 or 2 spatial axes, got {n_spatial}")
    out = fn(flat, kernel, stride)
    return out.reshape(*lead, *out.shape[2:])


def pooled_crps(
    ens: Tensor | np.ndarray,
    y: Tensor | np.ndarray,
    kernel: int,
    mode: str = "avg",
    n_spatial: int = 2,
    nonneg_mask: bool = False,
) -> Tensor:
    """CRPS after pooling members and truth over the spatial axes (members on dim 0); official mask optional."""
    ens, y = _t(ens).float(), _t(y).float()
    pe, py = _pool(ens, kernel, mode, n_spatial), _pool(y, kernel, mode, n_spatial)
    crps = crps_pwm_map(pe, py)
    if nonneg_mask:
        window_min = -_pool(-y, kernel, "max", n_spatial)
        mask = window_min >= 0
        return crps[mask].mean() if mask.any() else crps.new_tensor(float("nan"))
    return crps.mean()


def ensemble_mse(ens: Tensor | np.ndarray, y: Tensor | np.ndarray, member_dim: int = 0) -> Tensor:
    """Mean squared error of the ensemble mean."""
    ens, y = _t(ens), _t(y)
    return ((ens.mean(member_dim) - y) ** 2).mean()


def official_rmse(ens: Tensor | np.ndarray, y: Tensor | np.ndarray) -> Tensor:
    """Official "MSE": ens (M, B, S, C, *sp), y (B, S, C, *sp) -> (S, C), sqrt(mean over M and pixels) over cases."""
    ens, y = _t(ens), _t(y)
    if ens.ndim < 4 or ens.shape[1:] != y.shape:
        raise ValueError(f"need ens (M, B, S, C, ...) and y (B, S, C, ...), got {tuple(ens.shape)}, {tuple(y.shape)}")
    se = (ens - y) ** 2  # (M, B, S, C, *sp)
    se = se.movedim(0, -1).flatten(3)  # (B, S, C, M * pixels)
    return se.mean(-1).sqrt().mean(0)


def csi(pred: Tensor | np.ndarray, y: Tensor | np.ndarray, threshold: float) -> Tensor:
    """Critical success index hits / (hits + misses + false alarms), events are values >= threshold."""
    pred, y = _t(pred), _t(y)
    p, o = pred >= threshold, y >= threshold
    hits = (p & o).sum()
    denom = hits + (~p & o).sum() + (p & ~o).sum()
    return hits.double() / denom.clamp(min=1).double()


def pooled_csi(
    pred: Tensor | np.ndarray, y: Tensor | np.ndarray, threshold: float, kernel: int, n_spatial: int = 2
) -> Tensor:
    """CSI after max pooling prediction and truth over the spatial axes (kernel k, stride (k + 2) // 4)."""
    pred, y = _t(pred).float(), _t(y).float()
    return csi(_pool(pred, kernel, "max", n_spatial), _pool(y, kernel, "max", n_spatial), threshold)


def crps_sum(
    ens: Tensor | np.ndarray, y: Tensor | np.ndarray, quantiles: np.ndarray | None = None, member_dim: int = 0
) -> Tensor:
    """CRPS_sum: quantile-loss CRPS of the series summed over its last (dimension) axis, normalised by sum |y|."""
    ens, y = _t(ens).double(), _t(y).double()
    ens = ens.movedim(member_dim, 0).sum(-1)  # (M, B, L)
    y = y.sum(-1)  # (B, L)
    qs = np.arange(1, 20) / 20 if quantiles is None else np.asarray(quantiles)
    denom = y.abs().sum().clamp(min=1e-12)
    losses = []
    for q in qs:
        qhat = torch.quantile(ens, float(q), dim=0)
        losses.append(2 * ((y - qhat) * ((y <= qhat).double() - q)).abs().sum() / denom)
    return torch.stack(losses).mean()
