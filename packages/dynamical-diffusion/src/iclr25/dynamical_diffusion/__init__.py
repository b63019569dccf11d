"""Dynamical Diffusion: Learning Temporal Dynamics with Diffusion Models (ICLR 2025, arXiv 2503.00951).

A diffusion forward process that mixes each frame's noise with the previous frames' states, for temporal prediction.
Public names are exported lazily: importing this package does not import torch.
"""

from __future__ import annotations

import importlib
from typing import Any

from iclr25.shared.paper import Paper

PAPER = Paper(
    slug="dynamical-diffusion",
    title="Dynamical Diffusion: Learning Temporal Dynamics with Diffusion Models",
    authors="Xingzhuo Guo, Yu Zhang, Baixu Chen, Haoran Xu, Jianmin Wang, Mingsheng Long",
    arxiv="2503.00951",
    code="thuml/dynamical-diffusion",
    cli="iclr25.dynamical_diffusion.cli:main",
    reproduce="iclr25.dynamical_diffusion.reproduce:run",
    summary="A diffusion forward process that mixes each frame's noise with the previous frames' states, for temporal prediction.",
)

_EXPORTS: dict[str, str] = {}  # public name -> submodule, e.g. "ECI": "methods"

__all__ = ["PAPER", *sorted(_EXPORTS)]


def __getattr__(name: str) -> Any:
    if name in _EXPORTS:
        return getattr(importlib.import_module(f"{__name__}.{_EXPORTS[name]}"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
