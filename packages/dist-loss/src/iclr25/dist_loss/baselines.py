"""Baselines Dist Loss is compared with (Nie, Tang, Hong, ICLR 2025, arXiv 2411.15216, Sec. 4 tables).

- `label_weights`: inverse / square-root-inverse re-weighting and LDS (label distribution smoothing),
  Yang et al. 2021 "Delving into Deep Imbalanced Regression" (DIR, arXiv 2102.09554) Sec. 3.1:
  w(y) = 1 / (k * n)(y) with a Gaussian kernel k, rescaled to mean 1 over the label bins.
- `FDS`: feature distribution smoothing, DIR Sec. 3.2, Eqs. 2-3: per-label feature mean/variance,
  smoothed across labels, used to re-calibrate each feature: z' = (z - mu_b) sqrt(var~_b / var_b) + mu~_b.
- `BMCLoss`: Balanced MSE, batch Monte-Carlo form (Ren et al., CVPR 2022, arXiv 2203.16427, Eq. 7).
- `ranksim_regularizer`: RankSim (Gong et al., ICML 2022, arXiv 2205.15236), Eq. 4, with the
  blackbox-differentiation rank of Vlastelica et al. 2020.
- Focal-R (focal-L1) is `iclr25.dist_loss.loss.FocalL1`; RRT (retraining the last layer on frozen
  features) is a training protocol, in `iclr25.dist_loss.train`.
"""

from __future__ import annotations

from typing import Literal

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

__all__ = ["FDS", "BMCLoss", "label_weights", "lds_kernel", "ranksim_regularizer"]


def lds_kernel(ks: int = 5, sigma: float = 2.0, normalise: Literal["max", "sum"] = "max") -> np.ndarray:
    """A Gaussian window of `ks` taps (a filtered delta), scaled to max 1 (LDS) or sum 1 (FDS)."""
    from scipy.ndimage import gaussian_filter1d

    if ks < 1 or ks % 2 == 0:
        raise ValueError(f"kernel size ks must be a positive odd integer, got {ks!r}")
    if not sigma > 0:
        raise ValueError(f"sigma must be > 0, got {sigma!r}")
    half = (ks - 1) // 2
    delta = np.zeros(ks)
    delta[half] = 1.0
    window = gaussian_filter1d(delta, sigma=sigma)
    return window / (window.max() if normalise == "max" else window.sum())


def label_weights(
    labels: np.ndarray,
    reweight: Literal["none", "inverse", "sqrt_inv"] = "none",
    lds: bool = False,
    ks: int = 5,
    sigma: float = 2.0,
    min_label: float = 0.0,
    max_label: float = 120.0,
    step: float = 1.0,
) -> np.ndarray:
    """Per-sample weights of DIR re-weighting (+ LDS), rescaled so the mean over the training samples is 1.

    Labels are binned on the grid (integer ages by default, labels above `max_label` share the last
    bin); "inverse" clips bin counts to [5, 1000], "sqrt_inv" uses sqrt(count) (DIR defaults).
    """
    labels = np.asarray(labels, dtype=np.float64).reshape(-1)
    if reweight not in ("none", "inverse", "sqrt_inv"):
        raise ValueError(f"reweight must be one of none, inverse, sqrt_inv; got {reweight!r}")
    if lds and reweight == "none":
        raise ValueError("LDS smooths the re-weighting counts: use it with reweight='inverse' or 'sqrt_inv'")
    if reweight == "none":
        return np.ones_like(labels)
    n_bins = round((max_label - min_label) / step) + 1
    bins = np.clip(np.floor((labels - min_label) / step + 1e-9).astype(np.int64), 0, n_bins - 1)
    counts = np.bincount(bins, minlength=n_bins).astype(np.float64)  # (K,)
    values = np.clip(counts, 5, 1000) if reweight == "inverse" else np.sqrt(counts)
    if lds:
        from scipy.ndimage import convolve1d

        values = convolve1d(values, weights=lds_kernel(ks, sigma, "max"), mode="constant")  # DIR Eq. 1
    per_sample = values[bins]
    weights = 1.0 / per_sample
    return weights * len(weights) / weights.sum()


class FDS(nn.Module):
    """Feature distribution smoothing (DIR Sec. 3.2): calibrate features with label-smoothed statistics."""

    def __init__(
        self,
        feature_dim: int,
        num_buckets: int = 100,
        bucket_start: int = 3,
        start_update: int = 0,
        start_smooth: int = 1,
        ks: int = 5,
        sigma: float = 2.0,
        momentum: float = 0.9,
        label_min: float = 0.0,
        label_step: float = 1.0,
    ) -> None:
        super().__init__()
        if not label_step > 0:
            raise ValueError(f"label_step must be > 0, got {label_step!r}")
        self.label_min, self.label_step = float(label_min), float(label_step)
        if not 0 <= bucket_start < num_buckets:
            raise ValueError(f"need 0 <= bucket_start < num_buckets, got {bucket_start}, {num_buckets}")
        self.feature_dim, self.num_buckets, self.bucket_start = feature_dim, num_buckets, bucket_start
        self.start_update, self.start_smooth, self.momentum = start_update, start_smooth, momentum
        self.register_buffer("kernel", torch.tensor(lds_kernel(ks, sigma, "sum"), dtype=torch.float32))
        n = num_buckets - bucket_start
        for name, init in (("running_mean", torch.zeros), ("running_var", torch.ones)):
            self.register_buffer(name, init(n, feature_dim))
            self.register_buffer(name + "_last_epoch", init(n, feature_dim))
            self.register_buffer("smoothed_" + name.split("_")[1] + "_last_epoch", init(n, feature_dim))
        self.register_buffer("epoch", torch.tensor(start_update))

    def bucket(self, labels: torch.Tensor) -> torch.Tensor:
        """Bucket index of each label on the grid label_min + k * label_step (integer labels by default; buckets
        <= bucket_start share the first, >= num_buckets-1 the last)."""
        grid = (labels.reshape(-1) - self.label_min) / self.label_step
        b = (grid + 1e-6).floor().long().clamp(self.bucket_start, self.num_buckets - 1)
        return b - self.bucket_start

    def _smooth(self, stats: torch.Tensor) -> torch.Tensor:
        half = (self.kernel.numel() - 1) // 2
        x = F.pad(stats.t().unsqueeze(1), (half, half), mode="reflect")  # (D, 1, n + 2*half)
        return F.conv1d(x, self.kernel.view(1, 1, -1).to(stats)).squeeze(1).t()  # (n, D)

    @torch.no_grad()
    def update_last_epoch_stats(self, epoch: int) -> None:
        """Freeze the running statistics of the finished epoch and smooth them across labels (DIR Eq. 2)."""
        if epoch == int(self.epoch) + 1:
            self.epoch += 1
            self.running_mean_last_epoch.copy_(self.running_mean)
            self.running_var_last_epoch.copy_(self.running_var)
            self.smoothed_mean_last_epoch.copy_(self._smooth(self.running_mean_last_epoch))
            self.smoothed_var_last_epoch.copy_(self._smooth(self.running_var_last_epoch))

    @torch.no_grad()
    def update_running_stats(self, features: torch.Tensor, labels: torch.Tensor, epoch: int) -> None:
        """Momentum-update per-bucket mean/var from all training features of one epoch."""
        if epoch < int(self.epoch):
            return
        b = self.bucket(labels)
        for idx in torch.unique(b).tolist():
            f = features[b == idx]
            mean = f.mean(0)
            var = f.var(0, unbiased=True) if f.shape[0] > 1 else torch.zeros_like(mean)
            m = 0.0 if epoch == self.start_update else self.momentum
            self.running_mean[idx] = m * self.running_mean[idx] + (1 - m) * mean
            self.running_var[idx] = m * self.running_var[idx] + (1 - m) * var

    def forward(self, features: torch.Tensor, labels: torch.Tensor, epoch: int) -> torch.Tensor:
        """Calibrated features (DIR Eq. 3) from epoch `start_smooth` on; identity before (and at test time)."""
        if epoch < self.start_smooth:
            return features
        b = self.bucket(labels)
        mu, var = self.running_mean_last_epoch[b], self.running_var_last_epoch[b]
        mu_s, var_s = self.smoothed_mean_last_epoch[b], self.smoothed_var_last_epoch[b]
        return (features - mu) * torch.sqrt((var_s / var.clamp_min(1e-12)).clamp(0.1, 10.0)) + mu_s


class BMCLoss(nn.Module):
    """Balanced MSE, batch Monte-Carlo (Ren et al. 2022, Eq. 7) with a learnable noise scale sigma."""

    def __init__(self, init_noise_sigma: float = 1.0) -> None:
        super().__init__()
        if not init_noise_sigma > 0:
            raise ValueError(f"init_noise_sigma must be > 0, got {init_noise_sigma!r}")
        self.noise_sigma = nn.Parameter(torch.tensor(float(init_noise_sigma)))

    def forward(self, pred: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
        """CE(-(yhat_i - y_j)^2 / 2 sigma^2, i) * 2 sigma^2 (detached), averaged over the batch."""
        pred, target = pred.reshape(-1, 1), target.reshape(1, -1).to(pred)
        noise_var = self.noise_sigma**2
        logits = -((pred - target) ** 2) / (2 * noise_var)  # (B, B)
        loss = F.cross_entropy(logits, torch.arange(pred.shape[0], device=pred.device))
        return loss * (2 * noise_var).detach()


def _rank_normalised(x: torch.Tensor) -> torch.Tensor:
    """Ascending ranks along the last dim, as (rank + 1) / n."""
    return (x.argsort(-1).argsort(-1) + 1).to(torch.float32) / x.shape[-1]


class _BlackboxRank(torch.autograd.Function):
    """Normalised ranks with the blackbox-differentiation gradient (Vlastelica et al. 2020)."""

    @staticmethod
    def forward(ctx, seq: torch.Tensor, lam: float) -> torch.Tensor:
        rank = _rank_normalised(seq)
        ctx.lam = lam
        ctx.save_for_backward(seq, rank)
        return rank

    @staticmethod
    def backward(ctx, grad: torch.Tensor) -> tuple[torch.Tensor, None]:
        seq, rank = ctx.saved_tensors
        rank_prime = _rank_normalised(seq + ctx.lam * grad)
        return -(rank - rank_prime) / (ctx.lam + 1e-8), None


def ranksim_regularizer(
    features: torch.Tensor,
    targets: torch.Tensor,
    lam: float = 2.0,
    gamma: float = 100.0,
    generator: torch.Generator | None = None,
) -> torch.Tensor:
    """RankSim (Gong et al. 2022, Eq. 4): gamma * sum_i MSE(rank(S_i), rank(-|y_i - y|)) on one sample per label."""
    targets = targets.reshape(-1)
    # Keep one random sample per unique label.
    order = torch.randperm(targets.numel(), generator=generator, device="cpu").to(targets.device)
    _, first = np.unique(targets[order].detach().cpu().numpy(), return_index=True)
    keep = order[torch.as_tensor(first, device=targets.device)]
    feats, labels = F.normalize(features[keep], dim=1), targets[keep]
    sim = feats @ feats.t()  # (m, m)
    loss = features.new_zeros(())
    for i in range(labels.numel()):
        label_rank = _rank_normalised(-(labels[i] - labels).abs()).to(sim)
        feature_rank = _BlackboxRank.apply(sim[i], lam)
        loss = loss + F.mse_loss(feature_rank.to(sim), label_rank)
    return gamma * loss
