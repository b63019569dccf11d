"""Reproduction presets and verb configs (standard library + shared validators only: bad values fail before torch).

Paper: Le et al., "Probe Pruning: Accelerating LLMs through Dynamic Pruning via Model-Probing", ICLR 2025
(arXiv 2502.15618). Defaults follow the official code (`src/module/hyper.py`) and the research spec §3, §6.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from iclr25.shared.validate import (
    check_each,
    check_in_range,
    check_int_at_least,
    check_nonnegative,
    check_one_of,
    check_positive,
    check_probability,
)

METHODS = ("dense", "pp", "fullbatch", "wanda-sp", "flap", "random", "inverted")
CONTROLS = ("random", "inverted")
FUSIONS = ("scaled", "probe_only", "history_only")  # plus "fixed:<rho>"
PROBE_SELECTIONS = ("residual", "random", "first")
TARGETS = ("attn", "mlp")


def check_fusion(value: str) -> str:
    """`scaled`, `probe_only`, `history_only` or `fixed:<rho>` with rho in [0, 1]."""
    if value in FUSIONS:
        return value
    head, sep, tail = value.partition(":")
    if head == "fixed" and sep:
        try:
            rho = float(tail)
        except ValueError:
            rho = float("nan")
        if 0.0 <= rho <= 1.0:
            return value
    raise ValueError(f"fusion must be one of {', '.join(FUSIONS)} or fixed:<rho in [0, 1]>, got {value!r}")


@dataclass(frozen=True)
class Config:
    """Quick (spec §6a): a tiny byte-level LLaMA (d 64, 4 layers, 4 heads, d_ff 176) trained 700 steps on a 50/50
    mix of English prose (domain A) and Python source (domain B), calibrated on domain A, pruned at r = 0.4 and
    evaluated on 10 batches of 20 x 64 domain-B (and domain-A) windows, for each of 2 seeds."""

    seeds: int = 2
    # tiny model + training (spec §6a)
    d_model: int = 64
    n_layers: int = 4
    n_heads: int = 4
    d_ff: int = 176
    train_steps: int = 700
    train_batch: int = 16
    seq_len: int = 64
    lr: float = 3e-3
    warmup: int = 50
    weight_decay: float = 0.01
    corpus_bytes: int = 1_000_000  # bytes read per domain (prose: all of it when smaller)
    # pruning (spec §3, §6a)
    ratio: float = 0.4
    skip_layers: tuple[int, ...] = (0,)
    round_multiple: int = 8
    probe_seq: float = 0.5
    probe_bsz: float = 0.05
    ema: float = 0.99
    fusion: str = "scaled"
    # data
    calib_windows: int = 64  # domain A only
    calib_batch: int = 16
    eval_batches: int = 10
    eval_batch: int = 20
    domain_a: bool = True  # also evaluate in distribution of the calibration (domain A table)
    ablations: bool = True  # probe-only / history-only / fixed-rho / random and first-token probes (reported)
    latency_reps: int = 3  # timed passes over the eval batches for the speed table (0: skip)
    workers: int = 2  # CPU: seeds train in parallel processes of one thread each (1: in this process)
    # full scale (GPU): a local LLaMA/OPT checkpoint and the paper's data files; "" = the tiny model above
    model_dir: str = ""
    wikitext: str = ""
    c4: str = ""
    ratios: tuple[float, ...] = ()  # extra ratios evaluated besides `ratio` (full: 0.2)
    dtype: str = "float32"

    def __post_init__(self) -> None:
        check_int_at_least("seeds", self.seeds, 1)
        for name in ("d_model", "n_layers", "n_heads", "d_ff", "train_batch", "calib_batch", "eval_batch"):
            check_int_at_least(name, getattr(self, name), 1)
        check_int_at_least("train_steps", self.train_steps, 0)
        check_int_at_least("seq_len", self.seq_len, 2)
        if self.d_model % self.n_heads or (self.d_model // self.n_heads) % 2:
            raise ValueError(f"d_model / n_heads must be an even integer, got {self.d_model} / {self.n_heads}")
        check_positive("lr", self.lr)
        check_int_at_least("warmup", self.warmup, 0)
        check_nonnegative("weight_decay", self.weight_decay)
        check_int_at_least("corpus_bytes", self.corpus_bytes, 10_000)
        check_in_range("ratio", self.ratio, 0.0, 0.95)
        check_each("skip_layers", self.skip_layers, check_int_at_least, 0)
        if any(s >= self.n_layers for s in self.skip_layers) and not self.model_dir:
            raise ValueError(f"skip_layers must be < n_layers = {self.n_layers}, got {self.skip_layers}")
        check_int_at_least("round_multiple", self.round_multiple, 1)
        check_probability("probe_seq", self.probe_seq, closed=True)
        check_probability("probe_bsz", self.probe_bsz, closed=True)
        if self.probe_seq == 0 or self.probe_bsz == 0:
            raise ValueError("probe_seq and probe_bsz must be > 0")
        check_probability("ema", self.ema, closed=True)
        check_fusion(self.fusion)
        check_int_at_least("calib_windows", self.calib_windows, 1)
        check_int_at_least("eval_batches", self.eval_batches, 1)
        check_int_at_least("latency_reps", self.latency_reps, 0)
        check_int_at_least("workers", self.workers, 1)
        check_each("ratios", self.ratios, check_in_range, 0.0, 0.95)
        check_one_of("dtype", self.dtype, ("float32", "float16", "bfloat16"))


PRESETS: dict[str, Config] = {
    # ci: the quick setting without the domain-A table, the ablations and the timing (the gated claims only)
    "ci": Config(domain_a=False, ablations=False, latency_reps=0),
    "quick": Config(),
    # full (spec §6b, one GPU): LLaMA-2-7B from a local HF folder, WikiText2 test, 2000 C4 windows, B 20, S 1024,
    # fp16, r in {0.2, 0.4}, skip {0, 1, 2}, kept MLP rounded to 64. Give model_dir=, wikitext= and c4=.
    "full": Config(
        seeds=1,
        seq_len=1024,
        ratio=0.4,
        ratios=(0.2,),
        skip_layers=(0, 1, 2),
        round_multiple=64,
        calib_windows=2000,
        calib_batch=20,
        eval_batch=20,
        eval_batches=10**6,  # every window of the test text
        domain_a=False,
        ablations=False,
        latency_reps=1,
        dtype="float16",
    ),
}


@dataclass(frozen=True)
class PruneConfig:
    """`prune` / `eval` verbs: calibrate on C4 (or the built-in prose) and evaluate on WikiText (or built-in Python)."""

    model: str = field(default="", metadata={"help": "HF checkpoint folder (config.json + safetensors or .bin)"})
    method: str = field(default="pp", metadata={"help": "one of " + ", ".join(METHODS)})
    ratio: float = field(default=0.4, metadata={"help": "target pruning ratio r over all layers"})
    skip_layers: tuple[int, ...] = field(default=(0, 1, 2), metadata={"help": "layers never pruned"})
    round_multiple: int = field(default=64, metadata={"help": "kept MLP channels rounded to this multiple"})
    probe_seq: float = field(default=0.5, metadata={"help": "probe share of the sequence"})
    probe_bsz: float = field(default=0.05, metadata={"help": "probe share of the batch"})
    ema: float = field(default=0.99, metadata={"help": "history EMA momentum"})
    fusion: str = field(default="scaled", metadata={"help": "scaled | probe_only | history_only | fixed:<rho>"})
    data: str = field(default="", metadata={"help": "WikiText raw/jsonl file ('' = built-in Python source)"})
    calib: str = field(default="", metadata={"help": "C4 json.gz file ('' = built-in English prose)"})
    tokenizer: str = field(default="", metadata={"help": "tokenizer.json ('' = the folder's, else bytes)"})
    seq_len: int = field(default=64, metadata={"help": "window length S"})
    batch: int = field(default=20, metadata={"help": "batch size B"})
    batches: int = field(default=10, metadata={"help": "evaluation batches"})
    calib_windows: int = field(default=64, metadata={"help": "calibration windows"})

    def __post_init__(self) -> None:
        check_one_of("method", self.method, METHODS)
        check_in_range("ratio", self.ratio, 0.0, 0.95)
        check_each("skip_layers", self.skip_layers, check_int_at_least, 0)
        check_int_at_least("round_multiple", self.round_multiple, 1)
        check_probability("probe_seq", self.probe_seq, closed=True)
        check_probability("probe_bsz", self.probe_bsz, closed=True)
        if self.probe_seq == 0 or self.probe_bsz == 0:
            raise ValueError("probe_seq and probe_bsz must be > 0")
        check_probability("ema", self.ema, closed=True)
        check_fusion(self.fusion)
        check_int_at_least("seq_len", self.seq_len, 2)
        check_int_at_least("batch", self.batch, 1)
        check_int_at_least("batches", self.batches, 1)
        check_int_at_least("calib_windows", self.calib_windows, 1)


@dataclass(frozen=True)
class TrainConfig:
    """`train-tiny`: the spec §6a tiny byte-level LLaMA, saved as an HF-style folder."""

    d_model: int = field(default=64, metadata={"help": "hidden size"})
    n_layers: int = field(default=4, metadata={"help": "decoder layers"})
    n_heads: int = field(default=4, metadata={"help": "attention heads"})
    d_ff: int = field(default=176, metadata={"help": "MLP width"})
    steps: int = field(default=700, metadata={"help": "training steps"})
    batch: int = field(default=16, metadata={"help": "batch size"})
    seq_len: int = field(default=64, metadata={"help": "sequence length"})
    lr: float = field(default=3e-3, metadata={"help": "AdamW learning rate"})

    def __post_init__(self) -> None:
        for name in ("d_model", "n_layers", "n_heads", "d_ff", "steps", "batch"):
            check_int_at_least(name, getattr(self, name), 1)
        check_int_at_least("seq_len", self.seq_len, 2)
        if self.d_model % self.n_heads or (self.d_model // self.n_heads) % 2:
            raise ValueError(f"d_model / n_heads must be an even integer, got {self.d_model} / {self.n_heads}")
        check_positive("lr", self.lr)
