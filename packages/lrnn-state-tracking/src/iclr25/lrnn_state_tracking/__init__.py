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
    from iclr25.lrnn_state_tracking.baselines import LSTMModel
    from iclr25.lrnn_state_tracking.baselines import TransformerModel
    from iclr25.lrnn_state_tracking.baselines import build_model
    from iclr25.lrnn_state_tracking.config import LMConfig
    from iclr25.lrnn_state_tracking.config import TrainConfig
    from iclr25.lrnn_state_tracking.config import WordConfig
    from iclr25.lrnn_state_tracking.config import parse_eig_range
    from iclr25.lrnn_state_tracking.data import get_task
    from iclr25.lrnn_state_tracking.data import load_word_problem_csv
    from iclr25.lrnn_state_tracking.data import modular_arithmetic
    from iclr25.lrnn_state_tracking.data import modular_arithmetic_brackets
    from iclr25.lrnn_state_tracking.data import parity
    from iclr25.lrnn_state_tracking.data import scaled_accuracy
    from iclr25.lrnn_state_tracking.data import to_io
    from iclr25.lrnn_state_tracking.data import word_problem
    from iclr25.lrnn_state_tracking.lm import ByteTokenizer
    from iclr25.lrnn_state_tracking.lm import position_nll
    from iclr25.lrnn_state_tracking.lm import read_texts
    from iclr25.lrnn_state_tracking.lm import train_lm
    from iclr25.lrnn_state_tracking.models import DeltaNetLayer
    from iclr25.lrnn_state_tracking.models import DiagonalLRNN
    from iclr25.lrnn_state_tracking.models import Figure1Model
    from iclr25.lrnn_state_tracking.models import FullMatrixLRNN
    from iclr25.lrnn_state_tracking.models import LRNNForSequenceTasks
    from iclr25.lrnn_state_tracking.models import MambaLayer
    from iclr25.lrnn_state_tracking.official import load_official_yaml
    from iclr25.lrnn_state_tracking.ops import delta_rule_chunked
    from iclr25.lrnn_state_tracking.ops import diagonal_scan
    from iclr25.lrnn_state_tracking.ops import mamba_transition
    from iclr25.lrnn_state_tracking.ops import selective_scan
    from iclr25.lrnn_state_tracking.reference import delta_rule_recurrent
    from iclr25.lrnn_state_tracking.reference import diagonal_scan_reference
    from iclr25.lrnn_state_tracking.reference import selective_scan_reference
    from iclr25.lrnn_state_tracking.theory import finite_precision_orbit
    from iclr25.lrnn_state_tracking.theory import householder
    from iclr25.lrnn_state_tracking.theory import parity_lrnn
    from iclr25.lrnn_state_tracking.theory import permutation_to_householders
    from iclr25.lrnn_state_tracking.theory import rotation_as_two_reflections
    from iclr25.lrnn_state_tracking.theory import swap_reflection
    from iclr25.lrnn_state_tracking.training import evaluate
    from iclr25.lrnn_state_tracking.training import train
    from iclr25.lrnn_state_tracking.words import sequence_accuracy
    from iclr25.lrnn_state_tracking.words import train_words

__all__, __getattr__, __dir__ = lazy_exports(__name__, __file__, "PAPER")
