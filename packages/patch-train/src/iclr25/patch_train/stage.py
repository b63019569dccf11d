"""One training stage of arXiv 2407.12665 in plain torch: its optimizer, its schedule, a loop, and a probe.

Each stage has a fresh AdamW (0.9, 0.95; no weight decay on norms) and its own Hugging Face warmup + cosine
schedule (lr(0) = 0), as in the official two-launch recipe (Section 3.1). `train_stage_torch` is the
single-process loop (no Lightning): the CPU presets train with it because a Lightning step costs a few
milliseconds of hooks and logging that do not shrink with the sequence length, which would bill the patch stage
(twice the optimizer steps at equal compute) for time its FLOPs do not take. The Lightning path (`lit.py`) uses
the same optimizer, schedule and probe.

`StageProbe` records, from inside the loop, what a stage actually did: the lr of every optimizer step, whether
the optimizer had state before its first step, the AdamW moments right after it (a fresh AdamW has
m^2 / v = (1 - b1)^2 / (1 - b2) exactly, for every gradient entry), the first ids it trained on and the tokens
and sequence positions it ran. The stage-switch and equal-compute claims are judged from these records.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from iclr25.patch_train.patch import patch_forward
from iclr25.patch_train.plan import StagePlan, hf_cosine_lr

FIRST_IDS = 16  # ids of the stage's first block kept by the probe


@dataclass(frozen=True)
class OptimConfig:
    """AdamW and clipping of both stages (paper Section 3.1 / official scripts)."""

    betas: tuple[float, float] = (0.9, 0.95)
    eps: float = 1e-8
    weight_decay: float = 0.1
    clip: float = 1.0
    micro_batch: int | None = None  # sequences per forward pass; None: the whole step at once


def make_optimizer(model: Any, plan: StagePlan, optim: OptimConfig, flat: bool = False) -> tuple[Any, Any]:
    """A fresh AdamW (no decay on 1-D parameters; the fused kernel) and the stage's warmup + cosine `LambdaLR`
    (lr(0) = 0).

    `flat=True` first moves each group's parameters into one contiguous buffer (`flatten_group`), so AdamW, clipping
    and zeroing run one kernel per group instead of one per parameter: the same elementwise update, with gradients
    that must then be zeroed in place (`zero_grad(set_to_none=False)`), as the plain loop does."""
    decay = [p for p in model.parameters() if p.requires_grad and p.dim() >= 2]
    no_decay = [p for p in model.parameters() if p.requires_grad and p.dim() < 2]
    if flat:
        decay, no_decay = ([flatten_group(g)] if g else [] for g in (decay, no_decay))
    fused = all(p.device.type in ("cpu", "cuda") and p.dtype.is_floating_point for p in decay + no_decay)
    opt = torch.optim.AdamW(
        [{"params": decay, "weight_decay": optim.weight_decay}, {"params": no_decay, "weight_decay": 0.0}],
        lr=plan.lr,
        betas=optim.betas,
        eps=optim.eps,
        fused=fused,  # one kernel per parameter instead of a dozen per-step tensor ops (same update)
    )
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: hf_cosine_lr(s, 1.0, plan.warmup, plan.steps))
    return opt, sched


def flatten_group(params: list[torch.nn.Parameter]) -> torch.nn.Parameter:
    """Make `params` views into one new contiguous buffer (values kept) and their `.grad`s views into a zeroed
    gradient buffer; returns the buffer as one parameter whose `.grad` is that gradient buffer.

    Backward accumulates into an existing `.grad` in place, so every parameter's gradient lands in the shared
    buffer (as with DDP's `gradient_as_bucket_view`); an optimizer over the returned parameter updates all of
    `params` with one kernel per step. The gradients must be zeroed in place, never set to None."""
    if len({(p.dtype, p.device) for p in params}) != 1:
        raise ValueError("flatten_group needs parameters of one dtype and device")
    data = torch.cat([p.detach().reshape(-1) for p in params])
    grad = torch.zeros_like(data)
    offset = 0
    for p in params:
        n = p.numel()
        p.data = data[offset : offset + n].view_as(p)
        p.grad = grad[offset : offset + n].view_as(p)
        offset += n
    flat = torch.nn.Parameter(data)  # shares `data`'s storage
    flat.grad = grad
    return flat


def clip_grad_norm_buffers_(grads: list[torch.Tensor], max_norm: float) -> torch.Tensor:
    """`torch.nn.utils.clip_grad_norm_`'s rule (scale by max_norm / (total L2 norm + 1e-6), at most 1) on a few
    flat gradient buffers, in a handful of tensor ops; returns the total norm before clipping."""
    total = torch.linalg.vector_norm(torch.stack([torch.linalg.vector_norm(g) for g in grads]))
    coef = (max_norm / (total + 1e-6)).clamp_(max=1.0)
    for g in grads:
        g.mul_(coef)
    return total


class StageProbe:
    """What a stage's loop did, recorded as it ran (see the module docstring)."""

    def __init__(self, K: int) -> None:
        self.K = K
        self.lrs: list[float] = []
        self.tokens = 0
        self.positions = 0
        self.first_ids: list[int] = []
        self.state_entries_before_first_step = -1
        self.adam_steps_after_first_step: list[float] = []
        self.moment_ratio_err = float("nan")

    def batch(self, batch: torch.Tensor, logits: torch.Tensor) -> None:
        """Count a micro-batch: the (B, L) token ids read and the (B, T, V) logits' positions the model ran; keep
        the first ids the stage sees."""
        if not self.first_ids:
            self.first_ids = [int(v) for v in batch[0, :FIRST_IDS].tolist()]
        self.tokens += batch.numel()
        self.positions += logits.shape[0] * logits.shape[1]

    def before_step(self, opt: Any) -> None:
        """Record the lr this optimizer step uses (and, at the first step, whether the optimizer has state)."""
        if not self.lrs:
            self.state_entries_before_first_step = sum(1 for s in opt.state.values() if s)
        self.lrs.append(float(opt.param_groups[0]["lr"]))

    def after_step(self, opt: Any, betas: tuple[float, float]) -> None:
        """After the first step: AdamW step counts and how far m^2/v is from a fresh AdamW's (1-b1)^2/(1-b2)."""
        if self.adam_steps_after_first_step:
            return
        steps, worst = set(), 0.0
        target = (1 - betas[0]) ** 2 / (1 - betas[1])
        for state in opt.state.values():
            if not state:
                continue
            steps.add(float(state["step"]))
            m, v = state["exp_avg"].double(), state["exp_avg_sq"].double()
            ok = v > 1e-30
            if ok.any():
                worst = max(worst, float((m[ok] ** 2 / v[ok] / target - 1).abs().max()))
        self.adam_steps_after_first_step = sorted(steps)
        self.moment_ratio_err = worst

    def to_dict(self) -> dict[str, Any]:
        """Plain numbers and lists, for reports and checkpoints."""
        return {
            "lrs": list(self.lrs),
            "tokens": self.tokens,
            "positions": self.positions,
            "first_ids": list(self.first_ids),
            "state_entries_before_first_step": self.state_entries_before_first_step,
            "adam_steps_after_first_step": list(self.adam_steps_after_first_step),
            "moment_ratio_err": self.moment_ratio_err,
        }


class StageLoop:
    """One stage in a plain loop on one process, one optimizer step per `step()` (so two runs can interleave).

    `step()` trains the next optimizer step and returns its (wall, CPU) seconds; `done` says when the stage has
    run all its steps. `losses` holds every micro-batch loss, `probe` the `StageProbe`.
    """

    def __init__(
        self, model: Any, plan: StagePlan, blocks: np.ndarray, *, optim: OptimConfig | None = None,
        device: str = "cpu", seed: int = 0,
    ) -> None:  # fmt: skip
        self.optim = optim or OptimConfig()
        self.mb = self.optim.micro_batch or plan.seqs_per_step
        if plan.seqs_per_step % self.mb:
            raise ValueError(f"micro_batch={self.mb} must divide the stage's {plan.seqs_per_step} sequences per step")
        want = (plan.steps * plan.seqs_per_step, plan.block_tokens)
        if blocks.ndim != 2 or blocks.shape != want:
            raise ValueError(f"blocks must be {want}, got {blocks.shape}")
        self.model, self.plan, self.blocks, self.device = model, plan, blocks, device
        self.accumulate = plan.seqs_per_step // self.mb
        self.cuda = str(device).startswith("cuda")
        torch.manual_seed(seed)
        model.train()
        # the parameters move into one buffer per AdamW group (`flatten_group`): AdamW, clipping and zeroing then
        # cost one kernel per group per step, not one per parameter (the same update)
        self.opt, self.sched = make_optimizer(model, plan, self.optim, flat=True)
        self.grads = [p.grad for group in self.opt.param_groups for p in group["params"]]  # the gradient buffers
        self.probe, self.losses, self.steps_done = StageProbe(plan.K), [], 0

    @property
    def done(self) -> bool:
        """All the stage's optimizer steps have run."""
        return self.steps_done >= self.plan.steps

    def step(self) -> tuple[float, float]:
        """One optimizer step (its micro-batches, clipping, AdamW, schedule); returns its wall and CPU seconds."""
        t0, c0 = time.perf_counter(), time.process_time()
        for j in range(self.accumulate):
            row = (self.steps_done * self.accumulate + j) * self.mb
            batch = torch.from_numpy(np.asarray(self.blocks[row : row + self.mb], dtype=np.int64)).to(self.device)
            with torch.autocast("cuda", dtype=torch.bfloat16, enabled=self.cuda):
                logits, loss = patch_forward(self.model, batch, self.plan.K, labels=batch)
            self.probe.batch(batch, logits)
            (loss / self.accumulate).backward()
            self.losses.append(float(loss.detach()))
        clip_grad_norm_buffers_(self.grads, self.optim.clip)
        self.probe.before_step(self.opt)
        self.opt.step()
        self.probe.after_step(self.opt, self.optim.betas)
        self.sched.step()
        self.opt.zero_grad(set_to_none=False)  # in place: the parameters' gradients are views of the flat buffers
        if self.cuda:
            torch.cuda.synchronize()
        self.steps_done += 1
        if self.done:  # leave the model without gradients (the buffers go when the next stage re-flattens)
            self.model.zero_grad(set_to_none=True)
        return time.perf_counter() - t0, time.process_time() - c0


def measured_flops_per_position(model: Any, K: int, T: int, seqs: int = 1) -> float:
    """Training FLOPs per sequence position counted by torch's FLOP counter on one forward + backward of the
    model at patch size K (a random (seqs, K*T) micro-batch; the weights are not changed)."""
    from torch.utils.flop_counter import FlopCounterMode

    vocab = model.get_input_embeddings().weight.shape[0]
    device = next(model.parameters()).device
    ids = torch.randint(0, vocab, (seqs, K * T), generator=torch.Generator().manual_seed(0)).to(device)
    counter = FlopCounterMode(display=False)
    with counter:
        _, loss = patch_forward(model, ids, K, labels=ids)
        loss.backward()
    model.zero_grad(set_to_none=True)
    return counter.get_total_flops() / (seqs * T)
