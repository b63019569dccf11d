"""`iclr25 smoke`: the full preset's image active-learning network (the paper's MNIST CNN, `make_cnn`, Adam lr
1e-3, batch 64 as `train_cnn` trains it), one step per call on a batch of 28x28 images."""

from __future__ import annotations

from collections.abc import Callable

import torch

from iclr25.influence_selection.training import make_cnn

BATCH = 64  # train_cnn's batch


def build(device: str, reduced: bool) -> Callable[[], int]:
    net = make_cnn(10).to(device).train()
    opt = torch.optim.Adam(net.parameters(), lr=1e-3)
    x = torch.randn(BATCH, 1, 28, 28, device=device)
    y = torch.randint(0, 10, (BATCH,), device=device)

    def step() -> int:
        opt.zero_grad()
        torch.nn.functional.cross_entropy(net(x), y).backward()
        opt.step()
        return BATCH

    return step
