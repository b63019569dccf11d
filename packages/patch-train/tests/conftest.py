"""Fixtures for the patch-train tests."""

from __future__ import annotations

import pytest


@pytest.fixture(autouse=True)
def _one_thread():
    """Tiny models run fastest on one thread; keeps tests quick on a shared machine."""
    import torch

    n = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(n)


@pytest.fixture
def tiny_model():
    """A seeded tiny LLaMA (V=64, d=64, 2 layers, 16 positions)."""
    import torch

    from iclr25.patch_train.patch import make_llama

    torch.manual_seed(0)
    return make_llama("tiny", 64, 64)
