"""Configs and presets of the reproduction and of the `train` verb: standard library only, so bad values are
refused before torch loads."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated

from iclr25.shared.validate import (
    AtLeast,
    AtMost,
    ClosedProbability,
    Each,
    Flag,
    NonNegativeFloat,
    NonNegativeInt,
    OneOf,
    PositiveFloat,
    Validated,
)

TASKS = ("parity", "mod", "modbra")  # data.TASKS
MODELS = ("figure1", "deltanet", "mamba", "diagonal", "fullmatrix", "lstm", "transformer")  # baselines.ALL_MODELS
GRID_MODELS = ("deltanet", "mamba", "lstm", "transformer")  # the Table-3 rows
SCHEDULES = ("cosine", "constant")
DELTA_MODES = ("chunk", "recurrent", "fla")  # DeltaNet's delta rule: ours chunked, ours step by step, FLA's kernel
MAX_LEN = 256  # the longest test sequence of the paper's protocol
# Size limits, refused before any work (past them a run would exhaust memory or run for days). The paper's
# largest settings: d_model 128, 5 layers, 4 heads, 100 000 steps of batch 512, test sequences up to 500, 8 192
# test sequences; each limit leaves room above that.
MAX_WIDTH = 4096
MAX_LAYERS = 64
MAX_HEADS = 64
MAX_STEPS = 1_000_000
MAX_BATCH = 16_384
MAX_SEQ_LEN = 65_536  # the LM's training window, the word problems' lengths
MAX_EVAL_N = 1_000_000
MAX_SEEDS = 100
Width = Annotated[int, AtLeast(1), AtMost(MAX_WIDTH)]
Layers = Annotated[int, AtLeast(1), AtMost(MAX_LAYERS)]
Heads = Annotated[int, AtLeast(1), AtMost(MAX_HEADS)]
Steps = Annotated[int, AtLeast(1), AtMost(MAX_STEPS)]
Batch = Annotated[int, AtLeast(1), AtMost(MAX_BATCH)]
SeqLen = Annotated[int, AtLeast(1), AtMost(MAX_SEQ_LEN)]
EvalN = Annotated[int, AtLeast(1), AtMost(MAX_EVAL_N)]
Seeds = Annotated[int, AtLeast(1), AtMost(MAX_SEEDS)]
EIG_RANGES = ("[0,1]", "[-1,1]")  # what parse_eig_range normalises to


def parse_eig_range(value: str) -> str:
    """Normalise "0,1" / "[0,1]" / "-1,1" / "[-1, 1]" to "[0,1]" or "[-1,1]"; ValueError otherwise."""
    text = str(value).replace(" ", "").strip("[]()")
    if text in ("0,1", "0.0,1.0"):
        return "[0,1]"
    if text in ("-1,1", "-1.0,1.0"):
        return "[-1,1]"
    raise ValueError(f"eig_range must be one of [0,1] or [-1,1] (also written 0,1 / -1,1), got {value!r}")


# More limits: timing repeats and threads (warm-up steps share MAX_STEPS, lengths MAX_SEQ_LEN).
MAX_REPS = 1000  # timed repeats
MAX_THREADS = 1024


@dataclass(frozen=True)
class Config(Validated):
    """Quick: `iclr25-lrnn-state-tracking reproduce --scale quick` (~3 min CPU on 2 cores, more on a loaded machine):
    tanh Figure-1 LRNN reaches scaled accuracy ≥ 0.9 on parity lengths 40–256, the sigmoid one stays ≤ 0.1.
    """

    # Figure 1: diagonal LRNN, 1 block (spec §3.6, §6a)
    fig1: Flag = True
    fig1_dim: Width = 16  # official 10; 16 is the spec's quick setting
    fig1_steps: Steps = 600  # official 20 000; converges in 250–500 (spec §6a)
    fig1_batch: Batch = 128  # official 256
    fig1_lr: PositiveFloat = 1e-3
    fig1_seeds: Seeds = 2
    # Mamba on parity at CPU scale, both ranges (Table 3's Mamba rows, trained on lengths 3-10 instead of 3-40);
    # reported, not gated: `reproduce --scale ci mamba=true` (see the README's Mamba study)
    mamba: Flag = False
    mamba_d_model: Width = 32
    mamba_steps: Steps = 600
    mamba_batch: Batch = 64
    mamba_lr: PositiveFloat = 1e-2
    mamba_warmup: Annotated[int, AtLeast(0), AtMost(MAX_STEPS)] = 200
    # official 40: at 3-40 no CPU-sized pilot learned parity (README)
    mamba_train_max_len: Annotated[int, AtLeast(5), AtMost(MAX_SEQ_LEN)] = 10
    mamba_seeds: Seeds = 1
    # Table 3 grid
    grid_tasks: Annotated[tuple[str, ...], Each(OneOf(TASKS))] = ()
    grid_models: Annotated[
        tuple[str, ...], Each(OneOf(GRID_MODELS))
    ] = ()  # deltanet, mamba (both ranges), lstm, transformer (range-free)
    grid_seeds: Seeds = 1
    grid_d_model: Width = 128
    grid_layers: Layers = 2
    grid_heads: Heads = 4
    grid_batch: Batch = 256
    grid_lr: PositiveFloat = 1e-3
    grid_steps_parity: Steps = 20_000  # official parity YAML
    grid_steps_mod: Steps = 100_000  # official modular-arithmetic YAMLs
    grid_warmup_parity: Annotated[int, AtLeast(0), AtMost(MAX_STEPS)] = 2_000
    grid_warmup_mod: Annotated[int, AtLeast(0), AtMost(MAX_STEPS)] = 10_000
    grid_wd_parity: NonNegativeFloat = 0.0
    grid_wd_mod: NonNegativeFloat = 0.1
    grid_gated: Flag = False  # gate the spec §9.7 claims (full scale only)
    # "fla": FLA's Triton kernel for DeltaNet (optional fla-core, CUDA only)
    grid_deltanet_mode: Annotated[str, OneOf(DELTA_MODES)] = "chunk"
    # evaluation
    eval_n: EvalN = 2_048  # official 8 192
    eval_min_len: Annotated[int, AtLeast(1), AtMost(MAX_SEQ_LEN)] = 40
    eval_max_len: Annotated[int, AtLeast(1), AtMost(MAX_SEQ_LEN)] = 256
    # theory and speed
    theory: Flag = True
    speed_T: Annotated[int, AtLeast(0), AtMost(MAX_SEQ_LEN)] = 1_024  # 0: no speed measurement
    speed_reps: Annotated[int, AtLeast(1), AtMost(MAX_REPS)] = 3
    # CPU threads: 1 is fastest for these small models on a shared machine
    threads: Annotated[int, AtLeast(1), AtMost(MAX_THREADS)] = 1
    log_every: NonNegativeInt = 50
    # steps between checkpoints of every training run (0: none); --checkpoint-every too
    checkpoint_every: NonNegativeInt = 0

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.grid_tasks and not self.grid_models:
            raise ValueError(
                f"grid_tasks {list(self.grid_tasks)} need at least one of grid_models: {', '.join(GRID_MODELS)}"
            )
        if {"deltanet", "transformer"} & set(self.grid_models) and self.grid_d_model % self.grid_heads:
            raise ValueError(f"grid_d_model ({self.grid_d_model}) must be divisible by grid_heads ({self.grid_heads})")
        if not 1 <= self.eval_min_len <= self.eval_max_len <= MAX_LEN:
            raise ValueError(
                f"need 1 <= eval_min_len <= eval_max_len <= {MAX_LEN}, got {self.eval_min_len}, {self.eval_max_len}"
            )


def grid_cells(config: Config) -> list[tuple[str, str, str]]:
    """(task, model, eig_range) of every Table-3 cell the config asks for, in table order."""
    return [
        (task, model, eig_range)
        for task in config.grid_tasks
        for model in config.grid_models
        for eig_range in (("[0,1]", "[-1,1]") if model in ("deltanet", "mamba") else ("-",))
    ]


PRESETS: dict[str, Config] = {
    # `reproduce --scale ci`: ~60 s CPU on 2 cores; Figure-1 tanh ≥ 0.9 vs sigmoid ≤ 0.1, theory exact, speed-ups ≥ 5×.
    "ci": Config(),
    # `reproduce --scale quick`: ~150 s CPU on 2 cores; ci + 1-layer DeltaNet on parity, [-1,1] ≈ 0.75 vs [0,1] ≈ 0.
    "quick": Config(
        grid_tasks=("parity",),
        grid_models=("deltanet",),
        grid_d_model=32,
        grid_layers=1,
        grid_heads=2,
        grid_batch=64,
        grid_steps_parity=1_000,
        grid_warmup_parity=100,
    ),
    # `reproduce --scale full --device cuda`: the Table-3 grid, ~10-15 h on one H100/H200 (estimate); spec §9.7 gated.
    "full": Config(
        fig1_dim=10,
        fig1_steps=20_000,
        fig1_batch=256,
        fig1_seeds=3,
        grid_tasks=("parity", "mod", "modbra"),
        grid_models=("deltanet", "mamba", "lstm", "transformer"),
        grid_seeds=3,
        grid_gated=True,
        eval_n=8_192,
        threads=2,
        checkpoint_every=2_000,
    ),
}


@dataclass(frozen=True)
class TrainConfig(Validated):
    """One training run. Defaults: the official parity YAML (2 layers, d 128, 4 heads, 20k steps, batch 256)."""

    task: Annotated[str, OneOf(TASKS)] = "parity"
    model: Annotated[str, OneOf(MODELS)] = "deltanet"
    eig_range: Annotated[str, OneOf(EIG_RANGES)] = "[-1,1]"
    d_model: Width = 128
    n_layers: Layers = 2
    n_heads: Heads = 4
    use_short_conv: Flag = True
    steps: Steps = 20_000  # parity YAML; 100 000 for the modular-arithmetic tasks
    batch_size: Batch = 256
    lr: PositiveFloat = 1e-3
    weight_decay: NonNegativeFloat = 0.0  # parity 0.0, modular arithmetic 0.1
    warmup: Annotated[int, AtLeast(0), AtMost(MAX_STEPS)] = 2_000  # parity 2 000, modular arithmetic 10 000
    schedule: Annotated[str, OneOf(SCHEDULES)] = "cosine"  # "cosine" (to lr·min_lr_ratio) or "constant"
    min_lr_ratio: ClosedProbability = 1e-3
    grad_clip: NonNegativeFloat = 0.0  # the official loop does not clip
    mult: Flag = True  # brackets task: allow '*'
    eval_n: EvalN = 8_192
    eval_batch: Batch = 1_024
    eval_seed: NonNegativeInt = 12_345
    seed: NonNegativeInt = 0
    amp: Flag = True  # bf16 autocast on CUDA (fp32 state); ignored on CPU
    # "fla": FLA's Triton chunk kernel (optional fla-core, CUDA only)
    deltanet_mode: Annotated[str, OneOf(DELTA_MODES)] = "chunk"
    # longest training sequence (official 40; shorter ones are a CPU pilot's choice)
    train_max_len: Annotated[int, AtLeast(5), AtMost(MAX_LEN)] = 40

    def __post_init__(self) -> None:
        # normalised first: the declared rule (and the code that reads it) sees "[0,1]" or "[-1,1]"
        object.__setattr__(self, "eig_range", parse_eig_range(self.eig_range))
        super().__post_init__()
        if self.model in ("deltanet", "transformer") and self.d_model % self.n_heads:
            raise ValueError(f"d_model ({self.d_model}) must be divisible by n_heads ({self.n_heads})")


# `train` presets: quick = the spec's 1-layer CPU setting, full = the official YAML (parity: 20k steps).
TRAIN_PRESETS: dict[str, dict[str, int]] = {
    "quick": {"d_model": 32, "n_layers": 1, "n_heads": 2, "steps": 1_000, "batch_size": 64, "warmup": 100},
    "full": {},
}


LM_MODELS = ("deltanet", "mamba")


@dataclass(frozen=True)
class LMConfig(Validated):
    """A byte-level language model for the perplexity-vs-position evaluation of Fig. 5 (a CPU-sized stand-in for the
    paper's FLA pre-training; the paper's 340M-1.3B checkpoints are not loadable here)."""

    model: Annotated[str, OneOf(LM_MODELS)] = "deltanet"
    eig_range: Annotated[str, OneOf(EIG_RANGES)] = "[-1,1]"
    d_model: Width = 64
    n_layers: Layers = 2
    n_heads: Heads = 4
    seq_len: Annotated[int, AtLeast(2), AtMost(MAX_SEQ_LEN)] = 256  # training window in tokens
    steps: Steps = 200
    batch_size: Batch = 16
    lr: PositiveFloat = 1e-3
    weight_decay: NonNegativeFloat = 0.1
    seed: NonNegativeInt = 0

    def __post_init__(self) -> None:
        # normalised first: the declared rule (and the code that reads it) sees "[0,1]" or "[-1,1]"
        object.__setattr__(self, "eig_range", parse_eig_range(self.eig_range))
        super().__post_init__()
        if self.model == "deltanet" and self.d_model % self.n_heads:
            raise ValueError(f"d_model ({self.d_model}) must be divisible by n_heads ({self.n_heads})")


WORD_SUBSETS = ("all", "swaps", "swaps3", "4tokens")  # data.WORD_SUBSETS
WORD_MODELS = ("deltanet", "mamba", "lstm", "transformer", "fullmatrix")


@dataclass(frozen=True)
class WordConfig(Validated):
    """One S5 word-problem run (§5.2): every position supervised with the prefix product; sequence accuracy vs length.

    Paper (App. E.2, unverified summary): train length 32, test up to 500, batch 512, lr 1e-4, wd 0.01, clip 1.0,
    d_model 128, 4 heads, 1 or 5 layers, no short conv. The defaults here are a CPU-sized version.
    """

    subset: Annotated[str, OneOf(WORD_SUBSETS)] = "swaps"
    model: Annotated[str, OneOf(WORD_MODELS)] = "deltanet"
    eig_range: Annotated[str, OneOf(EIG_RANGES)] = "[-1,1]"
    d_model: Width = 32
    n_layers: Layers = 1
    n_heads: Heads = 2
    use_short_conv: Flag = False  # the paper's S5 runs have no short convolution
    train_len: SeqLen = 16
    test_len: SeqLen = 64
    steps: Steps = 600
    batch_size: Batch = 64
    lr: PositiveFloat = 1e-3
    weight_decay: NonNegativeFloat = 0.01
    warmup: Annotated[int, AtLeast(0), AtMost(MAX_STEPS)] = 50
    grad_clip: NonNegativeFloat = 1.0
    eval_n: EvalN = 512
    eval_seed: NonNegativeInt = 12_345
    seed: NonNegativeInt = 0

    def __post_init__(self) -> None:
        # normalised first: the declared rule (and the code that reads it) sees "[0,1]" or "[-1,1]"
        object.__setattr__(self, "eig_range", parse_eig_range(self.eig_range))
        super().__post_init__()
        if self.test_len < self.train_len:
            raise ValueError(f"test_len ({self.test_len}) must be >= train_len ({self.train_len})")
        if self.subset == "4tokens" and (self.train_len % 4 or self.test_len % 4):
            raise ValueError(f"subset '4tokens' needs lengths divisible by 4, got {self.train_len}, {self.test_len}")
        if self.model in ("deltanet", "transformer") and self.d_model % self.n_heads:
            raise ValueError(f"d_model ({self.d_model}) must be divisible by n_heads ({self.n_heads})")


from iclr25.shared.smoke import SmokeSpec  # noqa: E402

SMOKE = SmokeSpec(
    build="iclr25.lrnn_state_tracking.smoke:build",
    full_steps=2_880_000,
    what="DeltaNet [-1,1], 2 layers, d 128, 4 heads, modular arithmetic with brackets up to length 40, batch 256",
    steps_note="estimate: 4 models x 3 seeds x (20,000 parity + 2 x 100,000 modular) steps x 2 eigenvalue ranges; fig. 1 runs not counted",
    cpu_scale="batch 32 of 256",
)
