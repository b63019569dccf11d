"""Shared fixtures for the ensemble-homogeneity tests."""

from __future__ import annotations

import numpy as np
import pytest


@pytest.fixture
def small_pool() -> tuple[np.ndarray, np.ndarray]:
    """Random soft member probabilities (6 members, 40 points, 4 classes) and labels."""
    rng = np.random.default_rng(0)
    logits = rng.normal(size=(6, 40, 4)) * 2
    y = rng.integers(0, 4, 40)
    logits[:, np.arange(40), y] += 1.5
    p = np.exp(logits)
    return p / p.sum(-1, keepdims=True), y
