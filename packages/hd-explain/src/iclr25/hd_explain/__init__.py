"""Data-centric Prediction Explanation via Kernelized Stein Discrepancy (HD-Explain, ICLR 2025, arXiv 2403.15576).

Explains a classifier's prediction by the training points with the largest Stein-kernel support
kappa(d_test, d_i), d = [x, onehot y], under the model read as a density over (x, y).
Public names are exported lazily: importing this package imports neither numpy nor torch.
Modules: `stein` (kernels), `explainer` (HD-Explain), `baselines` (IF, TracIn, RPS, similarity),
`evaluation` (hit rate / coverage, mislabel detection), `data`, `models`, `training`, `reference`,
`config`, `experiments` (the reproduction's sections), `claims` (its claims, as data), `reproduce`, `cli`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from iclr25.shared.paper import Paper
from iclr25.shared.run import lazy_exports

PAPER = Paper.load(__name__)

if TYPE_CHECKING:  # the public API: real imports for type checkers, loaded lazily at run time
    from iclr25.hd_explain.baselines import METHODS
    from iclr25.hd_explain.baselines import InfluenceExplainer
    from iclr25.hd_explain.baselines import RepresenterExplainer
    from iclr25.hd_explain.baselines import SimilarityExplainer
    from iclr25.hd_explain.baselines import TracInExplainer
    from iclr25.hd_explain.baselines import make_explainer
    from iclr25.hd_explain.config import PRESETS
    from iclr25.hd_explain.config import Config
    from iclr25.hd_explain.data import cifar10_or_synthetic
    from iclr25.hd_explain.data import digits
    from iclr25.hd_explain.data import flip_labels
    from iclr25.hd_explain.data import load_cifar10
    from iclr25.hd_explain.data import load_dataset
    from iclr25.hd_explain.data import load_image_folder
    from iclr25.hd_explain.data import load_mask
    from iclr25.hd_explain.data import load_named
    from iclr25.hd_explain.data import load_svhn
    from iclr25.hd_explain.data import moons
    from iclr25.hd_explain.data import rectangular
    from iclr25.hd_explain.evaluation import evaluate_explainers
    from iclr25.hd_explain.evaluation import hit_rate_coverage
    from iclr25.hd_explain.evaluation import mislabel_detection
    from iclr25.hd_explain.evaluation import mislabel_recall_curves
    from iclr25.hd_explain.evaluation import perturb_flip
    from iclr25.hd_explain.evaluation import perturb_noise
    from iclr25.hd_explain.evaluation import probe_indices
    from iclr25.hd_explain.evaluation import probe_sets
    from iclr25.hd_explain.evaluation import suspicion_scores
    from iclr25.hd_explain.explainer import Explainer
    from iclr25.hd_explain.explainer import HDExplainer
    from iclr25.hd_explain.explainer import augmented_scores
    from iclr25.hd_explain.explainer import predict_labels
    from iclr25.hd_explain.models import MLP
    from iclr25.hd_explain.models import Classifier
    from iclr25.hd_explain.models import ResNet18
    from iclr25.hd_explain.models import check_input
    from iclr25.hd_explain.stein import resolve_bandwidth
    from iclr25.hd_explain.stein import stein_kernel
    from iclr25.hd_explain.stein import stein_kernel_imq
    from iclr25.hd_explain.stein import stein_kernel_linear
    from iclr25.hd_explain.stein import stein_kernel_rbf
    from iclr25.hd_explain.stein import stein_self_scores
    from iclr25.hd_explain.training import load_model
    from iclr25.hd_explain.training import save_model
    from iclr25.hd_explain.training import train_classifier
    from iclr25.hd_explain.training import train_new_classifier

__all__, __getattr__, __dir__ = lazy_exports(__name__, __file__, "PAPER")
