"""`iclr25 smoke`: the full preset's grid model (DeltaNet with eigenvalues in [-1, 1], 2 layers, d 128, 4 heads) on
the modular-arithmetic task with brackets (sequences up to length 40, batch 256), as `training.train` steps it:
AdamW, bf16 autocast on CUDA."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import torch
import torch.nn.functional as F

from iclr25.lrnn_state_tracking.config import PRESETS, TrainConfig
from iclr25.lrnn_state_tracking.data import get_task
from iclr25.lrnn_state_tracking.training import _autocast, _param_groups, make_model

CPU_BATCH = 32


def build(device: str, reduced: bool) -> Callable[[], int]:
    c = PRESETS["full"]
    cfg = TrainConfig(
        task="modbra", model="deltanet", d_model=c.grid_d_model, n_layers=c.grid_layers, n_heads=c.grid_heads,
        batch_size=CPU_BATCH if reduced else c.grid_batch, lr=c.grid_lr, weight_decay=c.grid_wd_mod, deltanet_mode=c.grid_deltanet_mode,
    )  # fmt: skip
    task = get_task(cfg.task)
    model = make_model(cfg).to(device).train()
    opt = torch.optim.AdamW(_param_groups(model, cfg.weight_decay), lr=cfg.lr)
    rng = np.random.default_rng(0)

    def step() -> int:
        inputs, targets = task.sample(cfg.batch_size, (task.train_lengths[0], cfg.train_max_len), rng, cfg.mult)
        inputs, targets = inputs.to(device), targets.to(device)
        with _autocast(device, cfg.amp):
            logits = model(inputs)
        loss = F.cross_entropy(logits.float().flatten(0, 1), targets.flatten(), ignore_index=-1)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        return cfg.batch_size

    return step
