"""Episodic Novelty Through Temporal Distance (ICLR 2025, arXiv 2501.15418).

Episodic intrinsic reward from a learned quasimetric temporal distance to the states already visited in the episode.
Public names are exported lazily: importing this package does not import torch.
"""

from __future__ import annotations

from iclr25.shared.paper import Paper
from iclr25.shared.run import lazy_exports

PAPER = Paper(
    slug="etd-exploration",
    title="Episodic Novelty Through Temporal Distance",
    authors="Yuhua Jiang, Qihan Liu, Yiqin Yang, Xiaoteng Ma, Dianyu Zhong, Hao Hu, Jun Yang, Bin Liang, Bo Xu, Chongjie Zhang, Qianchuan Zhao",
    arxiv="2501.15418",
    code="Jackory/ETD",
    cli="iclr25.etd_exploration.cli:main",
    reproduce="iclr25.etd_exploration.reproduce:run",
    summary="Episodic intrinsic reward from a learned quasimetric temporal distance to the states already visited in the episode.",
    scales=("ci", "quick", "full"),
)

_EXPORTS: dict[str, str] = {  # public name -> submodule
    "mrn_distance": "etd",
    "mrn_pairwise": "etd",
    "pair_distance": "etd",
    "TemporalDistanceCritic": "etd",
    "contrastive_loss": "etd",
    "truncated_geometric_offsets": "etd",
    "remaining_steps": "etd",
    "sample_future_indices": "etd",
    "RewardNormalizer": "etd",
    "ETDReward": "etd",
    "NoModel": "baselines",
    "EpisodicCount": "baselines",
    "RND": "baselines",
    "NovelD": "baselines",
    "E3B": "baselines",
    "make_intrinsic": "baselines",
    "SpiralMaze": "data",
    "random_walk_dataset": "data",
    "bfs_distances": "data",
    "save_trajectories": "data",
    "load_trajectories": "data",
    "read_logs": "data",
    "make_env": "envs",
    "register_extra_envs": "envs",
    "VecEnv": "envs",
    "PPOConfig": "config",
    "train": "ppo",
    "evaluate_policy": "ppo",
    "successor_distance_matrix": "analysis",
    "pairwise_spearman": "analysis",
    "goal_spearman": "analysis",
    "MazeConfig": "config",
    "run_maze": "maze",
}

__all__ = ["PAPER", *sorted(_EXPORTS)]
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
