"""The reproduction's config and presets: standard library only, so bad values are refused before numpy loads."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated

from iclr25.shared.validate import (
    AtLeast,
    ClosedProbability,
    Each,
    Flag,
    Integer,
    IsText,
    NonEmpty,
    NonNegativeFloat,
    NonNegativeInt,
    OneOf,
    OpenProbability,
    Positive,
    PositiveFloat,
    PositiveInt,
    Validated,
    check_int_at_least,
)

SETTINGS: tuple[str, ...] = ("changepoint", "drift", "hetero")  # the generated settings (data.make_regression)
LearningRates = Annotated[tuple[float, ...], NonEmpty(), Each(Positive())]


@dataclass(frozen=True)
class Config(Validated):
    """Quick: `iclr25-eci-conformal reproduce --scale quick` (~20 s of CPU on one core; 1 min wall on a busy
    2-core machine) reaches coverage 0.89-0.90 for every ECI variant and lr, and best-ECI / best-baseline
    width ratios of about 0.99-1.01.
    """

    settings: Annotated[tuple[str, ...], NonEmpty(), Each(OneOf(SETTINGS))] = SETTINGS
    seeds: PositiveInt = 5
    n: Integer = 2000  # paper Sec. 5 (changepoint: n = 2000)
    alpha: OpenProbability = 0.1  # paper default
    burn_in: PositiveInt = 100  # official changepoint config T_burnin (also the adaptive-lr window)
    ols_window: Annotated[int, AtLeast(10)] = 100  # the rolling OLS fits after 10 points
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
    validity_n: Annotated[int, AtLeast(2)] = 20000
    validity_lrs: LearningRates = (0.05, 0.2)
    validity_margin: NonNegativeFloat = 0.005
    mix1_seeds: NonNegativeInt = 5  # seeds of the Conformal-PID score streams (mix1 and two more); 0 disables them
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
