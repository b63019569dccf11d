"""Towards Improving Exploration through Sibling Augmented GFlowNets (ICLR 2025, arXiv none (OpenReview HH4KWP8RP5)).

A Behavior GFlowNet trained on extrinsic reward from its own and an intrinsically-motivated Sibling's trajectories.
Public names are exported lazily: importing this package does not import torch.
"""

from __future__ import annotations

from iclr25.shared.paper import Paper
from iclr25.shared.run import lazy_exports

PAPER = Paper(
    slug="sa-gfn",
    title="Towards Improving Exploration through Sibling Augmented GFlowNets",
    authors="Kanika Madan, Alex Lamb, Emmanuel Bengio, Glen Berseth, Yoshua Bengio",
    arxiv="none (OpenReview HH4KWP8RP5)",
    code="",
    cli="iclr25.sa_gfn.cli:main",
    reproduce="iclr25.sa_gfn.reproduce:run",
    scales=("ci", "quick", "full"),
    summary="A Behavior GFlowNet trained on extrinsic reward from its own and an intrinsically-motivated Sibling's trajectories.",
)

_EXPORTS: dict[str, str] = {  # public name -> submodule
    "HyperGrid": "envs",
    "BitSequence": "envs",
    "PolicyNet": "gflownet",
    "GFlowNetModel": "gflownet",
    "TrajectoryBatch": "gflownet",
    "sample_trajectories": "gflownet",
    "recompute_logprobs": "gflownet",
    "trajectory_balance": "gflownet",
    "detailed_balance": "gflownet",
    "subtrajectory_balance": "gflownet",
    "exact_terminal_distribution": "gflownet",
    "l1_mean": "gflownet",
    "total_variation": "gflownet",
    "modes_captured": "gflownet",
    "RND": "intrinsic",
    "GFlowNet": "sagfn",
    "SAGFN": "sagfn",
    "SiblingReward": "sagfn",
    "IntrinsicGFlowNet": "baselines",
    "tb_rnd": "baselines",
    "gafn": "baselines",
    "build_method": "training",
    "fit": "training",
    "evaluate": "training",
    "train": "training",
    "load_sample_log": "data",
    "save_sample_log": "data",
    "sample_log_metrics": "data",
    "load_mode_set": "data",
}

__all__ = ["PAPER", *sorted(_EXPORTS)]
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
