"""The reproduction's config and presets: standard library only, so bad values are refused before numpy loads."""

from __future__ import annotations

from dataclasses import dataclass

from iclr25.shared.validate import (
    check_each,
    check_int_at_least,
    check_nonempty,
    check_nonnegative,
    check_one_of,
    check_positive,
    check_probability,
    check_text,
)

SETTINGS: tuple[str, ...] = ("changepoint", "drift", "hetero")  # the generated settings (data.make_regression)


@dataclass(frozen=True)
class Config:
    """Quick: `iclr25-eci-conformal reproduce --scale quick` (~20 s of CPU on one core; 1 min wall on a busy
    2-core machine) reaches coverage 0.89-0.90 for every ECI variant and lr, and best-ECI / best-baseline
    width ratios of about 0.99-1.01.
    """

    settings: tuple[str, ...] = SETTINGS
    seeds: int = 5
    n: int = 2000  # paper Sec. 5 (changepoint: n = 2000)
    alpha: float = 0.1  # paper default
    burn_in: int = 100  # official changepoint config T_burnin (also the adaptive-lr window)
    ols_window: int = 100
    # lr grids of the official changepoint config (tests/configs/changepoint_test.yaml)
    eci_lrs: tuple[float, ...] = (1.0, 0.5, 0.1, 0.05)
    ogd_lrs: tuple[float, ...] = (10.0, 5.0, 1.0, 0.5)
    sf_ogd_lrs: tuple[float, ...] = (1000.0, 500.0, 100.0, 50.0)
    decay_ogd_lrs: tuple[float, ...] = (100.0, 50.0, 10.0, 5.0)
    aci_lrs: tuple[float, ...] = (0.1, 0.05, 0.01, 0.005)
    min_coverage: float = 0.89  # selection rule threshold
    coverage_margin: float = 0.015  # gated: |coverage - (1 - alpha)| for every ECI variant and grid lr
    width_margin: float = 1.05  # gated: best ECI <= 1.05 x best baseline
    extras: bool = True  # ablations, DtACI, PI, Trail, ACI-clipped and the absolute-residual score
    validity_n: int = 20000
    validity_lrs: tuple[float, ...] = (0.05, 0.2)
    validity_margin: float = 0.005
    mix1_seeds: int = 5  # seeds of the Conformal-PID score streams (mix1 and two more); 0 disables them
    figures: bool = True
    data_dir: str = ""  # optional folder with the paper's real CSVs (see real_data_benchmark); never downloaded
    # SF-OGD's normaliser: "true" squared gradients (alpha^2 covered, (1 - alpha)^2 missed) or the official
    # code's ("official": (1 + alpha)^2 for a miss; select it to match the official functions' thresholds)
    sf_ogd_normaliser: str = "true"
    # c-sensitivity sweep (the paper's appendix figure uses c in {0.1, 0.5, 1, 1.5, 2}); () switches it off
    c_values: tuple[float, ...] = (0.1, 0.5, 1.0, 1.5, 2.0)
    # forecasters of the real-data tables when data_dir is given: "ar" (numpy), "theta" (statsmodels, the
    # [forecast] extra), "prophet" (only from a cached proc/<name>_test/prophet.npz)
    forecasters: tuple[str, ...] = ("ar", "prophet")

    def __post_init__(self) -> None:
        check_nonempty("settings", self.settings)
        check_each("settings", self.settings, check_one_of, SETTINGS)
        check_int_at_least("seeds", self.seeds, 1)
        check_int_at_least("burn_in", self.burn_in, 1)
        check_int_at_least("n", self.n, self.burn_in + 2)  # metrics need points after the burn-in
        check_probability("alpha", self.alpha)
        check_int_at_least("ols_window", self.ols_window, 10)  # the rolling OLS fits after 10 points
        for name in ("eci_lrs", "ogd_lrs", "sf_ogd_lrs", "decay_ogd_lrs", "aci_lrs", "validity_lrs"):
            check_nonempty(name, getattr(self, name))
            check_each(name, getattr(self, name), check_positive)
        check_probability("min_coverage", self.min_coverage, closed=True)
        check_nonnegative("coverage_margin", self.coverage_margin)
        check_positive("width_margin", self.width_margin)
        check_one_of("extras", self.extras, (True, False))
        check_int_at_least("validity_n", self.validity_n, 2)
        check_nonnegative("validity_margin", self.validity_margin)
        check_int_at_least("mix1_seeds", self.mix1_seeds, 0)
        check_one_of("figures", self.figures, (True, False))
        check_one_of("sf_ogd_normaliser", self.sf_ogd_normaliser, ("true", "official"))
        check_each("c_values", self.c_values, check_positive)
        check_each("forecasters", self.forecasters, check_one_of, ("ar", "theta", "prophet"))
        check_text("data_dir", self.data_dir, "a folder path (text)")


PRESETS: dict[str, Config] = {
    "quick": Config(),
    # Full: `iclr25-eci-conformal reproduce --scale full [data_dir=FOLDER]`: 50 seeds of every setting,
    # 20 seeds of the score streams, a 10^5-step validity stream, and the paper's real series when their
    # CSVs are in data_dir. Scalar recursions on the CPU (a GPU does not help): about 2 min of CPU on one core.
    "full": Config(seeds=50, mix1_seeds=20, validity_n=100000),
}
