"""`iclr25 smoke`: the full preset's AR transformer (6 layers, d_model 256, 8 heads) on sequences of T = 64
vectors in R^5, batch 128, AdamW on the package's own `ar_loss`."""

from __future__ import annotations

from collections.abc import Callable

import torch

from iclr25.icl_emergence.config import PRESETS
from iclr25.icl_emergence.model import ARTransformer
from iclr25.icl_emergence.training import ar_loss

CPU_BATCH = 16


def build(device: str, reduced: bool) -> Callable[[], int]:
    c = PRESETS["full"]
    batch = CPU_BATCH if reduced else c.batch
    model = ARTransformer(input_dim=c.d, d_model=c.d_model, n_layers=c.n_layers, n_heads=c.n_heads, max_len=c.T)
    model.to(device).train()
    opt = torch.optim.AdamW(model.parameters(), lr=c.lr, weight_decay=c.weight_decay)
    seq = torch.randn(batch, c.T, c.d, device=device)

    def step() -> int:
        loss = ar_loss(model, seq)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        return batch

    return step
