"""Unlocking State-Tracking in Linear RNNs Through Negative Eigenvalues (ICLR 2025, arXiv 2411.12537).

Extending the eigenvalue range of linear-RNN state transitions to [-1, 1] lets them solve parity and track state.
Public names are exported lazily: importing this package does not import torch.
"""

from __future__ import annotations

import importlib
from typing import Any

from iclr25.shared.paper import Paper

PAPER = Paper(
    slug="lrnn-state-tracking",
    title="Unlocking State-Tracking in Linear RNNs Through Negative Eigenvalues",
    authors="Riccardo Grazzi, Julien Siems, Arber Zela, Jörg K.H. Franke, Frank Hutter, Massimiliano Pontil",
    arxiv="2411.12537",
    code="automl/unlocking_state_tracking",
    cli="iclr25.lrnn_state_tracking.cli:main",
    reproduce="iclr25.lrnn_state_tracking.reproduce:run",
    summary="Extending the eigenvalue range of linear-RNN state transitions to [-1, 1] lets them solve parity and track state.",
)

_EXPORTS: dict[str, str] = {}  # public name -> submodule, e.g. "ECI": "methods"

__all__ = ["PAPER", *sorted(_EXPORTS)]


def __getattr__(name: str) -> Any:
    if name in _EXPORTS:
        return getattr(importlib.import_module(f"{__name__}.{_EXPORTS[name]}"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
