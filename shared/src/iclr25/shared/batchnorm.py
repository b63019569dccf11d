"""Batch norm over the whole global batch of a multi-process run (needs the [torch] extra).

torch's `SyncBatchNorm` runs only on GPUs; this one also runs over gloo on CPUs, which is what the 2-process tests of
the training loops use. A loop that splits each batch over the processes calls `to_global_batch_norm(model)` when
there is more than one process, and its batch-norm networks then take the same steps as one process on the whole
batch.
"""

from __future__ import annotations

import torch
from torch import nn

__all__ = ["GlobalBatchNorm2d", "to_global_batch_norm"]


class GlobalBatchNorm2d(nn.BatchNorm2d):
    """`nn.BatchNorm2d` whose training-mode statistics are those of the batch of every process (a differentiable
    all-reduce of the per-channel sums, two passes: the mean, then the variance about it), as torch's
    `SyncBatchNorm`, which also runs over gloo on CPUs. Outside a multi-process run, or in eval mode, it is
    `nn.BatchNorm2d` itself. `to_global_batch_norm` turns a model's batch norms into these in place."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        import torch.distributed as dist

        if not (self.training and dist.is_available() and dist.is_initialized() and dist.get_world_size() > 1):
            return super().forward(x)
        from torch.distributed.nn.functional import all_reduce

        dims = (0, 2, 3)
        count = all_reduce(x.new_tensor([x.numel() / x.shape[1]]))
        mean = all_reduce(x.sum(dims)) / count
        centred = x - mean[None, :, None, None]
        var = all_reduce((centred * centred).sum(dims)) / count
        if self.track_running_stats and self.running_mean is not None:
            with torch.no_grad():
                self.num_batches_tracked.add_(1)
                m = self.momentum if self.momentum is not None else 1.0 / float(self.num_batches_tracked)
                self.running_mean.mul_(1 - m).add_(mean.detach(), alpha=m)
                unbiased = var.detach() * count / (count - 1).clamp(min=1)
                self.running_var.mul_(1 - m).add_(unbiased, alpha=m)
        out = centred * torch.rsqrt(var + self.eps)[None, :, None, None]
        if self.affine:
            out = out * self.weight[None, :, None, None] + self.bias[None, :, None, None]
        return out


def to_global_batch_norm(model: nn.Module) -> nn.Module:
    """Make every `nn.BatchNorm2d` of `model` a `GlobalBatchNorm2d` (same parameters and buffers), in place: in a
    multi-process run the processes then normalise with the statistics of their whole global batch."""
    for mod in model.modules():
        if type(mod) is nn.BatchNorm2d:
            mod.__class__ = GlobalBatchNorm2d
    return model
