"""Shared fixtures: tiny random LLaMA / OPT models and token batches."""

from __future__ import annotations

import pytest
import torch


@pytest.fixture(autouse=True)
def _threads():
    torch.set_num_threads(1)


def make_model(arch: str = "llama", kv: int = 4, seed: int = 0, layers: int = 3):
    from iclr25.probe_pruning.model import ModelConfig, build_model

    torch.manual_seed(seed)
    cfg = ModelConfig(
        arch=arch, vocab_size=61, hidden_size=32, num_hidden_layers=layers, num_attention_heads=4,
        num_key_value_heads=kv, intermediate_size=48, max_position_embeddings=64,
        hidden_act="silu" if arch == "llama" else "relu", attention_bias=arch == "opt",
    )  # fmt: skip
    model = build_model(cfg)
    with torch.no_grad():  # larger weights than the init, so that units differ clearly
        for p in model.parameters():
            p.mul_(4.0) if p.dim() == 2 else p.add_(0.1 * torch.randn_like(p))
    return model.eval().requires_grad_(False)


@pytest.fixture
def make():
    """Factory of tiny random models: make(arch="llama", kv=4, seed=0, layers=3)."""
    return make_model


@pytest.fixture
def llama():
    return make_model("llama")


@pytest.fixture
def ids():
    g = torch.Generator().manual_seed(1)
    return torch.randint(0, 61, (6, 16), generator=g)


@pytest.fixture
def calib():
    g = torch.Generator().manual_seed(2)
    return [torch.randint(0, 61, (4, 16), generator=g) for _ in range(3)]
