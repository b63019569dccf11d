"""Episodic Novelty Through Temporal Distance (ICLR 2025, arXiv 2501.15418).

Episodic intrinsic reward from a learned quasimetric temporal distance to the states already visited in the episode.
Public names are exported lazily: importing this package does not import torch.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from iclr25.shared.paper import Paper
from iclr25.shared.run import lazy_exports

PAPER = Paper.load(__name__)

if TYPE_CHECKING:  # the public API: real imports for type checkers, loaded lazily at run time
    from iclr25.etd_exploration.analysis import goal_spearman
    from iclr25.etd_exploration.analysis import pairwise_spearman
    from iclr25.etd_exploration.analysis import successor_distance_matrix
    from iclr25.etd_exploration.baselines import E3B
    from iclr25.etd_exploration.baselines import RND
    from iclr25.etd_exploration.baselines import EpisodicCount
    from iclr25.etd_exploration.baselines import NoModel
    from iclr25.etd_exploration.baselines import NovelD
    from iclr25.etd_exploration.baselines import make_intrinsic
    from iclr25.etd_exploration.config import MazeConfig
    from iclr25.etd_exploration.config import PPOConfig
    from iclr25.etd_exploration.data import SpiralMaze
    from iclr25.etd_exploration.data import bfs_distances
    from iclr25.etd_exploration.data import load_trajectories
    from iclr25.etd_exploration.data import random_walk_dataset
    from iclr25.etd_exploration.data import read_logs
    from iclr25.etd_exploration.data import save_trajectories
    from iclr25.etd_exploration.deir import DEIRModel
    from iclr25.etd_exploration.deir import DEIRReward
    from iclr25.etd_exploration.deir import deir_rewards
    from iclr25.etd_exploration.deir import discriminator_loss
    from iclr25.etd_exploration.envs import VecEnv
    from iclr25.etd_exploration.envs import make_env
    from iclr25.etd_exploration.envs import register_extra_envs
    from iclr25.etd_exploration.etd import ETDReward
    from iclr25.etd_exploration.etd import RewardNormalizer
    from iclr25.etd_exploration.etd import TemporalDistanceCritic
    from iclr25.etd_exploration.etd import contrastive_loss
    from iclr25.etd_exploration.etd import mrn_distance
    from iclr25.etd_exploration.etd import mrn_pairwise
    from iclr25.etd_exploration.etd import pair_distance
    from iclr25.etd_exploration.etd import remaining_steps
    from iclr25.etd_exploration.etd import sample_future_indices
    from iclr25.etd_exploration.etd import truncated_geometric_offsets
    from iclr25.etd_exploration.maze import run_maze
    from iclr25.etd_exploration.ppo import ActorCritic
    from iclr25.etd_exploration.ppo import AdvantageNormalizer
    from iclr25.etd_exploration.ppo import evaluate_policy
    from iclr25.etd_exploration.ppo import make_policy
    from iclr25.etd_exploration.ppo import train

__all__, __getattr__, __dir__ = lazy_exports(__name__, __file__, "PAPER")
