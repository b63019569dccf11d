"""The reproduction's config and presets: standard library only, so bad values are refused before numpy loads."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated

from iclr25.shared.validate import (
    AtLeast,
    AtMost,
    ClosedProbability,
    Each,
    Flag,
    IsInt,
    IsText,
    NonEmpty,
    NonNegativeFloat,
    OneOf,
    OpenProbability,
    Positive,
    PositiveFloat,
    Validated,
    check_int_at_least,
)

SETTINGS: tuple[str, ...] = ("changepoint", "drift", "hetero")  # the generated settings (data.make_regression)
LearningRates = Annotated[tuple[float, ...], NonEmpty(), Each(Positive())]


# Size limits, refused before any work (past them a run would exhaust memory or run for months). The largest
# preset (full): 50 seeds, series of 2 000 points, a validity check on 100 000 points.
MAX_SEEDS = 1000
MAX_POINTS = 10_000_000  # series lengths, burn-in and windows
MAX_WORKERS = 1024  # worker processes


@dataclass(frozen=True)
class Config(Validated):
    """Quick: `iclr25-eci-conformal reproduce --scale quick` (~20 s of CPU on one core; 1 min wall on a busy
    2-core machine) reaches coverage 0.89-0.90 for every ECI variant and lr, and best-ECI / best-baseline
    width ratios of about 0.99-1.01.
    """

    settings: Annotated[tuple[str, ...], NonEmpty(), Each(OneOf(SETTINGS))] = SETTINGS
    seeds: Annotated[int, AtLeast(1), AtMost(MAX_SEEDS)] = 5
    n: Annotated[int, IsInt(), AtMost(MAX_POINTS)] = 2000  # paper Sec. 5 (changepoint: n = 2000)
    alpha: OpenProbability = 0.1  # paper default
    # official changepoint config T_burnin (also the adaptive-lr window)
    burn_in: Annotated[int, AtLeast(1), AtMost(MAX_POINTS)] = 100
    ols_window: Annotated[int, AtLeast(10), AtMost(MAX_POINTS)] = 100  # the rolling OLS fits after 10 points
    # lr grids of the official changepoint config (tests/configs/changepoint_test.yaml)
    eci_lrs: LearningRates = (1.0, 0.5, 0.1, 0.05)
    ogd_lrs: LearningRates = (10.0, 5.0, 1.0, 0.5)
    sf_ogd_lrs: LearningRates = (1000.0, 500.0, 100.0, 50.0)
    decay_ogd_lrs: LearningRates = (100.0, 50.0, 10.0, 5.0)
    aci_lrs: LearningRates = (0.1, 0.05, 0.01, 0.005)
    min_coverage: ClosedProbability = 0.89  # selection rule threshold
    coverage_margin: NonNegativeFloat = 0.015  # gated: |coverage - (1 - alpha)| for every ECI variant and grid lr
    width_margin: PositiveFloat = 1.05  # gated: best ECI <= 1.05 x best baseline
    extras: Flag = True  # ablations, DtACI, PI, Trail, ACI-clipped and the absolute-residual score
    validity_n: Annotated[int, AtLeast(2), AtMost(MAX_POINTS)] = 20000
    validity_lrs: LearningRates = (0.05, 0.2)
    validity_margin: NonNegativeFloat = 0.005
    # seeds of the Conformal-PID score streams (mix1 and two more); 0 disables them
    mix1_seeds: Annotated[int, AtLeast(0), AtMost(MAX_SEEDS)] = 5
    figures: Flag = True
    # optional folder with the paper's real CSVs (see real_data_benchmark); never downloaded
    data_dir: Annotated[str, IsText("a folder path (text)")] = ""
    # SF-OGD's normaliser: "true" squared gradients (alpha^2 covered, (1 - alpha)^2 missed) or the official
    # code's ("official": (1 + alpha)^2 for a miss; select it to match the official functions' thresholds)
    sf_ogd_normaliser: Annotated[str, OneOf(("true", "official"))] = "true"
    # c-sensitivity sweep (the paper's appendix figure uses c in {0.1, 0.5, 1, 1.5, 2}); () switches it off
    c_values: Annotated[tuple[float, ...], Each(Positive())] = (0.1, 0.5, 1.0, 1.5, 2.0)
    # forecasters of the real-data tables when data_dir is given: "ar" (numpy), "theta" (statsmodels, the
    # [forecast] extra), "prophet" (only from a cached proc/<name>_test/prophet.npz)
    forecasters: Annotated[tuple[str, ...], Each(OneOf(("ar", "theta", "prophet")))] = ("ar", "prophet")
    # processes for the benchmark's seeds and the score streams' seeds (each series has its own seed, so every
    # value is the same for any number); 1 runs them in this process
    workers: Annotated[int, AtLeast(1), AtMost(MAX_WORKERS)] = 1

    def __post_init__(self) -> None:
        super().__post_init__()
        check_int_at_least("n", self.n, self.burn_in + 2)  # metrics need points after the burn-in


PRESETS: dict[str, Config] = {
    "quick": Config(),
    # Full: `iclr25-eci-conformal reproduce --scale full [data_dir=FOLDER]`: 50 seeds of every setting,
    # 20 seeds of the score streams, a 10^5-step validity stream, and the paper's real series when their
    # CSVs are in data_dir. Scalar recursions on the CPU (a GPU does not help): about 2 min of CPU on one core.
    "full": Config(seeds=50, mix1_seeds=20, validity_n=100000),
}


from iclr25.shared.smoke import NoGpuWork  # noqa: E402

SMOKE = NoGpuWork("online conformal updates over AR/OLS forecasts in NumPy; no network is trained")
