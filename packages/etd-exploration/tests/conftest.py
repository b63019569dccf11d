"""Shared fixtures of the etd-exploration tests."""

import pytest
import torch


@pytest.fixture(autouse=True)
def _one_thread():
    torch.set_num_threads(1)


@pytest.fixture(scope="session")
def spiral():
    """The clean spiral maze."""
    from iclr25.etd_exploration.data import SpiralMaze

    return SpiralMaze()
