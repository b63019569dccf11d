"""Presets of the reproduction (spec §6). Standard library only: bad values are refused before numpy or torch load.

A run is "dataset:model:width:members", e.g. "digits:mlp:64:32": a homogeneous ensemble of `members`
width-`width` networks trained with the same recipe, differing only in init seed and data order.
"""

from __future__ import annotations

from dataclasses import dataclass

from iclr25.shared.validate import (
    check_each,
    check_in_range,
    check_int_at_least,
    check_nonempty,
    check_one_of,
    check_positive,
    check_probability,
    check_text,
)

DATASETS = ("digits", "synthetic", "wine", "breast_cancer", "cifar10", "cifar100", "tinyimagenet", "image")
IMAGE_DATASETS = ("cifar10", "cifar100", "tinyimagenet", "image")
MODELS = ("mlp", "cnn", "resnet18")
LR_SCHEDULES = ("constant", "inverse_sqrt")


def parse_run(spec: str) -> tuple[str, str, int, int]:
    """ "dataset:model:width:members" -> (dataset, model, width, members); a ValueError says what is allowed."""
    parts = spec.split(":")
    if len(parts) != 4:
        raise ValueError(f"run {spec!r} must look like dataset:model:width:members, e.g. digits:mlp:64:32")
    dataset, model, width, members = parts
    check_one_of("run dataset", dataset, DATASETS)
    check_one_of("run model", model, MODELS)
    if (model == "mlp") == (dataset in IMAGE_DATASETS):
        raise ValueError(f"run {spec!r}: use model mlp for tabular data and cnn/resnet18 for image data")
    try:
        w, m = int(width), int(members)
    except ValueError:
        raise ValueError(f"run {spec!r}: width and members must be integers") from None
    check_int_at_least("run width", w, 1)
    check_int_at_least("run members", m, 2)
    return dataset, model, w, m


@dataclass(frozen=True)
class Config:
    """Quick: `iclr25-ensemble-homogeneity reproduce --scale quick` (spec §6a; about 1 min of CPU time, 1-4 min of
    wall time on 2 busy CPU cores) trains digits k in {16, 64} (M = 32) and synthetic k = 64 (M = 16) to
    interpolation and reaches: DE median KS p ~0.6 at k = 64 with 1.7% / 22% disagreement; synthetic ensemble
    true-class Brier ~0.20 vs best member ~0.24; two-model estimates within ~2% of the measured curve.
    """

    runs: tuple[str, ...] = ("digits:mlp:16:32", "digits:mlp:64:32", "synthetic:mlp:64:16")
    lr: float = 0.1  # spec §6a: plain SGD, no momentum, no weight decay
    batch_size: int = 64  # spec §6a
    max_epochs: int = 300  # spec §6a: until every member fits the training set, or 300 epochs
    lr_schedule: str = "constant"  # "inverse_sqrt": Nakkiran et al. 0.1/sqrt(1 + floor(t/512))
    sizes: tuple[int, ...] = (1, 2, 4, 8, 16, 32)  # ensemble sizes of the curves (those <= members are used)
    gate_min_width: int = 64  # DE and the estimator are gated for widths >= this (spec §10.2)
    de_alpha: float = 0.05  # gated: median pairwise KS p-value > de_alpha
    min_disagreement_digits: float = 0.01  # gated: mean prediction disagreement > this on digits
    min_disagreement: float = 0.05  # ... and on every other dataset
    superiority_gated: tuple[str, ...] = ("synthetic",)  # datasets where "ensemble < best member" is gated
    n_pairs: int = 10  # random pairs of the two-model estimate
    estimate_sizes: tuple[int, ...] = (4, 16)
    estimate_tolerance: float = 0.10  # gated: |estimate - measured| / measured
    hetero_dataset: str = "digits"  # heterogeneous counter-example ("" = skip)
    hetero_wide: int = 256  # one member of this width trained to interpolation ...
    hetero_narrow: int = 4  # ... plus narrow members ...
    hetero_narrow_members: int = 3
    hetero_narrow_epochs: int = 5  # ... stopped after 5 epochs (spec §6a)
    control_members: int = 4  # identical-members negative control on the first gated run (0 = skip)
    wider_baseline: bool = True  # one model with the ensemble's parameter count, per tabular run (R8)
    mc_subsets: int = 20  # random subsets for the NLL / error curves (reported only; 0 = skip)
    data_dir: str = ""  # folder holding cifar-10-batches-py / cifar-100-python / tiny-imagenet-200; never downloaded
    image_train: int = 10000  # size of the generated image task used when data_dir has no CIFAR files
    threads: int = 1  # torch CPU threads (tiny matmuls run fastest on one)
    figures: bool = True
    save_preds: bool = False  # write each run's test probabilities as preds_<run>.npz (about 1-2 MB each)

    def __post_init__(self) -> None:
        check_nonempty("runs", self.runs)
        for spec in self.runs:
            parse_run(spec)
        check_positive("lr", self.lr)
        check_int_at_least("batch_size", self.batch_size, 1)
        check_int_at_least("max_epochs", self.max_epochs, 1)
        check_one_of("lr_schedule", self.lr_schedule, LR_SCHEDULES)
        check_nonempty("sizes", self.sizes)
        check_each("sizes", self.sizes, check_int_at_least, 1)
        if list(self.sizes) != sorted(set(self.sizes)):
            raise ValueError(f"sizes must be increasing, got {self.sizes}")
        check_int_at_least("gate_min_width", self.gate_min_width, 1)
        check_probability("de_alpha", self.de_alpha)
        check_in_range("min_disagreement_digits", self.min_disagreement_digits, 0.0, 1.0)
        check_in_range("min_disagreement", self.min_disagreement, 0.0, 1.0)
        check_each("superiority_gated", self.superiority_gated, check_one_of, DATASETS)
        check_int_at_least("n_pairs", self.n_pairs, 1)
        check_nonempty("estimate_sizes", self.estimate_sizes)
        check_each("estimate_sizes", self.estimate_sizes, check_int_at_least, 1)
        check_positive("estimate_tolerance", self.estimate_tolerance)
        if self.hetero_dataset:
            check_one_of("hetero_dataset", self.hetero_dataset, ("digits", "synthetic", "wine", "breast_cancer"))
        check_int_at_least("hetero_wide", self.hetero_wide, 1)
        check_int_at_least("hetero_narrow", self.hetero_narrow, 1)
        check_int_at_least("hetero_narrow_members", self.hetero_narrow_members, 1)
        check_int_at_least("hetero_narrow_epochs", self.hetero_narrow_epochs, 1)
        check_int_at_least("control_members", self.control_members, 0)
        if self.control_members == 1:
            raise ValueError("control_members must be 0 (skip) or >= 2")
        check_one_of("wider_baseline", self.wider_baseline, (True, False))
        check_int_at_least("mc_subsets", self.mc_subsets, 0)
        check_text("data_dir", self.data_dir, "a folder path (text)")
        check_int_at_least("image_train", self.image_train, 100)
        check_int_at_least("threads", self.threads, 1)
        check_one_of("figures", self.figures, (True, False))
        check_one_of("save_preds", self.save_preds, (True, False))

    @property
    def parsed_runs(self) -> list[tuple[str, str, int, int]]:
        """The runs as (dataset, model, width, members)."""
        return [parse_run(s) for s in self.runs]


FULL_RUNS = tuple(f"cifar10:cnn:{k}:100" for k in (10, 20, 40, 80, 160))

PRESETS: dict[str, Config] = {
    # ci: the gated claims only (digits k = 64 M = 32, synthetic k = 64 M = 16, heterogeneous, identical control):
    # `iclr25-ensemble-homogeneity reproduce --scale ci`, about 40 s of CPU time on one core.
    "ci": Config(runs=("digits:mlp:64:32", "synthetic:mlp:64:16"), wider_baseline=False, mc_subsets=0, figures=False),
    "quick": Config(),
    # full (one GPU): `iclr25-ensemble-homogeneity reproduce --scale full data_dir=/path/with/cifar` — the paper's
    # CIFAR-10 CNNs, k in {10, 20, 40, 80, 160}, M = 100, SGD without momentum or augmentation, Nakkiran et al.'s
    # lr 0.1/sqrt(1 + t/512), batch 128, until every member interpolates or 200 epochs. Without CIFAR files in
    # data_dir the same pipeline runs on the generated image task (say so). Unmeasured here (no GPU): see README.
    "full": Config(
        runs=FULL_RUNS,
        batch_size=128,
        max_epochs=200,
        lr_schedule="inverse_sqrt",
        sizes=(1, 2, 4, 8, 16, 32, 64, 100),
        estimate_sizes=(4, 16, 100),
        superiority_gated=("cifar10", "cifar100", "tinyimagenet", "image"),
        hetero_dataset="digits",
        control_members=0,
        wider_baseline=False,
        mc_subsets=20,
        threads=4,
    ),
}
