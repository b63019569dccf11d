"""Shared plumbing for the iclr25 paper packages (nothing paper-specific lives here).

Public names are exported lazily so that importing this package stays cheap: torch, Lightning and
wandb load only when a function that needs them is called.
"""

from __future__ import annotations

import importlib
from typing import Any

_EXPORTS = {
    "Paper": "paper",
    "discover_papers": "paper",
    "Claim": "results",
    "Report": "results",
    "RunExistsError": "results",
    "prepare_run_dir": "results",
    "atomic_write_text": "results",
    "atomic_write_json": "results",
    "save_figure": "results",
    "CliError": "cli",
    "seed_everything": "seed",
    "pick_device": "device",
    "Throughput": "device",
    "make_trainer": "trainer",
    "MetricsLogger": "logging",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    if name in _EXPORTS:
        return getattr(importlib.import_module(f"{__name__}.{_EXPORTS[name]}"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
