"""Configs and presets of the reproduction and of the `train` verb: standard library only, so bad values are
refused before torch loads."""

from __future__ import annotations

from dataclasses import dataclass

from iclr25.shared.validate import (
    check_bool,
    check_in_range,
    check_int_at_least,
    check_nonnegative,
    check_one_of,
    check_positive,
)

TASKS = ("parity", "mod", "modbra")  # data.TASKS
MODELS = ("figure1", "deltanet", "mamba", "diagonal", "fullmatrix", "lstm", "transformer")  # baselines.ALL_MODELS
GRID_MODELS = ("deltanet", "mamba", "lstm", "transformer")  # the Table-3 rows
SCHEDULES = ("cosine", "constant")
DELTA_MODES = ("chunk", "recurrent", "fla")  # DeltaNet's delta rule: ours chunked, ours step by step, FLA's kernel
MAX_LEN = 256  # the longest test sequence of the paper's protocol


def parse_eig_range(value: str) -> str:
    """Normalise "0,1" / "[0,1]" / "-1,1" / "[-1, 1]" to "[0,1]" or "[-1,1]"; ValueError otherwise."""
    text = str(value).replace(" ", "").strip("[]()")
    if text in ("0,1", "0.0,1.0"):
        return "[0,1]"
    if text in ("-1,1", "-1.0,1.0"):
        return "[-1,1]"
    raise ValueError(f"eig_range must be one of [0,1] or [-1,1] (also written 0,1 / -1,1), got {value!r}")


@dataclass(frozen=True)
class Config:
    """Quick: `iclr25-lrnn-state-tracking reproduce --scale quick` (~3 min CPU on 2 cores, more on a loaded machine):
    tanh Figure-1 LRNN reaches scaled accuracy ≥ 0.9 on parity lengths 40–256, the sigmoid one stays ≤ 0.1.
    """

    # Figure 1: diagonal LRNN, 1 block (spec §3.6, §6a)
    fig1: bool = True
    fig1_dim: int = 16  # official 10; 16 is the spec's quick setting
    fig1_steps: int = 600  # official 20 000; converges in 250–500 (spec §6a)
    fig1_batch: int = 128  # official 256
    fig1_lr: float = 1e-3
    fig1_seeds: int = 2
    # Mamba on parity at CPU scale, both ranges (Table 3's Mamba rows, trained on lengths 3-10 instead of 3-40);
    # reported, not gated: `reproduce --scale ci mamba=true` (see the README's Mamba study)
    mamba: bool = False
    mamba_d_model: int = 32
    mamba_steps: int = 600
    mamba_batch: int = 64
    mamba_lr: float = 1e-2
    mamba_warmup: int = 200
    mamba_train_max_len: int = 10  # official 40: at 3-40 no CPU-sized pilot learned parity (README)
    mamba_seeds: int = 1
    # Table 3 grid
    grid_tasks: tuple[str, ...] = ()
    grid_models: tuple[str, ...] = ()  # deltanet, mamba (both ranges), lstm, transformer (range-free)
    grid_seeds: int = 1
    grid_d_model: int = 128
    grid_layers: int = 2
    grid_heads: int = 4
    grid_batch: int = 256
    grid_lr: float = 1e-3
    grid_steps_parity: int = 20_000  # official parity YAML
    grid_steps_mod: int = 100_000  # official modular-arithmetic YAMLs
    grid_warmup_parity: int = 2_000
    grid_warmup_mod: int = 10_000
    grid_wd_parity: float = 0.0
    grid_wd_mod: float = 0.1
    grid_gated: bool = False  # gate the spec §9.7 claims (full scale only)
    grid_deltanet_mode: str = "chunk"  # "fla": FLA's Triton kernel for DeltaNet (optional fla-core, CUDA only)
    # evaluation
    eval_n: int = 2_048  # official 8 192
    eval_min_len: int = 40
    eval_max_len: int = 256
    # theory and speed
    theory: bool = True
    speed_T: int = 1_024
    speed_reps: int = 3
    threads: int = 1  # CPU threads: 1 is fastest for these small models on a shared machine
    log_every: int = 50
    checkpoint_every: int = 0  # steps between checkpoints of every training run (0: none); --checkpoint-every too

    def __post_init__(self) -> None:
        for name in ("fig1", "mamba", "grid_gated", "theory"):
            check_bool(name, getattr(self, name))
        for name in ("fig1_dim", "fig1_steps", "fig1_batch", "fig1_seeds"):
            check_int_at_least(name, getattr(self, name), 1)
        check_positive("fig1_lr", self.fig1_lr)
        for name in ("mamba_d_model", "mamba_steps", "mamba_batch", "mamba_seeds"):
            check_int_at_least(name, getattr(self, name), 1)
        check_positive("mamba_lr", self.mamba_lr)
        check_int_at_least("mamba_warmup", self.mamba_warmup, 0)
        check_int_at_least("mamba_train_max_len", self.mamba_train_max_len, 5)
        if bad := [t for t in self.grid_tasks if t not in TASKS]:
            raise ValueError(f"grid_tasks must be drawn from {', '.join(TASKS)}; got {bad}")
        if bad := [m for m in self.grid_models if m not in GRID_MODELS]:
            raise ValueError(f"grid_models must be drawn from {', '.join(GRID_MODELS)}; got {bad}")
        for name in ("grid_seeds", "grid_d_model", "grid_layers", "grid_heads", "grid_batch"):
            check_int_at_least(name, getattr(self, name), 1)
        check_positive("grid_lr", self.grid_lr)
        check_one_of("grid_deltanet_mode", self.grid_deltanet_mode, DELTA_MODES)
        check_int_at_least("grid_steps_parity", self.grid_steps_parity, 1)
        check_int_at_least("grid_steps_mod", self.grid_steps_mod, 1)
        check_int_at_least("grid_warmup_parity", self.grid_warmup_parity, 0)
        check_int_at_least("grid_warmup_mod", self.grid_warmup_mod, 0)
        check_nonnegative("grid_wd_parity", self.grid_wd_parity)
        check_nonnegative("grid_wd_mod", self.grid_wd_mod)
        check_int_at_least("eval_n", self.eval_n, 1)
        check_int_at_least("eval_min_len", self.eval_min_len, 1)
        check_int_at_least("eval_max_len", self.eval_max_len, 1)
        check_int_at_least("speed_T", self.speed_T, 0)  # 0: no speed measurement
        check_int_at_least("speed_reps", self.speed_reps, 1)
        check_int_at_least("threads", self.threads, 1)
        check_int_at_least("log_every", self.log_every, 0)
        check_int_at_least("checkpoint_every", self.checkpoint_every, 0)
        if {"deltanet", "transformer"} & set(self.grid_models) and self.grid_d_model % self.grid_heads:
            raise ValueError(f"grid_d_model ({self.grid_d_model}) must be divisible by grid_heads ({self.grid_heads})")
        if not 1 <= self.eval_min_len <= self.eval_max_len <= MAX_LEN:
            raise ValueError(
                f"need 1 <= eval_min_len <= eval_max_len <= {MAX_LEN}, got {self.eval_min_len}, {self.eval_max_len}"
            )


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
class TrainConfig:
    """One training run. Defaults: the official parity YAML (2 layers, d 128, 4 heads, 20k steps, batch 256)."""

    task: str = "parity"
    model: str = "deltanet"
    eig_range: str = "[-1,1]"
    d_model: int = 128
    n_layers: int = 2
    n_heads: int = 4
    use_short_conv: bool = True
    steps: int = 20_000  # parity YAML; 100 000 for the modular-arithmetic tasks
    batch_size: int = 256
    lr: float = 1e-3
    weight_decay: float = 0.0  # parity 0.0, modular arithmetic 0.1
    warmup: int = 2_000  # parity 2 000, modular arithmetic 10 000
    schedule: str = "cosine"  # "cosine" (to lr·min_lr_ratio) or "constant"
    min_lr_ratio: float = 1e-3
    grad_clip: float = 0.0  # the official loop does not clip
    mult: bool = True  # brackets task: allow '*'
    eval_n: int = 8_192
    eval_batch: int = 1_024
    eval_seed: int = 12_345
    seed: int = 0
    amp: bool = True  # bf16 autocast on CUDA (fp32 state); ignored on CPU
    deltanet_mode: str = "chunk"  # "fla": FLA's Triton chunk kernel (optional fla-core, CUDA only)
    train_max_len: int = 40  # longest training sequence (official 40; shorter ones are a CPU pilot's choice)

    def __post_init__(self) -> None:
        check_one_of("task", self.task, TASKS)
        check_one_of("model", self.model, MODELS)
        check_one_of("deltanet_mode", self.deltanet_mode, DELTA_MODES)
        check_int_at_least("train_max_len", self.train_max_len, 5)
        if self.train_max_len > MAX_LEN:
            raise ValueError(f"train_max_len must be <= {MAX_LEN}, got {self.train_max_len}")
        object.__setattr__(self, "eig_range", parse_eig_range(self.eig_range))
        check_one_of("schedule", self.schedule, SCHEDULES)
        for name in ("steps", "batch_size", "eval_n", "eval_batch", "d_model", "n_layers", "n_heads"):
            check_int_at_least(name, getattr(self, name), 1)
        if self.model in ("deltanet", "transformer") and self.d_model % self.n_heads:
            raise ValueError(f"d_model ({self.d_model}) must be divisible by n_heads ({self.n_heads})")
        check_positive("lr", self.lr)
        check_nonnegative("weight_decay", self.weight_decay)
        check_nonnegative("grad_clip", self.grad_clip)
        for name in ("warmup", "eval_seed", "seed"):
            check_int_at_least(name, getattr(self, name), 0)
        check_in_range("min_lr_ratio", self.min_lr_ratio, 0.0, 1.0)
        for name in ("use_short_conv", "mult", "amp"):
            check_bool(name, getattr(self, name))


# `train` presets: quick = the spec's 1-layer CPU setting, full = the official YAML (parity: 20k steps).
TRAIN_PRESETS: dict[str, dict[str, int]] = {
    "quick": {"d_model": 32, "n_layers": 1, "n_heads": 2, "steps": 1_000, "batch_size": 64, "warmup": 100},
    "full": {},
}


LM_MODELS = ("deltanet", "mamba")


@dataclass(frozen=True)
class LMConfig:
    """A byte-level language model for the perplexity-vs-position evaluation of Fig. 5 (a CPU-sized stand-in for the
    paper's FLA pre-training; the paper's 340M-1.3B checkpoints are not loadable here)."""

    model: str = "deltanet"
    eig_range: str = "[-1,1]"
    d_model: int = 64
    n_layers: int = 2
    n_heads: int = 4
    seq_len: int = 256  # training window in tokens
    steps: int = 200
    batch_size: int = 16
    lr: float = 1e-3
    weight_decay: float = 0.1
    seed: int = 0

    def __post_init__(self) -> None:
        check_one_of("model", self.model, LM_MODELS)
        object.__setattr__(self, "eig_range", parse_eig_range(self.eig_range))
        for name in ("d_model", "n_layers", "n_heads", "steps", "batch_size"):
            check_int_at_least(name, getattr(self, name), 1)
        check_int_at_least("seq_len", self.seq_len, 2)
        check_int_at_least("seed", self.seed, 0)
        check_positive("lr", self.lr)
        check_nonnegative("weight_decay", self.weight_decay)
        if self.model == "deltanet" and self.d_model % self.n_heads:
            raise ValueError(f"d_model ({self.d_model}) must be divisible by n_heads ({self.n_heads})")


WORD_SUBSETS = ("all", "swaps", "swaps3", "4tokens")  # data.WORD_SUBSETS
WORD_MODELS = ("deltanet", "mamba", "lstm", "transformer", "fullmatrix")


@dataclass(frozen=True)
class WordConfig:
    """One S5 word-problem run (§5.2): every position supervised with the prefix product; sequence accuracy vs length.

    Paper (App. E.2, unverified summary): train length 32, test up to 500, batch 512, lr 1e-4, wd 0.01, clip 1.0,
    d_model 128, 4 heads, 1 or 5 layers, no short conv. The defaults here are a CPU-sized version.
    """

    subset: str = "swaps"
    model: str = "deltanet"
    eig_range: str = "[-1,1]"
    d_model: int = 32
    n_layers: int = 1
    n_heads: int = 2
    use_short_conv: bool = False  # the paper's S5 runs have no short convolution
    train_len: int = 16
    test_len: int = 64
    steps: int = 600
    batch_size: int = 64
    lr: float = 1e-3
    weight_decay: float = 0.01
    warmup: int = 50
    grad_clip: float = 1.0
    eval_n: int = 512
    eval_seed: int = 12_345
    seed: int = 0

    def __post_init__(self) -> None:
        check_one_of("subset", self.subset, WORD_SUBSETS)
        check_one_of("model", self.model, WORD_MODELS)
        object.__setattr__(self, "eig_range", parse_eig_range(self.eig_range))
        check_bool("use_short_conv", self.use_short_conv)
        for name in ("d_model", "n_layers", "n_heads", "train_len", "test_len", "steps", "batch_size", "eval_n"):
            check_int_at_least(name, getattr(self, name), 1)
        for name in ("warmup", "eval_seed", "seed"):
            check_int_at_least(name, getattr(self, name), 0)
        check_positive("lr", self.lr)
        check_nonnegative("weight_decay", self.weight_decay)
        check_nonnegative("grad_clip", self.grad_clip)
        if self.test_len < self.train_len:
            raise ValueError(f"test_len ({self.test_len}) must be >= train_len ({self.train_len})")
        if self.subset == "4tokens" and (self.train_len % 4 or self.test_len % 4):
            raise ValueError(f"subset '4tokens' needs lengths divisible by 4, got {self.train_len}, {self.test_len}")
        if self.model in ("deltanet", "transformer") and self.d_model % self.n_heads:
            raise ValueError(f"d_model ({self.d_model}) must be divisible by n_heads ({self.n_heads})")
