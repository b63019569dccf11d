"""Unlocking State-Tracking in Linear RNNs Through Negative Eigenvalues (ICLR 2025, arXiv 2411.12537).

Extending the eigenvalue range of linear-RNN state transitions to [-1, 1] lets them solve parity and track state.
Public names are exported lazily: importing this package does not import torch.
"""

from __future__ import annotations

from iclr25.shared.paper import Paper
from iclr25.shared.run import lazy_exports

PAPER = Paper(
    slug="lrnn-state-tracking",
    title="Unlocking State-Tracking in Linear RNNs Through Negative Eigenvalues",
    authors="Riccardo Grazzi, Julien Siems, Arber Zela, Jörg K.H. Franke, Frank Hutter, Massimiliano Pontil",
    arxiv="2411.12537",
    code="automl/unlocking_state_tracking",
    cli="iclr25.lrnn_state_tracking.cli:main",
    reproduce="iclr25.lrnn_state_tracking.reproduce:run",
    scales=("ci", "quick", "full"),
    summary="Extending the eigenvalue range of linear-RNN state transitions to [-1, 1] lets them solve parity and track state.",
)

_EXPORTS: dict[str, str] = {  # public name -> submodule
    # recurrences: fast forms and step-by-step references
    "diagonal_scan": "ops",
    "delta_rule_chunked": "ops",
    "selective_scan": "ops",
    "mamba_transition": "ops",
    "parse_eig_range": "config",
    "diagonal_scan_reference": "reference",
    "delta_rule_recurrent": "reference",
    "selective_scan_reference": "reference",
    # models and baselines
    "DiagonalLRNN": "models",
    "Figure1Model": "models",
    "DeltaNetLayer": "models",
    "MambaLayer": "models",
    "FullMatrixLRNN": "models",
    "LRNNForSequenceTasks": "models",
    "LSTMModel": "baselines",
    "TransformerModel": "baselines",
    "build_model": "baselines",
    # tasks and metrics
    "parity": "data",
    "modular_arithmetic": "data",
    "modular_arithmetic_brackets": "data",
    "word_problem": "data",
    "to_io": "data",
    "scaled_accuracy": "data",
    "load_word_problem_csv": "data",
    "get_task": "data",
    # theory
    "householder": "theory",
    "swap_reflection": "theory",
    "permutation_to_householders": "theory",
    "rotation_as_two_reflections": "theory",
    "parity_lrnn": "theory",
    "finite_precision_orbit": "theory",
    # training
    "TrainConfig": "config",
    "train": "training",
    "evaluate": "training",
}

__all__ = ["PAPER", *sorted(_EXPORTS)]

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
