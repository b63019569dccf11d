"""TSC-Net: Trajectory-Scene-Cell Network for Pedestrian Trajectory Prediction (ICLR 2025), reimplemented.

Trajectory points and candidate future cells share one "trajectory-scene-cell" feature; goals are a cell of a coarse
grid (per-cell CVAE) + an offset, steps a cell of a 3 x 3 grid + an offset, rolled out with the scene re-cropped.
Modules: the model, scene and grid, data and simulator, baselines, metrics, training, the experiments
(`experiments`), the claims declared as data (`claims`) and the reproduction plan (`reproduce`).
Public names are exported lazily: importing this package does not import torch.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from iclr25.shared.paper import Paper
from iclr25.shared.run import lazy_exports

PAPER = Paper.load(__name__)

if TYPE_CHECKING:  # the public API: real imports for type checkers, loaded lazily at run time
    from iclr25.tsc_net.baselines import ConstantVelocity
    from iclr25.tsc_net.baselines import GoalRegressionCVAE
    from iclr25.tsc_net.baselines import geodesic_exits
    from iclr25.tsc_net.data import Clips
    from iclr25.tsc_net.data import build_clips
    from iclr25.tsc_net.data import load_dataset
    from iclr25.tsc_net.data import load_sdd_annotations
    from iclr25.tsc_net.data import load_semantic_mask
    from iclr25.tsc_net.data import load_sgan_txt
    from iclr25.tsc_net.data import load_ynet_pickle
    from iclr25.tsc_net.data import simulate_scenes
    from iclr25.tsc_net.data import write_ynet
    from iclr25.tsc_net.grid import GridSpec
    from iclr25.tsc_net.metrics import goal_min_fde
    from iclr25.tsc_net.metrics import min_ade_fde
    from iclr25.tsc_net.metrics import obstacle_violation_rate
    from iclr25.tsc_net.model import TSCConfig
    from iclr25.tsc_net.model import TSCNet
    from iclr25.tsc_net.model import kl_normal
    from iclr25.tsc_net.model import weighted_smooth_l1
    from iclr25.tsc_net.scene import SceneCNN
    from iclr25.tsc_net.scene import SceneCrop
    from iclr25.tsc_net.scene import crop_and_pad
    from iclr25.tsc_net.training import predict_clips
    from iclr25.tsc_net.training import train_model

__all__, __getattr__, __dir__ = lazy_exports(__name__, __file__, "PAPER")
