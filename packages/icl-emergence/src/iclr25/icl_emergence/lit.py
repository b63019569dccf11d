"""`ARNTPModule`: AR-NTP pre-training as a LightningModule, fitted with the shared trainer (`make_trainer`), for
the `train` verb (and multi-GPU/full-scale use). The reproduction's many tiny CPU runs use the plain loop in
`training.train_ar`, which follows the same recipe without Lightning's per-step overhead."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import lightning as L
import torch
from torch import Tensor, nn

from iclr25.icl_emergence.training import ar_loss, lr_at


class _Batches(torch.utils.data.IterableDataset):
    """`steps` batches of `batch` sequences drawn with replacement from `data` (N_seqs, T, ...)."""

    def __init__(self, data: Tensor, batch: int, steps: int, seed: int) -> None:
        self.data, self.batch, self.steps, self.seed = data, batch, steps, seed

    def __iter__(self):
        g = torch.Generator().manual_seed(self.seed)
        for _ in range(self.steps):
            yield self.data[torch.randint(len(self.data), (self.batch,), generator=g)]


class ARNTPModule(L.LightningModule):
    """AR-NTP loss over all positions (spec §3.1); AdamW with linear warm-up and cosine decay (spec §6a)."""

    def __init__(
        self, model: nn.Module, *, lr: float = 1e-3, warmup: int = 100, steps: int = 1200, weight_decay: float = 0.01
    ) -> None:
        super().__init__()
        self.model, self.lr, self.warmup, self.steps, self.weight_decay = model, lr, warmup, steps, weight_decay
        self.losses: list[float] = []

    def training_step(self, batch: Tensor, batch_idx: int) -> Tensor:
        """One AR-NTP step."""
        loss = ar_loss(self.model, batch)
        self.log("train/loss", loss, prog_bar=True)
        self.losses.append(float(loss.detach()))
        return loss

    def configure_optimizers(self) -> Any:
        """AdamW + the warm-up/cosine schedule, stepped every optimisation step."""
        opt = torch.optim.AdamW(self.model.parameters(), lr=self.lr, weight_decay=self.weight_decay)
        sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: lr_at(s, self.steps, self.warmup, self.lr) / self.lr)
        return {"optimizer": opt, "lr_scheduler": {"scheduler": sched, "interval": "step"}}


def fit_ar(
    model: nn.Module,
    data: Tensor,
    run_dir: str | Path,
    *,
    steps: int,
    batch: int = 64,
    lr: float = 1e-3,
    warmup: int = 100,
    weight_decay: float = 0.01,
    device: str = "auto",
    seed: int = 0,
    wandb: str = "off",
) -> list[float]:
    """Fit `model` on `data` with the shared Lightning trainer (logs into `run_dir`); returns the step losses."""
    from iclr25.shared.trainer import fit, make_trainer

    module = ARNTPModule(model, lr=lr, warmup=warmup, steps=steps, weight_decay=weight_decay)
    trainer = make_trainer(run_dir, max_steps=steps, max_epochs=1, device=device, seed=seed, wandb=wandb,
                           precision="32-true", log_every_n_steps=max(1, min(50, steps)))  # fmt: skip
    loader = torch.utils.data.DataLoader(_Batches(data, batch, steps, seed), batch_size=None)
    fit(trainer, module, loader)
    model.cpu().eval()
    return module.losses
