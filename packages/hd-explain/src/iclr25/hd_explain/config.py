"""The reproduction's config and presets: standard library only, so bad values are refused before torch loads."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated

from iclr25.shared.validate import (
    AtLeast,
    AtMost,
    Each,
    Flag,
    IsInt,
    IsText,
    NonEmpty,
    NonNegativeFloat,
    NonNegativeInt,
    OneOf,
    Positive,
    PositiveFloat,
    PositiveInt,
    Satisfies,
    Validated,
    check_int_at_least,
)

SECTIONS: tuple[str, ...] = ("rectangular", "digits", "mislabel", "images")
BANDWIDTHS: tuple[str, ...] = ("dim_x", "dim_d")
IMAGE_DATASETS: tuple[str, ...] = ("cifar10", "synthetic")
PERTURBATIONS: tuple[str, ...] = ("noise", "flip")
LOSSES: tuple[str, ...] = ("ce", "neg_prob")


def _check_below_digits_size(name: str, value: int) -> None:
    """`value` is smaller than the digits set (1797 images)."""
    if value >= 1797:
        raise ValueError(f"{name} must be < 1797 (the digits set), got {value}")


# Size limits, refused before any work (past them a run would exhaust memory or run for months). The largest
# preset: 30 seeds, ResNet-18 of base width 64 on 32-pixel CIFAR-10 (50 000 images), batch 128, 100 epochs.
MAX_SEEDS = 1000
MAX_POINTS = 10_000_000  # test probes, points, pools, training images
MAX_K = 10_000  # top-k
MAX_ITERS = 10_000_000
MAX_GRID = 1024  # cells a side of the rectangle grid
MAX_CLASSES = 100_000
MAX_WIDTH = 8192  # hidden units, base widths
MAX_EPOCHS = 100_000
MAX_BATCH = 65_536
MAX_IMAGE = 1024  # image side, pixels
MAX_STEPS = 100_000_000
MAX_WORKERS = 1024  # checkpoint intervals (optimiser steps)


@dataclass(frozen=True)
class Config(Validated):
    """Quick: `iclr25-hd-explain reproduce --scale quick` (about 1 min on 2 busy CPU cores): Rectangular
    (10 seeds) HD-Explain hit about 0.55 vs at most 0.13 for IF/TracIn/RPS; digits (5 seeds) hit 1.0 for
    every HD-Explain variant vs at most 0.2; mislabel recall@70 with a model retrained on the corrupted labels
    about 0.7 (HD-Explain) and 0.64 (HD-Explain*) vs 0.13 for RPS.
    """

    sections: Annotated[tuple[str, ...], NonEmpty(), Each(OneOf(SECTIONS))] = ("rectangular", "digits", "mislabel")
    # shared protocol (official experiments/explainability.py, the paper's hit rate / coverage)
    probes: Annotated[int, AtLeast(1), AtMost(MAX_POINTS)] = 100  # test points per seed, drawn with replacement
    k: Annotated[int, AtLeast(1), AtMost(MAX_K)] = 3  # top-k of the hit rate / coverage
    noise_scale: PositiveFloat = 0.01  # half-width of the uniform noise = noise_scale * Var(selected inputs)
    # digits only, reported: a second probe set with much larger noise, where input similarity no longer saturates
    hard_noise_scale: PositiveFloat = 3.0
    # IF / TracIn loss; "neg_prob" = the official nll_loss on probabilities (parity)
    loss: Annotated[str, OneOf(LOSSES)] = "ce"
    if_damping: NonNegativeFloat = 0.01  # official LiSSA damping, added to the exact Hessian
    rps_lambda: PositiveFloat = 0.003  # official representer-point L2
    rps_iters: Annotated[int, AtLeast(1), AtMost(MAX_ITERS)] = 3000  # official refit iterations
    # Rectangular 2-D (official dataloaders/synthetic.py; spec 6a.1)
    rect_seeds: Annotated[int, AtLeast(1), AtMost(MAX_SEEDS)] = 10
    rect_points: Annotated[int, IsInt(), AtMost(MAX_POINTS)] = 500
    rect_grid: Annotated[int, AtLeast(1), AtMost(MAX_GRID)] = 4
    rect_classes: Annotated[int, AtLeast(2), AtMost(MAX_CLASSES)] = 4
    rect_data_seed: NonNegativeInt = 42  # official
    rect_hidden: Annotated[tuple[int, ...], Each(AtLeast(1), AtMost(MAX_WIDTH))] = (10, 10)
    rect_epochs: Annotated[int, AtLeast(0), AtMost(MAX_EPOCHS)] = 100
    rect_lr: PositiveFloat = 0.01  # official trainer: Adam 0.01
    rect_batch: Annotated[int, AtLeast(1), AtMost(MAX_BATCH)] = 100
    # h = dim(x) = 2, the version that made the paper's 2-D results
    rect_bandwidth: Annotated[str, OneOf(BANDWIDTHS)] = "dim_x"
    # sklearn digits (spec 6a.2-3)
    digits_seeds: Annotated[int, AtLeast(1), AtMost(MAX_SEEDS)] = 5
    digits_pool: Annotated[
        int, AtLeast(20), Satisfies(_check_below_digits_size, "< 1797 (digits set)", 1797), AtMost(MAX_POINTS)
    ] = 1400
    digits_hidden: Annotated[tuple[int, ...], Each(AtLeast(1), AtMost(MAX_WIDTH))] = (64, 64)
    digits_epochs: Annotated[int, AtLeast(0), AtMost(MAX_EPOCHS)] = 30
    digits_lr: PositiveFloat = 0.001
    digits_batch: Annotated[int, AtLeast(1), AtMost(MAX_BATCH)] = 32
    n_flipped: Annotated[int, AtLeast(1), AtMost(MAX_POINTS)] = 70  # 5 % of the pool, y -> (y + 1) mod 10
    realistic_seed_offset: PositiveInt = 100  # the model retrained on corrupted labels uses seed + this
    # images (full preset): ResNet-18 on CIFAR-10, pool = every pool_every-th training image
    # falls back to random-label synthetic images when data_dir has no CIFAR-10
    image_dataset: Annotated[str, OneOf(IMAGE_DATASETS)] = "cifar10"
    data_dir: Annotated[str, IsText("a folder path (text)")] = ""
    # 0: the whole training set (synthetic: 5000 images)
    image_train_size: Annotated[int, AtLeast(0), AtMost(MAX_POINTS)] = 0
    image_size: Annotated[int, AtLeast(4), AtMost(MAX_IMAGE)] = 32  # side of the synthetic images (CIFAR-10 is 32)
    image_seeds: Annotated[int, AtLeast(1), AtMost(MAX_SEEDS)] = 30
    pool_every: PositiveInt = 10
    image_epochs: Annotated[int, AtLeast(0), AtMost(MAX_EPOCHS)] = 30
    image_lr: PositiveFloat = 0.001
    image_batch: Annotated[int, AtLeast(1), AtMost(MAX_BATCH)] = 128
    image_width: Annotated[int, AtLeast(1), AtMost(MAX_WIDTH)] = 64  # ResNet-18 base width
    # checkpoint the ResNet-18 every this many Adam steps (0: only with --checkpoint-every or --resume)
    checkpoint_every: Annotated[int, AtLeast(0), AtMost(MAX_STEPS)] = 0
    perturbations: Annotated[tuple[str, ...], Each(OneOf(PERTURBATIONS))] = ("noise", "flip")
    # paper's RBF sweep
    temperatures: Annotated[tuple[float, ...], Each(Positive())] = (0.03, 0.06, 0.1, 0.3, 0.6, 1.0, 3.0, 6.0)
    figures: Flag = True
    # processes for the seeds of the rectangular and digits sections (the results of one process, in seed order)
    workers: Annotated[int, AtLeast(1), AtMost(MAX_WORKERS)] = 1

    def __post_init__(self) -> None:
        super().__post_init__()
        if "mislabel" in self.sections and "digits" not in self.sections:
            raise ValueError("sections: mislabel reuses the digits models; add digits")
        check_int_at_least("rect_points", self.rect_points, self.k + 1)
        check_int_at_least("digits_pool", self.digits_pool, max(self.k + 1, 20))
        if self.n_flipped * 2 > self.digits_pool:
            raise ValueError(f"n_flipped must be at most half of digits_pool, got {self.n_flipped}")


PRESETS: dict[str, Config] = {
    "quick": Config(),
    # Full: `iclr25-hd-explain reproduce --scale full data_dir=<CIFAR-10 python folder> --device cuda`:
    # the quick sections plus ResNet-18 on CIFAR-10 (30 epochs), pool = every 10th training image (5,000),
    # 30 probe seeds x {noise, flip}, every method, RBF temperatures 0.03-6. One GPU: about 10-15 min, projected
    # (training ~3-10 min, explanations ~5 min; README); without data_dir it runs on random-label synthetic images.
    "full": Config(sections=SECTIONS, checkpoint_every=1000),  # about 2.5 CIFAR-10 epochs of batch 128
}


from iclr25.shared.smoke import SmokeSpec  # noqa: E402

SMOKE = SmokeSpec(
    build="iclr25.hd_explain.smoke:build",
    full_steps=11_730,
    what="ResNet-18 width 64 on 32x32 CIFAR-10, batch 128",
    steps_note="30 epochs x 391 batches (one network; the MLP sections are negligible)",
    cpu_scale="batch 16 of 128",
)
