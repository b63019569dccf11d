"""Unlocking State-Tracking in Linear RNNs Through Negative Eigenvalues (ICLR 2025, arXiv 2411.12537).

Extending the eigenvalue range of linear-RNN state transitions to [-1, 1] lets them solve parity and track state.
Public names are exported lazily: importing this package does not import torch.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from iclr25.shared.paper import Paper
from iclr25.shared.run import lazy_exports

PAPER = Paper.load(__name__)

if TYPE_CHECKING:  # the public API: real imports for type checkers, loaded lazily at run time
    from iclr25.lrnn_state_tracking.baselines import LSTMModel, TransformerModel, build_model
    from iclr25.lrnn_state_tracking.config import TrainConfig, parse_eig_range
    from iclr25.lrnn_state_tracking.data import (
        get_task,
        load_word_problem_csv,
        modular_arithmetic,
        modular_arithmetic_brackets,
        parity,
        scaled_accuracy,
        to_io,
        word_problem,
    )
    from iclr25.lrnn_state_tracking.models import (
        DeltaNetLayer,
        DiagonalLRNN,
        Figure1Model,
        FullMatrixLRNN,
        LRNNForSequenceTasks,
        MambaLayer,
    )
    from iclr25.lrnn_state_tracking.ops import delta_rule_chunked, diagonal_scan, mamba_transition, selective_scan
    from iclr25.lrnn_state_tracking.reference import (
        delta_rule_recurrent,
        diagonal_scan_reference,
        selective_scan_reference,
    )
    from iclr25.lrnn_state_tracking.theory import (
        finite_precision_orbit,
        householder,
        parity_lrnn,
        permutation_to_householders,
        rotation_as_two_reflections,
        swap_reflection,
    )
    from iclr25.lrnn_state_tracking.training import evaluate, train

__all__, __getattr__, __dir__ = lazy_exports(__name__, __file__, "PAPER")
