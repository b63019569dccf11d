"""Shared fixtures for the Seq2Exp tests."""

from __future__ import annotations

import pytest
import torch


@pytest.fixture(autouse=True)
def _threads():
    torch.set_num_threads(1)
    return


@pytest.fixture
def tiny_config():
    """A small soft Seq2Exp config on the cnn backbone (L 256, promoter 32)."""
    from iclr25.seq2exp.config import Seq2ExpConfig

    return Seq2ExpConfig(d=8, backbone="cnn", n_layers=2, n_rna=3, center_len=32, max_len=256)


@pytest.fixture
def batch():
    """A random batch: seq (2, 256) codes, signals (2, 256, 3), rna (2, 3), blacklist (2, 256)."""
    g = torch.Generator().manual_seed(0)
    seq = torch.randint(0, 5, (2, 256), generator=g)
    signals = torch.rand(2, 256, 3, generator=g) * 3
    rna = torch.randn(2, 3, generator=g)
    blacklist = torch.zeros(2, 256, dtype=torch.bool)
    blacklist[:, 10:20] = True
    return seq, signals, rna, blacklist
