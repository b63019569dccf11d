"""Shared fixtures for the SIU tests."""

from __future__ import annotations

import pytest


@pytest.fixture(autouse=True)
def _threads():
    import torch

    torch.set_num_threads(1)
