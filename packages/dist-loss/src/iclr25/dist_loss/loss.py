"""Dist Loss: distribution distance between soft-sorted predictions and pseudo-labels, plus the sample loss.

Nie, Tang, Hong, "Dist Loss: Enhancing Regression in Few-Shot Region through Distribution Distance
Constraint", ICLR 2025, arXiv 2411.15216, Sec. 3. With batch predictions yhat in R^B, targets y,
pseudo-labels q (ascending, `labels.pseudo_labels`), optional per-sample weights w and a base loss l:

    s = SoftSort_eps(yhat)                       pseudo-predictions (ascending)
    d_j = l(s_j, q_j)                            distribution term, position j of the sorted vectors
    p_i = l(yhat_i, y_i)                         sample term
    L = mean_i(lam * d_i + p_i)                  (sum with reduction="sum"); weighted: d_j*w_j, p_i*w_i

Weighting of the distribution term (`dist_weighting`): "official" multiplies d_j by the weight of the
sample at *batch position* j, as the official code does (sorted order != batch order, so this pairs each
sorted position with a random sample's weight); "pseudo" uses weights at the pseudo-labels (pass them as
`pseudo_weights`, e.g. inverse training density at q_j); "none" leaves d unweighted.
Differences from the official code: device-agnostic (no `.cpu()`/`.cuda()` round trip), the soft sort
is a torch op, and the base-loss choice includes the focal-L1 and Huber variants as modules here.
"""

from __future__ import annotations

from typing import Literal

import torch
import torch.nn.functional as F
from torch import nn

from iclr25.dist_loss.sorting import soft_sort

__all__ = ["DistLoss", "FocalL1", "HuberLoss", "make_base_loss"]

BASE_LOSSES = ("l1", "l2", "focal_l1", "huber")
DIST_WEIGHTINGS = ("official", "pseudo", "none")


class FocalL1(nn.Module):
    """Focal-L1 (Yang et al. 2021): |e| * (2*sigmoid(beta*|e|) - 1)^gamma, element-wise (no reduction)."""

    def __init__(self, beta: float = 0.2, gamma: float = 1.0) -> None:
        super().__init__()
        self.beta, self.gamma = beta, gamma

    def forward(self, pred: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
        """Element-wise focal-L1 loss."""
        err = (pred - target).abs()
        return err * (2 * torch.sigmoid(self.beta * err) - 1) ** self.gamma


class HuberLoss(nn.Module):
    """Huber loss with threshold beta, element-wise: 0.5 e^2/beta if |e| < beta else |e| - 0.5 beta."""

    def __init__(self, beta: float = 1.0) -> None:
        super().__init__()
        self.beta = beta

    def forward(self, pred: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
        """Element-wise Huber loss."""
        err = (pred - target).abs()
        return torch.where(err < self.beta, 0.5 * err**2 / self.beta, err - 0.5 * self.beta)


class _Elementwise(nn.Module):
    def __init__(self, kind: str) -> None:
        super().__init__()
        self.kind = kind

    def forward(self, pred: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
        if self.kind == "l1":
            return F.l1_loss(pred, target, reduction="none")
        return F.mse_loss(pred, target, reduction="none")


def make_base_loss(base: str | nn.Module) -> nn.Module:
    """An element-wise base loss: "l1" | "l2" | "focal_l1" | "huber", or a module returning per-element losses."""
    if isinstance(base, nn.Module):
        return base
    key = str(base).lower()
    key = {"mae": "l1", "mse": "l2"}.get(key, key)
    if key in ("l1", "l2"):
        return _Elementwise(key)
    if key == "focal_l1":
        return FocalL1()
    if key == "huber":
        return HuberLoss()
    raise ValueError(f"base loss must be one of {', '.join(BASE_LOSSES)} or an nn.Module, got {base!r}")


class DistLoss(nn.Module):
    """Dist Loss (paper Sec. 3): lam * l(SoftSort(yhat), q) + l(yhat, y), per element, then mean or sum.

    Start a fresh head at zero weights (bias at the label mean), not at random: the distribution term depends
    only on the sorted predictions, so it cannot tell a head that orders the batch like the labels from one that
    orders it backwards. Along the line from the mean predictor towards the reversed predictor the sample term
    rises about as fast as the distribution term falls (exactly, with an L1 base and lam = 1, for symmetric,
    perfectly ranked labels), so the total loss is flat there and a backwards head is not pushed back
    (`train.rrt`, `headinit.loss_along_line`, and the README's head-initialisation study).
    """

    def __init__(
        self,
        base: str | nn.Module = "l1",
        lam: float = 1.0,
        eps: float = 0.1,
        dist_weighting: Literal["official", "pseudo", "none"] = "official",
        reduction: Literal["mean", "sum"] = "mean",
    ) -> None:
        super().__init__()
        if dist_weighting not in DIST_WEIGHTINGS:
            raise ValueError(f"dist_weighting must be one of {', '.join(DIST_WEIGHTINGS)}, got {dist_weighting!r}")
        if reduction not in ("mean", "sum"):
            raise ValueError(f"reduction must be 'mean' or 'sum', got {reduction!r}")
        if not lam >= 0:
            raise ValueError(f"lam must be >= 0, got {lam!r}")
        if not eps > 0:
            raise ValueError(f"eps must be > 0, got {eps!r}")
        self.base = make_base_loss(base)
        self.lam, self.eps = float(lam), float(eps)
        self.dist_weighting, self.reduction = dist_weighting, reduction

    def forward(
        self,
        pred: torch.Tensor,
        target: torch.Tensor,
        pseudo: torch.Tensor,
        weights: torch.Tensor | None = None,
        pseudo_weights: torch.Tensor | None = None,
        return_parts: bool = False,
    ) -> torch.Tensor | tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """The loss of a batch; `pseudo` must have one entry per prediction (drop_last batches)."""
        pred = pred.reshape(-1)  # (B,)
        target = target.reshape(-1).to(pred.dtype)  # (B,)
        pseudo = torch.as_tensor(pseudo, dtype=pred.dtype, device=pred.device).reshape(-1)  # (B,)
        if target.numel() != pred.numel() or pseudo.numel() != pred.numel():
            raise ValueError(
                f"pred, target and pseudo-labels must have the same length, got {pred.numel()}, "
                f"{target.numel()}, {pseudo.numel()} (use drop_last=True and pseudo-labels for this batch size)"
            )
        sorted_pred = soft_sort(pred, eps=self.eps)  # (B,) pseudo-predictions, ascending
        dist = self.base(sorted_pred, pseudo)  # (B,) d_j
        sample = self.base(pred, target)  # (B,) p_i
        if weights is not None:
            weights = weights.reshape(-1).to(pred)
            if weights.numel() != pred.numel():
                raise ValueError(f"weights must have one entry per prediction, got {weights.numel()}")
            sample = sample * weights
            if self.dist_weighting == "official":
                dist = dist * weights  # weight of the sample at batch position j (official behaviour)
        if self.dist_weighting == "pseudo":
            if pseudo_weights is None:
                raise ValueError('dist_weighting="pseudo" needs pseudo_weights (one weight per pseudo-label)')
            pseudo_weights = torch.as_tensor(pseudo_weights).reshape(-1).to(pred)
            if pseudo_weights.numel() != pred.numel():
                raise ValueError(f"pseudo_weights must have one entry per pseudo-label, got {pseudo_weights.numel()}")
            dist = dist * pseudo_weights
        total = self.lam * dist + sample
        reduce = torch.mean if self.reduction == "mean" else torch.sum
        if return_parts:
            return reduce(total), reduce(dist), reduce(sample)
        return reduce(total)
