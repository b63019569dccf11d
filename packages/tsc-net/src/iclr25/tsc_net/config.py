"""Presets of the TSC-Net reproduction (spec §6). Standard library only: bad values are refused before torch loads."""

from __future__ import annotations

from dataclasses import dataclass

from iclr25.shared.validate import (
    check_in_range,
    check_int_at_least,
    check_nonnegative,
    check_one_of,
    check_positive,
    check_probability,
)

MODELS = ("tsc", "blind", "goalreg")
DATASETS = ("sim", "sdd", "ethucy")


@dataclass(frozen=True)
class Config:
    """One reproduction: the simulated (or real) data, the TSC-Net variant, its training, evaluation and gates.

    Quick (spec §6a): 40 + 10 simulated scenes, TSC-lite (goal grid 7 x 20 px, step grid 3 x 5 px, stride-first
    CNN, d_model 64, latent 16, K = 5 x 4 = 20), scene-blind TSC-lite, CV, CV-K20 and geodesic-exits.
    """

    dataset: str = "sim"
    data_dir: str = ""  # Y-Net pickles + masks (sdd) or SGAN txt folders (ethucy); unused for sim
    # simulator (spec §6a)
    train_scenes: int = 40
    test_scenes: int = 10
    scene_size: int = 128
    sim_steps: int = 160  # simulated steps (0.4 s) per scene
    clips_per_scene: int = 50
    test_clips_per_scene: int = 12
    clip_stride: int = 4
    irregular_frac: float = 0.3
    # model (spec §6a TSC-lite; TSCConfig.sdd() for the official grid)
    arch: str = "lite"
    goal_cells: int = 7
    goal_cell_px: float = 20.0
    step_cell_px: float = 5.0
    d_model: int = 64
    heads: int = 4
    layers: int = 1
    latent: int = 16
    n_cvae: int = 5
    n_cell: int = 4
    # official quirks (spec §3, default off = consistent train/inference)
    quirk_keys_input: bool = False
    quirk_softmax_divide: bool = False
    quirk_ln_normal: bool = False
    quirk_step_crop_target: bool = False
    # training
    models: tuple[str, ...] = ("tsc", "blind")
    train_steps: int = 200
    lr: float = 1e-3
    batch_peds: int = 32
    batch_cap: int = 64
    augment: bool = True
    seeds: int = 1
    max_test_peds: int = 160
    # gates (spec §9.7)
    geo_ratio: float = 0.8
    tsc_ratio: float = 0.8
    blind_ratio: float = 0.95
    # plots, torch threads (1: several 2-thread jobs sharing 2 cores made 2 threads 10x slower here)
    plot: bool = True
    threads: int = 1

    def __post_init__(self) -> None:
        check_one_of("dataset", self.dataset, DATASETS)
        check_one_of("arch", self.arch, ("lite", "sdd"))
        for name in ("train_scenes", "test_scenes", "clips_per_scene", "test_clips_per_scene", "clip_stride"):
            check_int_at_least(name, getattr(self, name), 1)
        for name in ("goal_cells", "d_model", "heads", "layers", "latent", "n_cvae", "n_cell", "seeds"):
            check_int_at_least(name, getattr(self, name), 1)
        check_int_at_least("scene_size", self.scene_size, 48)
        check_int_at_least("sim_steps", self.sim_steps, 24)
        check_int_at_least("train_steps", self.train_steps, 0)
        check_int_at_least("batch_peds", self.batch_peds, 1)
        check_int_at_least("batch_cap", self.batch_cap, self.batch_peds)
        check_int_at_least("max_test_peds", self.max_test_peds, 1)
        check_int_at_least("threads", self.threads, 1)
        check_in_range("irregular_frac", self.irregular_frac, 0.0, 1.0)
        check_positive("goal_cell_px", self.goal_cell_px)
        check_positive("step_cell_px", self.step_cell_px)
        check_positive("lr", self.lr)
        check_probability("geo_ratio", self.geo_ratio)
        check_probability("tsc_ratio", self.tsc_ratio)
        check_in_range("blind_ratio", self.blind_ratio, 0.0, 2.0, low_open=True)
        check_nonnegative("goal_cell_px", self.goal_cell_px)
        if self.d_model % self.heads:
            raise ValueError(f"d_model ({self.d_model}) must be divisible by heads ({self.heads})")
        if self.arch == "lite" and self.d_model % 8:
            raise ValueError(f"d_model must be a multiple of 8 for the lite cell feature, got {self.d_model}")
        if self.n_cell > self.goal_cells**2:
            raise ValueError(f"n_cell ({self.n_cell}) must be <= goal_cells**2 ({self.goal_cells**2})")
        bad = [m for m in self.models if m not in MODELS]
        if bad:
            raise ValueError(f"models got {bad}; allowed: {', '.join(MODELS)}")
        if self.dataset != "sim" and not self.data_dir:
            raise ValueError(f"dataset={self.dataset} needs data_dir=<folder>")


PRESETS: dict[str, Config] = {
    # CI gate: the simulator and the non-learned predictors only (spec §9.7: the gated checks need no training).
    "ci": Config(train_scenes=4, test_scenes=8, models=(), plot=False),
    # Spec §6a quick run: TSC-lite and scene-blind TSC-lite trained, plus CV, CV-K20, geodesic-exits.
    "quick": Config(),
    # Extended benchmark (spec §6a): + goal-regression TSC-lite, 3 seeds.
    "benchmark": Config(models=("tsc", "blind", "goalreg"), seeds=3),
    # One GPU (spec §6b): official SDD configuration on the Y-Net pickles, x8 augmentation, on-the-fly crops.
    "full": Config(
        dataset="sdd",
        data_dir="data/sdd",
        arch="sdd",
        goal_cells=15,
        goal_cell_px=80.0,
        step_cell_px=20.0,
        d_model=256,
        heads=8,
        layers=2,
        latent=64,
        lr=1e-4,
        train_steps=200 * 400,
        max_test_peds=100_000,
        test_clips_per_scene=100_000,
    ),
}
