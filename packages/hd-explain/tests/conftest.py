"""Shared fixtures for the hd-explain tests: a small trained MLP on the Rectangular data."""

from __future__ import annotations

import pytest
import torch

from iclr25.hd_explain.data import rectangular
from iclr25.hd_explain.models import MLP
from iclr25.hd_explain.training import train_classifier


@pytest.fixture(scope="session")
def rect_data():
    """The paper's Rectangular set (500 points, 4 classes, seed 42)."""
    return rectangular()


@pytest.fixture(scope="session")
def rect_model(rect_data):
    """MLP 2-10-10-4 trained as in the quick reproduction (20 epochs here to stay fast)."""
    X, y = rect_data
    torch.manual_seed(0)
    model = MLP(2, (10, 10), 4)
    train_classifier(model, X, y, epochs=20, lr=0.01, batch_size=100, seed=0)
    return model
