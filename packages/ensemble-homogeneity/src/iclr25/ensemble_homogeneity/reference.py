"""Slow, obviously-correct forms the fast code is tested against (no import from the fast modules).

- single-member networks built from plain `nn.Linear`/`nn.Conv2d` layers (the batched ensembles of
  `models` must equal them member by member, outputs and gradients);
- loops over subsets, pairs and points for the analysis of `analysis` (spec §3.4, §6a).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from itertools import combinations

import numpy as np
import torch
from torch import nn

# --------------------------------------------------------------------------------------------------
# Single-member networks


class MLP(nn.Sequential):
    """in -> k (-> k)*(depth-1) -> C with ReLU (spec §6a: in -> k -> k -> C)."""

    def __init__(self, in_dim: int, width: int, n_classes: int, depth: int = 2) -> None:
        layers: list[nn.Module] = []
        d = in_dim
        for _ in range(depth):
            layers += [nn.Linear(d, width), nn.ReLU()]
            d = width
        layers.append(nn.Linear(d, n_classes))
        super().__init__(*layers)


class SmallCNN(nn.Module):
    """Nakkiran et al. (2021) 5-layer CNN: conv widths [k, 2k, 4k, 8k] (3x3, BN, ReLU), max-pools, linear head.

    The last pool is a global max-pool (= MaxPool2d(4) on 32x32 inputs, and defined on smaller images too).
    """

    def __init__(self, width: int, n_classes: int, in_channels: int = 3) -> None:
        super().__init__()
        k = width
        chans = [in_channels, k, 2 * k, 4 * k, 8 * k]
        layers: list[nn.Module] = []
        for i in range(4):
            layers += [nn.Conv2d(chans[i], chans[i + 1], 3, padding=1), nn.BatchNorm2d(chans[i + 1]), nn.ReLU()]
            if i > 0:
                layers.append(nn.MaxPool2d(2, ceil_mode=True))
        self.features = nn.Sequential(*layers)
        self.head = nn.Linear(8 * k, n_classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Logits (B, C) of images (B, in_channels, H, W)."""
        h = self.features(x)
        return self.head(torch.amax(h, dim=(2, 3)))


class PreActBlock(nn.Module):
    """Pre-activation basic block (He et al. 2016) as in the ResNet18 of Nakkiran et al."""

    def __init__(self, cin: int, cout: int, stride: int) -> None:
        super().__init__()
        self.bn1 = nn.BatchNorm2d(cin)
        self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(cout)
        self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.shortcut = nn.Conv2d(cin, cout, 1, stride, bias=False) if stride != 1 or cin != cout else None

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """One residual step."""
        out = torch.relu(self.bn1(x))
        short = self.shortcut(out) if self.shortcut is not None else x
        out = self.conv1(out)
        out = self.conv2(torch.relu(self.bn2(out)))
        return out + short


class PreActResNet18(nn.Module):
    """Width-k pre-activation ResNet18: stages of widths [k, 2k, 4k, 8k], two blocks each, global average pool."""

    def __init__(self, width: int, n_classes: int, in_channels: int = 3) -> None:
        super().__init__()
        k = width
        self.conv1 = nn.Conv2d(in_channels, k, 3, 1, 1, bias=False)
        blocks: list[nn.Module] = []
        cin = k
        for i, c in enumerate([k, 2 * k, 4 * k, 8 * k]):
            for b in range(2):
                blocks.append(PreActBlock(cin, c, 2 if (b == 0 and i > 0) else 1))
                cin = c
        self.blocks = nn.Sequential(*blocks)
        self.head = nn.Linear(8 * k, n_classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Logits (B, C) of images (B, in_channels, H, W)."""
        h = self.blocks(self.conv1(x))
        return self.head(h.mean(dim=(2, 3)))


# --------------------------------------------------------------------------------------------------
# Analysis by loops


def true_scores_loop(probs: np.ndarray, y: np.ndarray) -> np.ndarray:
    """f̂_m(x) by a double loop."""
    M, N = probs.shape[:2]
    return np.array([[probs[m, n, y[n]] for n in range(N)] for m in range(M)])


def subset_curve_enumerate(probs: np.ndarray, y: np.ndarray, sizes: Sequence[int], multiclass: bool = False) -> list:
    """Mean Brier of the mean-probability ensemble over every subset of each size (brute force)."""
    P, N, C = probs.shape
    out = []
    for m in sizes:
        vals = []
        for subset in combinations(range(P), m):
            ens = probs[list(subset)].mean(0)
            if multiclass:
                vals.append(np.mean([sum((ens[n, c] - (c == y[n])) ** 2 for c in range(C)) for n in range(N)]))
            else:
                vals.append(np.mean([(1 - ens[n, y[n]]) ** 2 for n in range(N)]))
        out.append(float(np.mean(vals)))
    return out


def two_model_loop(f: Sequence[float], g: Sequence[float], M: float) -> tuple[float, float, float]:
    """(B̂_∞, V̂, L̂_M) of (R5) from two members' true-class scores, by a loop over points."""
    n = len(f)
    b = sum((1 - a) * (1 - c) for a, c in zip(f, g, strict=True)) / n
    v = sum((a - c) ** 2 for a, c in zip(f, g, strict=True)) / (2 * n)
    return b, v, b + v / M


def collapse_curve_loop(q: Sequence[float], M: int, phi) -> float:
    """(R1) by explicit sums: mean_x Σ_j C(M,j) q^j (1-q)^(M-j) φ(j/M)."""
    total = 0.0
    for qx in q:
        total += sum(math.comb(M, j) * qx**j * (1 - qx) ** (M - j) * phi(j / M) for j in range(M + 1))
    return total / len(q)


def ks_statistic(a: Sequence[float], b: Sequence[float]) -> float:
    """Two-sample KS statistic sup_t |F_a(t) - F_b(t)|, evaluated at every sample point."""
    a, b = sorted(a), sorted(b)
    best = 0.0
    for t in a + b:
        fa = sum(v <= t for v in a) / len(a)
        fb = sum(v <= t for v in b) / len(b)
        best = max(best, abs(fa - fb))
    return best
