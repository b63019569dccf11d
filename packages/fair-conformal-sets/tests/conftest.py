"""Shared fixtures for the fair-conformal-sets tests."""

from __future__ import annotations

import numpy as np
import pytest


@pytest.fixture
def probs() -> np.ndarray:
    """Softmax outputs of 40 items over 6 labels, with one exact tie."""
    rng = np.random.default_rng(0)
    z = rng.standard_normal((40, 6)) * 1.5
    z[3, 2] = z[3, 4]
    e = np.exp(z - z.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


@pytest.fixture
def uniforms() -> np.ndarray:
    """Fixed U ~ Unif(0, 1) per (item, label) matching `probs`."""
    return np.random.default_rng(1).random((40, 6))
