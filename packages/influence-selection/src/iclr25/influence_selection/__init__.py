"""Enhancing Prediction Performance through Influence Measure (ICLR 2025; OpenReview KjBG4JNOc2, no arXiv).

FI: a local influence measure on the perturbation manifold of a training input, normalised by the Fisher-Rao
metric, used to trim harmful training points and to pick points for active learning.
Public names are exported lazily: importing this package imports neither numpy nor torch.
Modules: `fi` (the measure), `reference` (slow explicit forms), `baselines` (IV, BALD, entropy, random),
`approx` (KFSVD, subsampling + random forest), `selection` (trimming, active learning), `models`, `data`,
`training` (the paper's CNN for image active learning), `experiments` (the measurements), `claims` (the claims as
data), `config`, `reproduce` (the plan), `cli`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from iclr25.shared.paper import Paper
from iclr25.shared.run import lazy_exports

PAPER = Paper.load(__name__)

if TYPE_CHECKING:  # the public API: real imports for type checkers, loaded lazily at run time
    from iclr25.influence_selection.approx import TruncatedMOps
    from iclr25.influence_selection.approx import kfac_hessian
    from iclr25.influence_selection.approx import subsample_rank_forest
    from iclr25.influence_selection.baselines import bald_laplace_scores
    from iclr25.influence_selection.baselines import bald_mc_dropout_scores
    from iclr25.influence_selection.baselines import bald_scores
    from iclr25.influence_selection.baselines import entropy_scores
    from iclr25.influence_selection.baselines import iv_active_scores
    from iclr25.influence_selection.baselines import iv_scores
    from iclr25.influence_selection.baselines import random_scores
    from iclr25.influence_selection.config import PRESETS
    from iclr25.influence_selection.config import Config
    from iclr25.influence_selection.data import digits_split
    from iclr25.influence_selection.data import load_cifar10_batch
    from iclr25.influence_selection.data import load_idx
    from iclr25.influence_selection.data import load_npy_features
    from iclr25.influence_selection.data import load_tabular_meta
    from iclr25.influence_selection.data import two_gaussians
    from iclr25.influence_selection.data import two_moons
    from iclr25.influence_selection.fi import fi_active
    from iclr25.influence_selection.fi import fi_active_matrix
    from iclr25.influence_selection.fi import fi_binary_closed_form
    from iclr25.influence_selection.fi import fi_pair
    from iclr25.influence_selection.fi import fi_util
    from iclr25.influence_selection.fi import make_ops
    from iclr25.influence_selection.fi import trim_mean_10_90
    from iclr25.influence_selection.models import LogisticModel
    from iclr25.influence_selection.models import MLPModel
    from iclr25.influence_selection.selection import active_learning_loop
    from iclr25.influence_selection.selection import curve_auc
    from iclr25.influence_selection.selection import make_strategy
    from iclr25.influence_selection.selection import trim_dataset

__all__, __getattr__, __dir__ = lazy_exports(__name__, __file__, "PAPER")
