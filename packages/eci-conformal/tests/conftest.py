"""Shared fixtures for the eci-conformal tests."""

from __future__ import annotations

import numpy as np
import pytest


@pytest.fixture
def scores() -> np.ndarray:
    """|N(0, 1)| draws, doubled after t = 500, T = 1000 (the spec's parity stream)."""
    s = np.abs(np.random.default_rng(0).standard_normal(1000))
    s[500:] *= 2
    return s


@pytest.fixture
def signed_scores() -> np.ndarray:
    """Signed residual-like scores with a level shift and a volatility change, T = 800."""
    rng = np.random.default_rng(1)
    s = rng.standard_normal(800)
    s[300:] += 1.5
    s[550:] *= 3
    return s
