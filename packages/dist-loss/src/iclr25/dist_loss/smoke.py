"""`iclr25 smoke`: the full preset's regressor (the synthetic tabular MLP, 16 inputs, 2 x 64 hidden) trained with
Dist Loss (its KDE pseudo-labels for batch 512) and Adam, one batch of 512 per step."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import torch

from iclr25.dist_loss.config import PRESETS
from iclr25.dist_loss.train import MLP, make_loss


def build(device: str, reduced: bool) -> Callable[[], int]:
    cfg = PRESETS["full"]
    rng = np.random.default_rng(0)
    y_train = rng.uniform(cfg.min_label, cfg.max_label, 4096).round()
    setup = make_loss(
        "dist",
        y_train,
        cfg.batch_size,
        cfg.lam,
        cfg.eps,
        cfg.bw,
        cfg.min_label,
        cfg.max_label,
        cfg.step,
        feature_dim=cfg.hidden,
        device=device,
    )
    model = MLP(cfg.dim, cfg.hidden, cfg.depth).to(device)
    opt = torch.optim.Adam(model.parameters(), lr=cfg.lr)
    x = torch.randn(cfg.batch_size, cfg.dim, device=device)
    y = torch.as_tensor(y_train[: cfg.batch_size], dtype=torch.float32, device=device)

    def step() -> int:
        opt.zero_grad(set_to_none=True)
        setup.loss(model(x), y, None).backward()
        opt.step()
        return cfg.batch_size

    return step
