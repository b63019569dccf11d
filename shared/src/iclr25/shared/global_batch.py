"""Layers that see the whole global batch of a multi-process run, so that processes which each train on a share of
every batch take the steps of one process on all of it (needs the [torch] extra).

- Batch norm: torch's `SyncBatchNorm` runs only on GPUs; `GlobalBatchNorm1d`/`2d` also run over gloo on CPUs, which
  is what the 2-process tests of the training loops use. `to_global_batch_norm(model)` converts a model in place.
- Dropout: `GlobalBatchDropout` draws the mask of the whole batch in every process (all seeded alike) and keeps its
  share's rows, so each row gets the mask one process would give it. `to_global_batch_dropout(model)` converts a
  model in place; `set_batch_rows(model, batch_share(n, rank, world), n)` tells it which rows a step holds.
"""

from __future__ import annotations

import torch
from torch import nn

__all__ = [
    "GlobalBatchDropout",
    "GlobalBatchNorm1d",
    "GlobalBatchNorm2d",
    "batch_share",
    "set_batch_rows",
    "to_global_batch_dropout",
    "to_global_batch_norm",
]


def batch_share(size: int, rank: int, world: int) -> tuple[int, int]:
    """Rows [start, stop) of process `rank` when a batch of `size` rows is split contiguously over `world` processes
    (the first `size % world` get one more row)."""
    if world < 1 or not 0 <= rank < world or size < 0:
        raise ValueError(f"need 0 <= rank < world and size >= 0, got rank {rank}, world {world}, size {size}")
    base, extra = divmod(size, world)
    start = rank * base + min(rank, extra)
    return start, start + base + (rank < extra)


def _is_distributed() -> bool:
    import torch.distributed as dist

    return dist.is_available() and dist.is_initialized() and dist.get_world_size() > 1


def _global_batch_norm(norm: nn.modules.batchnorm._BatchNorm, x: torch.Tensor) -> torch.Tensor:
    """Training-mode batch norm of `x` (channels on dim 1) with the statistics of every process's batch: a
    differentiable all-reduce of the per-channel sums, two passes (the mean, then the variance about it)."""
    from torch.distributed.nn.functional import all_reduce

    dims = [d for d in range(x.dim()) if d != 1]
    shape = [1, -1] + [1] * (x.dim() - 2)  # broadcasts a per-channel vector over x
    count = all_reduce(x.new_tensor([x.numel() / x.shape[1]]))
    mean = all_reduce(x.sum(dims)) / count
    centred = x - mean.view(shape)
    var = all_reduce((centred * centred).sum(dims)) / count
    if norm.track_running_stats and norm.running_mean is not None:
        with torch.no_grad():
            norm.num_batches_tracked.add_(1)
            m = norm.momentum if norm.momentum is not None else 1.0 / float(norm.num_batches_tracked)
            norm.running_mean.mul_(1 - m).add_(mean.detach(), alpha=m)
            unbiased = var.detach() * count / (count - 1).clamp(min=1)
            norm.running_var.mul_(1 - m).add_(unbiased, alpha=m)
    out = centred * torch.rsqrt(var + norm.eps).view(shape)
    if norm.affine:
        out = out * norm.weight.view(shape) + norm.bias.view(shape)
    return out


class GlobalBatchNorm1d(nn.BatchNorm1d):
    """`nn.BatchNorm1d` (inputs (N, C) or (N, C, L)) whose training-mode statistics are those of the batch of every
    process, as torch's `SyncBatchNorm`, which also runs over gloo on CPUs. Outside a multi-process run, or in eval
    mode, it is `nn.BatchNorm1d` itself."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if not (self.training and _is_distributed()):
            return super().forward(x)
        self._check_input_dim(x)
        return _global_batch_norm(self, x)


class GlobalBatchNorm2d(nn.BatchNorm2d):
    """`nn.BatchNorm2d` whose training-mode statistics are those of the batch of every process, as torch's
    `SyncBatchNorm`, which also runs over gloo on CPUs. Outside a multi-process run, or in eval mode, it is
    `nn.BatchNorm2d` itself."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if not (self.training and _is_distributed()):
            return super().forward(x)
        self._check_input_dim(x)
        return _global_batch_norm(self, x)


GLOBAL = {nn.BatchNorm1d: GlobalBatchNorm1d, nn.BatchNorm2d: GlobalBatchNorm2d}


def to_global_batch_norm(model: nn.Module) -> nn.Module:
    """Make every `nn.BatchNorm1d`/`nn.BatchNorm2d` of `model` a `GlobalBatchNorm1d`/`2d` (same parameters and
    buffers), in place: in a multi-process run the processes then normalise with the statistics of their whole
    global batch."""
    for mod in model.modules():
        if type(mod) in GLOBAL:
            mod.__class__ = GLOBAL[type(mod)]
    return model


class GlobalBatchDropout(nn.Dropout):
    """`nn.Dropout` that, once told by `set_batch_rows` that its input holds rows [start, stop) of a batch of `size`,
    draws the whole batch's mask (inverted dropout, one Bernoulli(1 - p) per element) and keeps those rows: processes
    with equal RNG states then give every row the mask of a one-process run on the whole batch, and their RNGs stay
    equal. Without rows set, or in eval mode, it is `nn.Dropout` itself."""

    rows: tuple[int, int, int] | None = None

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if not self.training or self.p == 0 or self.rows is None:
            return super().forward(x)
        start, stop, size = self.rows
        if stop - start != len(x):
            raise ValueError(f"dropout input has {len(x)} rows, but rows {start}..{stop} of {size} were set")
        keep = torch.empty((size, *x.shape[1:]), dtype=x.dtype, device=x.device).bernoulli_(1 - self.p)
        return x * keep[start:stop] / (1 - self.p)


def to_global_batch_dropout(model: nn.Module) -> nn.Module:
    """Make every `nn.Dropout` of `model` a `GlobalBatchDropout` (same p), in place."""
    for mod in model.modules():
        if type(mod) is nn.Dropout:
            mod.__class__ = GlobalBatchDropout
    return model


def set_batch_rows(model: nn.Module, rows: tuple[int, int] | None, size: int = 0) -> None:
    """Tell every `GlobalBatchDropout` of `model` that the next forward holds rows `rows` = (start, stop) of a batch
    of `size` rows (None: plain dropout again)."""
    for mod in model.modules():
        if isinstance(mod, GlobalBatchDropout):
            mod.rows = None if rows is None else (rows[0], rows[1], size)
