"""The reproduction's and the `train` verb's configs and presets: standard library only, so bad values are
refused before torch loads."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any

from iclr25.dist_loss.names import HEAD_INITS, METHODS
from iclr25.shared.validate import (
    AtLeast,
    AtMost,
    Each,
    FiniteFloat,
    Flag,
    IsText,
    NonEmpty,
    NonNegativeFloat,
    NonNegativeInt,
    OneOf,
    PositiveFloat,
    Satisfies,
    Validated,
    check_finite,
)

GATE_METHODS = ("l1", "dist")
MAX_DATA_SCALE = 64  # x AgeDB-DIR's 12,208 train labels: ~0.8M samples, ~0.1 GB of features (full uses 16)


def _check_gate_methods(name: str, value: Any) -> None:
    """The methods include `GATE_METHODS` (the gated claims compare them)."""
    missing = [m for m in GATE_METHODS if m not in value]
    if missing:
        raise ValueError(f"{name} must include {', '.join(GATE_METHODS)} (the gated claims compare them)")


def _check_existing_file(name: str, value: Any) -> None:
    """An empty path, or one of an existing file."""
    if value and not Path(value).is_file():
        raise ValueError(f"{name} {value} does not exist")


def _check_split_fraction(name: str, value: Any) -> None:
    """A share of a file without splits: in (0, 0.5)."""
    check_finite(name, value)
    if not 0 < value < 0.5:
        raise ValueError(f"{name} must be in (0, 0.5), got {value!r}")


PathOrEmpty = Annotated[str, IsText("text (a path or empty)")]
ExistingFileOrEmpty = Annotated[
    str,
    IsText("text (a path or empty)"),
    Satisfies(_check_existing_file, "an existing file or empty", "no/such/file.csv"),
]
SplitFraction = Annotated[float, Satisfies(_check_split_fraction, "in (0, 0.5)", 0.5)]
ColumnName = Annotated[str, IsText("a column name")]


def _check_user_data(config: Config | TrainConfig) -> None:
    """The rules across the label grid's and the shot thresholds' fields of a config (`userdata`)."""
    if config.max_label <= config.min_label:
        raise ValueError(f"max_label must be > min_label, got {config.max_label} <= {config.min_label}")
    if config.many_shot < config.few_shot:
        raise ValueError(f"many_shot must be >= few_shot, got {config.many_shot} < {config.few_shot}")


# More size limits (see MAX_DATA_SCALE), refused before any work. The largest preset (full): ResNet-50 (3, 4, 6, 3)
# of width 64 on 224-pixel images, 90 epochs of batch 512, benchmark batches up to 4 096.
MAX_SEEDS = 1000
MAX_WIDTH = 8192  # feature, hidden and ResNet widths
MAX_DEPTH = 256  # hidden layers, ResNet blocks per stage
MAX_EPOCHS = 100_000  # epochs, and the epochs of the learning-rate steps
MAX_BATCH = 1_048_576  # training and benchmark batches
MAX_REPS = 10_000  # timed repeats
MAX_THREADS = 1024  # threads and loader workers
MAX_IMAGE = 4096  # image side, pixels


@dataclass(frozen=True)
class Config(Validated):
    """Quick: `iclr25-dist-loss reproduce --scale quick` (2-4 min on 2 CPU cores): RRT+Dist few-shot MAE ~0.8x RRT+L1.

    Full: `iclr25-dist-loss reproduce --scale full` (one GPU, an estimated ~45 min, not measured): the same
    protocol on 16x the data with the paper's 90-epoch schedule (LR x0.1 at epochs 60 and 80). With
    `data_dir=/path/to/agedb` (a DIR meta CSV + images) it trains the paper's ResNet-50 on the real images
    with the same two-stage schedule instead (`images.image_stage1_and_heads`).
    """

    seeds: Annotated[int, AtLeast(1), AtMost(MAX_SEEDS)] = 3
    # multiplies the AgeDB-DIR histograms (1: 12,208 train labels)
    data_scale: Annotated[int, AtLeast(1), AtMost(MAX_DATA_SCALE)] = 1
    dim: Annotated[int, AtLeast(1), AtMost(MAX_WIDTH)] = 16
    label_noise: NonNegativeFloat = 8.0  # spec 6a: makes L1 shrink toward the dense ages
    feature_noise: NonNegativeFloat = 0.05
    hidden: Annotated[int, AtLeast(1), AtMost(MAX_WIDTH)] = 64
    depth: Annotated[int, AtLeast(0), AtMost(MAX_DEPTH)] = 2  # 0: the head sits on the raw features
    epochs_stage1: Annotated[int, AtLeast(1), AtMost(MAX_EPOCHS)] = 30
    epochs_stage2: Annotated[int, AtLeast(1), AtMost(MAX_EPOCHS)] = 30
    # epochs at which the LR drops x0.1 (paper: 60, 80 of 90)
    lr_steps: Annotated[tuple[int, ...], Each(AtLeast(1), AtMost(MAX_EPOCHS))] = ()
    batch_size: Annotated[int, AtLeast(2), AtMost(MAX_BATCH)] = 512  # official trainer
    lr: PositiveFloat = 1e-3  # official trainer (Adam)
    lam: NonNegativeFloat = 1.0  # official `distribution_loss_term_weight`
    eps: PositiveFloat = 0.1  # official `regularization_strength` (train.py)
    bw: PositiveFloat = 0.5  # official KDE factor (train.py)
    min_label: FiniteFloat = 0.0
    max_label: FiniteFloat = 120.0
    step: PositiveFloat = 1.0
    methods: Annotated[
        tuple[str, ...],
        NonEmpty(),
        Each(OneOf(METHODS)),
        Satisfies(_check_gate_methods, "including " + ", ".join(GATE_METHODS), ("l1",)),
    ] = ("l1", "dist", "inverse", "dist_inverse", "sqinv_lds", "sqinv_lds_fds", "bmc")
    # RRT head init (`HEAD_INITS`). Deviation: the official trainer re-initialises the head at random
    # ("official"); a random head can have a backward ordering amplified by the distribution term, so
    # RRT + Dist diverges on some seeds. Zero weights let the sample term set the ordering first.
    rrt_head_init: Annotated[str, OneOf(HEAD_INITS)] = "zero"
    compare_default_init: Flag = True  # also run RRT L1/Dist heads with the "default" and "official" inits
    end_to_end: Flag = True  # also train the whole MLP with Dist Loss (reported, not gated)
    bench_batches: Annotated[tuple[int, ...], NonEmpty(), Each(AtLeast(2), AtMost(MAX_BATCH))] = (256, 4096)
    bench_repeats: Annotated[int, AtLeast(1), AtMost(MAX_REPS)] = 20
    # tiny models: one thread is fastest on a shared 2-core machine (0: all cores)
    threads: Annotated[int, AtLeast(0), AtMost(MAX_THREADS)] = 1
    figures: Flag = True
    # Real images (full scale): a DIR folder (meta CSV `age, path, split` + images) trains a ResNet instead
    # of the synthetic MLP task; "" keeps the synthetic task.
    data_dir: PathOrEmpty = ""
    meta_csv: PathOrEmpty = ""  # relative to data_dir; default: the folder's only CSV (agedb.csv / imdb_wiki.csv)
    image_size: Annotated[int, AtLeast(8), AtMost(MAX_IMAGE)] = 224  # DIR benchmark
    resnet_layers: Annotated[tuple[int, ...], NonEmpty(), Each(AtLeast(1), AtMost(MAX_DEPTH))] = (
        3,
        4,
        6,
        3,
    )  # ResNet-50
    resnet_width: Annotated[int, AtLeast(1), AtMost(MAX_WIDTH)] = 64
    num_workers: Annotated[int, AtLeast(0), AtMost(MAX_THREADS)] = 4
    checkpoint_every: NonNegativeInt = 0  # epochs between checkpoints of every fit (0: none); --checkpoint-every too
    # A user's own data instead of the synthetic task (`userdata.load_user_data`): a CSV/NPZ table, or ECG-shaped
    # signals (.npy, N x leads x T) with `labels_file`; set the label grid (min_label, max_label, step) to the data.
    data_file: ExistingFileOrEmpty = ""
    labels_file: ExistingFileOrEmpty = ""  # the labels CSV of .npy ECG signals
    target: ColumnName = ""  # label column ("" : "target" in a table CSV, "label" in an ECG labels CSV)
    val_fraction: SplitFraction = 0.2  # random split of a file without splits (seeded by the run seed)
    test_fraction: SplitFraction = 0.2
    many_shot: FiniteFloat = 100.0  # DIR: a label bin is many-shot above this many training samples
    few_shot: NonNegativeFloat = 20.0  # ... and few-shot below this many
    scale_shots: Flag = True  # with data_file: thresholds x the data's mean count per bin / AgeDB-DIR's

    def __post_init__(self) -> None:
        super().__post_init__()
        _check_user_data(self)
        if self.data_file and self.data_dir:
            raise ValueError("give data_file (a table or ECG signals) or data_dir (DIR images), not both")
        if self.labels_file and not self.data_file:
            raise ValueError("labels_file goes with data_file (ECG signals in a .npy)")


PRESETS: dict[str, Config] = {
    "ci": Config(
        methods=GATE_METHODS,
        end_to_end=False,
        compare_default_init=False,
        bench_batches=(256,),
        bench_repeats=5,
        figures=False,
    ),
    "quick": Config(),
    "full": Config(
        data_scale=16, epochs_stage1=90, epochs_stage2=90, lr_steps=(60, 80), threads=0, checkpoint_every=10
    ),
}


@dataclass(frozen=True)
class TrainConfig(Validated):
    """The `train` verb's settings (its flags are made from these fields): the reproduction's defaults."""

    epochs: Annotated[int, AtLeast(1), AtMost(MAX_EPOCHS)] = 30
    batch_size: Annotated[int, AtLeast(2), AtMost(MAX_BATCH)] = 512
    lr: PositiveFloat = 1e-3
    lam: NonNegativeFloat = 1.0  # weight of the distribution term
    eps: PositiveFloat = 0.1  # soft-sort regularisation strength
    bw: PositiveFloat = 0.5  # KDE bandwidth factor
    threads: Annotated[int, AtLeast(1), AtMost(MAX_THREADS)] = 1  # CPU threads: one is fastest for these small MLPs
    # A user's --data file (`userdata.load_user_data`): its label grid, label column, split and shot thresholds.
    min_label: FiniteFloat = field(
        default=0.0, metadata={"help": "lowest label of the grid (pseudo-labels, bins, regions)"}
    )
    max_label: FiniteFloat = field(default=120.0, metadata={"help": "highest label of the grid"})
    step: PositiveFloat = field(default=1.0, metadata={"help": "label grid step (bin width)"})
    target: ColumnName = field(
        default="", metadata={"help": "label column of a CSV (empty: target; ECG labels: label)"}
    )
    val_fraction: SplitFraction = field(default=0.2, metadata={"help": "validation share of a file without splits"})
    test_fraction: SplitFraction = field(default=0.2, metadata={"help": "test share of a file without splits"})
    many_shot: FiniteFloat = field(
        default=100.0, metadata={"help": "many-shot: more training samples per bin than this"}
    )
    few_shot: NonNegativeFloat = field(
        default=20.0, metadata={"help": "few-shot: fewer training samples per bin than this"}
    )
    scale_shots: Flag = field(
        default=True, metadata={"help": "with --data: rescale the thresholds to keep DIR's region shares"}
    )

    def __post_init__(self) -> None:
        super().__post_init__()
        _check_user_data(self)


from iclr25.shared.smoke import SmokeSpec  # noqa: E402

SMOKE = SmokeSpec(
    build="iclr25.dist_loss.smoke:build",
    full_steps=1_134_000,
    what="tabular MLP 16-64-64-1 with Dist Loss, batch 512 (the full preset runs the synthetic data)",
    steps_note="estimate: 3 seeds x 7 methods x 180 epochs x 300 batches of 512",
)
