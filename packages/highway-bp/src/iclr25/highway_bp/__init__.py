"""Accelerated Training through Iterative Gradient Propagation Along the Residual Path (ICLR 2025, arXiv 2501.17086).

Highway backpropagation: iterative, layer-parallel gradient estimates accumulated along the residual path.
Public names are exported lazily: importing this package does not import torch.
"""

from __future__ import annotations

from iclr25.shared.paper import Paper
from iclr25.shared.run import lazy_exports

PAPER = Paper(
    slug="highway-bp",
    title="Accelerated Training through Iterative Gradient Propagation Along the Residual Path",
    authors="Erwan Fagnou, Paul Caillon, Blaise Delattre, Alexandre Allauzen",
    arxiv="2501.17086",
    code="",
    cli="iclr25.highway_bp.cli:main",
    reproduce="iclr25.highway_bp.reproduce:run",
    scales=("ci", "quick", "full"),
    summary="Highway backpropagation: iterative, layer-parallel gradient estimates accumulated along the residual path.",
)

_EXPORTS: dict[str, str] = {
    "cumsumprod": "scan",
    "ResidualLayer": "highway",
    "PreActResidual": "highway",
    "ScaledResidual": "highway",
    "PostReLUResidual": "highway",
    "PostLNResidual": "highway",
    "HighwayStack": "highway",
    "highway_iterate": "highway",
    "highway_backward": "highway",
    "highway_step": "highway",
    "stack_forward": "highway",
    "gradient_cosine": "highway",
    "HighwayRNN": "rnn",
    "rnn_step": "rnn",
    "rnn_backward": "rnn",
    "truncated_bptt_backward": "baselines",
    "path_sum_bruteforce": "reference",
    "cumsumprod_bruteforce": "reference",
    "resmlp": "models",
    "SeqClassifier": "models",
    "resnet_cifar": "resnet",
    "load_digits_split": "data",
    "exactness_checks": "checks",
}

__all__ = ["PAPER", *sorted(_EXPORTS)]

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
