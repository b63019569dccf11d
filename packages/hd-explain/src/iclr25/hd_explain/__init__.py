"""Data-centric Prediction Explanation via Kernelized Stein Discrepancy (HD-Explain, ICLR 2025, arXiv 2403.15576).

Explains a classifier's prediction by the training points with the largest Stein-kernel support
kappa(d_test, d_i), d = [x, onehot y], under the model read as a density over (x, y).
Public names are exported lazily: importing this package imports neither numpy nor torch.
Modules: `stein` (kernels), `explainer` (HD-Explain), `baselines` (IF, TracIn, RPS, similarity),
`evaluation` (hit rate / coverage, mislabel detection), `data`, `models`, `training`, `reference`,
`config`, `reproduce`, `cli`.
"""

from __future__ import annotations

from iclr25.shared.paper import Paper
from iclr25.shared.run import lazy_exports

PAPER = Paper(
    slug="hd-explain",
    title="Data-centric Prediction Explanation via Kernelized Stein Discrepancy",
    authors="Mahtab Sarvmaili, Hassan Sajjad, Ga Wu",
    arxiv="2403.15576",
    code="MahtabSarvmaili/HDExplain",
    cli="iclr25.hd_explain.cli:main",
    reproduce="iclr25.hd_explain.reproduce:run",
    summary="Example-based explanations: training points ranked by the kernelized Stein discrepancy "
    "kernel between test and training (input, label) pairs under the trained classifier.",
    scales=("quick", "full"),
)

_EXPORTS: dict[str, str] = {  # public name -> submodule
    "stein_kernel": "stein",
    "stein_kernel_rbf": "stein",
    "stein_kernel_imq": "stein",
    "stein_kernel_linear": "stein",
    "stein_self_scores": "stein",
    "resolve_bandwidth": "stein",
    "Explainer": "explainer",
    "HDExplainer": "explainer",
    "augmented_scores": "explainer",
    "predict_labels": "explainer",
    "InfluenceExplainer": "baselines",
    "TracInExplainer": "baselines",
    "RepresenterExplainer": "baselines",
    "SimilarityExplainer": "baselines",
    "make_explainer": "baselines",
    "METHODS": "baselines",
    "hit_rate_coverage": "evaluation",
    "mislabel_detection": "evaluation",
    "perturb_noise": "evaluation",
    "perturb_flip": "evaluation",
    "probe_indices": "evaluation",
    "rectangular": "data",
    "moons": "data",
    "digits": "data",
    "flip_labels": "data",
    "load_cifar10": "data",
    "load_svhn": "data",
    "load_image_folder": "data",
    "load_dataset": "data",
    "Classifier": "models",
    "MLP": "models",
    "ResNet18": "models",
    "train_classifier": "training",
    "Config": "config",
    "PRESETS": "config",
}

__all__ = ["PAPER", *sorted(_EXPORTS)]
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
