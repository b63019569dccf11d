"""`iclr25 smoke`: one training step of the full preset's Seq2Exp-soft (a bidirectional Mamba generator and a
bidirectional Mamba predictor, d 128, 4 layers each; the `mamba-ssm` kernels where installed on CUDA, else the
pure-torch scan) on 200 kb windows (one-hot bases, 3 signal tracks, 9 mRNA features), batch 8, with the official
AdamW (0.9, 0.95; weight decay 1e-6) and clipping 1, through the package's own `build_model`, `model_config` and
`seq2exp_loss`, as `training.fit` runs it. Synthetic windows stand in for GeneExp. `reduced` (the CPU run of CI,
where one 200 kb window takes minutes) trains on one 128-base window, in one thread."""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch import nn

from iclr25.seq2exp.config import PRESETS
from iclr25.seq2exp.seq2exp import seq2exp_loss
from iclr25.seq2exp.training import build_model, model_config

MODEL = "seq2exp-soft"  # two backbones: the heaviest of the preset's models
CPU_BATCH, CPU_LENGTH = 1, 128  # reduced: one 128-base window (the promoter slice then spans it)


def build(device: str, reduced: bool) -> Callable[[], int]:
    c = PRESETS["full"]
    mcfg = model_config(c, MODEL)
    batch, L = (CPU_BATCH, CPU_LENGTH) if reduced else (c.batch_size, c.length)
    if reduced:  # the CI run on busy cores: the scan's many small ops slow down badly with two threads
        torch.set_num_threads(1)
    model = build_model(MODEL, mcfg).to(device).train()
    opt = torch.optim.AdamW(model.parameters(), lr=c.lr, betas=(0.9, 0.95), weight_decay=1e-6)
    batch_in = {
        "seq": torch.randint(0, 4, (batch, L), dtype=torch.uint8, device=device),
        "signals": torch.rand(batch, L, mcfg.n_signals, device=device),
        "rna_feat": torch.randn(batch, c.n_rna, device=device),
        "blacklist": torch.zeros(batch, L, dtype=torch.bool, device=device),
    }
    y = torch.randn(batch, device=device)

    def step() -> int:
        y_hat, aux = model(**batch_in)
        loss = seq2exp_loss(y_hat, y, aux, c.lam)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        return batch

    return step
