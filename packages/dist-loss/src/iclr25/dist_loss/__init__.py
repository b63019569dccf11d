"""Dist Loss: Enhancing Regression in Few-Shot Region through Distribution Distance Constraint (ICLR 2025, arXiv 2411.15216).

A loss aligning the sorted batch predictions with KDE pseudo-labels to improve few-shot regions of imbalanced regression.
Modules: the loss (`loss`, `sorting`, `labels`), baselines, data, training, metrics, the experiments
(`experiments`), the claims declared as data (`claims`) and the reproduction plan (`reproduce`).
Public names are exported lazily: importing this package does not import torch.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from iclr25.shared.paper import Paper
from iclr25.shared.run import lazy_exports

PAPER = Paper.load(__name__)

if TYPE_CHECKING:  # the public API: real imports for type checkers, loaded lazily at run time
    from iclr25.dist_loss.baselines import FDS
    from iclr25.dist_loss.baselines import BMCLoss
    from iclr25.dist_loss.baselines import label_weights
    from iclr25.dist_loss.baselines import ranksim_regularizer
    from iclr25.dist_loss.data import agedb_labels
    from iclr25.dist_loss.data import make_tabular
    from iclr25.dist_loss.images import ResNet
    from iclr25.dist_loss.images import resnet50
    from iclr25.dist_loss.labels import batch_label_counts
    from iclr25.dist_loss.labels import kde_label_density
    from iclr25.dist_loss.labels import label_grid
    from iclr25.dist_loss.labels import pseudo_labels
    from iclr25.dist_loss.loss import DistLoss
    from iclr25.dist_loss.loss import FocalL1
    from iclr25.dist_loss.loss import HuberLoss
    from iclr25.dist_loss.metrics import balanced_mae
    from iclr25.dist_loss.metrics import shot_metrics
    from iclr25.dist_loss.metrics import wasserstein1
    from iclr25.dist_loss.sorting import isotonic_decreasing
    from iclr25.dist_loss.sorting import soft_sort
    from iclr25.dist_loss.train import MLP
    from iclr25.dist_loss.train import rrt

__all__, __getattr__, __dir__ = lazy_exports(__name__, __file__, "PAPER")
