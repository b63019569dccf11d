"""Dynamical Diffusion: Learning Temporal Dynamics with Diffusion Models (ICLR 2025, arXiv 2503.00951).

A diffusion forward process that mixes each frame's noise with the previous frames' states, for temporal prediction.
Public names are exported lazily: importing this package does not import torch.
"""

from __future__ import annotations

from iclr25.shared.paper import Paper
from iclr25.shared.run import lazy_exports

PAPER = Paper(
    slug="dynamical-diffusion",
    title="Dynamical Diffusion: Learning Temporal Dynamics with Diffusion Models",
    authors="Xingzhuo Guo, Yu Zhang, Baixu Chen, Haoran Xu, Jianmin Wang, Mingsheng Long",
    arxiv="2503.00951",
    code="thuml/dynamical-diffusion",
    cli="iclr25.dynamical_diffusion.cli:main",
    reproduce="iclr25.dynamical_diffusion.reproduce:run",
    scales=("ci", "quick", "full"),
    summary="A diffusion forward process that mixes each frame's noise with the previous frames' states, for temporal prediction.",
)

_EXPORTS: dict[str, str] = {
    "make_beta_schedule": "dydiff",
    "make_theta_schedule": "dydiff",
    "cumprod_schedule": "dydiff",
    "dyn": "dydiff",
    "dyn_inverse": "dydiff",
    "ddim_timesteps": "dydiff",
    "condition_input": "dydiff",
    "DynamicalDiffusion": "dydiff",
    "FrameStackUNet": "models",
    "TSDenoiser": "models",
    "make_dpm": "baselines",
    "persistence": "baselines",
    "crps_pwm": "metrics",
    "crps_pwm_map": "metrics",
    "pooled_crps": "metrics",
    "ensemble_mse": "metrics",
    "official_rmse": "metrics",
    "csi": "metrics",
    "pooled_csi": "metrics",
    "crps_sum": "metrics",
    "simulate_advection_diffusion_1d": "data",
    "simulate_advection_diffusion": "data",
    "simulate_heat": "data",
    "simulate_navier_stokes_2d": "data",
    "navier_stokes_step_2d": "data",
    "vorticity_to_velocity": "data",
    "synthetic_multivariate_ts": "data",
    "load_turbulence_npy": "data",
    "load_sevir_h5": "data",
    "load_video_npy": "data",
    "load_gluonts_dataset": "data",
    "load_wide_csv": "data",
    "train": "training",
    "evaluate": "training",
}

__all__ = ["PAPER", *sorted(_EXPORTS)]
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
