"""Reproduction presets (standard library + shared validators only, so bad values fail before numpy loads).

Paper: Cresswell et al., "Conformal Prediction Sets Can Cause Disparate Impact", ICLR 2025 (arXiv 2410.01888).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from iclr25.shared.validate import (
    check_each,
    check_in_range,
    check_int_at_least,
    check_nonempty,
    check_nonnegative,
    check_one_of,
    check_positive,
    check_probability,
)

SCORE_NAMES = ("lac", "aps", "raps", "saps")
ESS_VARIANTS = ("two_split", "single_split", "singleton")


@dataclass(frozen=True)
class Config:
    """Quick: `iclr25-fair-conformal-sets reproduce --scale quick` (about 10 s on 2 CPU cores): the spec §6a
    synthetic study, 5 seeds, LAC and APS; marginal coverage ~0.90, Delta(LAC) Mondrian > marginal > ESS."""

    seeds: int = 5  # spec §6a: seeds 0..4 (plus --seed offset)
    n_cal: int = 4000  # spec §6a (FACET's n_calib)
    n_test: int = 20_000
    alpha: float = 0.1  # official config: alpha = 0.1 everywhere
    K: int = 10
    strengths: tuple[float, ...] = (3.5, 2.0)  # b_g: group 0 easy, group 1 hard (spec §6a)
    scores: tuple[str, ...] = ("lac", "aps")  # APS randomised, one U per (item, label)
    k_reg: int = 3  # RAPS default (official FACET config)
    lam: float = 0.5  # RAPS/SAPS default (official FACET/BiosBias config)
    top_k: int = 3  # official config k = 3
    skill: float = 0.56  # decision model kappa (spec §3.6)
    skill_gap: float = 0.0  # kappa_1 = skill - skill_gap: human-side bias against group 1 (0 = none)
    override: float = 0.5
    adopt_slope: float = 0.15
    ess_split: float = 0.5  # fraction of calibration data in part A (spec §3.4)
    ess_grid: int = 800
    ess_variant: str = "two_split"
    validity_reps: int = 400  # small-n ESS validity check (spec §9.3)
    validity_n_cal: int = 400
    validity_n_test: int = 2000
    mc_trials: int = 100_000  # Monte-Carlo check of the closed-form accuracy (spec §9.6)
    participants: int = 50  # simulated study: participants per treatment (as the human study)
    trials: int = 50  # trials per participant
    n_boot: int = 1000  # participant-clustered bootstrap resamples
    digits: bool = True  # scikit-learn digits smoke run
    fcpd_dir: str = ""  # folder with the released study data (results/ of the official repo); "" = skip
    npz_dir: str = ""  # folder with bios.npz / facet.npz / ravdess.npz model outputs; "" = skip
    hpo_trials: int = 50  # random-search trials for (T, lam, k_reg) on the real tasks (official: 50 TPE trials)

    def __post_init__(self) -> None:
        check_int_at_least("seeds", self.seeds, 1)
        check_int_at_least("n_cal", self.n_cal, 20)
        check_int_at_least("n_test", self.n_test, 10)
        check_probability("alpha", self.alpha)
        check_int_at_least("K", self.K, 2)
        check_nonempty("strengths", self.strengths)
        check_each("strengths", self.strengths, check_nonnegative)
        check_nonempty("scores", self.scores)
        check_each("scores", self.scores, check_one_of, SCORE_NAMES)
        check_int_at_least("k_reg", self.k_reg, 0)
        check_nonnegative("lam", self.lam)
        check_int_at_least("top_k", self.top_k, 1)
        if self.top_k > self.K:
            raise ValueError(f"top_k must be <= K = {self.K}, got {self.top_k}")
        check_probability("skill", self.skill, closed=True)
        check_in_range("skill_gap", self.skill_gap, self.skill - 1, self.skill)
        check_probability("override", self.override, closed=True)
        check_nonnegative("adopt_slope", self.adopt_slope)
        check_probability("ess_split", self.ess_split)
        check_int_at_least("ess_grid", self.ess_grid, 1)
        check_one_of("ess_variant", self.ess_variant, ESS_VARIANTS)
        check_int_at_least("validity_reps", self.validity_reps, 0)
        check_int_at_least("validity_n_cal", self.validity_n_cal, 4)
        check_int_at_least("validity_n_test", self.validity_n_test, 1)
        check_int_at_least("mc_trials", self.mc_trials, 0)
        check_int_at_least("participants", self.participants, 2)
        check_int_at_least("trials", self.trials, 1)
        check_int_at_least("n_boot", self.n_boot, 10)
        check_int_at_least("hpo_trials", self.hpo_trials, 0)
        if self.fcpd_dir and not Path(self.fcpd_dir).is_dir():
            raise ValueError(f"fcpd_dir {self.fcpd_dir!r} is not a folder (the study's results/ folder)")
        if self.npz_dir:
            if not Path(self.npz_dir).is_dir():
                raise ValueError(f"npz_dir {self.npz_dir!r} is not a folder")
            if not any((Path(self.npz_dir) / f"{t}.npz").is_file() for t in ("bios", "facet", "ravdess")):
                raise ValueError(f"npz_dir {self.npz_dir!r} holds none of bios.npz, facet.npz, ravdess.npz")


PRESETS: dict[str, Config] = {
    "quick": Config(),
    # full: 20 seeds (the pilot's), 2000 small-n validity repetitions, and the real tasks when their model
    # outputs (npz_dir) and the study data (fcpd_dir) are given; minutes on one CPU core, no GPU needed.
    "full": Config(seeds=20, validity_reps=2000, mc_trials=1_000_000, n_boot=5000),
}


MODES = ("marginal", "mondrian", "ess")
STUDY_TASKS = ("bios", "facet", "ravdess")


@dataclass(frozen=True)
class SetsConfig:
    """`iclr25-fair-conformal-sets sets --npz outputs.npz`: conformal sets and their group report for a user's
    model outputs (calibrated on `cal_npz`, or on a random `cal_fraction` of `npz`)."""

    npz: str = ""  # logits (or probs) (n, K), labels (n,), groups (n,)
    cal_npz: str = ""  # separate calibration outputs; "" = split npz
    cal_fraction: float = 0.5
    score: str = "lac"
    mode: str = "marginal"
    alpha: float = 0.1
    temperature: float = 1.0
    k_reg: int = 3
    lam: float = 0.5
    randomized: bool = True
    smoothing: bool = False
    fill_empty: bool = False  # the official code fills empty sets with the top-1 label
    ess_variant: str = "two_split"
    skill: float = 0.56
    override: float = 0.5
    adopt_slope: float = 0.15

    def __post_init__(self) -> None:
        check_probability("cal_fraction", self.cal_fraction)
        check_one_of("score", self.score, SCORE_NAMES)
        check_one_of("mode", self.mode, MODES)
        check_probability("alpha", self.alpha)
        check_positive("temperature", self.temperature)
        check_int_at_least("k_reg", self.k_reg, 0)
        check_nonnegative("lam", self.lam)
        check_one_of("ess_variant", self.ess_variant, ESS_VARIANTS)
        check_probability("skill", self.skill, closed=True)
        check_probability("override", self.override, closed=True)
        check_nonnegative("adopt_slope", self.adopt_slope)
        if self.smoothing and self.mode == "ess":
            raise ValueError("smoothing applies to the marginal and mondrian modes, not ess")


@dataclass(frozen=True)
class StudyConfig:
    """`iclr25-fair-conformal-sets analyze-study --dir DIR --task bios`: re-analysis of the released study data."""

    dir: str = ""  # the official repository's results/ folder (or one task's sub-folder)
    task: str = "bios"
    n_boot: int = 1000

    def __post_init__(self) -> None:
        check_one_of("task", self.task, STUDY_TASKS)
        check_int_at_least("n_boot", self.n_boot, 10)
