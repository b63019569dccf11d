"""Dist Loss: Enhancing Regression in Few-Shot Region through Distribution Distance Constraint (ICLR 2025, arXiv 2411.15216).

A loss aligning the sorted batch predictions with KDE pseudo-labels to improve few-shot regions of imbalanced regression.
Public names are exported lazily: importing this package does not import torch.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from iclr25.shared.paper import Paper
from iclr25.shared.run import lazy_exports

PAPER = Paper.load(__name__)

if TYPE_CHECKING:  # the public API: real imports for type checkers, loaded lazily at run time
    from iclr25.dist_loss.baselines import FDS, BMCLoss, label_weights, ranksim_regularizer
    from iclr25.dist_loss.data import agedb_labels, make_tabular
    from iclr25.dist_loss.images import ResNet, resnet50
    from iclr25.dist_loss.labels import batch_label_counts, kde_label_density, label_grid, pseudo_labels
    from iclr25.dist_loss.loss import DistLoss, FocalL1, HuberLoss
    from iclr25.dist_loss.metrics import balanced_mae, shot_metrics, wasserstein1
    from iclr25.dist_loss.sorting import isotonic_decreasing, soft_sort
    from iclr25.dist_loss.train import MLP, rrt

__all__, __getattr__, __dir__ = lazy_exports(__name__, __file__, "PAPER")
