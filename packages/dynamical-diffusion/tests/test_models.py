"""The small eps-networks: shapes in 1-D, 2-D and for time series, and that DyDiff trains and samples with them."""

from __future__ import annotations

import pytest
import torch

from iclr25.dynamical_diffusion.dydiff import DynamicalDiffusion
from iclr25.dynamical_diffusion.models import FrameStackUNet, TSDenoiser


@pytest.mark.parametrize(("dims", "sp"), [(1, (12,)), (2, (8, 8))], ids=["1d", "2d"])
def test_frame_stack_unet_shapes(dims: int, sp: tuple[int, ...]) -> None:
    net = FrameStackUNet(n_frames=5, channels=2, dims=dims, width=8, ch_mult=(1, 2, 2))
    out = net(torch.randn(3, 5, 6, *sp), torch.tensor([0, 10, 999]))
    assert out.shape == (3, 5, 2, *sp)


def test_frame_stack_unet_rejects_wrong_shape() -> None:
    net = FrameStackUNet(n_frames=5, channels=1, dims=1, width=8)
    with pytest.raises(ValueError, match="expected"):
        net(torch.randn(2, 4, 4, 16), torch.zeros(2, dtype=torch.long))
    with pytest.raises(ValueError, match="dims"):
        FrameStackUNet(n_frames=5, dims=3)


def test_time_series_dydiff_trains_and_samples() -> None:
    torch.manual_seed(0)
    dd = DynamicalDiffusion(TSDenoiser(dim=3, width=16, depth=2), gamma_ratio=0.5, n_context=6)
    x = torch.randn(8, 10, 3)  # (B, L, D): frames are time steps
    opt = torch.optim.AdamW(dd.net.parameters(), lr=1e-3)
    losses = []
    for _ in range(5):
        loss = dd.loss(x, generator=torch.Generator().manual_seed(0))
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    assert losses[-1] < losses[0]  # same batch, t and noise: the loss must go down
    out = dd.sample(x[:2, :6], 10, n_samples=3, ddim_steps=4)
    assert out.shape == (3, 2, 10, 3)
    assert torch.isfinite(out).all()
