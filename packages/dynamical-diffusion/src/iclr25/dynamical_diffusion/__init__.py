"""Dynamical Diffusion: Learning Temporal Dynamics with Diffusion Models (ICLR 2025, arXiv 2503.00951).

A diffusion forward process that mixes each frame's noise with the previous frames' states, for temporal prediction.
Public names are exported lazily: importing this package does not import torch.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from iclr25.shared.paper import Paper
from iclr25.shared.run import lazy_exports

PAPER = Paper.load(__name__)

if TYPE_CHECKING:  # the public API: real imports for type checkers, loaded lazily at run time
    from iclr25.dynamical_diffusion.baselines import make_dpm
    from iclr25.dynamical_diffusion.baselines import persistence
    from iclr25.dynamical_diffusion.data import load_gluonts_dataset
    from iclr25.dynamical_diffusion.data import load_sevir_h5
    from iclr25.dynamical_diffusion.data import load_turbulence_npy
    from iclr25.dynamical_diffusion.data import load_video_npy
    from iclr25.dynamical_diffusion.data import load_wide_csv
    from iclr25.dynamical_diffusion.data import navier_stokes_step_2d
    from iclr25.dynamical_diffusion.data import simulate_advection_diffusion
    from iclr25.dynamical_diffusion.data import simulate_advection_diffusion_1d
    from iclr25.dynamical_diffusion.data import simulate_heat
    from iclr25.dynamical_diffusion.data import simulate_navier_stokes_2d
    from iclr25.dynamical_diffusion.data import synthetic_multivariate_ts
    from iclr25.dynamical_diffusion.data import vorticity_to_velocity
    from iclr25.dynamical_diffusion.dydiff import DynamicalDiffusion
    from iclr25.dynamical_diffusion.dydiff import condition_input
    from iclr25.dynamical_diffusion.dydiff import cumprod_schedule
    from iclr25.dynamical_diffusion.dydiff import ddim_timesteps
    from iclr25.dynamical_diffusion.dydiff import dyn
    from iclr25.dynamical_diffusion.dydiff import dyn_inverse
    from iclr25.dynamical_diffusion.dydiff import make_beta_schedule
    from iclr25.dynamical_diffusion.dydiff import make_theta_schedule
    from iclr25.dynamical_diffusion.metrics import crps_pwm
    from iclr25.dynamical_diffusion.metrics import crps_pwm_map
    from iclr25.dynamical_diffusion.metrics import crps_sum
    from iclr25.dynamical_diffusion.metrics import csi
    from iclr25.dynamical_diffusion.metrics import ensemble_mse
    from iclr25.dynamical_diffusion.metrics import official_rmse
    from iclr25.dynamical_diffusion.metrics import pooled_crps
    from iclr25.dynamical_diffusion.metrics import pooled_csi
    from iclr25.dynamical_diffusion.models import FrameStackUNet
    from iclr25.dynamical_diffusion.models import TSDenoiser
    from iclr25.dynamical_diffusion.protocols import evaluate_turbulence
    from iclr25.dynamical_diffusion.protocols import official_field_metrics
    from iclr25.dynamical_diffusion.protocols import ts_crps_sum_benchmark
    from iclr25.dynamical_diffusion.training import evaluate
    from iclr25.dynamical_diffusion.training import train

__all__, __getattr__, __dir__ = lazy_exports(__name__, __file__, "PAPER")
