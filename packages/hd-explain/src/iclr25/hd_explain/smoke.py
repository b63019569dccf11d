"""`iclr25 smoke`: the full preset's image classifier (ResNet-18 of width 64 on 32x32 CIFAR-10, batch 128, Adam),
one step per call through the package's own `train_classifier` (one batch, one epoch)."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from iclr25.hd_explain.config import PRESETS
from iclr25.hd_explain.models import ResNet18
from iclr25.hd_explain.training import train_classifier

CPU_BATCH = 16


def build(device: str, reduced: bool) -> Callable[[], int]:
    cfg = PRESETS["full"]
    model = ResNet18(10, 3, cfg.image_width)
    batch = CPU_BATCH if reduced else cfg.image_batch
    rng = np.random.default_rng(0)
    X = rng.standard_normal((batch, 3, cfg.image_size, cfg.image_size)).astype(np.float32)
    y = rng.integers(0, 10, batch)

    def step() -> int:
        train_classifier(model, X, y, 1, cfg.image_lr, batch, device=device)
        return batch

    return step
