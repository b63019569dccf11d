"""The reproduction's and the `train` verb's configs and presets: standard library only, so bad values are
refused before torch loads."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Literal

from iclr25.shared.validate import (
    AtLeast,
    AtMost,
    Each,
    Flag,
    InRange,
    IsText,
    NonEmpty,
    NonNegativeFloat,
    NonNegativeInt,
    OneOf,
    OrNone,
    Positive,
    PositiveFloat,
    Validated,
)

GRU_TASKS = ("digits", "cifar")
GRU_SCHEDULES = ("constant", "cosine")
MODELS = ("resmlp", "gru", "lstm")
LM_CELLS = ("gru", "lstm")
BACKWARDS = ("bp", "hbp", "fpi")

# Size limits, refused before any work (a size past them would exhaust memory or run for days). The paper's
# largest settings: 54 residual blocks (ResNet110), hidden/width 512, sequences of L = 1024 (pixel CIFAR),
# 200 epochs, batches of 128; each limit leaves room above that.
MAX_DEPTH = 256  # residual blocks / layers
MAX_WIDTH = 2048  # hidden sizes and widths
MAX_LENGTH = 4096  # sequence lengths (time steps), and the iteration count k (k >= L is exact)
MAX_BATCH = 4096
MAX_EPOCHS = 1000
MAX_STEPS = 1_000_000

Ks = Annotated[tuple[int, ...], Each(AtLeast(0), AtMost(MAX_LENGTH))]  # k = 0 is Highway-BP's first iterate
K = Annotated[int, AtLeast(0), AtMost(MAX_LENGTH)]
Depth = Annotated[int, AtLeast(1), AtMost(MAX_DEPTH)]
Width = Annotated[int, AtLeast(1), AtMost(MAX_WIDTH)]
Length = Annotated[int, AtLeast(1), AtMost(MAX_LENGTH)]
Batch = Annotated[int, AtLeast(1), AtMost(MAX_BATCH)]
Epochs = Annotated[int, AtLeast(1), AtMost(MAX_EPOCHS)]
Steps = Annotated[int, AtLeast(1), AtMost(MAX_STEPS)]
StepCap = Annotated[int, AtLeast(0), AtMost(MAX_STEPS)]  # 0: no cap
FolderOrEmpty = Annotated[str, IsText("text (a folder path or empty)")]


# More limits: seeds, threads, validation windows (warm-up steps share MAX_STEPS).
MAX_SEEDS = 100
MAX_THREADS = 1024
MAX_WINDOWS = 10_000_000  # validation windows


@dataclass(frozen=True)
class Config(Validated):
    """Quick: `iclr25-highway-bp reproduce --scale quick`: the spec's plan (§6a) as written, 2 seeds.

    Parts: gradient fidelity (k = 0..L), the digits residual MLP with BP and HBP k ∈ {0, 1, 2, 4}, the
    pixel-digits GRU (loss at the end) with BPTT, HBP k ∈ {0, 2, 5, 10} and FPI k ∈ {2, 5, 10}, and a
    character-level GRU language model with a loss at every step (BPTT, HBP(2), FPI(2)).
    The `ci` preset gates the same claims on seed 0 with only the runs they need (see PRESETS).
    """

    seeds: Annotated[int, AtLeast(1), AtMost(MAX_SEEDS)] = 2  # spec §6a: 2 seeds
    # torch CPU threads: the ops are tiny, one thread avoids OpenMP spin-waits on shared cores
    threads: Annotated[int, AtLeast(1), AtMost(MAX_THREADS)] = 1
    # part 1: fidelity (spec §6a.1 / §9.5)
    fidelity: Flag = True
    fidelity_batch: Batch = 256
    fidelity_fpi: Flag = True  # also measure FPI's cosine (reported only)
    # part 2: digits-resmlp (spec §6a.2)
    mlp: Flag = True
    mlp_depth: Depth = 16
    mlp_width: Width = 64
    mlp_hidden: Width = 128
    mlp_epochs: Epochs = 30
    mlp_batch: Batch = 64
    mlp_lr: PositiveFloat = 1e-3
    mlp_ks: Ks = (0, 1, 2, 4)
    # part 3: sequence GRU (spec §6a.3); task "digits" (pixel digits) or "cifar" (pixel-CIFAR-10, full)
    gru: Flag = True
    gru_task: Literal["digits", "cifar"] = "digits"
    data_dir: FolderOrEmpty = ""  # CIFAR-10 python pickles for gru_task="cifar"
    gru_bptt: Flag = True  # the BPTT baseline (needed by the reported near-BPTT and speed claims only)
    gru_hidden: Width = 64
    gru_epochs: Epochs = 20
    gru_steps: StepCap = 0  # > 0: cap on training steps (Table 5 counts steps)
    gru_batch: Batch = 64
    gru_lr: PositiveFloat = 3e-3
    gru_schedule: Literal["constant", "cosine"] = "constant"
    gru_warmup: Annotated[int, AtLeast(0), AtMost(MAX_STEPS)] = 0
    gru_hbp_ks: Ks = (0, 2, 5, 10)
    gru_fpi_ks: Ks = (2, 5, 10)
    gate_k: K = 10  # the k of the gated GRU claims (paper: HBP reaches BPTT at k = 10, Fig. 4)
    # part 5: character-level RNN language model with a loss at every step (Table 2, Fig. 4; spec §6a.3 extra)
    lm: Flag = True
    # WikiText-103 raw (`wiki.{train,valid}.raw`); empty: the Python docs shipped with Python
    text_dir: FolderOrEmpty = ""
    lm_cells: Annotated[tuple[str, ...], NonEmpty(), Each(OneOf(LM_CELLS))] = ("gru",)
    lm_hidden: Width = 128
    lm_length: Length = 64  # L: time steps per training window (Table 5: 256)
    lm_batch: Batch = 32
    lm_steps: Steps = 600
    lm_lr: PositiveFloat = 3e-3
    lm_warmup: Annotated[int, AtLeast(0), AtMost(MAX_STEPS)] = 0
    lm_bptt: Flag = True
    lm_hbp_ks: Ks = (2,)
    lm_fpi_ks: Ks = (2,)
    lm_valid_windows: Annotated[int, AtLeast(0), AtMost(MAX_WINDOWS)] = 0  # > 0: cap on validation windows
    lm_needs_text: Flag = False  # True (full): without text_dir the part is skipped, as the ResNets without data
    # part 6: GPT-2-style Transformer with the γ trick (§5.2, Table 4, Fig. 3, Fig. 6); off in the presets, a study
    transformer: Flag = False
    tf_d: Width = 64
    tf_blocks: Depth = 4  # GPT-2 blocks; attention and FFN are separate layers, so L = 2·tf_blocks
    tf_heads: Width = 4
    tf_length: Length = 64  # context
    tf_batch: Batch = 32
    tf_steps: Steps = 400
    tf_lr: PositiveFloat = 1e-3  # AdamW (β2 0.98), weight decay 0.1, clipping 1 (Table 4)
    tf_warmup: Annotated[int, AtLeast(0), AtMost(MAX_STEPS)] = 40  # 10% linear warmup, then cosine decay to 0.1×
    tf_gamma: Annotated[float, InRange(0.0, 1.0)] = 0.2
    tf_k_fixed: K = 0  # Highway-BP at a constant k
    tf_k_start: K = 0  # Highway-BP with k growing linearly from tf_k_start to tf_k_end over training
    tf_k_end: K = 4
    tf_cosine_ks: Ks = (0, 1, 2, 4, 8)
    # part 4 (full only): ResNets on CIFAR-10 with the App. G downsampling (Table 2, Table 4, Fig. 2)
    resnet: Flag = False
    # CIFAR-10 python pickles (`cifar-10-batches-py`); empty: data_dir, else the part is skipped
    cifar_dir: FolderOrEmpty = ""
    # blocks per stage: 5 → pre-act ResNet32 (L=15), 18 → ResNet110 (L=54)
    resnet_blocks: Annotated[tuple[int, ...], NonEmpty(), Each(AtLeast(1), AtMost(MAX_DEPTH))] = (5, 18)
    resnet_width: Width = 16
    resnet_epochs: Epochs = 200
    resnet_batch: Batch = 128
    # SGD, momentum 0.9, wd 1e-4, lr ÷10 at 50% and 75% of training, no warmup or clipping
    resnet_lr: PositiveFloat = 0.1
    resnet_wd: NonNegativeFloat = 1e-4
    resnet_ks: Ks = (0, 1, 2, 4)
    resnet_steps: StepCap = 0  # > 0: cap on training steps (smoke runs)
    figures: Flag = True
    # steps between checkpoints of every training run (0: none); --checkpoint-every too
    checkpoint_every: NonNegativeInt = 0

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.tf_d % self.tf_heads:
            raise ValueError(f"tf_d={self.tf_d} must be a multiple of tf_heads={self.tf_heads}")
        if self.gru and (self.gate_k not in self.gru_hbp_ks or self.gate_k not in self.gru_fpi_ks):
            raise ValueError(f"gate_k={self.gate_k} must be in gru_hbp_ks and gru_fpi_ks")


PRESETS: dict[str, Config] = {
    # ci: the claim gate (≤ 120 s of CPU): the gated claims of quick on seed 0, with only the runs they need
    # (the MLP at BP and k ∈ {0, 4}, the GRU at HBP and FPI k = 10); the reported parts are left out.
    "ci": Config(
        seeds=1,
        fidelity_fpi=False,
        mlp_ks=(0, 4),
        gru_bptt=False,
        gru_hbp_ks=(10,),
        gru_fpi_ks=(10,),
        lm=False,
        figures=False,
    ),
    "quick": Config(),
    # full: `iclr25-highway-bp reproduce --scale full data_dir=/path/to/cifar-10-batches-py --device cuda`
    # pixel-CIFAR GRU of Table 5 (hidden 64, L = 1024, Adam 1e-3, batch 128, 2.5k steps, warmup 250, cosine
    # to 0.1×), a 54-block residual MLP (the depth of ResNet110) and, from the same pickles, pre-act ResNet32 and
    # ResNet110 on CIFAR-10 with App. G downsampling (SGD 0.1, 200 epochs, BP and HBP k ∈ {0, 1, 2, 4}).
    "full": Config(
        resnet=True,
        lm_cells=("gru", "lstm"),
        lm_hidden=512,
        lm_length=256,
        lm_batch=128,
        lm_steps=10_000,
        lm_lr=1e-3,
        lm_warmup=1_000,
        lm_hbp_ks=(0, 1, 2, 5, 10),
        lm_fpi_ks=(0, 5, 10),
        lm_needs_text=True,
        seeds=2,
        mlp_depth=54,
        mlp_epochs=60,
        mlp_ks=(0, 1, 2, 4, 8),
        gru_task="cifar",
        data_dir="",
        gru_hidden=64,
        gru_epochs=100,
        gru_steps=2500,
        gru_batch=128,
        gru_lr=1e-3,
        gru_schedule="cosine",
        gru_warmup=250,
        gru_hbp_ks=(0, 2, 5, 10, 20),
        gru_fpi_ks=(5, 10, 20),
        checkpoint_every=1_000,
    ),
}


@dataclass(frozen=True)
class TrainConfig(Validated):
    """The `train` verb's settings (its numeric flags are made from these fields)."""

    model: Annotated[str, OneOf(MODELS)] = "resmlp"  # resmlp | gru | lstm
    backward: Annotated[str, OneOf(BACKWARDS)] = "hbp"  # bp (exact; BPTT for the RNNs) | hbp | fpi
    k: K = 4  # Highway-BP / FPI iterations
    depth: Depth = 16  # residual blocks of resmlp
    hidden: Width = 64  # width (resmlp) or hidden size (RNN)
    epochs: Epochs = 10
    lr: Annotated[float | None, OrNone(Positive())] = None  # Adam lr; None: 1e-3 for resmlp, 3e-3 for the RNNs
    batch_size: Batch = 64

    @property
    def learning_rate(self) -> float:
        """`lr`, or the model's default."""
        return self.lr if self.lr is not None else (1e-3 if self.model == "resmlp" else 3e-3)


from iclr25.shared.smoke import SmokeSpec  # noqa: E402

SMOKE = SmokeSpec(
    build="iclr25.highway_bp.smoke:build",
    full_steps=1_985_560,
    what="ResNet110 (post-ReLU, width 16) on 32x32 CIFAR-10, batch 128, Highway-BP k 4, SGD",
    steps_note=(
        "estimate, every step counted at the timed one: ResNet32 + ResNet110 x 2 seeds x 5 runs (BP, k 0/1/2/4)"
        " x 200 epochs x 391 = 1,564,000; char LM GRU + LSTM x 2 seeds x 9 runs x 10,000 = 360,000;"
        " pixel GRU 2 x 9 x 2,500 = 45,000; residual MLP 2 x 6 x 60 epochs x 23 = 16,560"
    ),
    cpu_scale="batch 4 of 128, one thread",
)
