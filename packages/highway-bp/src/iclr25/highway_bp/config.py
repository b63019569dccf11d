"""The reproduction's and the `train` verb's configs and presets: standard library only, so bad values are
refused before torch loads."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Literal

from iclr25.shared.validate import (
    AtLeast,
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
    PositiveInt,
    Validated,
)

GRU_TASKS = ("digits", "cifar")
GRU_SCHEDULES = ("constant", "cosine")
MODELS = ("resmlp", "gru", "lstm")
LM_CELLS = ("gru", "lstm")
BACKWARDS = ("bp", "hbp", "fpi")

Ks = Annotated[tuple[int, ...], Each(AtLeast(0))]  # k = 0 is Highway-BP's first iterate
FolderOrEmpty = Annotated[str, IsText("text (a folder path or empty)")]


@dataclass(frozen=True)
class Config(Validated):
    """Quick: `iclr25-highway-bp reproduce --scale quick`: the spec's plan (§6a) as written, 2 seeds.

    Parts: gradient fidelity (k = 0..L), the digits residual MLP with BP and HBP k ∈ {0, 1, 2, 4}, the
    pixel-digits GRU (loss at the end) with BPTT, HBP k ∈ {0, 2, 5, 10} and FPI k ∈ {2, 5, 10}, and a
    character-level GRU language model with a loss at every step (BPTT, HBP(2), FPI(2)).
    The `ci` preset gates the same claims on seed 0 with only the runs they need (see PRESETS).
    """

    seeds: PositiveInt = 2  # spec §6a: 2 seeds
    threads: PositiveInt = 1  # torch CPU threads: the ops are tiny, one thread avoids OpenMP spin-waits on shared cores
    # part 1: fidelity (spec §6a.1 / §9.5)
    fidelity: Flag = True
    fidelity_batch: PositiveInt = 256
    fidelity_fpi: Flag = True  # also measure FPI's cosine (reported only)
    # part 2: digits-resmlp (spec §6a.2)
    mlp: Flag = True
    mlp_depth: PositiveInt = 16
    mlp_width: PositiveInt = 64
    mlp_hidden: PositiveInt = 128
    mlp_epochs: PositiveInt = 30
    mlp_batch: PositiveInt = 64
    mlp_lr: PositiveFloat = 1e-3
    mlp_ks: Ks = (0, 1, 2, 4)
    # part 3: sequence GRU (spec §6a.3); task "digits" (pixel digits) or "cifar" (pixel-CIFAR-10, full)
    gru: Flag = True
    gru_task: Literal["digits", "cifar"] = "digits"
    data_dir: FolderOrEmpty = ""  # CIFAR-10 python pickles for gru_task="cifar"
    gru_bptt: Flag = True  # the BPTT baseline (needed by the reported near-BPTT and speed claims only)
    gru_hidden: PositiveInt = 64
    gru_epochs: PositiveInt = 20
    gru_steps: NonNegativeInt = 0  # > 0: cap on training steps (Table 5 counts steps)
    gru_batch: PositiveInt = 64
    gru_lr: PositiveFloat = 3e-3
    gru_schedule: Literal["constant", "cosine"] = "constant"
    gru_warmup: NonNegativeInt = 0
    gru_hbp_ks: Ks = (0, 2, 5, 10)
    gru_fpi_ks: Ks = (2, 5, 10)
    gate_k: NonNegativeInt = 10  # the k of the gated GRU claims (paper: HBP reaches BPTT at k = 10, Fig. 4)
    # part 5: character-level RNN language model with a loss at every step (Table 2, Fig. 4; spec §6a.3 extra)
    lm: Flag = True
    # WikiText-103 raw (`wiki.{train,valid}.raw`); empty: the Python docs shipped with Python
    text_dir: FolderOrEmpty = ""
    lm_cells: Annotated[tuple[str, ...], NonEmpty(), Each(OneOf(LM_CELLS))] = ("gru",)
    lm_hidden: PositiveInt = 128
    lm_length: PositiveInt = 64  # L: time steps per training window (Table 5: 256)
    lm_batch: PositiveInt = 32
    lm_steps: PositiveInt = 600
    lm_lr: PositiveFloat = 3e-3
    lm_warmup: NonNegativeInt = 0
    lm_bptt: Flag = True
    lm_hbp_ks: Ks = (2,)
    lm_fpi_ks: Ks = (2,)
    lm_valid_windows: NonNegativeInt = 0  # > 0: cap on validation windows
    lm_needs_text: Flag = False  # True (full): without text_dir the part is skipped, as the ResNets without data
    # part 6: GPT-2-style Transformer with the γ trick (§5.2, Table 4, Fig. 3, Fig. 6); off in the presets, a study
    transformer: Flag = False
    tf_d: PositiveInt = 64
    tf_blocks: PositiveInt = 4  # GPT-2 blocks; attention and FFN are separate layers, so L = 2·tf_blocks
    tf_heads: PositiveInt = 4
    tf_length: PositiveInt = 64  # context
    tf_batch: PositiveInt = 32
    tf_steps: PositiveInt = 400
    tf_lr: PositiveFloat = 1e-3  # AdamW (β2 0.98), weight decay 0.1, clipping 1 (Table 4)
    tf_warmup: NonNegativeInt = 40  # 10% linear warmup, then cosine decay to 0.1×
    tf_gamma: Annotated[float, InRange(0.0, 1.0)] = 0.2
    tf_k_fixed: NonNegativeInt = 0  # Highway-BP at a constant k
    tf_k_start: NonNegativeInt = 0  # Highway-BP with k growing linearly from tf_k_start to tf_k_end over training
    tf_k_end: NonNegativeInt = 4
    tf_cosine_ks: Ks = (0, 1, 2, 4, 8)
    # part 4 (full only): ResNets on CIFAR-10 with the App. G downsampling (Table 2, Table 4, Fig. 2)
    resnet: Flag = False
    # CIFAR-10 python pickles (`cifar-10-batches-py`); empty: data_dir, else the part is skipped
    cifar_dir: FolderOrEmpty = ""
    # blocks per stage: 5 → pre-act ResNet32 (L=15), 18 → ResNet110 (L=54)
    resnet_blocks: Annotated[tuple[int, ...], NonEmpty(), Each(AtLeast(1))] = (5, 18)
    resnet_width: PositiveInt = 16
    resnet_epochs: PositiveInt = 200
    resnet_batch: PositiveInt = 128
    # SGD, momentum 0.9, wd 1e-4, lr ÷10 at 50% and 75% of training, no warmup or clipping
    resnet_lr: PositiveFloat = 0.1
    resnet_wd: NonNegativeFloat = 1e-4
    resnet_ks: Ks = (0, 1, 2, 4)
    resnet_steps: NonNegativeInt = 0  # > 0: cap on training steps (smoke runs)
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
    k: NonNegativeInt = 4  # Highway-BP / FPI iterations
    depth: PositiveInt = 16  # residual blocks of resmlp
    hidden: PositiveInt = 64  # width (resmlp) or hidden size (RNN)
    epochs: PositiveInt = 10
    lr: Annotated[float | None, OrNone(Positive())] = None  # Adam lr; None: 1e-3 for resmlp, 3e-3 for the RNNs
    batch_size: PositiveInt = 64

    @property
    def learning_rate(self) -> float:
        """`lr`, or the model's default."""
        return self.lr if self.lr is not None else (1e-3 if self.model == "resmlp" else 3e-3)
