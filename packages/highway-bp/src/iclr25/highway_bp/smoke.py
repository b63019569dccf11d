"""`iclr25 smoke`: the full preset's largest network, the post-ReLU ResNet110 (18 blocks a stage, width 16, App. G
downsampling) on 32x32 CIFAR-10 images, batch 128, trained with Highway-BP at k = 4 (the largest k of the
ResNet runs), SGD 0.1 (momentum 0.9, weight decay 1e-4) with flip + crop augmentation: one step per call, as
`train.train_classifier` runs it, through the package's own `resnet_cifar`, `make_step_fn` and `augment_cifar`."""

from __future__ import annotations

from collections.abc import Callable

import torch

from iclr25.highway_bp.config import PRESETS
from iclr25.highway_bp.resnet import augment_cifar, resnet_cifar
from iclr25.highway_bp.train import make_step_fn

CPU_BATCH = 4


def build(device: str, reduced: bool) -> Callable[[], int]:
    c = PRESETS["full"]
    blocks, k = max(c.resnet_blocks), max(c.resnet_ks)
    batch = CPU_BATCH if reduced else c.resnet_batch
    if reduced:  # the CI run on busy cores: Highway-BP's many small per-layer ops slow down badly with two threads
        torch.set_num_threads(1)
    model = resnet_cifar(blocks, c.resnet_width, 10, preact=blocks != 18).to(device).train()
    opt = torch.optim.SGD(model.parameters(), lr=c.resnet_lr, momentum=0.9, weight_decay=c.resnet_wd)
    step_fn = make_step_fn(model, "hbp", k)
    gen = torch.Generator().manual_seed(0)
    x = torch.randn(batch, 3, 32, 32, device=device)
    y = torch.randint(0, 10, (batch,), device=device)

    def step() -> int:
        opt.zero_grad(set_to_none=True)
        step_fn(augment_cifar(x, gen), y)
        opt.step()
        return batch

    return step
