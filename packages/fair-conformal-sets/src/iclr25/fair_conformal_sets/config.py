"""Reproduction presets (standard library + shared validators only, so bad values fail before numpy loads).

Paper: Cresswell et al., "Conformal Prediction Sets Can Cause Disparate Impact", ICLR 2025 (arXiv 2410.01888).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any

from iclr25.shared.validate import (
    AtLeast,
    AtMost,
    ClosedProbability,
    Each,
    FiniteFloat,
    Flag,
    IsText,
    NonEmpty,
    NonNegative,
    NonNegativeFloat,
    OneOf,
    OpenProbability,
    PositiveFloat,
    Satisfies,
    Text,
    Validated,
    check_in_range,
)

SCORE_NAMES = ("lac", "aps", "raps", "saps")
ESS_VARIANTS = ("two_split", "single_split", "singleton")


def _check_fcpd_dir(name: str, value: Any) -> None:
    """Empty, or an existing folder (the study's results/ folder)."""
    if value and not Path(value).is_dir():
        raise ValueError(f"{name} {value!r} is not a folder (the study's results/ folder)")


def _check_npz_dir(name: str, value: Any) -> None:
    """Empty, or an existing folder holding at least one of bios.npz, facet.npz, ravdess.npz."""
    if value:
        if not Path(value).is_dir():
            raise ValueError(f"{name} {value!r} is not a folder")
        if not any((Path(value) / f"{t}.npz").is_file() for t in ("bios", "facet", "ravdess")):
            raise ValueError(f"{name} {value!r} holds none of bios.npz, facet.npz, ravdess.npz")


StudyDir = Annotated[str, IsText(), Satisfies(_check_fcpd_dir, "empty or a folder", "no/such/folder")]
OutputsDir = Annotated[str, IsText(), Satisfies(_check_npz_dir, "empty or a folder of .npz outputs", "no/such/folder")]


# Size limits, refused before any work (past them a run would exhaust memory or run for months). The largest
# preset (full): 20 seeds, 20 000 test points, 10 classes, 1 000 000 Monte-Carlo trials, 5 000 bootstrap resamples.
MAX_SEEDS = 1000
MAX_POINTS = 10_000_000  # calibration and test points
MAX_CLASSES = 100_000  # classes, and the k of RAPS and top-k
MAX_GRID = 1_000_000
MAX_REPS = 1_000_000  # repetitions of the validity check
MAX_MC_TRIALS = 10_000_000  # Monte-Carlo trials, drawn at once
MAX_PEOPLE = 100_000  # simulated participants, trials per participant, tuning trials
MAX_BOOT = 1_000_000  # bootstrap resamples
MAX_WORKERS = 1024  # worker processes


@dataclass(frozen=True)
class Config(Validated):
    """Quick: `iclr25-fair-conformal-sets reproduce --scale quick` (about 10 s on 2 CPU cores): the spec §6a
    synthetic study, 5 seeds, LAC and APS; marginal coverage ~0.90, Delta(LAC) Mondrian > marginal > ESS."""

    seeds: Annotated[int, AtLeast(1), AtMost(MAX_SEEDS)] = 5  # spec §6a: seeds 0..4 (plus --seed offset)
    n_cal: Annotated[int, AtLeast(20), AtMost(MAX_POINTS)] = 4000  # spec §6a (FACET's n_calib)
    n_test: Annotated[int, AtLeast(10), AtMost(MAX_POINTS)] = 20_000
    alpha: OpenProbability = 0.1  # official config: alpha = 0.1 everywhere
    K: Annotated[int, AtLeast(2), AtMost(MAX_CLASSES)] = 10
    # b_g: group 0 easy, group 1 hard (spec §6a)
    strengths: Annotated[tuple[float, ...], NonEmpty(), Each(NonNegative())] = (3.5, 2.0)
    # APS randomised, one U per (item, label)
    scores: Annotated[tuple[str, ...], NonEmpty(), Each(OneOf(SCORE_NAMES))] = ("lac", "aps")
    k_reg: Annotated[int, AtLeast(0), AtMost(MAX_CLASSES)] = 3  # RAPS default (official FACET config)
    lam: NonNegativeFloat = 0.5  # RAPS/SAPS default (official FACET/BiosBias config)
    top_k: Annotated[int, AtLeast(1), AtMost(MAX_CLASSES)] = 3  # official config k = 3
    skill: ClosedProbability = 0.56  # decision model kappa (spec §3.6)
    skill_gap: FiniteFloat = 0.0  # kappa_1 = skill - skill_gap: human-side bias against group 1 (0 = none)
    override: ClosedProbability = 0.5
    adopt_slope: NonNegativeFloat = 0.15
    ess_split: OpenProbability = 0.5  # fraction of calibration data in part A (spec §3.4)
    ess_grid: Annotated[int, AtLeast(1), AtMost(MAX_GRID)] = 800
    ess_variant: Annotated[str, OneOf(ESS_VARIANTS)] = "two_split"
    validity_reps: Annotated[int, AtLeast(0), AtMost(MAX_REPS)] = 400  # small-n ESS validity check (spec §9.3)
    validity_n_cal: Annotated[int, AtLeast(4), AtMost(MAX_POINTS)] = 400
    validity_n_test: Annotated[int, AtLeast(1), AtMost(MAX_POINTS)] = 2000
    # Monte-Carlo check of the closed-form accuracy (spec §9.6)
    mc_trials: Annotated[int, AtLeast(0), AtMost(MAX_MC_TRIALS)] = 100_000
    # simulated study: participants per treatment (as the human study)
    participants: Annotated[int, AtLeast(2), AtMost(MAX_PEOPLE)] = 50
    trials: Annotated[int, AtLeast(1), AtMost(MAX_PEOPLE)] = 50  # trials per participant
    n_boot: Annotated[int, AtLeast(10), AtMost(MAX_BOOT)] = 1000  # participant-clustered bootstrap resamples
    digits: Flag = True  # scikit-learn digits smoke run
    fcpd_dir: StudyDir = ""  # folder with the released study data (results/ of the official repo); "" = skip
    npz_dir: OutputsDir = ""  # folder with bios.npz / facet.npz / ravdess.npz model outputs; "" = skip
    # random-search trials for (T, lam, k_reg) on the real tasks (official: 50 TPE trials)
    hpo_trials: Annotated[int, AtLeast(0), AtMost(MAX_PEOPLE)] = 50
    # processes for the synthetic seeds and the validity repetitions (each draws from its own seeded generator,
    # so every value is the same for any number); 1 runs them in this process
    workers: Annotated[int, AtLeast(1), AtMost(MAX_WORKERS)] = 1

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.top_k > self.K:
            raise ValueError(f"top_k must be <= K = {self.K}, got {self.top_k}")
        check_in_range("skill_gap", self.skill_gap, self.skill - 1, self.skill)


PRESETS: dict[str, Config] = {
    "quick": Config(),
    # full: 20 seeds (the pilot's), 2000 small-n validity repetitions, and the real tasks when their model
    # outputs (npz_dir) and the study data (fcpd_dir) are given; minutes on one CPU core, no GPU needed.
    "full": Config(seeds=20, validity_reps=2000, mc_trials=1_000_000, n_boot=5000),
}


MODES = ("marginal", "mondrian", "ess")
STUDY_TASKS = ("bios", "facet", "ravdess")


@dataclass(frozen=True)
class SetsConfig(Validated):
    """`iclr25-fair-conformal-sets sets --npz outputs.npz`: conformal sets and their group report for a user's
    model outputs (calibrated on `cal_npz`, or on a random `cal_fraction` of `npz`)."""

    npz: Text = ""  # logits (or probs) (n, K), labels (n,), groups (n,)
    cal_npz: Text = ""  # separate calibration outputs; "" = split npz
    cal_fraction: OpenProbability = 0.5
    score: Annotated[str, OneOf(SCORE_NAMES)] = "lac"
    mode: Annotated[str, OneOf(MODES)] = "marginal"
    alpha: OpenProbability = 0.1
    temperature: PositiveFloat = 1.0
    k_reg: Annotated[int, AtLeast(0), AtMost(MAX_CLASSES)] = 3
    lam: NonNegativeFloat = 0.5
    randomized: Flag = True
    smoothing: Flag = False
    fill_empty: Flag = False  # the official code fills empty sets with the top-1 label
    ess_variant: Annotated[str, OneOf(ESS_VARIANTS)] = "two_split"
    skill: ClosedProbability = 0.56
    override: ClosedProbability = 0.5
    adopt_slope: NonNegativeFloat = 0.15

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.smoothing and self.mode == "ess":
            raise ValueError("smoothing applies to the marginal and mondrian modes, not ess")


@dataclass(frozen=True)
class StudyConfig(Validated):
    """`iclr25-fair-conformal-sets analyze-study --dir DIR --task bios`: re-analysis of the released study data."""

    dir: Text = ""  # the official repository's results/ folder (or one task's sub-folder)
    task: Annotated[str, OneOf(STUDY_TASKS)] = "bios"
    n_boot: Annotated[int, AtLeast(10), AtMost(MAX_BOOT)] = 1000


from iclr25.shared.smoke import NoGpuWork  # noqa: E402

SMOKE = NoGpuWork(
    "conformal sets and a decision simulation over fixed classifier scores in NumPy; no network is trained"
)
