"""Presets of the Dynamical Diffusion reproduction (arXiv 2503.00951).

Standard library only: bad values are refused before torch loads or any data is generated.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Any, Literal

from iclr25.shared.validate import (
    AtLeast,
    AtMost,
    Each,
    Flag,
    InRange,
    NonEmpty,
    NonNegativeFloat,
    NonNegativeInt,
    OrNone,
    Positive,
    PositiveFloat,
    Satisfies,
    Validated,
)

DATASETS = ("pde1d", "pde2d", "heat", "ns2d")
DDIM_BUGS = ("remix_theta_t", "no_unmix", "double_mix")  # deliberately wrong DDIM steps the exact checks must catch


def _check_distinct_ratios(name: str, value: Any) -> None:
    """No two ratios print the same (`:g`): one model name per ratio."""
    if len({f"{r:g}" for r in value}) < len(value):
        raise ValueError(f"{name} name the same model twice: {value!r}")


# Size limits, refused before any work (past them a run would exhaust memory or run for months). The paper's
# largest settings: 128 cells a side, 10 + 10 frames, base width 128, 1M steps of batch 16, T = 1 000, 50 DDIM
# steps; each limit leaves room above that.
MAX_SIZE = 256
MAX_FRAMES = 64  # S_in and S_out each
MAX_WIDTH = 512
MAX_CASES = 1_000_000  # training and test sequences
MAX_STEPS = 10_000_000
MAX_BATCH = 4096
MAX_T = 10_000
MAX_SAMPLES = 1024
MAX_SEEDS = 100


# Threads and processes: past these the machine would thrash.
MAX_THREADS = 1024  # threads and worker processes
MAX_TS_WINDOW = 100_000  # context and horizon of `ts-bench`, in time steps (GluonTS benchmarks: up to a few hundred)


@dataclass(frozen=True)
class Config(Validated):
    """One DyDiff-vs-DPM experiment. Defaults are spec 6a (`quick`); see PRESETS for each scale's command and cost.

    `quick` is the spec's benchmark: expected mean CRPS of DyDiff within a few % of DPM (either side; seed noise is
    about +-40%), both well below persistence in ensemble-mean MSE.
    """

    dataset: Literal["pde1d", "pde2d", "heat", "ns2d"] = "pde1d"  # ns2d: 2-D turbulence, velocity (u, v)
    size: Annotated[int, AtLeast(8), AtMost(MAX_SIZE)] = 32  # cells per axis
    n_context: Annotated[int, AtLeast(1), AtMost(MAX_FRAMES)] = 3  # S_in
    n_future: Annotated[int, AtLeast(1), AtMost(MAX_FRAMES)] = 5  # S_out
    n_train: Annotated[int, AtLeast(1), AtMost(MAX_CASES)] = 4000
    n_test: Annotated[int, AtLeast(2), AtMost(MAX_CASES)] = 128  # the sample figure shows two cases
    width: Annotated[int, AtLeast(8), AtMost(MAX_WIDTH)] = 32  # UNet base channels
    ch_mult: Annotated[tuple[int, ...], NonEmpty(), Each(AtLeast(1), AtMost(16))] = (1, 2, 2)
    steps: Annotated[int, AtLeast(1), AtMost(MAX_STEPS)] = 2000  # spec 6a: 1000 steps are too few to beat persistence
    batch_size: Annotated[int, AtLeast(1), AtMost(MAX_BATCH)] = 64
    lr: PositiveFloat = 1e-3  # constant, as the official code (which uses 1e-4 at batch 16 for 1M steps)
    weight_decay: NonNegativeFloat = 0.01  # torch AdamW default, as official
    T: Annotated[int, AtLeast(10), AtMost(MAX_T)] = 1000
    gamma_ratio: Annotated[float, InRange(0.0, 1.0)] = 0.5  # official default r
    dependent_noise: Flag = True  # official configs (use_x_ema: True)
    ddim_steps: Annotated[int, AtLeast(1), AtMost(MAX_T)] = 20
    # ensemble members per test case (official: 8); fair CRPS and the sample figure need two members
    n_samples: Annotated[int, AtLeast(2), AtMost(MAX_SAMPLES)] = 8
    seeds: Annotated[int, AtLeast(1), AtMost(MAX_SEEDS)] = 5
    # also sample with clip_x0 = this (None: skip the ablation)
    clip_ablation: Annotated[float | None, OrNone(Positive())] = 1.0
    # extra DyDiff models at these r (the official configs: 0.1, 0.9, 1.0); one model name per ratio
    ablation_ratios: Annotated[
        tuple[float, ...],
        Each(InRange(0.0, 1.0)),
        Satisfies(_check_distinct_ratios, "distinct ratios", (0.1, 0.1)),
    ] = ()
    # also DyDiff at gamma_ratio with the other noise kind (dependent <-> independent)
    noise_ablation: Flag = False
    # torch CPU threads per process; 1 is faster than 2 on a shared, oversubscribed machine
    threads: Annotated[int, AtLeast(1), AtMost(MAX_THREADS)] = 1
    # seeds run in this many processes at once; results do not depend on it
    workers: Annotated[int, AtLeast(1), AtMost(MAX_THREADS)] = 1
    # training steps between checkpoints of every model (0: none); --checkpoint-every too
    checkpoint_every: NonNegativeInt = 0

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.ddim_steps > self.T:
            raise ValueError(f"ddim_steps must be at most T={self.T}, got ddim_steps={self.ddim_steps}")
        stride = self.T // self.ddim_steps  # the official timesteps arange(0, T, T // n) + 1 must stay below T
        if (self.T - 1) // stride * stride + 1 > self.T - 1:
            raise ValueError(f"ddim_steps={self.ddim_steps} over T={self.T} would reach t = T; pick another count")


def model_variants(config: Config) -> list[tuple[str, float, bool]]:
    """(name, gamma ratio, dependent noise) of every model a run trains: DPM, DyDiff, then the ablations."""
    dep = config.dependent_noise
    variants = [("dpm", 0.0, dep), ("dydiff", config.gamma_ratio, dep)]
    variants += [(f"dydiff_r{r:g}", r, dep) for r in config.ablation_ratios]
    if config.noise_ablation:
        variants.append((f"dydiff_{'independent' if dep else 'dependent'}_noise", config.gamma_ratio, not dep))
    return variants


PRESETS: dict[str, Config] = {
    # CI gate: the exact checks plus a 100-step smoke run of the whole pipeline (~20 s on 2 idle cores).
    # `iclr25-dynamical-diffusion reproduce --scale ci`: gated claims hold; the benchmark numbers are meaningless.
    "ci": Config(n_train=512, n_test=32, steps=100, n_samples=4, ddim_steps=10, seeds=1, clip_ablation=None),
    # Spec 6a exactly, the README table: 5 seeds x 2 models x 2,000 steps of batch 64, 128 test cases, DDIM 20,
    # 8 members. `iclr25-dynamical-diffusion reproduce --scale quick workers=2`: ~10 min on 2 idle CPU cores
    # (~17 min with workers=1).
    "quick": Config(),
    # Paired benchmark: the quick setting on 10 seeds (0-9; DPM and DyDiff repeat quick's seeds digit for digit on
    # the same machine) with DPM, DyDiff r = 0.5, DyDiff r = 0.1 and DyDiff r = 0.5 with independent noise; every
    # variant compared with DPM and each ablation with DyDiff seed by seed (exact sign-flip test, Holm within each
    # family); no clipped sampling. `iclr25-dynamical-diffusion reproduce --scale bench`: ~55 CPU-min (~330 CPU-s
    # per seed of 4 models); ~30 min on 2 idle cores. `--seed K seeds=1` runs seed K alone (same numbers).
    "bench": Config(seeds=10, ablation_ratios=(0.1,), noise_ablation=True, clip_ablation=None, workers=2),
    # Full (one GPU): a Turbulence-like 2-D setting, 4 -> 11 frames at 64x64, the official optimiser (AdamW 1e-4,
    # batch 16) and sampler (DDIM 50, 8 members); a 64-wide UNet with mult (1, 2, 4, 4).
    # `iclr25-dynamical-diffusion reproduce --scale full --device cuda`: ~6-8 h on one H100-class GPU (estimated
    # from the CPU per-step cost; not run here).
    "full": Config(
        dataset="ns2d",
        size=64,
        n_context=4,
        n_future=11,
        n_train=20000,
        n_test=256,
        width=64,
        ch_mult=(1, 2, 4, 4),
        steps=100_000,
        batch_size=16,
        lr=1e-4,
        ddim_steps=50,
        n_samples=8,
        seeds=3,
        clip_ablation=None,
        checkpoint_every=5_000,
    ),
}


from iclr25.shared.smoke import SmokeSpec  # noqa: E402

SMOKE = SmokeSpec(
    build="iclr25.dynamical_diffusion.smoke:build",
    full_steps=600_000,
    what="DyDiff FrameStackUNet width 64, mult (1, 2, 4, 4), 4 + 11 frames of 64x64 (u, v), batch 16",
    steps_note="3 seeds x 2 models (DPM, DyDiff r 0.5) x 100,000 steps",
    cpu_scale="batch 1 of 16, one thread",
)
