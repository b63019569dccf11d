"""Presets of the Dynamical Diffusion reproduction (arXiv 2503.00951).

Standard library only: bad values are refused before torch loads or any data is generated.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from iclr25.shared.validate import (
    check_each,
    check_in_range,
    check_int_at_least,
    check_nonempty,
    check_nonnegative,
    check_one_of,
    check_positive,
)

DATASETS = ("pde1d", "pde2d", "heat", "ns2d")
DDIM_BUGS = ("remix_theta_t", "no_unmix", "double_mix")  # deliberately wrong DDIM steps the exact checks must catch


@dataclass(frozen=True)
class Config:
    """One DyDiff-vs-DPM experiment. Defaults are spec 6a (`quick`); see PRESETS for each scale's command and cost.

    `quick` is the spec's benchmark: expected mean CRPS of DyDiff within a few % of DPM (either side; seed noise is
    about +-40%), both well below persistence in ensemble-mean MSE.
    """

    dataset: Literal["pde1d", "pde2d", "heat", "ns2d"] = "pde1d"  # ns2d: 2-D turbulence, velocity (u, v)
    size: int = 32  # cells per axis
    n_context: int = 3  # S_in
    n_future: int = 5  # S_out
    n_train: int = 4000
    n_test: int = 128
    width: int = 32  # UNet base channels
    ch_mult: tuple[int, ...] = (1, 2, 2)
    steps: int = 2000  # spec 6a: 1000 steps are too few to beat persistence
    batch_size: int = 64
    lr: float = 1e-3  # constant, as the official code (which uses 1e-4 at batch 16 for 1M steps)
    weight_decay: float = 0.01  # torch AdamW default, as official
    T: int = 1000
    gamma_ratio: float = 0.5  # official default r
    dependent_noise: bool = True  # official configs (use_x_ema: True)
    ddim_steps: int = 20
    n_samples: int = 8  # ensemble members per test case (official: 8)
    seeds: int = 5
    clip_ablation: float | None = 1.0  # also sample with clip_x0 = this (None: skip the ablation)
    ablation_ratios: tuple[float, ...] = ()  # extra DyDiff models at these r (the official configs: 0.1, 0.9, 1.0)
    noise_ablation: bool = False  # also DyDiff at gamma_ratio with the other noise kind (dependent <-> independent)
    threads: int = 1  # torch CPU threads per process; 1 is faster than 2 on a shared, oversubscribed machine
    workers: int = 1  # seeds run in this many processes at once; results do not depend on it
    checkpoint_every: int = 0  # training steps between checkpoints of every model (0: none); --checkpoint-every too

    def __post_init__(self) -> None:
        check_one_of("dataset", self.dataset, DATASETS)
        check_int_at_least("size", self.size, 8)
        check_int_at_least("width", self.width, 8)
        check_int_at_least("n_test", self.n_test, 2)  # the sample figure shows two cases
        check_int_at_least("n_samples", self.n_samples, 2)  # fair CRPS and the sample figure need two members
        check_int_at_least("T", self.T, 10)
        for name in ("n_context", "n_future", "n_train", "steps", "batch_size", "seeds", "threads", "workers"):
            check_int_at_least(name, getattr(self, name), 1)
        check_int_at_least("checkpoint_every", self.checkpoint_every, 0)
        check_nonempty("ch_mult", self.ch_mult)
        check_each("ch_mult", self.ch_mult, check_int_at_least, 1)
        check_positive("lr", self.lr)
        check_nonnegative("weight_decay", self.weight_decay)
        check_in_range("gamma_ratio", self.gamma_ratio, 0.0, 1.0)
        check_one_of("dependent_noise", self.dependent_noise, (True, False))
        check_one_of("noise_ablation", self.noise_ablation, (True, False))
        check_int_at_least("ddim_steps", self.ddim_steps, 1)
        if self.ddim_steps > self.T:
            raise ValueError(f"ddim_steps must be at most T={self.T}, got ddim_steps={self.ddim_steps}")
        if self.clip_ablation is not None:
            check_positive("clip_ablation", self.clip_ablation)
        check_each("ablation_ratios", self.ablation_ratios, check_in_range, 0.0, 1.0)
        if len({f"{r:g}" for r in self.ablation_ratios}) < len(self.ablation_ratios):  # one model name per ratio
            raise ValueError(f"ablation_ratios name the same model twice: {self.ablation_ratios!r}")
        stride = self.T // self.ddim_steps  # the official timesteps arange(0, T, T // n) + 1 must stay below T
        if (self.T - 1) // stride * stride + 1 > self.T - 1:
            raise ValueError(f"ddim_steps={self.ddim_steps} over T={self.T} would reach t = T; pick another count")


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
