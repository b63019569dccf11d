"""Reproduction presets and verb configs (standard library + shared validators only: bad values fail before torch).

Paper: Le et al., "Probe Pruning: Accelerating LLMs through Dynamic Pruning via Model-Probing", ICLR 2025
(arXiv 2502.15618). Defaults follow the official code (`src/module/hyper.py`) and the research spec §3, §6.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Annotated, Any

from iclr25.probe_pruning.sharding import MAX_DEVICES, parse_max_memory, parse_memory
from iclr25.shared.validate import (
    AtLeast,
    AtMost,
    ClosedProbability,
    Each,
    Flag,
    InRange,
    NonNegativeFloat,
    OneOf,
    PositiveFloat,
    Satisfies,
    Text,
    Validated,
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


def _check_fusion_field(name: str, value: Any) -> None:
    """`check_fusion` as a field rule (its message names the `fusion` field)."""
    check_fusion(value)


def _check_memory_field(name: str, value: Any) -> None:
    """A per-device weight budget: "" (none), "40GiB" (every device) or "20GiB,40GiB" (one per device)."""
    if not isinstance(value, str):
        raise ValueError(f"{name} must be a memory size such as 40GiB, got {value!r}")
    if value.strip():
        for part in value.split(","):
            try:
                parse_memory(part)
            except ValueError as e:
                raise ValueError(f"{name}: {e}") from None


_Memory = Annotated[str, Satisfies(_check_memory_field, '"" (none), 40GiB, or 20GiB,40GiB (one per device)', "40XB")]

_Fusion = Annotated[
    str, Satisfies(_check_fusion_field, "scaled, probe_only, history_only or fixed:<rho in [0, 1]>", "fixed:2")
]


# Size limits, refused before any work (past them a run would exhaust memory or run for months). The largest
# preset: 1 024-token windows, 2 000 calibration windows; the prune verb reads real checkpoints (LLaMA-2-70B:
# 80 layers, 64 heads, MLP width 28 672).
MAX_SEEDS = 1000
MAX_WIDTH = 65_536  # hidden and MLP widths, the rounding multiple
MAX_LAYERS = 1024  # decoder layers, and the skipped layer indices
MAX_HEADS = 1024
MAX_STEPS = 10_000_000  # training and warm-up steps
MAX_BATCH = 65_536
MAX_SEQ_LEN = 131_072  # tokens per window (attention memory grows with its square)
MAX_CORPUS_BYTES = 1_000_000_000  # bytes read per domain
MAX_WINDOWS = 10_000_000  # calibration windows and evaluation batches
MAX_REPS = 1000  # timed passes
MAX_WORKERS = 1024


@dataclass(frozen=True)
class Config(Validated):
    """Quick (spec §6a): a tiny byte-level LLaMA (d 64, 4 layers, 4 heads, d_ff 176) trained 700 steps on a 50/50
    mix of English prose (domain A) and Python source (domain B), calibrated on domain A, pruned at r = 0.4 and
    evaluated on 10 batches of 20 x 64 domain-B (and domain-A) windows, for each of 2 seeds."""

    seeds: Annotated[int, AtLeast(1), AtMost(MAX_SEEDS)] = 2
    # tiny model + training (spec §6a)
    d_model: Annotated[int, AtLeast(1), AtMost(MAX_WIDTH)] = 64
    n_layers: Annotated[int, AtLeast(1), AtMost(MAX_LAYERS)] = 4
    n_heads: Annotated[int, AtLeast(1), AtMost(MAX_HEADS)] = 4
    d_ff: Annotated[int, AtLeast(1), AtMost(MAX_WIDTH)] = 176
    train_steps: Annotated[int, AtLeast(0), AtMost(MAX_STEPS)] = 700
    train_batch: Annotated[int, AtLeast(1), AtMost(MAX_BATCH)] = 16
    seq_len: Annotated[int, AtLeast(2), AtMost(MAX_SEQ_LEN)] = 64
    lr: PositiveFloat = 3e-3
    warmup: Annotated[int, AtLeast(0), AtMost(MAX_STEPS)] = 50
    weight_decay: NonNegativeFloat = 0.01
    # bytes read per domain (prose: all of it when smaller)
    corpus_bytes: Annotated[int, AtLeast(10_000), AtMost(MAX_CORPUS_BYTES)] = 1_000_000
    # pruning (spec §3, §6a)
    ratio: Annotated[float, InRange(0.0, 0.95)] = 0.4
    skip_layers: Annotated[tuple[int, ...], Each(AtLeast(0), AtMost(MAX_LAYERS))] = (0,)
    round_multiple: Annotated[int, AtLeast(1), AtMost(MAX_WIDTH)] = 8
    probe_seq: ClosedProbability = 0.5
    probe_bsz: ClosedProbability = 0.05
    ema: ClosedProbability = 0.99
    fusion: _Fusion = "scaled"
    # data
    calib_windows: Annotated[int, AtLeast(1), AtMost(MAX_WINDOWS)] = 64  # domain A only
    calib_batch: Annotated[int, AtLeast(1), AtMost(MAX_BATCH)] = 16
    eval_batches: Annotated[int, AtLeast(1), AtMost(MAX_WINDOWS)] = 10
    eval_batch: Annotated[int, AtLeast(1), AtMost(MAX_BATCH)] = 20
    domain_a: Flag = True  # also evaluate in distribution of the calibration (domain A table)
    ablations: Flag = True  # probe-only / history-only / fixed-rho / random and first-token probes (reported)
    # timed passes over the eval batches for the speed table (0: skip)
    latency_reps: Annotated[int, AtLeast(0), AtMost(MAX_REPS)] = 3
    # CPU: seeds train in parallel processes of one thread each (1: in this process)
    workers: Annotated[int, AtLeast(1), AtMost(MAX_WORKERS)] = 2
    # full scale (GPU): a local LLaMA/OPT checkpoint and the paper's data files; "" = the tiny model above
    model_dir: Text = ""
    wikitext: Text = ""
    c4: Text = ""
    # extra ratios evaluated besides `ratio` (full: 0.2)
    ratios: Annotated[tuple[float, ...], Each(InRange(0.0, 0.95))] = ()
    # weights' dtype on a GPU (CPU runs stay float32); full: float16, as the official code loads LLaMA-2
    dtype: Annotated[str, OneOf(("float32", "float16", "bfloat16"))] = "float32"
    # scale out: the decoder layers split over this many CUDA GPUs (embeddings on the first, head on the last,
    # contiguous blocks balanced by weight bytes; see sharding.py), under an optional per-device weight budget
    devices: Annotated[int, AtLeast(1), AtMost(MAX_DEVICES)] = 1
    max_memory: _Memory = ""

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.d_model % self.n_heads or (self.d_model // self.n_heads) % 2:
            raise ValueError(f"d_model / n_heads must be an even integer, got {self.d_model} / {self.n_heads}")
        if any(s >= self.n_layers for s in self.skip_layers) and not self.model_dir:
            raise ValueError(f"skip_layers must be < n_layers = {self.n_layers}, got {self.skip_layers}")
        if self.probe_seq == 0 or self.probe_bsz == 0:
            raise ValueError("probe_seq and probe_bsz must be > 0")
        if self.devices > self.n_layers and not self.model_dir:
            raise ValueError(f"devices={self.devices} exceeds the {self.n_layers} decoder layers of the model")
        parse_max_memory(self.max_memory, self.devices)  # one budget, or one per device


PRESETS: dict[str, Config] = {
    # ci: the quick setting without the domain-A table, the ablations and the timing (the gated claims only)
    "ci": Config(domain_a=False, ablations=False, latency_reps=0),
    "quick": Config(),
    # full (spec §6b; one GPU, or several with devices=N): LLaMA-2-7B from a local HF folder, WikiText2 test, 2000
    # C4 windows, B 20, S 1024, fp16 (the official code's dtype), r in {0.2, 0.4}, skip {0, 1, 2}, kept MLP rounded
    # to 64. Give model_dir=, wikitext= and c4=.
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
class PruneConfig(Validated):
    """`prune` / `eval` verbs: calibrate on C4 (or the built-in prose) and evaluate on WikiText (or built-in Python)."""

    model: Text = field(default="", metadata={"help": "HF checkpoint folder (config.json + safetensors or .bin)"})
    method: Annotated[str, OneOf(METHODS)] = field(default="pp", metadata={"help": "one of " + ", ".join(METHODS)})
    ratio: Annotated[float, InRange(0.0, 0.95)] = field(
        default=0.4, metadata={"help": "target pruning ratio r over all layers"}
    )
    skip_layers: Annotated[tuple[int, ...], Each(AtLeast(0), AtMost(MAX_LAYERS))] = field(
        default=(0, 1, 2), metadata={"help": "layers never pruned"}
    )
    round_multiple: Annotated[int, AtLeast(1), AtMost(MAX_WIDTH)] = field(
        default=64, metadata={"help": "kept MLP channels rounded to this multiple"}
    )
    probe_seq: ClosedProbability = field(default=0.5, metadata={"help": "probe share of the sequence"})
    probe_bsz: ClosedProbability = field(default=0.05, metadata={"help": "probe share of the batch"})
    ema: ClosedProbability = field(default=0.99, metadata={"help": "history EMA momentum"})
    fusion: _Fusion = field(default="scaled", metadata={"help": "scaled | probe_only | history_only | fixed:<rho>"})
    data: Text = field(default="", metadata={"help": "WikiText raw/jsonl file ('' = built-in Python source)"})
    calib: Text = field(default="", metadata={"help": "C4 json.gz file ('' = built-in English prose)"})
    tokenizer: Text = field(default="", metadata={"help": "tokenizer.json ('' = the folder's, else bytes)"})
    seq_len: Annotated[int, AtLeast(2), AtMost(MAX_SEQ_LEN)] = field(default=64, metadata={"help": "window length S"})
    batch: Annotated[int, AtLeast(1), AtMost(MAX_BATCH)] = field(default=20, metadata={"help": "batch size B"})
    batches: Annotated[int, AtLeast(1), AtMost(MAX_WINDOWS)] = field(
        default=10, metadata={"help": "evaluation batches"}
    )
    calib_windows: Annotated[int, AtLeast(1), AtMost(MAX_WINDOWS)] = field(
        default=64, metadata={"help": "calibration windows"}
    )
    devices: Annotated[int, AtLeast(1), AtMost(MAX_DEVICES)] = field(
        default=1, metadata={"help": "CUDA GPUs the decoder layers are split over (contiguous blocks)"}
    )
    max_memory: _Memory = field(default="", metadata={"help": "weight budget per GPU, e.g. 40GiB or 20GiB,40GiB"})

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.probe_seq == 0 or self.probe_bsz == 0:
            raise ValueError("probe_seq and probe_bsz must be > 0")
        parse_max_memory(self.max_memory, self.devices)  # one budget, or one per device


@dataclass(frozen=True)
class TrainConfig(Validated):
    """`train-tiny`: the spec §6a tiny byte-level LLaMA, saved as an HF-style folder."""

    d_model: Annotated[int, AtLeast(1), AtMost(MAX_WIDTH)] = field(default=64, metadata={"help": "hidden size"})
    n_layers: Annotated[int, AtLeast(1), AtMost(MAX_LAYERS)] = field(default=4, metadata={"help": "decoder layers"})
    n_heads: Annotated[int, AtLeast(1), AtMost(MAX_HEADS)] = field(default=4, metadata={"help": "attention heads"})
    d_ff: Annotated[int, AtLeast(1), AtMost(MAX_WIDTH)] = field(default=176, metadata={"help": "MLP width"})
    steps: Annotated[int, AtLeast(1), AtMost(MAX_STEPS)] = field(default=700, metadata={"help": "training steps"})
    batch: Annotated[int, AtLeast(1), AtMost(MAX_BATCH)] = field(default=16, metadata={"help": "batch size"})
    seq_len: Annotated[int, AtLeast(2), AtMost(MAX_SEQ_LEN)] = field(default=64, metadata={"help": "sequence length"})
    lr: PositiveFloat = field(default=3e-3, metadata={"help": "AdamW learning rate"})

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.d_model % self.n_heads or (self.d_model // self.n_heads) % 2:
            raise ValueError(f"d_model / n_heads must be an even integer, got {self.d_model} / {self.n_heads}")


from iclr25.shared.smoke import SmokeSpec  # noqa: E402

SMOKE = SmokeSpec(
    build="iclr25.probe_pruning.smoke:build",
    full_steps=700,
    what="TinyLlama d 64, 4 layers, byte vocabulary, batch 16 x 1,024 tokens",
    steps_note="1 seed x 700 steps (pruning itself trains nothing)",
    cpu_scale="batch 2 of 16",
)
