"""Fixtures for the highway-bp tests: small float64 residual networks and their exact gradients."""

from __future__ import annotations

import pickle
from pathlib import Path

import numpy as np
import pytest
import torch
from torch import nn

from iclr25.highway_bp.highway import HighwayStack, PostLNResidual, PostReLUResidual, PreActResidual, ScaledResidual

torch.set_num_threads(1)  # tiny tensors: one thread avoids OpenMP spin-waiting on busy machines


def _block(d: int) -> nn.Module:
    return nn.Sequential(nn.LayerNorm(d), nn.Linear(d, 2 * d), nn.Tanh(), nn.Linear(2 * d, d))


def build_stack(kind: str, L: int, d: int = 5, seed: int = 0, gamma: float = 0.3) -> HighwayStack:
    """A random float64 residual network of `kind` in {preact, scaled, postrelu, postln}."""
    torch.manual_seed(seed)
    layers = []
    for _ in range(L):
        if kind == "preact":
            layers.append(PreActResidual(_block(d)))
        elif kind == "scaled":
            layers.append(ScaledResidual(_block(d), gamma))
        elif kind == "postrelu":
            layers.append(PostReLUResidual(_block(d)))
        elif kind == "postln":
            layers.append(PostLNResidual(_block(d), d, gamma=0.8))
        else:
            raise ValueError(kind)
    model = HighwayStack(layers, stem=nn.Linear(3, d), head=nn.Linear(d, 4)).double()
    with torch.no_grad():  # non-trivial LN affine parameters
        for layer in model.layers:
            if isinstance(layer, PostLNResidual):
                layer.weight.uniform_(0.5, 1.5)
                layer.bias.uniform_(-0.5, 0.5)
    return model


@pytest.fixture
def stack_factory():
    """Build small float64 residual networks: stack_factory(kind, L, ...)."""
    return build_stack


@pytest.fixture
def batch():
    """A small float64 classification batch (x, y)."""
    gen = torch.Generator().manual_seed(1)
    return torch.randn(6, 3, generator=gen, dtype=torch.float64), torch.randint(0, 4, (6,), generator=gen)


def write_cifar(root: Path, n: int = 4, seed: int = 0) -> dict[str, dict]:
    """Write a tiny CIFAR-10 python-batch folder (5 train batches and a test batch of `n` images each)."""
    rng = np.random.default_rng(seed)
    root.mkdir(parents=True, exist_ok=True)
    batches = {}
    for name in [f"data_batch_{i}" for i in range(1, 6)] + ["test_batch"]:
        batch = {b"data": rng.integers(0, 256, (n, 3072), dtype=np.uint8), b"labels": list(rng.integers(0, 10, n))}
        (root / name).write_bytes(pickle.dumps(batch))
        batches[name] = batch
    return batches


@pytest.fixture
def cifar_writer():
    """write_cifar(root, n=4, seed=0): a tiny CIFAR-10 folder of python batches."""
    return write_cifar
