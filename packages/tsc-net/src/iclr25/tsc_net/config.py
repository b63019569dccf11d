"""Presets of the TSC-Net reproduction (spec §6). Standard library only: bad values are refused before torch loads."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated

from iclr25.shared.validate import (
    AtLeast,
    AtMost,
    ClosedProbability,
    Each,
    Flag,
    InRange,
    IsInt,
    IsText,
    OneOf,
    OpenProbability,
    PositiveFloat,
    Validated,
    check_int_at_least,
)

MODELS = ("tsc", "blind", "goalreg")
DATASETS = ("sim", "sdd", "ethucy")


# Size limits, refused before any work (past them a run would exhaust memory or run for months). The largest
# preset (full): 40 scenes of 128 cells, 160 simulated steps, width 256 with 8 heads, 80 000 training steps,
# and 100 000 (all) test clips and pedestrians.
MAX_SCENES = 100_000
MAX_SCENE_SIZE = 4096  # cells a side
MAX_SIM_STEPS = 1_000_000  # simulated steps per scene
MAX_CLIPS = 10_000_000  # clips per scene, test pedestrians
MAX_CELLS = 1024  # goal, stride and cell sizes, in cells
MAX_WIDTH = 8192  # model and latent widths
MAX_HEADS = 256
MAX_LAYERS = 256
MAX_SAMPLES = 10_000  # CVAE samples
MAX_STEPS = 10_000_000
MAX_BATCH = 65_536  # pedestrians per batch
MAX_SEEDS = 1000
MAX_THREADS = 1024
MAX_WORKERS = 1024  # worker processes

WORKERS_AND_SCALE_OUT = (
    "workers > 1 trains the models in separate processes; with --devices, --num-nodes or --precision use workers=1"
)


@dataclass(frozen=True)
class Config(Validated):
    """One reproduction: the simulated (or real) data, the TSC-Net variant, its training, evaluation and gates.

    Quick (spec §6a): 40 + 10 simulated scenes, TSC-lite (goal grid 7 x 20 px, step grid 3 x 5 px, stride-first
    CNN, d_model 64, latent 16, K = 5 x 4 = 20), scene-blind TSC-lite, CV, CV-K20 and geodesic-exits.
    """

    dataset: Annotated[str, OneOf(DATASETS)] = "sim"
    # Y-Net pickles + masks (sdd) or SGAN txt folders (ethucy); unused for sim
    data_dir: Annotated[str, IsText("a folder path (text)")] = ""
    # simulator (spec §6a)
    train_scenes: Annotated[int, AtLeast(1), AtMost(MAX_SCENES)] = 40
    test_scenes: Annotated[int, AtLeast(1), AtMost(MAX_SCENES)] = 10
    scene_size: Annotated[int, AtLeast(48), AtMost(MAX_SCENE_SIZE)] = 128
    sim_steps: Annotated[int, AtLeast(24), AtMost(MAX_SIM_STEPS)] = 160  # simulated steps (0.4 s) per scene
    clips_per_scene: Annotated[int, AtLeast(1), AtMost(MAX_CLIPS)] = 50
    test_clips_per_scene: Annotated[int, AtLeast(1), AtMost(MAX_CLIPS)] = 12
    clip_stride: Annotated[int, AtLeast(1), AtMost(MAX_CELLS)] = 4
    irregular_frac: ClosedProbability = 0.3
    # model (spec §6a TSC-lite; TSCConfig.sdd() for the official grid)
    arch: Annotated[str, OneOf(("lite", "sdd"))] = "lite"
    goal_cells: Annotated[int, AtLeast(1), AtMost(MAX_CELLS)] = 7
    goal_cell_px: PositiveFloat = 20.0
    step_cell_px: PositiveFloat = 5.0
    d_model: Annotated[int, AtLeast(1), AtMost(MAX_WIDTH)] = 64
    heads: Annotated[int, AtLeast(1), AtMost(MAX_HEADS)] = 4
    layers: Annotated[int, AtLeast(1), AtMost(MAX_LAYERS)] = 1
    latent: Annotated[int, AtLeast(1), AtMost(MAX_WIDTH)] = 16
    n_cvae: Annotated[int, AtLeast(1), AtMost(MAX_SAMPLES)] = 5
    n_cell: Annotated[int, AtLeast(1), AtMost(MAX_CELLS)] = 4
    # official quirks (spec §3, default off = consistent train/inference)
    quirk_keys_input: Flag = False
    quirk_softmax_divide: Flag = False
    quirk_ln_normal: Flag = False
    quirk_step_crop_target: Flag = False
    # training
    models: Annotated[tuple[str, ...], Each(OneOf(MODELS))] = ("tsc", "blind")
    train_steps: Annotated[int, AtLeast(0), AtMost(MAX_STEPS)] = 200
    lr: PositiveFloat = 1e-3
    batch_peds: Annotated[int, AtLeast(1), AtMost(MAX_BATCH)] = 32
    batch_cap: Annotated[int, IsInt(), AtMost(MAX_BATCH)] = 64
    augment: Flag = True
    seeds: Annotated[int, AtLeast(1), AtMost(MAX_SEEDS)] = 1
    max_test_peds: Annotated[int, AtLeast(1), AtMost(MAX_CLIPS)] = 160
    # gates (spec §9.7)
    geo_ratio: OpenProbability = 0.8
    tsc_ratio: OpenProbability = 0.8
    blind_ratio: Annotated[float, InRange(0.0, 2.0, low_open=True)] = 0.95
    # plots, torch threads (1: several 2-thread jobs sharing 2 cores made 2 threads 10x slower here)
    plot: Flag = True
    threads: Annotated[int, AtLeast(1), AtMost(MAX_THREADS)] = 1  # per worker process
    # independent training runs (models x seeds) in this many spawned processes, the sequential results (1: one after
    # another here); simulated presets only, and not with --devices/--num-nodes/--precision
    workers: Annotated[int, AtLeast(1), AtMost(MAX_WORKERS)] = 1

    def __post_init__(self) -> None:
        super().__post_init__()
        check_int_at_least("batch_cap", self.batch_cap, self.batch_peds)
        if self.d_model % self.heads:
            raise ValueError(f"d_model ({self.d_model}) must be divisible by heads ({self.heads})")
        if self.arch == "lite" and self.d_model % 8:
            raise ValueError(f"d_model must be a multiple of 8 for the lite cell feature, got {self.d_model}")
        if self.n_cell > self.goal_cells**2:
            raise ValueError(f"n_cell ({self.n_cell}) must be <= goal_cells**2 ({self.goal_cells**2})")
        if self.dataset != "sim" and not self.data_dir:
            raise ValueError(f"dataset={self.dataset} needs data_dir=<folder>")
        if self.dataset != "sim" and self.workers > 1:
            raise ValueError(
                f"workers={self.workers}: the real-data run (dataset={self.dataset}) checkpoints every model as it "
                "trains, one after another; use workers=1"
            )


PRESETS: dict[str, Config] = {
    # CI gate: the simulator and the non-learned predictors only (spec §9.7: the gated checks need no training).
    "ci": Config(train_scenes=4, test_scenes=8, models=(), plot=False),
    # Spec §6a quick run: TSC-lite and scene-blind TSC-lite trained (side by side in 2 processes), plus CV, CV-K20,
    # geodesic-exits.
    "quick": Config(workers=2),
    # Extended benchmark (spec §6a): + goal-regression TSC-lite, 3 seeds.
    "benchmark": Config(models=("tsc", "blind", "goalreg"), seeds=3),
    # Longer training (the quick run's 200 steps are < 1 epoch): TSC-lite and scene-blind TSC-lite, 1,200 steps,
    # about 5 epochs of the x8-augmented training clips; same data, evaluation and gates as quick.
    "bench": Config(train_steps=1200),
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
        # the official code's behaviour (spec §3 subtle details 1-2, quirks (i)-(iii))
        quirk_keys_input=True,
        quirk_softmax_divide=True,
        quirk_ln_normal=True,
        quirk_step_crop_target=True,
        max_test_peds=100_000,
        test_clips_per_scene=100_000,
    ),
}


from iclr25.shared.smoke import SmokeSpec  # noqa: E402

SMOKE = SmokeSpec(
    build="iclr25.tsc_net.smoke:build",
    full_steps=160_000,
    what="TSC-Net, official SDD architecture (goal grid 15 x 80 px, d 256, 8 heads), 32 pedestrians of 4 clips",
    steps_note="2 models (TSC-Net, scene-blind) x 80,000 steps, one seed",
    cpu_scale="one clip of 2 pedestrians, one thread",
)
