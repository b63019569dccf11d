"""Towards Improving Exploration through Sibling Augmented GFlowNets (ICLR 2025, arXiv none (OpenReview HH4KWP8RP5)).

A Behavior GFlowNet trained on extrinsic reward from its own and an intrinsically-motivated Sibling's trajectories.
The reproduction: `experiments` (the training runs and their metrics), `claims` (the claims as data, with the
paper's words and the spec's thresholds), `reproduce` (the plan: preset, experiments, figures, claims evaluated).
Public names are exported lazily: importing this package does not import torch.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from iclr25.shared.paper import Paper
from iclr25.shared.run import lazy_exports

PAPER = Paper.load(__name__)

if TYPE_CHECKING:  # the public API: real imports for type checkers, loaded lazily at run time
    from iclr25.sa_gfn.baselines import IntrinsicGFlowNet
    from iclr25.sa_gfn.baselines import gafn
    from iclr25.sa_gfn.baselines import tb_rnd
    from iclr25.sa_gfn.data import load_mode_set
    from iclr25.sa_gfn.data import load_sample_log
    from iclr25.sa_gfn.data import sample_log_metrics
    from iclr25.sa_gfn.data import save_sample_log
    from iclr25.sa_gfn.envs import BitSequence
    from iclr25.sa_gfn.envs import HyperGrid
    from iclr25.sa_gfn.gflownet import GFlowNetModel
    from iclr25.sa_gfn.gflownet import PolicyNet
    from iclr25.sa_gfn.gflownet import TrajectoryBatch
    from iclr25.sa_gfn.gflownet import detailed_balance
    from iclr25.sa_gfn.gflownet import exact_terminal_distribution
    from iclr25.sa_gfn.gflownet import l1_mean
    from iclr25.sa_gfn.gflownet import modes_captured
    from iclr25.sa_gfn.gflownet import recompute_logprobs
    from iclr25.sa_gfn.gflownet import sample_trajectories
    from iclr25.sa_gfn.gflownet import subtrajectory_balance
    from iclr25.sa_gfn.gflownet import total_variation
    from iclr25.sa_gfn.gflownet import trajectory_balance
    from iclr25.sa_gfn.intrinsic import RND
    from iclr25.sa_gfn.sagfn import SAGFN
    from iclr25.sa_gfn.sagfn import GFlowNet
    from iclr25.sa_gfn.sagfn import SiblingReward
    from iclr25.sa_gfn.training import build_method
    from iclr25.sa_gfn.training import evaluate
    from iclr25.sa_gfn.training import fit
    from iclr25.sa_gfn.training import train

__all__, __getattr__, __dir__ = lazy_exports(__name__, __file__, "PAPER")
