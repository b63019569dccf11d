"""Shared fixtures of the TSC-Net tests."""

from __future__ import annotations

import numpy as np
import pytest
import torch


@pytest.fixture(autouse=True)
def _threads():
    torch.set_num_threads(1)


@pytest.fixture(scope="session")
def tiny_sim():
    """Two simulated scenes (Y-Net DataFrame, masks, exits)."""
    from iclr25.tsc_net.data import simulate_scenes

    return simulate_scenes(2, seed=3, steps=60, max_clips=4)


@pytest.fixture
def tiny_batch():
    """A batch of 6 random-walk pedestrians in 2 clips over 2 random label maps."""
    from iclr25.tsc_net.scene import SceneCrop

    g = torch.Generator().manual_seed(0)
    maps = [np.random.default_rng(i).integers(0, 6, (64, 64)) for i in range(2)]
    pos = torch.cumsum(torch.randn(6, 20, 2, generator=g) * 2, 1) + 32
    return {"pos": pos, "scene": torch.tensor([0, 0, 0, 1, 1, 1]), "group": torch.tensor([0, 0, 0, 1, 1, 1]),
            "scenes": SceneCrop(maps, 6)}  # fmt: skip
