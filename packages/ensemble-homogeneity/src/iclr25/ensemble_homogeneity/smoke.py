"""`iclr25 smoke`: the full preset's widest run (CIFAR-10 CNN of width 160, 100 members batched, batch 128),
one SGD step per call through the package's own `train_ensemble` (one batch, one epoch)."""

from __future__ import annotations

from collections.abc import Callable

import torch

from iclr25.ensemble_homogeneity.config import PRESETS, parse_run
from iclr25.ensemble_homogeneity.models import make_ensemble, member_seeds
from iclr25.ensemble_homogeneity.training import TrainSettings, train_ensemble

CPU_MEMBERS, CPU_BATCH = 2, 32


def build(device: str, reduced: bool) -> Callable[[], int]:
    cfg = PRESETS["full"]
    _, model_name, width, members = parse_run(cfg.runs[0 if reduced else -1])  # on CPU: the narrowest run
    members = CPU_MEMBERS if reduced else members
    seeds = member_seeds(0, members)
    model = make_ensemble(model_name, width, 10, members, (3, 32, 32), seeds=seeds).to(device)
    batch = CPU_BATCH if reduced else cfg.batch_size
    x = torch.randn(batch, 3, 32, 32, device=device)
    y = torch.randint(0, 10, (batch,), device=device)
    settings = TrainSettings(
        lr=cfg.lr, batch_size=batch, max_epochs=1, until_interpolation=False, lr_schedule=cfg.lr_schedule
    )

    def step() -> int:
        train_ensemble(model, x, y, settings, seeds)
        return batch * members

    return step
