"""Lightning wrapper of one training stage of arXiv 2407.12665 (Section 2.2 and 3.1).

`StageModule` trains a causal LM for one `StagePlan`: patch level (K>1, Eqs. 1-2) or token level (K=1).
Each stage is its own module and its own `fit`, so the optimizer (AdamW) and the warmup + cosine
schedule are fresh at the stage switch, as in the official two-launch recipe. The training data of a
stage is a fixed array of blocks read in order; the loader starts at the restored global step, so a
run resumed from a checkpoint sees exactly the batches it would have seen.
"""

from __future__ import annotations

import time
from typing import Any

import lightning as L
import numpy as np
import torch

from iclr25.patch_train.patch import patch_forward
from iclr25.patch_train.plan import StagePlan
from iclr25.patch_train.stage import OptimConfig, StageProbe, make_optimizer


def weights_fingerprint(model: Any) -> float:
    """A float64 checksum of all parameters (equal weights give equal checksums)."""
    with torch.no_grad():
        return float(sum((p.double() * (1.0 + i % 7)).sum() for i, p in enumerate(model.parameters())))


class _ResumeSampler(torch.utils.data.Sampler):
    """Micro-batch indices in order, starting after those already consumed when iteration begins.

    The start is read from the trainer at iteration time, i.e. after a checkpoint has been restored. With
    several processes, process r of W takes micro-batches start + r, start + r + W, ...: each optimizer step still
    consumes the same `accumulate` micro-batches, split over the processes.
    """

    def __init__(self, module: StageModule, n: int) -> None:
        self.module, self.n = module, n

    def __iter__(self) -> Any:
        trainer = self.module._trainer
        start = int(trainer.global_step) * self.module.accumulate if trainer is not None else 0
        rank, world = (trainer.global_rank, trainer.world_size) if trainer is not None else (0, 1)
        return iter(range(start + rank, self.n, world))

    def __len__(self) -> int:
        trainer = self.module._trainer
        world = trainer.world_size if trainer is not None else 1
        return self.n // world


class _MicroBatches(torch.utils.data.Dataset):
    """Micro-batch i of a stage: rows [i*mb, (i+1)*mb) of its block array (numpy, possibly a memmap)."""

    def __init__(self, blocks: np.ndarray, micro_batch: int) -> None:
        self.blocks, self.mb = blocks, micro_batch

    def __len__(self) -> int:
        return len(self.blocks) // self.mb

    def __getitem__(self, i: int) -> torch.Tensor:
        return torch.from_numpy(np.asarray(self.blocks[i * self.mb : (i + 1) * self.mb], dtype=np.int64))


class StageModule(L.LightningModule):
    """One stage (patch or token level) of two-stage training, for any Hugging Face causal LM."""

    def __init__(
        self,
        model: Any,
        plan: StagePlan,
        blocks: np.ndarray,
        *,
        accumulate: int = 1,
        betas: tuple[float, float] = (0.9, 0.95),
        eps: float = 1e-8,
        weight_decay: float = 0.1,
        flops_per_position: float = 0.0,
    ) -> None:
        super().__init__()
        if blocks.ndim != 2 or blocks.shape[1] != plan.block_tokens:
            raise ValueError(f"blocks must be (n, {plan.block_tokens}) for this stage, got {blocks.shape}")
        if blocks.shape[0] != plan.steps * plan.seqs_per_step:
            raise ValueError(f"stage needs {plan.steps * plan.seqs_per_step} blocks, got {blocks.shape[0]}")
        if plan.seqs_per_step % accumulate:
            raise ValueError(f"seqs_per_step={plan.seqs_per_step} must be divisible by accumulate={accumulate}")
        self.model, self.plan, self.accumulate = model, plan, accumulate
        self.blocks = blocks  # read lazily, one micro-batch at a time (token files may be memory-mapped)
        self.betas, self.eps, self.weight_decay = betas, eps, weight_decay
        self.flops_per_position = flops_per_position
        self.losses: list[float] = []
        self.start_info: dict[str, Any] = {}
        self.restored_losses: list[float] = []  # the losses of the steps before a resumed checkpoint
        self._restored_start: dict[str, Any] = {}
        self.probe = StageProbe(plan.K)  # what the stage did, recorded inside the loop (stage-switch checks)
        self._restored_probe: dict[str, Any] = {}

    def forward(self, input_ids: torch.Tensor) -> torch.Tensor:
        """Logits at this stage's patch size: (B, L/K, V)."""
        return patch_forward(self.model, input_ids, self.plan.K)[0]

    def training_step(self, batch: torch.Tensor, batch_idx: int) -> torch.Tensor:
        """Patch loss (Eq. 2) or next-token loss on one micro-batch of blocks."""
        logits, loss = patch_forward(self.model, batch, self.plan.K, labels=batch)
        self.probe.batch(batch, logits)
        world = self.trainer.world_size
        if world > 1:  # every process records the micro-batch losses of all processes, in the data's order
            self.losses.extend(float(v) for v in self.all_gather(loss.detach()).reshape(-1))
        else:
            self.losses.append(float(loss.detach()))
        step = self.global_step + 1
        self.log_dict(
            {
                "train/loss": loss,
                "train/lr": self.optimizers().param_groups[0]["lr"],
                "train/K": float(self.plan.K),
                "train/tokens_seen": float(step * self.plan.tokens_per_step),
                "train/flops": float(step * self.plan.positions_per_step * self.flops_per_position),
            },
            on_step=True,
            on_epoch=False,
            sync_dist=world > 1,
        )
        return loss

    def configure_optimizers(self) -> dict[str, Any]:
        """A fresh AdamW (no decay on norms) and the HF warmup + cosine schedule of this stage (`stage.make_optimizer`)."""
        opt, sched = make_optimizer(self.model, self.plan, OptimConfig(self.betas, self.eps, self.weight_decay))
        return {"optimizer": opt, "lr_scheduler": {"scheduler": sched, "interval": "step"}}

    def on_before_optimizer_step(self, optimizer: Any) -> None:
        """Probe: the lr of this step (and whether the optimizer has state at the first one)."""
        self.probe.before_step(optimizer)

    def on_train_batch_end(self, outputs: Any, batch: Any, batch_idx: int) -> None:
        """Probe: the AdamW moments right after the stage's first optimizer step."""
        if self.global_step >= 1 and not self.probe.adam_steps_after_first_step:
            self.probe.after_step(self.optimizers().optimizer, self.betas)

    def on_save_checkpoint(self, checkpoint: dict[str, Any]) -> None:
        """Keep the loss curve so far and the stage's start record (numbers only) in the checkpoint."""
        checkpoint["patch_train"] = {
            "losses": self.restored_losses + self.losses,
            "start_info": dict(self.start_info),
            "probe": self.probe_record(),
        }

    def on_load_checkpoint(self, checkpoint: dict[str, Any]) -> None:
        """A resumed stage reports the whole loss curve and what the stage started from, not the resumption."""
        saved = checkpoint.get("patch_train", {})
        self.restored_losses = [float(v) for v in saved.get("losses", [])]
        self._restored_start = dict(saved.get("start_info", {}))
        self.start_info = dict(self._restored_start)
        self._restored_probe = dict(saved.get("probe", {}))

    def probe_record(self) -> dict[str, Any]:
        """The probe's record; a resumed stage keeps the record of its first steps and adds the lrs it ran since."""
        now = self.probe.to_dict()
        if not self._restored_probe:
            return now
        merged = dict(self._restored_probe)
        merged["lrs"] = list(merged.get("lrs", [])) + now["lrs"]
        merged["tokens"] = merged.get("tokens", 0) + now["tokens"]
        merged["positions"] = merged.get("positions", 0) + now["positions"]
        return merged

    def on_train_start(self) -> None:
        """Record what the stage starts from: optimizer state size, lr, step (stage-switch checks)."""
        if self._restored_start:
            self.start_info = dict(self._restored_start)
            return
        opt = self.optimizers().optimizer
        self.start_info = {
            "global_step": int(self.global_step),
            "optimizer_state_entries": len(opt.state),
            "lr": float(opt.param_groups[0]["lr"]),
            "weights_fingerprint": weights_fingerprint(self.model),
        }

    def train_dataloader(self) -> torch.utils.data.DataLoader:
        """Micro-batches in order, starting after the ones already consumed (exact resume)."""
        micro = self.plan.seqs_per_step // self.accumulate
        data = _MicroBatches(self.blocks, micro)
        return torch.utils.data.DataLoader(
            data, batch_size=None, sampler=_ResumeSampler(self, len(data)), num_workers=0
        )


class StepTimer(L.Callback):
    """Wall time of training steps (forward, backward, optimizer), skipping the first `warmup` steps."""

    def __init__(self, warmup: int = 5) -> None:
        self.warmup, self.seconds, self.steps, self.tokens, self._t0, self._seen = warmup, 0.0, 0, 0, 0.0, 0

    def on_train_batch_start(
        self, trainer: L.Trainer, pl_module: L.LightningModule, batch: Any, batch_idx: int
    ) -> None:
        """Start the clock."""
        if torch.cuda.is_available() and pl_module.device.type == "cuda":
            torch.cuda.synchronize()
        self._t0 = time.perf_counter()

    def on_train_batch_end(
        self, trainer: L.Trainer, pl_module: L.LightningModule, outputs: Any, batch: Any, batch_idx: int
    ) -> None:
        """Stop the clock and accumulate."""
        if torch.cuda.is_available() and pl_module.device.type == "cuda":
            torch.cuda.synchronize()
        self._seen += 1
        if self._seen > self.warmup:
            self.seconds += time.perf_counter() - self._t0
            self.steps += 1
            self.tokens += int(batch.numel())

    @property
    def tokens_per_s(self) -> float:
        """Tokens read per second over the timed steps (0 before any)."""
        return self.tokens / self.seconds if self.seconds > 0 else 0.0


class StageProgress(L.Callback):
    """Progress of one stage's optimizer steps through `iclr25.shared.progress` (a bar on a terminal, a line every
    ~30 s in logs, nothing when quiet): a counter per step, nothing else."""

    def __init__(self, desc: str, total: int) -> None:
        self.desc, self.total, self.bar, self._step = desc, total, None, 0

    def on_train_start(self, trainer: L.Trainer, pl_module: L.LightningModule) -> None:
        """Open the bar at the (possibly restored) global step."""
        from iclr25.shared.progress import progress

        self.bar = progress(total=self.total, desc=self.desc, unit="step")
        self._step = int(trainer.global_step)
        self.bar.update(self._step)

    def on_train_batch_end(
        self, trainer: L.Trainer, pl_module: L.LightningModule, outputs: Any, batch: Any, batch_idx: int
    ) -> None:
        """Count the optimizer steps done since the last batch (micro-batches accumulate into one step)."""
        if self.bar is not None and trainer.global_step > self._step:
            self.bar.update(trainer.global_step - self._step)
            self._step = int(trainer.global_step)

    def on_train_end(self, trainer: L.Trainer, pl_module: L.LightningModule) -> None:
        """Close the bar."""
        if self.bar is not None:
            self.bar.close()
            self.bar = None
