"""TSC-Net: Trajectory-Scene-Cell Network for Pedestrian Trajectory Prediction (ICLR 2025), reimplemented.

Trajectory points and candidate future cells share one "trajectory-scene-cell" feature; goals are a cell of a coarse
grid (per-cell CVAE) + an offset, steps a cell of a 3 x 3 grid + an offset, rolled out with the scene re-cropped.
Public names are exported lazily: importing this package does not import torch.
"""

from __future__ import annotations

from iclr25.shared.paper import Paper
from iclr25.shared.run import lazy_exports

PAPER = Paper(
    slug="tsc-net",
    title="TSC-Net: Trajectory-Scene-Cell Network for Pedestrian Trajectory Prediction",
    authors="not found (official code: hubovc/TSC-Net)",
    arxiv="not found",
    code="hubovc/TSC-Net",
    cli="iclr25.tsc_net.cli:main",
    reproduce="iclr25.tsc_net.reproduce:run",
    scales=("ci", "quick", "full"),
    summary="Pedestrian trajectories and scene cells in one feature space; goals and steps by cell "
    "classification + offset (CVAE over goal cells), rolled out over the scene.",
)

_EXPORTS: dict[str, str] = {  # public name -> submodule
    "GridSpec": "grid",
    "SceneCrop": "scene",
    "SceneCNN": "scene",
    "crop_and_pad": "scene",
    "TSCNet": "model",
    "TSCConfig": "model",
    "weighted_smooth_l1": "model",
    "kl_normal": "model",
    "ConstantVelocity": "baselines",
    "GoalRegressionCVAE": "baselines",
    "geodesic_exits": "baselines",
    "min_ade_fde": "metrics",
    "goal_min_fde": "metrics",
    "obstacle_violation_rate": "metrics",
    "load_ynet_pickle": "data",
    "load_sgan_txt": "data",
    "load_sdd_annotations": "data",
    "load_semantic_mask": "data",
    "load_dataset": "data",
    "build_clips": "data",
    "simulate_scenes": "data",
    "write_ynet": "data",
    "Clips": "data",
    "train_model": "training",
    "predict_clips": "training",
}

__all__ = ["PAPER", *sorted(_EXPORTS)]
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
