"""Shared fixtures of the dist-loss tests."""

from __future__ import annotations

import numpy as np
import pytest


@pytest.fixture(scope="session")
def normal_ages() -> np.ndarray:
    """round(N(40, 12)) ages, 5,000 draws from default_rng(0), clipped to 0..120 (spec 9.3)."""
    rng = np.random.default_rng(0)
    return np.clip(np.round(rng.normal(40, 12, 5000)), 0, 120)
