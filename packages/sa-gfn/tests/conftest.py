"""Shared fixtures for the SA-GFN tests."""

from __future__ import annotations

import pytest
import torch


@pytest.fixture(autouse=True)
def _threads():
    torch.set_num_threads(1)
    return


@pytest.fixture
def grid5():
    """A 5x5 standard-reward grid."""
    from iclr25.sa_gfn.envs import HyperGrid

    return HyperGrid(ndim=2, height=5, reward="standard", R0=0.1)


@pytest.fixture
def random_policy():
    """Factory: an untrained MLP policy with a fixed seed (state-dependent, non-uniform)."""
    from iclr25.sa_gfn.gflownet import PolicyNet

    def make(env, uniform_pb: bool = True, seed: int = 0, scale: float = 3.0):
        torch.manual_seed(seed)
        net = PolicyNet(env.input_dim, env.n_actions, hidden=32, n_layers=2, uniform_pb=uniform_pb)
        with torch.no_grad():
            net.head.weight.mul_(scale)  # sharpen it so that P_F is far from uniform
        return net

    return make
