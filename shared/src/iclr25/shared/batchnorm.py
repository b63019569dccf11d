"""Batch norm over the whole global batch of a multi-process run (needs the [torch] extra).

torch's `SyncBatchNorm` runs only on GPUs; these also run over gloo on CPUs, which is what the 2-process tests of
the training loops use. A loop that splits each batch over the processes calls `to_global_batch_norm(model)` when
there is more than one process, and its batch-norm networks then take the same steps as one process on the whole
batch.
"""

from __future__ import annotations

import torch
from torch import nn

__all__ = ["GlobalBatchNorm1d", "GlobalBatchNorm2d", "to_global_batch_norm"]


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
