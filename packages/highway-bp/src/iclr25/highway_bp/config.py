"""The reproduction's and the `train` verb's configs and presets: standard library only, so bad values are
refused before torch loads."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from iclr25.shared.validate import (
    check_bool,
    check_each,
    check_int_at_least,
    check_nonempty,
    check_nonnegative,
    check_one_of,
    check_positive,
    check_text,
)

GRU_TASKS = ("digits", "cifar")
GRU_SCHEDULES = ("constant", "cosine")
MODELS = ("resmlp", "gru", "lstm")
LM_CELLS = ("gru", "lstm")
BACKWARDS = ("bp", "hbp", "fpi")


@dataclass(frozen=True)
class Config:
    """Quick: `iclr25-highway-bp reproduce --scale quick`: the spec's plan (§6a) as written, 2 seeds.

    Parts: gradient fidelity (k = 0..L), the digits residual MLP with BP and HBP k ∈ {0, 1, 2, 4}, the
    pixel-digits GRU (loss at the end) with BPTT, HBP k ∈ {0, 2, 5, 10} and FPI k ∈ {2, 5, 10}, and a
    character-level GRU language model with a loss at every step (BPTT, HBP(2), FPI(2)).
    The `ci` preset gates the same claims on seed 0 with only the runs they need (see PRESETS).
    """

    seeds: int = 2  # spec §6a: 2 seeds
    threads: int = 1  # torch CPU threads: the ops are tiny, one thread avoids OpenMP spin-waits on shared cores
    # part 1: fidelity (spec §6a.1 / §9.5)
    fidelity: bool = True
    fidelity_batch: int = 256
    fidelity_fpi: bool = True  # also measure FPI's cosine (reported only)
    # part 2: digits-resmlp (spec §6a.2)
    mlp: bool = True
    mlp_depth: int = 16
    mlp_width: int = 64
    mlp_hidden: int = 128
    mlp_epochs: int = 30
    mlp_batch: int = 64
    mlp_lr: float = 1e-3
    mlp_ks: tuple[int, ...] = (0, 1, 2, 4)
    # part 3: sequence GRU (spec §6a.3); task "digits" (pixel digits) or "cifar" (pixel-CIFAR-10, full)
    gru: bool = True
    gru_task: Literal["digits", "cifar"] = "digits"
    data_dir: str = ""  # CIFAR-10 python pickles for gru_task="cifar"
    gru_bptt: bool = True  # the BPTT baseline (needed by the reported near-BPTT and speed claims only)
    gru_hidden: int = 64
    gru_epochs: int = 20
    gru_steps: int = 0  # > 0: cap on training steps (Table 5 counts steps)
    gru_batch: int = 64
    gru_lr: float = 3e-3
    gru_schedule: Literal["constant", "cosine"] = "constant"
    gru_warmup: int = 0
    gru_hbp_ks: tuple[int, ...] = (0, 2, 5, 10)
    gru_fpi_ks: tuple[int, ...] = (2, 5, 10)
    gate_k: int = 10  # the k of the gated GRU claims (paper: HBP reaches BPTT at k = 10, Fig. 4)
    # part 5: character-level RNN language model with a loss at every step (Table 2, Fig. 4; spec §6a.3 extra)
    lm: bool = True
    text_dir: str = ""  # WikiText-103 raw (`wiki.{train,valid}.raw`); empty: the Python docs shipped with Python
    lm_cells: tuple[str, ...] = ("gru",)
    lm_hidden: int = 128
    lm_length: int = 64  # L: time steps per training window (Table 5: 256)
    lm_batch: int = 32
    lm_steps: int = 600
    lm_lr: float = 3e-3
    lm_warmup: int = 0
    lm_bptt: bool = True
    lm_hbp_ks: tuple[int, ...] = (2,)
    lm_fpi_ks: tuple[int, ...] = (2,)
    lm_valid_windows: int = 0  # > 0: cap on validation windows
    lm_needs_text: bool = False  # True (full): without text_dir the part is skipped, as the ResNets without data
    # part 6: GPT-2-style Transformer with the γ trick (§5.2, Table 4, Fig. 3, Fig. 6); off in the presets, a study
    transformer: bool = False
    tf_d: int = 64
    tf_blocks: int = 4  # GPT-2 blocks; attention and FFN are separate layers, so L = 2·tf_blocks
    tf_heads: int = 4
    tf_length: int = 64  # context
    tf_batch: int = 32
    tf_steps: int = 400
    tf_lr: float = 1e-3  # AdamW (β2 0.98), weight decay 0.1, clipping 1 (Table 4)
    tf_warmup: int = 40  # 10% linear warmup, then cosine decay to 0.1×
    tf_gamma: float = 0.2
    tf_k_fixed: int = 0  # Highway-BP at a constant k
    tf_k_start: int = 0  # Highway-BP with k growing linearly from tf_k_start to tf_k_end over training
    tf_k_end: int = 4
    tf_cosine_ks: tuple[int, ...] = (0, 1, 2, 4, 8)
    # part 4 (full only): ResNets on CIFAR-10 with the App. G downsampling (Table 2, Table 4, Fig. 2)
    resnet: bool = False
    cifar_dir: str = ""  # CIFAR-10 python pickles (`cifar-10-batches-py`); empty: data_dir, else the part is skipped
    resnet_blocks: tuple[int, ...] = (5, 18)  # blocks per stage: 5 → pre-act ResNet32 (L=15), 18 → ResNet110 (L=54)
    resnet_width: int = 16
    resnet_epochs: int = 200
    resnet_batch: int = 128
    resnet_lr: float = 0.1  # SGD, momentum 0.9, wd 1e-4, lr ÷10 at 50% and 75% of training, no warmup or clipping
    resnet_wd: float = 1e-4
    resnet_ks: tuple[int, ...] = (0, 1, 2, 4)
    resnet_steps: int = 0  # > 0: cap on training steps (smoke runs)
    figures: bool = True
    checkpoint_every: int = 0  # steps between checkpoints of every training run (0: none); --checkpoint-every too

    def __post_init__(self) -> None:
        for name in (
            "fidelity",
            "fidelity_fpi",
            "mlp",
            "gru",
            "gru_bptt",
            "lm",
            "lm_bptt",
            "lm_needs_text",
            "transformer",
            "resnet",
            "figures",
        ):
            check_bool(name, getattr(self, name))
        for name in ("seeds", "threads", "fidelity_batch", "mlp_depth", "mlp_width", "mlp_hidden", "mlp_epochs"):
            check_int_at_least(name, getattr(self, name), 1)
        check_int_at_least("mlp_batch", self.mlp_batch, 1)
        check_positive("mlp_lr", self.mlp_lr)
        check_one_of("gru_task", self.gru_task, GRU_TASKS)
        check_text("data_dir", self.data_dir, "text (a folder path or empty)")
        for name in ("gru_hidden", "gru_epochs", "gru_batch"):
            check_int_at_least(name, getattr(self, name), 1)
        check_int_at_least("gru_steps", self.gru_steps, 0)
        check_positive("gru_lr", self.gru_lr)
        check_one_of("gru_schedule", self.gru_schedule, GRU_SCHEDULES)
        check_int_at_least("gru_warmup", self.gru_warmup, 0)
        for name in ("mlp_ks", "gru_hbp_ks", "gru_fpi_ks", "resnet_ks"):
            check_each(name, getattr(self, name), check_int_at_least, 0)  # k = 0 is Highway-BP's first iterate
        check_int_at_least("gate_k", self.gate_k, 0)
        check_text("text_dir", self.text_dir, "text (a folder path or empty)")
        check_nonempty("lm_cells", self.lm_cells)
        check_each("lm_cells", self.lm_cells, check_one_of, LM_CELLS)
        for name in ("lm_hidden", "lm_length", "lm_batch", "lm_steps"):
            check_int_at_least(name, getattr(self, name), 1)
        check_positive("lm_lr", self.lm_lr)
        check_int_at_least("lm_warmup", self.lm_warmup, 0)
        check_int_at_least("lm_valid_windows", self.lm_valid_windows, 0)
        for name in ("lm_hbp_ks", "lm_fpi_ks"):
            check_each(name, getattr(self, name), check_int_at_least, 0)
        for name in ("tf_d", "tf_blocks", "tf_heads", "tf_length", "tf_batch", "tf_steps"):
            check_int_at_least(name, getattr(self, name), 1)
        check_positive("tf_lr", self.tf_lr)
        for name in ("tf_warmup", "tf_k_fixed", "tf_k_start", "tf_k_end"):
            check_int_at_least(name, getattr(self, name), 0)
        if not 0.0 <= self.tf_gamma <= 1.0:
            raise ValueError(f"tf_gamma must be in [0, 1], got {self.tf_gamma}")
        if self.tf_d % self.tf_heads:
            raise ValueError(f"tf_d={self.tf_d} must be a multiple of tf_heads={self.tf_heads}")
        check_each("tf_cosine_ks", self.tf_cosine_ks, check_int_at_least, 0)
        check_text("cifar_dir", self.cifar_dir, "text (a folder path or empty)")
        check_nonempty("resnet_blocks", self.resnet_blocks)
        check_each("resnet_blocks", self.resnet_blocks, check_int_at_least, 1)
        for name in ("resnet_width", "resnet_epochs", "resnet_batch"):
            check_int_at_least(name, getattr(self, name), 1)
        check_positive("resnet_lr", self.resnet_lr)
        check_nonnegative("resnet_wd", self.resnet_wd)
        check_int_at_least("resnet_steps", self.resnet_steps, 0)
        check_int_at_least("checkpoint_every", self.checkpoint_every, 0)
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
class TrainConfig:
    """The `train` verb's settings (its numeric flags are made from these fields)."""

    model: str = "resmlp"  # resmlp | gru | lstm
    backward: str = "hbp"  # bp (exact; BPTT for the RNNs) | hbp | fpi
    k: int = 4  # Highway-BP / FPI iterations
    depth: int = 16  # residual blocks of resmlp
    hidden: int = 64  # width (resmlp) or hidden size (RNN)
    epochs: int = 10
    lr: float | None = None  # Adam lr; None: 1e-3 for resmlp, 3e-3 for the RNNs
    batch_size: int = 64

    def __post_init__(self) -> None:
        check_one_of("model", self.model, MODELS)
        check_one_of("backward", self.backward, BACKWARDS)
        check_int_at_least("k", self.k, 0)
        for name in ("depth", "hidden", "epochs", "batch_size"):
            check_int_at_least(name, getattr(self, name), 1)
        if self.lr is not None:
            check_positive("lr", self.lr)

    @property
    def learning_rate(self) -> float:
        """`lr`, or the model's default."""
        return self.lr if self.lr is not None else (1e-3 if self.model == "resmlp" else 3e-3)
