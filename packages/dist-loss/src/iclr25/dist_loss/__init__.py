"""Dist Loss: Enhancing Regression in Few-Shot Region through Distribution Distance Constraint (ICLR 2025, arXiv 2411.15216).

A loss aligning the sorted batch predictions with KDE pseudo-labels to improve few-shot regions of imbalanced regression.
Public names are exported lazily: importing this package does not import torch.
"""

from __future__ import annotations

import importlib
from typing import Any

from iclr25.shared.paper import Paper

PAPER = Paper(
    slug="dist-loss",
    title="Dist Loss: Enhancing Regression in Few-Shot Region through Distribution Distance Constraint",
    authors="Guangkun Nie, Gongzheng Tang, Shenda Hong",
    arxiv="2411.15216",
    code="Ngk03/DIR-Dist-Loss",
    cli="iclr25.dist_loss.cli:main",
    reproduce="iclr25.dist_loss.reproduce:run",
    summary="A loss aligning the sorted batch predictions with KDE pseudo-labels to improve few-shot regions of imbalanced regression.",
)

_EXPORTS: dict[str, str] = {}  # public name -> submodule, e.g. "ECI": "methods"

__all__ = ["PAPER", *sorted(_EXPORTS)]


def __getattr__(name: str) -> Any:
    if name in _EXPORTS:
        return getattr(importlib.import_module(f"{__name__}.{_EXPORTS[name]}"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
