"""Beyond Next Token Prediction: Patch-Level Training for Large Language Models (ICLR 2025, arXiv 2407.12665).

Train an LLM first on patches of K averaged token embeddings with a next-patch loss, then on tokens, at about half the cost.
Public names are exported lazily: importing this package does not import torch.
"""

from __future__ import annotations

import importlib
from typing import Any

from iclr25.shared.paper import Paper

PAPER = Paper(
    slug="patch-train",
    title="Beyond Next Token Prediction: Patch-Level Training for Large Language Models",
    authors="Chenze Shao, Fandong Meng, Jie Zhou",
    arxiv="2407.12665",
    code="shaochenze/PatchTrain",
    cli="iclr25.patch_train.cli:main",
    reproduce="iclr25.patch_train.reproduce:run",
    summary="Train an LLM first on patches of K averaged token embeddings with a next-patch loss, then on tokens, at about half the cost.",
)

_EXPORTS: dict[str, str] = {}  # public name -> submodule, e.g. "ECI": "methods"

__all__ = ["PAPER", *sorted(_EXPORTS)]


def __getattr__(name: str) -> Any:
    if name in _EXPORTS:
        return getattr(importlib.import_module(f"{__name__}.{_EXPORTS[name]}"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
