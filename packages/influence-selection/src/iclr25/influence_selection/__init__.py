"""Enhancing Prediction Performance through Influence Measure (ICLR 2025; OpenReview KjBG4JNOc2, no arXiv).

FI: a local influence measure on the perturbation manifold of a training input, normalised by the Fisher-Rao
metric, used to trim harmful training points and to pick points for active learning.
Public names are exported lazily: importing this package imports neither numpy nor torch.
Modules: `fi` (the measure), `reference` (slow explicit forms), `baselines` (IV, BALD, entropy, random),
`approx` (KFSVD, subsampling + random forest), `selection` (trimming, active learning), `models`, `data`,
`training` (the paper's CNN for image active learning), `experiments`, `config`, `reproduce`, `cli`.
"""

from __future__ import annotations

from iclr25.shared.paper import Paper
from iclr25.shared.run import lazy_exports

PAPER = Paper(
    slug="influence-selection",
    title="Enhancing Prediction Performance through Influence Measure",
    authors="Shuguang Yu, Wenqian Xu, Xinyi Zhou, Xuechun Wang, Hongtu Zhu, Fan Zhou",
    arxiv="",
    code="",
    cli="iclr25.influence_selection.cli:main",
    reproduce="iclr25.influence_selection.reproduce:run",
    summary="FI: a reparameterisation-invariant local influence measure for trimming training data and active learning.",
    scales=("ci", "quick", "full"),
)

_EXPORTS: dict[str, str] = {  # public name -> submodule
    "fi_util": "fi",
    "fi_pair": "fi",
    "fi_active": "fi",
    "fi_active_matrix": "fi",
    "fi_binary_closed_form": "fi",
    "trim_mean_10_90": "fi",
    "make_ops": "fi",
    "iv_scores": "baselines",
    "iv_active_scores": "baselines",
    "bald_scores": "baselines",
    "bald_laplace_scores": "baselines",
    "bald_mc_dropout_scores": "baselines",
    "entropy_scores": "baselines",
    "random_scores": "baselines",
    "subsample_rank_forest": "approx",
    "kfac_hessian": "approx",
    "TruncatedMOps": "approx",
    "trim_dataset": "selection",
    "active_learning_loop": "selection",
    "make_strategy": "selection",
    "curve_auc": "selection",
    "LogisticModel": "models",
    "MLPModel": "models",
    "two_gaussians": "data",
    "two_moons": "data",
    "digits_split": "data",
    "load_tabular_meta": "data",
    "load_npy_features": "data",
    "load_idx": "data",
    "load_cifar10_batch": "data",
    "Config": "config",
    "PRESETS": "config",
}

__all__ = ["PAPER", *sorted(_EXPORTS)]
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
