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
    from iclr25.etd_exploration.analysis import goal_spearman, pairwise_spearman, successor_distance_matrix
    from iclr25.etd_exploration.baselines import E3B, RND, EpisodicCount, NoModel, NovelD, make_intrinsic
    from iclr25.etd_exploration.config import MazeConfig, PPOConfig
    from iclr25.etd_exploration.data import (
        SpiralMaze,
        bfs_distances,
        load_trajectories,
        random_walk_dataset,
        read_logs,
        save_trajectories,
    )
    from iclr25.etd_exploration.envs import VecEnv, make_env, register_extra_envs
    from iclr25.etd_exploration.etd import (
        ETDReward,
        RewardNormalizer,
        TemporalDistanceCritic,
        contrastive_loss,
        mrn_distance,
        mrn_pairwise,
        pair_distance,
        remaining_steps,
        sample_future_indices,
        truncated_geometric_offsets,
    )
    from iclr25.etd_exploration.maze import run_maze
    from iclr25.etd_exploration.ppo import evaluate_policy, train

__all__, __getattr__, __dir__ = lazy_exports(__name__, __file__, "PAPER")
