"""Dist Loss: Enhancing Regression in Few-Shot Region through Distribution Distance Constraint (ICLR 2025, arXiv 2411.15216).

A loss aligning the sorted batch predictions with KDE pseudo-labels to improve few-shot regions of imbalanced regression.
Public names are exported lazily: importing this package does not import torch.
"""

from __future__ import annotations

from iclr25.shared.paper import Paper
from iclr25.shared.run import lazy_exports

PAPER = Paper(
    slug="dist-loss",
    title="Dist Loss: Enhancing Regression in Few-Shot Region through Distribution Distance Constraint",
    authors="Guangkun Nie, Gongzheng Tang, Shenda Hong",
    arxiv="2411.15216",
    code="Ngk03/DIR-Dist-Loss",
    cli="iclr25.dist_loss.cli:main",
    reproduce="iclr25.dist_loss.reproduce:run",
    scales=("ci", "quick", "full"),
    summary="A loss aligning the sorted batch predictions with KDE pseudo-labels to improve few-shot regions of imbalanced regression.",
)

_EXPORTS: dict[str, str] = {
    "soft_sort": "sorting",
    "isotonic_decreasing": "sorting",
    "kde_label_density": "labels",
    "batch_label_counts": "labels",
    "pseudo_labels": "labels",
    "label_grid": "labels",
    "DistLoss": "loss",
    "FocalL1": "loss",
    "HuberLoss": "loss",
    "label_weights": "baselines",
    "FDS": "baselines",
    "BMCLoss": "baselines",
    "ranksim_regularizer": "baselines",
    "shot_metrics": "metrics",
    "balanced_mae": "metrics",
    "wasserstein1": "metrics",
    "make_tabular": "data",
    "agedb_labels": "data",
    "MLP": "train",
    "rrt": "train",
    "ResNet": "images",
    "resnet50": "images",
}  # public name -> submodule

__all__ = ["PAPER", *sorted(_EXPORTS)]

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
