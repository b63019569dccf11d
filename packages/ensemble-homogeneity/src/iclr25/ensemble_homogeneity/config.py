"""Presets of the reproduction (spec §6). Standard library only: bad values are refused before numpy or torch load.

A run is "dataset:model:width:members", e.g. "digits:mlp:64:32": a homogeneous ensemble of `members`
width-`width` networks trained with the same recipe, differing only in init seed and data order.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated

from iclr25.shared.validate import (
    AtLeast,
    AtMost,
    ClosedProbability,
    Each,
    Flag,
    Increasing,
    IsText,
    NonEmpty,
    OneOf,
    OpenProbability,
    PositiveFloat,
    Satisfies,
    Validated,
    ZeroOrAtLeast,
    check_int_at_least,
    check_one_of,
)

DATASETS = ("digits", "synthetic", "wine", "breast_cancer", "cifar10", "cifar100", "tinyimagenet", "image")
IMAGE_DATASETS = ("cifar10", "cifar100", "tinyimagenet", "image")
TABULAR_DATASETS = ("digits", "synthetic", "wine", "breast_cancer")
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
    if w > MAX_WIDTH or m > MAX_MEMBERS:
        raise ValueError(f"run {spec!r}: width must be <= {MAX_WIDTH} and members <= {MAX_MEMBERS}")
    return dataset, model, w, m


def _check_run(name: str, value: str) -> None:
    """`value` is a run spec `parse_run` accepts; its error is prefixed with `name` (e.g. `runs[0]`)."""
    try:
        parse_run(value)
    except ValueError as e:
        raise ValueError(f"{name}: {e}") from None


def _check_hetero_dataset(name: str, value: str) -> None:
    """`value` is "" (skip) or a tabular dataset."""
    if value:
        check_one_of(name, value, TABULAR_DATASETS)


# Size limits, refused before any work (past them a run would exhaust memory or run for months). The largest
# preset (full): CIFAR-10 CNNs of width up to 160, M = 100 members, 200 epochs of batch 128.
MAX_WIDTH = 4096  # model widths (runs, the heterogeneous members)
MAX_MEMBERS = 1000  # ensemble members and sizes
MAX_EPOCHS = 100_000
MAX_BATCH = 65_536
MAX_SUBSETS = 1_000_000  # random pairs and subsets
MAX_IMAGES = 10_000_000  # training images
MAX_THREADS = 1024
MAX_STEPS = 100_000_000  # checkpoint intervals (optimisation steps)


@dataclass(frozen=True)
class Config(Validated):
    """Quick: `iclr25-ensemble-homogeneity reproduce --scale quick` (spec §6a; about 1 min of CPU time, 1-4 min of
    wall time on 2 busy CPU cores) trains digits k in {16, 64} (M = 32) and synthetic k = 64 (M = 16) to
    interpolation and reaches: DE median KS p ~0.6 at k = 64 with 1.7% / 22% disagreement; synthetic ensemble
    true-class Brier ~0.20 vs best member ~0.24; two-model estimates within ~2% of the measured curve.
    """

    runs: Annotated[
        tuple[str, ...], NonEmpty(), Each(Satisfies(_check_run, "dataset:model:width:members", "digits:mlp"))
    ] = ("digits:mlp:16:32", "digits:mlp:64:32", "synthetic:mlp:64:16")
    lr: PositiveFloat = 0.1  # spec §6a: plain SGD, no momentum, no weight decay
    batch_size: Annotated[int, AtLeast(1), AtMost(MAX_BATCH)] = 64  # spec §6a
    # spec §6a: until every member fits the training set, or 300 epochs
    max_epochs: Annotated[int, AtLeast(1), AtMost(MAX_EPOCHS)] = 300
    # "inverse_sqrt": Nakkiran et al. 0.1/sqrt(1 + floor(t/512))
    lr_schedule: Annotated[str, OneOf(LR_SCHEDULES)] = "constant"
    # ensemble sizes of the curves (those <= members are used)
    sizes: Annotated[tuple[int, ...], NonEmpty(), Each(AtLeast(1), AtMost(MAX_MEMBERS)), Increasing()] = (
        1,
        2,
        4,
        8,
        16,
        32,
    )
    # DE and the estimator are gated for widths >= this (spec §10.2)
    gate_min_width: Annotated[int, AtLeast(1), AtMost(MAX_WIDTH)] = 64
    de_alpha: OpenProbability = 0.05  # gated: median pairwise KS p-value > de_alpha
    min_disagreement_digits: ClosedProbability = 0.01  # gated: mean prediction disagreement > this on digits
    min_disagreement: ClosedProbability = 0.05  # ... and on every other dataset
    # datasets where "ensemble < best member" is gated
    superiority_gated: Annotated[tuple[str, ...], Each(OneOf(DATASETS))] = ("synthetic",)
    n_pairs: Annotated[int, AtLeast(1), AtMost(MAX_SUBSETS)] = 10  # random pairs of the two-model estimate
    estimate_sizes: Annotated[tuple[int, ...], NonEmpty(), Each(AtLeast(1), AtMost(MAX_MEMBERS))] = (4, 16)
    estimate_tolerance: PositiveFloat = 0.10  # gated: |estimate - measured| / measured
    # gated: the closed-form subset-mean curve against directly measured random M-member ensembles
    curve_subsets: Annotated[int, AtLeast(2), AtMost(MAX_SUBSETS)] = 200  # random subsets per size
    curve_z: PositiveFloat = 4.0  # |direct mean - closed form| <= curve_z standard errors (+ 1e-9)
    # heterogeneous counter-example ("" = skip)
    hetero_dataset: Annotated[
        str, Satisfies(_check_hetero_dataset, "'' (skip) or one of " + ", ".join(TABULAR_DATASETS), "mnist")
    ] = "digits"
    # one member of this width trained to interpolation ...
    hetero_wide: Annotated[int, AtLeast(1), AtMost(MAX_WIDTH)] = 256
    hetero_narrow: Annotated[int, AtLeast(1), AtMost(MAX_WIDTH)] = 4  # ... plus narrow members ...
    hetero_narrow_members: Annotated[int, AtLeast(1), AtMost(MAX_MEMBERS)] = 3
    hetero_narrow_epochs: Annotated[int, AtLeast(1), AtMost(MAX_EPOCHS)] = 5  # ... stopped after 5 epochs (spec §6a)
    # identical-members negative control on the first gated run (0 = skip)
    control_members: Annotated[int, ZeroOrAtLeast(2), AtMost(MAX_MEMBERS)] = 4
    # one model with the ensemble's parameter count, per tabular run (R8)
    wider_baseline: Flag = True
    # random subsets for the NLL / error curves (reported only; 0 = skip)
    mc_subsets: Annotated[int, AtLeast(0), AtMost(MAX_SUBSETS)] = 20
    # folder holding cifar-10-batches-py / cifar-100-python / tiny-imagenet-200; never downloaded
    data_dir: Annotated[str, IsText("a folder path (text)")] = ""
    # size of the generated image task used when data_dir has no CIFAR files
    image_train: Annotated[int, AtLeast(100), AtMost(MAX_IMAGES)] = 10000
    threads: Annotated[int, AtLeast(1), AtMost(MAX_THREADS)] = 1  # torch CPU threads (tiny matmuls run fastest on one)
    # processes that train an ensemble's members (in chunks; the members of workers=1, see training.train_homogeneous);
    # the other way to scale out is --devices (Fabric ranks): the two are not combined
    workers: Annotated[int, AtLeast(1), AtMost(MAX_THREADS)] = 1
    # checkpoint every this many SGD steps (0: only with --checkpoint-every or --resume); `--resume auto` continues
    checkpoint_every: Annotated[int, AtLeast(0), AtMost(MAX_STEPS)] = 0
    figures: Flag = True
    # write each run's test probabilities as preds_<run>.npz (about 1-2 MB each)
    save_preds: Flag = False

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
        checkpoint_every=2000,  # about 5 CIFAR-10 epochs of batch 128
    ),
}


from iclr25.shared.smoke import SmokeSpec  # noqa: E402

SMOKE = SmokeSpec(
    build="iclr25.ensemble_homogeneity.smoke:build",
    full_steps=391_000,
    what="CIFAR-10 CNN width 160, 100 members batched, batch 128 (the widest run)",
    steps_note="at most: 5 widths x 200 epochs x 391 batches; training stops at interpolation",
    cpu_scale="width 10 (the narrowest run), 2 of 100 members, batch 32",
)
