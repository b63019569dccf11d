"""Agree to Disagree: Demystifying Homogeneous Deep Ensembles through Distributional Equivalence (ICLR 2025).

Members of a homogeneous deep ensemble disagree point-wise but their true-class scores share one distribution
over the data; hence every member has the same loss, the ensemble beats each of them, and the ensemble's
Brier follows B∞ + V/M, predictable from two trained models. Public names are exported lazily: importing this
package imports neither numpy nor torch. Modules: `analysis` (the method), `metrics`, `models` (batched
ensembles), `training`, `baselines`, `data`, `reference` (slow forms), `config`, `reproduce`, `cli`.
"""

from __future__ import annotations

from iclr25.shared.paper import Paper
from iclr25.shared.run import lazy_exports

PAPER = Paper(
    slug="ensemble-homogeneity",
    title="Agree to Disagree: Demystifying Homogeneous Deep Ensembles through Distributional Equivalence",
    authors="Yipei Wang, Xiaoqian Wang",
    arxiv="",
    code="yipei-wang/DeepEnsembleDemystified",
    cli="iclr25.ensemble_homogeneity.cli:main",
    reproduce="iclr25.ensemble_homogeneity.reproduce:run",
    summary="Homogeneous ensemble members agree in distribution but disagree point-wise; hence the ensemble beats "
    "every member and its Brier, B∞ + V/M, can be predicted from two models.",
    scales=("ci", "quick", "full"),
)

_EXPORTS: dict[str, str] = {  # public name -> submodule
    "true_class_scores": "metrics",
    "ensemble_probs": "metrics",
    "brier_true": "metrics",
    "brier_multiclass": "metrics",
    "nll": "metrics",
    "error": "metrics",
    "distributional_equivalence": "analysis",
    "jensen_gap": "analysis",
    "subset_mean_curve": "analysis",
    "ensemble_curve": "analysis",
    "fit_bias_variance_curve": "analysis",
    "estimate_from_two": "analysis",
    "estimate_from_pairs": "analysis",
    "bias_variance": "analysis",
    "collapse_theory_curve": "analysis",
    "collapse_brier_closed_form": "analysis",
    "beta_fit_q": "analysis",
    "beta_majority_accuracy": "analysis",
    "vote_accuracy": "analysis",
    "BatchedMLPEnsemble": "models",
    "BatchedCNNEnsemble": "models",
    "BatchedResNet18Ensemble": "models",
    "make_ensemble": "models",
    "SmallCNN": "reference",
    "TrainSettings": "training",
    "train_ensemble": "training",
    "train_homogeneous": "training",
    "heterogeneous_ensemble": "baselines",
    "wider_single_model": "baselines",
    "Dataset": "data",
    "load_sklearn": "data",
    "load_cifar": "data",
    "load_tiny_imagenet": "data",
    "make_image_task": "data",
    "EnsemblePredictions": "data",
    "Config": "config",
    "PRESETS": "config",
}

__all__ = ["PAPER", *sorted(_EXPORTS)]
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
