"""Workspace-wide test setup: offline wandb, quiet Lightning, headless matplotlib, no leaked wandb runs."""

from __future__ import annotations

import logging
import os
import sys
from collections.abc import Iterator

import pytest

os.environ["WANDB_MODE"] = "offline"  # a test may opt into wandb, but never online
os.environ.setdefault("WANDB_SILENT", "true")
os.environ.setdefault("WANDB_DISABLE_GIT", "true")
os.environ.setdefault("MPLBACKEND", "Agg")
os.environ.setdefault("PYTHONHASHSEED", "0")
for name in ("lightning", "lightning.pytorch", "lightning.fabric"):
    logging.getLogger(name).setLevel(logging.ERROR)


@pytest.fixture(autouse=True)
def _finish_wandb() -> Iterator[None]:
    """Close any wandb run a test opened: otherwise the next WandbLogger silently reuses it."""
    yield
    wandb = sys.modules.get("wandb")
    if wandb is not None and getattr(wandb, "run", None) is not None:
        wandb.finish()
