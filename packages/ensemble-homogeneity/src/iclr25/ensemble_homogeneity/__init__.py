"""Agree to Disagree: Demystifying Homogeneous Deep Ensembles through Distributional Equivalence (ICLR 2025).

Members of a homogeneous deep ensemble disagree point-wise but their true-class scores share one distribution
over the data; hence every member has the same loss, the ensemble beats each of them, and the ensemble's
Brier follows B∞ + V/M, predictable from two trained models. Public names are exported lazily: importing this
package imports neither numpy nor torch. Modules: `analysis` (the method), `metrics`, `models` (batched
ensembles), `training`, `baselines`, `data`, `reference` (slow forms), `config`, `experiments` (what the
reproduction measures), `claims` (the paper's claims as data), `reproduce` (the plan), `cli`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from iclr25.shared.paper import Paper
from iclr25.shared.run import lazy_exports

PAPER = Paper.load(__name__)

if TYPE_CHECKING:  # the public API: real imports for type checkers, loaded lazily at run time
    from iclr25.ensemble_homogeneity.analysis import beta_fit_q
    from iclr25.ensemble_homogeneity.analysis import beta_majority_accuracy
    from iclr25.ensemble_homogeneity.analysis import bias_variance
    from iclr25.ensemble_homogeneity.analysis import collapse_brier_closed_form
    from iclr25.ensemble_homogeneity.analysis import collapse_theory_curve
    from iclr25.ensemble_homogeneity.analysis import distributional_equivalence
    from iclr25.ensemble_homogeneity.analysis import ensemble_curve
    from iclr25.ensemble_homogeneity.analysis import estimate_from_pairs
    from iclr25.ensemble_homogeneity.analysis import estimate_from_two
    from iclr25.ensemble_homogeneity.analysis import fit_bias_variance_curve
    from iclr25.ensemble_homogeneity.analysis import jensen_gap
    from iclr25.ensemble_homogeneity.analysis import subset_mean_curve
    from iclr25.ensemble_homogeneity.analysis import vote_accuracy
    from iclr25.ensemble_homogeneity.baselines import heterogeneous_ensemble
    from iclr25.ensemble_homogeneity.baselines import wider_single_model
    from iclr25.ensemble_homogeneity.config import PRESETS
    from iclr25.ensemble_homogeneity.config import Config
    from iclr25.ensemble_homogeneity.data import Dataset
    from iclr25.ensemble_homogeneity.data import EnsemblePredictions
    from iclr25.ensemble_homogeneity.data import load_cifar
    from iclr25.ensemble_homogeneity.data import load_sklearn
    from iclr25.ensemble_homogeneity.data import load_tiny_imagenet
    from iclr25.ensemble_homogeneity.data import make_image_task
    from iclr25.ensemble_homogeneity.metrics import brier_multiclass
    from iclr25.ensemble_homogeneity.metrics import brier_true
    from iclr25.ensemble_homogeneity.metrics import ensemble_probs
    from iclr25.ensemble_homogeneity.metrics import error
    from iclr25.ensemble_homogeneity.metrics import nll
    from iclr25.ensemble_homogeneity.metrics import true_class_scores
    from iclr25.ensemble_homogeneity.models import BatchedCNNEnsemble
    from iclr25.ensemble_homogeneity.models import BatchedMLPEnsemble
    from iclr25.ensemble_homogeneity.models import BatchedResNet18Ensemble
    from iclr25.ensemble_homogeneity.models import make_ensemble
    from iclr25.ensemble_homogeneity.reference import SmallCNN
    from iclr25.ensemble_homogeneity.training import TrainSettings
    from iclr25.ensemble_homogeneity.training import train_ensemble
    from iclr25.ensemble_homogeneity.training import train_homogeneous

__all__, __getattr__, __dir__ = lazy_exports(__name__, __file__, "PAPER")
