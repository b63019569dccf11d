"""Scene input of TSC-Net (spec §3 "Scene input"): crops of a semantic label map with an outside channel, and the
scene CNN shared by the goal crop (one feature per goal cell) and the step crops (one feature per step cell).
"""

from __future__ import annotations

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn


class SceneCrop:
    """A bank of label maps (S, H, W) (classes 0..C-1) cropped on the fly: `crop(scene_ids, centres, size)` ->
    (M, C+1, size, size) one-hot, channel C = 1 where the crop falls outside the map (spec §3)."""

    # indices beyond the padded bank are clamped onto its outside-labelled margin, so a 1-pixel margin suffices
    def __init__(self, maps: list[np.ndarray] | np.ndarray, n_classes: int, scale: float = 1.0, margin: int = 1):
        self.n_classes, self.scale, self.margin = int(n_classes), float(scale), int(margin)
        if n_classes > 254:
            raise ValueError(f"at most 254 classes, got {n_classes}")
        hh = max(m.shape[0] for m in maps)
        ww = max(m.shape[1] for m in maps)
        bank = np.full((len(maps), hh + 2 * margin, ww + 2 * margin), n_classes, dtype=np.uint8)  # margin: outside
        for i, m in enumerate(maps):
            if m.min() < 0 or m.max() >= n_classes:
                raise ValueError(f"label map {i} holds labels outside 0..{n_classes - 1}")
            bank[i, margin : margin + m.shape[0], margin : margin + m.shape[1]] = m
        self.bank = torch.from_numpy(bank)
        self._flat = self.bank.reshape(-1)

    def labels(self, scene_ids: torch.Tensor, centres: torch.Tensor, size: int) -> torch.Tensor:
        """(M, size, size) labels of crops centred on `centres` (M, 2) (x, y in map pixels before `scale`)."""
        c = centres.detach().double() * self.scale
        top_left = torch.floor(c - size / 2).long() + self.margin
        ar = torch.arange(size)
        hi_y, hi_x = self.bank.shape[1] - 1, self.bank.shape[2] - 1
        ys = (top_left[:, 1, None] + ar).clamp(0, hi_y)
        xs = (top_left[:, 0, None] + ar).clamp(0, hi_x)
        _, hh, ww = self.bank.shape
        flat = (scene_ids.long() * (hh * ww))[:, None, None] + ys[:, :, None] * ww + xs[:, None, :]
        return self._flat[flat].long()

    def crop(self, scene_ids: torch.Tensor, centres: torch.Tensor, size: int) -> torch.Tensor:
        """(M, C+1, size, size) float one-hot crops; the last channel marks pixels outside the map."""
        lab = self.labels(scene_ids, centres, size)
        out = torch.zeros(lab.shape[0], self.n_classes + 1, size, size)
        return out.scatter_(1, lab[:, None], 1.0)


def crop_and_pad(
    onehot_map: torch.Tensor, center_xy: tuple[float, float], size: int, resize: float = 1.0
) -> torch.Tensor:
    """One crop of a (C, H, W) one-hot map centred on `center_xy` (original pixels x `resize`): (C+1, size, size),
    zero-padded outside the map with channel C = 1 there (reference form of `SceneCrop.crop`)."""
    c, h, w = onehot_map.shape
    out = torch.zeros(c + 1, size, size)
    x0 = int(np.floor(center_xy[0] * resize - size / 2))
    y0 = int(np.floor(center_xy[1] * resize - size / 2))
    for i in range(size):
        for j in range(size):
            y, x = y0 + i, x0 + j
            if 0 <= y < h and 0 <= x < w:
                out[:c, i, j] = onehot_map[:, y, x]
            else:
                out[c, i, j] = 1.0
    return out


def _act() -> nn.Module:
    return nn.LeakyReLU(0.1)


class SceneCNN(nn.Module):
    """The scene CNN (spec §3), shared by both crops. `official`: 7->16 k5, 16->32 k5, 32->32 k5 s5, 32->64 k3,
    [pool], 64->64 k3, 64->128 k3, [pool], 128->128 k3 (stride 5 on the step path, 20 on the goal path).
    `stride_first` (spec §6a quick): 7->c/2 k5 s5, [pool], c/2->c k3, [pool], c->c k3 (same strides, cheaper).
    LeakyReLU 0.1 after all but the last conv. `pool=True` is the goal path."""

    def __init__(self, in_ch: int = 7, out_ch: int = 128, order: str = "official"):
        super().__init__()
        self.order = order
        if order == "official":
            self.pre = nn.Sequential(
                nn.Conv2d(in_ch, 16, 5, padding=2), _act(),
                nn.Conv2d(16, 32, 5, padding=2), _act(),
                nn.Conv2d(32, 32, 5, stride=5), _act(),
                nn.Conv2d(32, 64, 3, padding=1), _act(),
            )  # fmt: skip
            self.mid = nn.Sequential(
                nn.Conv2d(64, 64, 3, padding=1), _act(), nn.Conv2d(64, out_ch, 3, padding=1), _act()
            )
        elif order == "stride_first":
            half = max(out_ch // 2, 8)
            self.pre = nn.Sequential(nn.Conv2d(in_ch, half, 5, stride=5), _act())
            self.mid = nn.Sequential(nn.Conv2d(half, out_ch, 3, padding=1), _act())
        else:
            raise ValueError(f"order must be official or stride_first, got {order!r}")
        self.last = nn.Conv2d(out_ch, out_ch, 3, padding=1)
        self.point = nn.Conv2d(out_ch, out_ch, 3, stride=3)  # 3x3 centre cells -> one point feature

    def forward(self, crops: torch.Tensor, pool: bool = False) -> torch.Tensor:
        """(M, 7, S, S) -> (M, out_ch, S/5, S/5) (step path) or (M, out_ch, S/20, S/20) (goal path, `pool`)."""
        h = self.pre(crops)
        if pool:
            h = F.max_pool2d(h, 2)
        h = self.mid(h)
        if pool:
            h = F.max_pool2d(h, 2)
        return self.last(h)

    def step_cells(self, crops: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Step crops (M, 7, 45, 45) -> (cell features (M, 9, C) of the centre 3x3, point feature (M, C))."""
        h = self.forward(crops, pool=False)
        n = h.shape[-1]
        lo = (n - 3) // 2
        centre = h[..., lo : lo + 3, lo : lo + 3]
        return centre.flatten(2).transpose(1, 2), self.point(centre).flatten(1)
