"""Reproduction configs (stdlib + shared validators only, so bad values are refused before numpy/torch load).

Presets:
- `ci`: the gated claims only (oracle samplers, WSC), 2 seeds: `iclr25-conditional-conformal reproduce --scale ci`
  (≈ 1-2 min on 2 CPU cores); every gated claim holds.
- `quick`: spec §6a: oracle, misspecified (σ×1.5, σ×0.7) and MDN estimators, all methods, 8 x-bins, 3 seeds,
  plus the validity, Q̂, WSC checks, a 2-D output toy and Rosenbrock-10d:
  `iclr25-conditional-conformal reproduce --scale quick` (≈ 3 min on 2 shared CPU cores).
- `full`: the paper's real-data protocol (Sec. 4.2-4.3) on local copies of the PCP repository's data files:
  `iclr25-conditional-conformal reproduce --scale full data_dir=/path/to/data` (CPU only: the MDN trainings of the
  real-data splits dominate, roughly 2-3 days of CPU, divided over `workers=N` processes; see README).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated

from iclr25.shared.validate import (
    AtLeast,
    AtMost,
    Each,
    Flag,
    IsText,
    NonEmpty,
    OneOf,
    OpenProbability,
    Positive,
    PositiveFloat,
    Validated,
)

PARTS = ("validity", "synthetic", "qhat", "wsc", "mdn", "toy2d", "rosenbrock", "real")
REAL_DATASETS = ("bike", "bio", "blog", "fb1", "fb2", "meps19", "meps20", "meps21", "temp")
MULTI_DATASETS = ("rf1", "rf2", "scm1d", "scm20d", "sgemm")


# Size limits, refused before any work (past them a run would exhaust memory or run for months). The largest
# preset (full): 20 000 test points, M = 1 000 samples per point, 1 000 MDN epochs, 2 x 100 hidden units, 50 splits.
MAX_POINTS = 10_000_000  # calibration, test and training points
MAX_SAMPLES = 100_000  # samples per point
MAX_SEEDS = 1000  # seeds and random splits
MAX_REPS = 1_000_000  # repetitions of the validity checks
MAX_BINS = 10_000
MAX_GRID = 1_000_000  # grid points, projection directions
MAX_COMPONENTS = 1000  # mixture components
MAX_WIDTH = 8192  # hidden units per layer
MAX_EPOCHS = 100_000
MAX_BATCH = 65_536
MAX_WORKERS = 1024  # worker processes


@dataclass(frozen=True)
class Config(Validated):
    """One reproduction: which parts run and their sizes (defaults = the `quick` preset, spec §6a and §9)."""

    parts: Annotated[tuple[str, ...], NonEmpty(), Each(OneOf(PARTS))] = (
        "validity",
        "synthetic",
        "qhat",
        "wsc",
        "mdn",
        "toy2d",
        "rosenbrock",
    )
    alpha: OpenProbability = 0.1  # paper Sec. 4
    n_samples: Annotated[int, AtLeast(1), AtMost(MAX_SAMPLES)] = 50  # M, paper Sec. 4 (main results)
    # M̃, not stated in the paper (assumed; the third-party reimplementation uses 100)
    n_samples_tau: Annotated[int, AtLeast(1), AtMost(MAX_SAMPLES)] = 100
    seeds: Annotated[int, AtLeast(1), AtMost(MAX_SEEDS)] = 3
    # synthetic conditional coverage (spec §9.2, 9.3, 9.6)
    n_cal: Annotated[int, AtLeast(10), AtMost(MAX_POINTS)] = 2000
    n_test: Annotated[int, AtLeast(10), AtMost(MAX_POINTS)] = 20_000
    n_bins: Annotated[int, AtLeast(1), AtMost(MAX_BINS)] = 8
    sd_scales: Annotated[tuple[float, ...], Each(Positive())] = (1.0, 1.5, 0.7)  # Π = P, then the misspecified samplers
    hpd_length_points: Annotated[int, AtLeast(1), AtMost(MAX_GRID)] = 2000
    hpd_grid_step: PositiveFloat = 0.005
    # marginal validity (spec §9.1): (n, test points, repetitions) twice
    validity_n: Annotated[tuple[int, ...], Each(AtLeast(1), AtMost(MAX_POINTS))] = (500, 49)
    validity_test: Annotated[tuple[int, ...], Each(AtLeast(1), AtMost(MAX_POINTS))] = (2000, 500)
    validity_reps: Annotated[tuple[int, ...], Each(AtLeast(1), AtMost(MAX_REPS))] = (300, 1000)
    # reductions (spec §9.4)
    qhat_n: Annotated[int, AtLeast(10), AtMost(MAX_POINTS)] = 5000
    # WSC metric check (spec §9.7)
    wsc_n: Annotated[int, AtLeast(10), AtMost(MAX_POINTS)] = 5000
    wsc_dirs: Annotated[int, AtLeast(1), AtMost(MAX_GRID)] = 1000
    wsc_seeds: Annotated[int, AtLeast(1), AtMost(MAX_SEEDS)] = 5
    # MDN estimator (spec §6a iii) and the CQR quantile regressor (spec §4)
    n_train: Annotated[int, AtLeast(10), AtMost(MAX_POINTS)] = 10_000
    mdn_components: Annotated[int, AtLeast(1), AtMost(MAX_COMPONENTS)] = 5
    mdn_hidden: Annotated[tuple[int, ...], Each(AtLeast(1), AtMost(MAX_WIDTH))] = (64, 64)
    mdn_epochs: Annotated[int, AtLeast(1), AtMost(MAX_EPOCHS)] = 30
    mdn_lr: PositiveFloat = 1e-3
    mdn_batch: Annotated[int, AtLeast(1), AtMost(MAX_BATCH)] = 128
    cqr: Flag = True
    cqr_hidden: Annotated[tuple[int, ...], Each(AtLeast(1), AtMost(MAX_WIDTH))] = (64, 64)
    # spec §4 (CQR baseline: 2 x 64, 200 epochs, batch 250)
    cqr_epochs: Annotated[int, AtLeast(1), AtMost(MAX_EPOCHS)] = 200
    cqr_batch: Annotated[int, AtLeast(1), AtMost(MAX_BATCH)] = 250
    # 2-D output toy and Rosenbrock-10d (reported)
    toy_n_cal: Annotated[int, AtLeast(10), AtMost(MAX_POINTS)] = 2000
    toy_n_test: Annotated[int, AtLeast(10), AtMost(MAX_POINTS)] = 5000
    rosen_epochs: Annotated[int, AtLeast(1), AtMost(MAX_EPOCHS)] = 30
    # real data (full preset; Sec. 4.2-4.3)
    data_dir: Annotated[str, IsText("a folder path (text)")] = ""
    datasets: Annotated[tuple[str, ...], Each(OneOf(REAL_DATASETS + MULTI_DATASETS))] = REAL_DATASETS + MULTI_DATASETS
    splits: Annotated[int, AtLeast(1), AtMost(MAX_SEEDS)] = 50
    real_n_cal: Annotated[int, AtLeast(1), AtMost(MAX_POINTS)] = 2000
    real_n_test: Annotated[int, AtLeast(1), AtMost(MAX_POINTS)] = 2000
    real_ms: Annotated[tuple[int, ...], Each(AtLeast(1), AtMost(MAX_POINTS))] = (5, 20, 50)
    real_wsc_dirs: Annotated[int, AtLeast(1), AtMost(MAX_GRID)] = 5000
    # paper: CDE MDN, 10 components, 2 x 100, 1000 epochs
    real_mdn_components: Annotated[int, AtLeast(1), AtMost(MAX_COMPONENTS)] = 10
    real_mdn_hidden: Annotated[tuple[int, ...], Each(AtLeast(1), AtMost(MAX_WIDTH))] = (100, 100)
    real_mdn_epochs: Annotated[int, AtLeast(1), AtMost(MAX_EPOCHS)] = 1000
    # multi-output: M = 1000 samples per point (Sec. 4.3)
    multi_samples: Annotated[int, AtLeast(1), AtMost(MAX_SAMPLES)] = 1000
    # processes for the seeds, WSC seeds and real-data splits (each draws from its own seeded generator, so every
    # value is the same for any number); 1 runs them in this process. The validity repetitions stay sequential.
    workers: Annotated[int, AtLeast(1), AtMost(MAX_WORKERS)] = 1

    def __post_init__(self) -> None:
        super().__post_init__()
        if not len(self.validity_n) == len(self.validity_test) == len(self.validity_reps):
            raise ValueError("validity_n, validity_test and validity_reps must have the same length")
        if "real" in self.parts and not self.data_dir:
            raise ValueError("the 'real' part needs data_dir=<folder holding the PCP repository's data files>")


PRESETS: dict[str, Config] = {
    "ci": Config(parts=("validity", "synthetic", "qhat", "wsc"), seeds=2, cqr=False),
    "quick": Config(),
    "full": Config(
        parts=("validity", "synthetic", "qhat", "wsc", "mdn", "toy2d", "rosenbrock", "real"),
        seeds=8,
        mdn_components=10,
        mdn_hidden=(100, 100),
        mdn_epochs=1000,
        rosen_epochs=1000,
        data_dir="data",
    ),
}


from iclr25.shared.smoke import SmokeSpec  # noqa: E402

SMOKE = SmokeSpec(
    build="iclr25.conditional_conformal.smoke:build",
    full_steps=632_000,
    what="mixture density network, 10 components, 2 x 100 hidden, batch 128 (the package trains it on the CPU)",
    steps_note="estimate: 8 seeds x 1,000 epochs x 79 batches (synthetic part; Rosenbrock and real data not counted)",
)
