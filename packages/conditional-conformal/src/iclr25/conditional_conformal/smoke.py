"""`iclr25 smoke`: the full preset's mixture density network (10 components, 2 x 100 tanh hidden, batch 128,
Adam), one maximum-likelihood step per call through the package's own `MDN._nll`."""

from __future__ import annotations

from collections.abc import Callable

import torch

from iclr25.conditional_conformal.config import PRESETS
from iclr25.conditional_conformal.estimators import MDN


def build(device: str, reduced: bool) -> Callable[[], int]:
    cfg = PRESETS["full"]
    mdn = MDN(1, 1, cfg.mdn_components, cfg.mdn_hidden)
    mdn.body.to(device)
    mdn.head.to(device)
    opt = torch.optim.Adam(list(mdn.body.parameters()) + list(mdn.head.parameters()), lr=cfg.mdn_lr)
    xs = torch.randn(cfg.mdn_batch, 1, device=device)
    ys = torch.randn(cfg.mdn_batch, 1, device=device)

    def step() -> int:
        loss = mdn._nll(xs, ys)
        opt.zero_grad()
        loss.backward()
        opt.step()
        return cfg.mdn_batch

    return step
