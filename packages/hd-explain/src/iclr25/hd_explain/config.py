"""The reproduction's config and presets: standard library only, so bad values are refused before torch loads."""

from __future__ import annotations

from dataclasses import dataclass

from iclr25.shared.validate import (
    check_each,
    check_int_at_least,
    check_nonnegative,
    check_one_of,
    check_positive,
    check_text,
)

SECTIONS: tuple[str, ...] = ("rectangular", "digits", "mislabel", "images")
BANDWIDTHS: tuple[str, ...] = ("dim_x", "dim_d")
IMAGE_DATASETS: tuple[str, ...] = ("cifar10", "synthetic")
PERTURBATIONS: tuple[str, ...] = ("noise", "flip")
LOSSES: tuple[str, ...] = ("ce", "neg_prob")


@dataclass(frozen=True)
class Config:
    """Quick: `iclr25-hd-explain reproduce --scale quick` (about 1 min on 2 busy CPU cores): Rectangular
    (10 seeds) HD-Explain hit about 0.55 vs at most 0.13 for IF/TracIn/RPS; digits (5 seeds) hit 1.0 for
    every HD-Explain variant vs at most 0.2; mislabel recall@70 of 1.0 for HD-Explain and HD-Explain*.
    """

    sections: tuple[str, ...] = ("rectangular", "digits", "mislabel")
    # shared protocol (official experiments/explainability.py, the paper's hit rate / coverage)
    probes: int = 100  # test points per seed, drawn with replacement
    k: int = 3  # top-k of the hit rate / coverage
    noise_scale: float = 0.01  # half-width of the uniform noise = noise_scale * Var(selected inputs)
    loss: str = "ce"  # IF / TracIn loss; "neg_prob" = the official nll_loss on probabilities (parity)
    if_damping: float = 0.01  # official LiSSA damping, added to the exact Hessian
    rps_lambda: float = 0.003  # official representer-point L2
    rps_iters: int = 3000  # official refit iterations
    # Rectangular 2-D (official dataloaders/synthetic.py; spec 6a.1)
    rect_seeds: int = 10
    rect_points: int = 500
    rect_grid: int = 4
    rect_classes: int = 4
    rect_data_seed: int = 42  # official
    rect_hidden: tuple[int, ...] = (10, 10)
    rect_epochs: int = 100
    rect_lr: float = 0.01  # official trainer: Adam 0.01
    rect_batch: int = 100
    rect_bandwidth: str = "dim_x"  # h = dim(x) = 2, the version that made the paper's 2-D results
    # sklearn digits (spec 6a.2-3)
    digits_seeds: int = 5
    digits_pool: int = 1400
    digits_hidden: tuple[int, ...] = (64, 64)
    digits_epochs: int = 30
    digits_lr: float = 0.001
    digits_batch: int = 32
    n_flipped: int = 70  # 5 % of the pool, y -> (y + 1) mod 10
    realistic_seed_offset: int = 100  # the model retrained on corrupted labels uses seed + this
    # images (full preset): ResNet-18 on CIFAR-10, pool = every pool_every-th training image
    image_dataset: str = "cifar10"  # falls back to random-label synthetic images when data_dir has no CIFAR-10
    data_dir: str = ""
    image_train_size: int = 0  # 0: the whole training set (synthetic: 5000 images)
    image_size: int = 32  # side of the synthetic images (CIFAR-10 is 32)
    image_seeds: int = 30
    pool_every: int = 10
    image_epochs: int = 30
    image_lr: float = 0.001
    image_batch: int = 128
    image_width: int = 64  # ResNet-18 base width
    perturbations: tuple[str, ...] = ("noise", "flip")
    temperatures: tuple[float, ...] = (0.03, 0.06, 0.1, 0.3, 0.6, 1.0, 3.0, 6.0)  # paper's RBF sweep
    figures: bool = True

    def __post_init__(self) -> None:
        check_each("sections", self.sections, check_one_of, SECTIONS)
        if not self.sections:
            raise ValueError(f"sections must name at least one of {', '.join(SECTIONS)}")
        if "mislabel" in self.sections and "digits" not in self.sections:
            raise ValueError("sections: mislabel reuses the digits models; add digits")
        check_int_at_least("probes", self.probes, 1)
        check_int_at_least("k", self.k, 1)
        check_positive("noise_scale", self.noise_scale)
        check_one_of("loss", self.loss, LOSSES)
        check_nonnegative("if_damping", self.if_damping)
        check_positive("rps_lambda", self.rps_lambda)
        check_int_at_least("rps_iters", self.rps_iters, 1)
        for prefix in ("rect", "digits"):
            check_int_at_least(f"{prefix}_seeds", getattr(self, f"{prefix}_seeds"), 1)
            check_int_at_least(f"{prefix}_epochs", getattr(self, f"{prefix}_epochs"), 0)
            check_positive(f"{prefix}_lr", getattr(self, f"{prefix}_lr"))
            check_int_at_least(f"{prefix}_batch", getattr(self, f"{prefix}_batch"), 1)
            check_each(f"{prefix}_hidden", getattr(self, f"{prefix}_hidden"), check_int_at_least, 1)
        check_int_at_least("rect_points", self.rect_points, self.k + 1)
        check_int_at_least("rect_grid", self.rect_grid, 1)
        check_int_at_least("rect_classes", self.rect_classes, 2)
        check_int_at_least("rect_data_seed", self.rect_data_seed, 0)
        check_one_of("rect_bandwidth", self.rect_bandwidth, BANDWIDTHS)
        check_int_at_least("digits_pool", self.digits_pool, max(self.k + 1, 20))
        if self.digits_pool >= 1797:
            raise ValueError(f"digits_pool must be < 1797 (the digits set), got {self.digits_pool}")
        check_int_at_least("n_flipped", self.n_flipped, 1)
        if self.n_flipped * 2 > self.digits_pool:
            raise ValueError(f"n_flipped must be at most half of digits_pool, got {self.n_flipped}")
        check_int_at_least("realistic_seed_offset", self.realistic_seed_offset, 1)
        check_one_of("image_dataset", self.image_dataset, IMAGE_DATASETS)
        check_text("data_dir", self.data_dir, "a folder path (text)")
        check_int_at_least("image_train_size", self.image_train_size, 0)
        check_int_at_least("image_size", self.image_size, 4)
        check_int_at_least("image_seeds", self.image_seeds, 1)
        check_int_at_least("pool_every", self.pool_every, 1)
        check_int_at_least("image_epochs", self.image_epochs, 0)
        check_positive("image_lr", self.image_lr)
        check_int_at_least("image_batch", self.image_batch, 1)
        check_int_at_least("image_width", self.image_width, 1)
        check_each("perturbations", self.perturbations, check_one_of, PERTURBATIONS)
        check_each("temperatures", self.temperatures, check_positive)
        check_one_of("figures", self.figures, (True, False))


PRESETS: dict[str, Config] = {
    "quick": Config(),
    # Full: `iclr25-hd-explain reproduce --scale full data_dir=<CIFAR-10 python folder> --device cuda`:
    # the quick sections plus ResNet-18 on CIFAR-10 (30 epochs), pool = every 10th training image (5,000),
    # 30 probe seeds x {noise, flip}, every method, RBF temperatures 0.03-6. One GPU: about 15-25 min
    # (training ~8-15 min, explanations ~5 min); without data_dir it runs on random-label synthetic images.
    "full": Config(sections=SECTIONS),
}
