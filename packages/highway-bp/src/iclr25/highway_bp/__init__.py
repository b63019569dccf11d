"""Accelerated Training through Iterative Gradient Propagation Along the Residual Path (ICLR 2025, arXiv 2501.17086).

Highway backpropagation: iterative, layer-parallel gradient estimates accumulated along the residual path.
Public names are exported lazily: importing this package does not import torch.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from iclr25.shared.paper import Paper
from iclr25.shared.run import lazy_exports

PAPER = Paper.load(__name__)

if TYPE_CHECKING:  # the public API: real imports for type checkers, loaded lazily at run time
    from iclr25.highway_bp.baselines import truncated_bptt_backward
    from iclr25.highway_bp.charlm import CharLM
    from iclr25.highway_bp.charlm import train_char_lm
    from iclr25.highway_bp.checks import exactness_checks
    from iclr25.highway_bp.data import load_digits_split
    from iclr25.highway_bp.highway import HighwayStack
    from iclr25.highway_bp.highway import PostLNResidual
    from iclr25.highway_bp.highway import PostReLUResidual
    from iclr25.highway_bp.highway import PreActResidual
    from iclr25.highway_bp.highway import ResidualLayer
    from iclr25.highway_bp.highway import ScaledResidual
    from iclr25.highway_bp.highway import gradient_cosine
    from iclr25.highway_bp.highway import highway_backward
    from iclr25.highway_bp.highway import highway_iterate
    from iclr25.highway_bp.highway import highway_step
    from iclr25.highway_bp.highway import stack_forward
    from iclr25.highway_bp.models import SeqClassifier
    from iclr25.highway_bp.models import resmlp
    from iclr25.highway_bp.reference import cumsumprod_bruteforce
    from iclr25.highway_bp.reference import path_sum_bruteforce
    from iclr25.highway_bp.resnet import resnet_cifar
    from iclr25.highway_bp.rnn import HighwayRNN
    from iclr25.highway_bp.rnn import rnn_backward
    from iclr25.highway_bp.rnn import rnn_step
    from iclr25.highway_bp.scan import cumsumprod
    from iclr25.highway_bp.speed import speed_table
    from iclr25.highway_bp.transformer import gpt2_stack
    from iclr25.highway_bp.transformer import train_transformer

__all__, __getattr__, __dir__ = lazy_exports(__name__, __file__, "PAPER")
