"""Shared fixtures for the conditional-conformal tests."""

from __future__ import annotations

import numpy as np
import pytest


@pytest.fixture
def law():
    """The bimodal heteroscedastic oracle law (spec §6a)."""
    from iclr25.conditional_conformal.data import bimodal_hetero_law

    return bimodal_hetero_law()


@pytest.fixture
def rng() -> np.random.Generator:
    return np.random.default_rng(0)
