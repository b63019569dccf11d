"""Episodic Novelty Through Temporal Distance (ICLR 2025, arXiv 2501.15418).

Episodic intrinsic reward from a learned quasimetric temporal distance to the states already visited in the episode.
Public names are exported lazily: importing this package does not import torch.
"""

from __future__ import annotations

import importlib
from typing import Any

from iclr25.shared.paper import Paper

PAPER = Paper(
    slug="etd-exploration",
    title="Episodic Novelty Through Temporal Distance",
    authors="Yuhua Jiang, Qihan Liu, Yiqin Yang, Xiaoteng Ma, Dianyu Zhong, Hao Hu, Jun Yang, Bin Liang, Bo Xu, Chongjie Zhang, Qianchuan Zhao",
    arxiv="2501.15418",
    code="Jackory/ETD",
    cli="iclr25.etd_exploration.cli:main",
    reproduce="iclr25.etd_exploration.reproduce:run",
    summary="Episodic intrinsic reward from a learned quasimetric temporal distance to the states already visited in the episode.",
)

_EXPORTS: dict[str, str] = {}  # public name -> submodule, e.g. "ECI": "methods"

__all__ = ["PAPER", *sorted(_EXPORTS)]


def __getattr__(name: str) -> Any:
    if name in _EXPORTS:
        return getattr(importlib.import_module(f"{__name__}.{_EXPORTS[name]}"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
