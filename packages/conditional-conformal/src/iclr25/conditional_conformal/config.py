"""Reproduction configs (stdlib + shared validators only, so bad values are refused before numpy/torch load).

Presets:
- `ci`: the gated claims only (oracle samplers, WSC), 2 seeds: `iclr25-conditional-conformal reproduce --scale ci`
  (≈ 1-2 min on 2 CPU cores); every gated claim holds.
- `quick`: spec §6a: oracle, misspecified (σ×1.5, σ×0.7) and MDN estimators, all methods, 8 x-bins, 3 seeds,
  plus the validity, Q̂, WSC checks, a 2-D output toy and Rosenbrock-10d:
  `iclr25-conditional-conformal reproduce --scale quick` (≈ 3 min on 2 shared CPU cores).
- `full`: the paper's real-data protocol (Sec. 4.2-4.3) on local copies of the PCP repository's data files:
  `iclr25-conditional-conformal reproduce --scale full data_dir=/path/to/data` (one GPU, hours; see README).
"""

from __future__ import annotations

from dataclasses import dataclass

from iclr25.shared.validate import (
    check_each,
    check_int_at_least,
    check_one_of,
    check_positive,
    check_probability,
)

PARTS = ("validity", "synthetic", "qhat", "wsc", "mdn", "toy2d", "rosenbrock", "real")
REAL_DATASETS = ("bike", "bio", "blog", "fb1", "fb2", "meps19", "meps20", "meps21", "temp")
MULTI_DATASETS = ("rf1", "rf2", "scm1d", "scm20d", "sgemm")


@dataclass(frozen=True)
class Config:
    """One reproduction: which parts run and their sizes (defaults = the `quick` preset, spec §6a and §9)."""

    parts: tuple[str, ...] = ("validity", "synthetic", "qhat", "wsc", "mdn", "toy2d", "rosenbrock")
    alpha: float = 0.1  # paper Sec. 4
    n_samples: int = 50  # M, paper Sec. 4 (main results)
    n_samples_tau: int = 100  # M̃, not stated in the paper (assumed; the third-party reimplementation uses 100)
    seeds: int = 3
    # synthetic conditional coverage (spec §9.2, 9.3, 9.6)
    n_cal: int = 2000
    n_test: int = 20_000
    n_bins: int = 8
    sd_scales: tuple[float, ...] = (1.0, 1.5, 0.7)  # Π = P, then the misspecified samplers
    hpd_length_points: int = 2000
    hpd_grid_step: float = 0.005
    # marginal validity (spec §9.1): (n, test points, repetitions) twice
    validity_n: tuple[int, ...] = (500, 49)
    validity_test: tuple[int, ...] = (2000, 500)
    validity_reps: tuple[int, ...] = (300, 1000)
    # reductions (spec §9.4)
    qhat_n: int = 5000
    # WSC metric check (spec §9.7)
    wsc_n: int = 5000
    wsc_dirs: int = 1000
    wsc_seeds: int = 5
    # MDN estimator (spec §6a iii) and the CQR quantile regressor (spec §4)
    n_train: int = 10_000
    mdn_components: int = 5
    mdn_hidden: tuple[int, ...] = (64, 64)
    mdn_epochs: int = 30
    mdn_lr: float = 1e-3
    mdn_batch: int = 128
    cqr: bool = True
    cqr_hidden: tuple[int, ...] = (64, 64)
    cqr_epochs: int = 200  # spec §4 (CQR baseline: 2 x 64, 200 epochs, batch 250)
    cqr_batch: int = 250
    # 2-D output toy and Rosenbrock-10d (reported)
    toy_n_cal: int = 2000
    toy_n_test: int = 5000
    rosen_epochs: int = 30
    # real data (full preset; Sec. 4.2-4.3)
    data_dir: str = ""
    datasets: tuple[str, ...] = REAL_DATASETS + MULTI_DATASETS
    splits: int = 50
    real_n_cal: int = 2000
    real_n_test: int = 2000
    real_ms: tuple[int, ...] = (5, 20, 50)
    real_wsc_dirs: int = 5000
    real_mdn_components: int = 10  # paper: CDE MDN, 10 components, 2 x 100, 1000 epochs
    real_mdn_hidden: tuple[int, ...] = (100, 100)
    real_mdn_epochs: int = 1000
    multi_samples: int = 1000  # multi-output: M = 1000 samples per point (Sec. 4.3)

    def __post_init__(self) -> None:
        check_each("parts", self.parts, lambda n, v: check_one_of(n, v, PARTS))
        check_probability("alpha", self.alpha)
        for name in ("n_samples", "n_samples_tau", "seeds", "n_bins", "hpd_length_points", "wsc_dirs", "wsc_seeds"):
            check_int_at_least(name, getattr(self, name), 1)
        for name in ("n_cal", "n_test", "qhat_n", "wsc_n", "n_train", "toy_n_cal", "toy_n_test"):
            check_int_at_least(name, getattr(self, name), 10)
        check_each("sd_scales", self.sd_scales, check_positive)
        check_positive("hpd_grid_step", self.hpd_grid_step)
        if not len(self.validity_n) == len(self.validity_test) == len(self.validity_reps):
            raise ValueError("validity_n, validity_test and validity_reps must have the same length")
        check_each("validity_n", self.validity_n, check_int_at_least, 1)
        check_each("validity_test", self.validity_test, check_int_at_least, 1)
        check_each("validity_reps", self.validity_reps, check_int_at_least, 1)
        for name in ("mdn_components", "mdn_epochs", "mdn_batch", "cqr_epochs", "cqr_batch", "rosen_epochs"):
            check_int_at_least(name, getattr(self, name), 1)
        for name in ("mdn_hidden", "cqr_hidden", "real_mdn_hidden"):
            check_each(name, getattr(self, name), check_int_at_least, 1)
        check_positive("mdn_lr", self.mdn_lr)
        check_each("datasets", self.datasets, lambda n, v: check_one_of(n, v, REAL_DATASETS + MULTI_DATASETS))
        for name in ("splits", "real_n_cal", "real_n_test", "real_wsc_dirs", "real_mdn_components"):
            check_int_at_least(name, getattr(self, name), 1)
        check_int_at_least("real_mdn_epochs", self.real_mdn_epochs, 1)
        check_int_at_least("multi_samples", self.multi_samples, 1)
        check_each("real_ms", self.real_ms, check_int_at_least, 1)
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
