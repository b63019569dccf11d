"""Shared fixtures for the icl-emergence tests."""

from __future__ import annotations

import pytest
import torch


@pytest.fixture(autouse=True)
def _threads():
    torch.set_num_threads(1)
    return


@pytest.fixture(scope="session")
def ginc():
    """The default GINC mixture (10 HMMs, 50 symbols)."""
    from iclr25.icl_emergence.ginc import GINC

    return GINC()


@pytest.fixture
def small_hmm():
    """A random 2-value x 3-slot GINC-style HMM (6 states, 4 symbols) with a non-uniform start."""
    from iclr25.icl_emergence.ginc import GINC, GINCConfig

    g = GINC(GINCConfig(n_symbols=4, n_values=2, n_slots=3, n_hmms=2, transition_temp=1.0, start_temp=1.0))
    return g.hmms[0]
