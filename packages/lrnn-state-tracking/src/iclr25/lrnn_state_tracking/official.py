"""Read the official experiment YAMLs of Grazzi, Siems et al., "Unlocking State-Tracking in Linear RNNs Through
Negative Eigenvalues" (ICLR 2025, arXiv 2411.12537; `xlstm/experiments/*.yaml` of the official repository) into a
`TrainConfig` plus the dataset fields it has no room for (spec §3.6, §6c).

Fields read: `training.{batch_size, lr, seed, lr_warmup_steps, lr_decay_factor, weight_decay, num_steps,
grad_clip_norm}`, `model.{name, layer_type, n_layers | num_blocks, d_model | embedding_dim, n_heads, use_short_conv,
sigmoid_scale, positive_and_negative, activation_func}` and `dataset.kwargs.{synth_lang_type, vocab_size, seed,
min/max_sequence_length, context_length, count, subpar}`. The file is data: `yaml.safe_load`, nothing in it runs.
Refused with a one-line reason: the mLSTM/sLSTM (`xlstm*`) and `delta_rule_fla` configs (models not built here),
multi-block `simple_recurrent` configs, and a vocabulary that does not match the task's token ids.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from iclr25.lrnn_state_tracking.config import MAX_LEN, TrainConfig

SYNTH_LANG_TYPES = {  # official dataset name -> our task
    "parity": "parity",
    "modular_arithmetic": "mod",
    "modular_arithmetic_with_brackets": "modbra",
}
TASK_VOCAB = {"parity": 3, "mod": 10, "modbra": 12}
LAYER_TYPES = ("delta_net", "mamba", "diagonal", "full_matrix")


@dataclass(frozen=True)
class OfficialConfig:
    """An official YAML as a `TrainConfig` plus its dataset fields (lengths, counts, seeds)."""

    train: TrainConfig
    train_lengths: tuple[int, int]
    validation_lengths: tuple[int, int]
    test_lengths: tuple[int, int]
    context_length: int
    count: dict[str, int] = field(default_factory=dict)
    dataset_seed: int = 42
    source: str = ""


def _section(data: dict[str, Any], name: str, path: Path) -> dict[str, Any]:
    value = data.get(name)
    if not isinstance(value, dict):
        raise ValueError(
            f"{path}: needs a '{name}' mapping (an official experiment YAML), found {type(value).__name__}"
        )
    return value


def _number(section: dict[str, Any], key: str, where: str, default: Any = None, kind: type = float) -> Any:
    value = section.get(key, default)
    if value is None:
        raise ValueError(f"{where}.{key} is missing")
    if isinstance(value, str):  # YAML 1.1 reads 1e-3 (no dot) as a string
        try:
            value = float(value)
        except ValueError:
            raise ValueError(f"{where}.{key} must be a number, got {value!r}") from None
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValueError(f"{where}.{key} must be a number, got {value!r}")
    if kind is int:
        if value != int(value):
            raise ValueError(f"{where}.{key} must be an integer, got {value!r}")
        return int(value)
    return float(value)


def _lengths(kw: dict[str, Any], where: str) -> tuple[int, int]:
    lo = _number(kw, "min_sequence_length", where, kind=int)
    hi = _number(kw, "max_sequence_length", where, kind=int)
    if not 1 <= lo <= hi <= MAX_LEN:
        raise ValueError(f"{where}: need 1 <= min_sequence_length <= max_sequence_length <= {MAX_LEN}, got {lo}, {hi}")
    return lo, hi


def _eig_range(model: dict[str, Any], layer: str, where: str) -> str:
    if layer == "delta_net":
        scale = _number(model, "sigmoid_scale", where, default=1.0)
        if scale not in (1.0, 2.0):
            raise ValueError(f"{where}.sigmoid_scale must be 1.0 ([0,1]) or 2.0 ([-1,1]), got {scale}")
        return "[-1,1]" if scale == 2.0 else "[0,1]"
    if layer == "mamba":
        flag = model.get("positive_and_negative", False)
        if not isinstance(flag, bool):
            raise ValueError(f"{where}.positive_and_negative must be true or false, got {flag!r}")
        return "[-1,1]" if flag else "[0,1]"
    if layer == "diagonal":
        act = model.get("activation_func", "sigmoid")
        if act not in ("sigmoid", "tanh"):
            raise ValueError(f"{where}.activation_func must be 'sigmoid' ([0,1]) or 'tanh' ([-1,1]), got {act!r}")
        return "[-1,1]" if act == "tanh" else "[0,1]"
    return "[-1,1]"  # full_matrix: no eigenvalue control; the field is unused


def official_config(data: Any, path: str | Path = "<yaml>") -> OfficialConfig:
    """Map a parsed official experiment YAML (a dict) to an `OfficialConfig`; ValueError names what is wrong."""
    path = Path(path)
    if not isinstance(data, dict):
        raise ValueError(f"{path}: an official experiment YAML is a mapping, found {type(data).__name__}")
    training = _section(data, "training", path)
    model = _section(data, "model", path)
    kw = _section(_section(data, "dataset", path), "kwargs", path)
    lang = kw.get("synth_lang_type")
    if lang not in SYNTH_LANG_TYPES:
        raise ValueError(f"dataset.kwargs.synth_lang_type must be one of {', '.join(SYNTH_LANG_TYPES)}, got {lang!r}")
    task = SYNTH_LANG_TYPES[lang]
    vocab = _number(kw, "vocab_size", "dataset.kwargs", kind=int)
    if vocab != TASK_VOCAB[task]:
        raise ValueError(f"dataset.kwargs.vocab_size must be {TASK_VOCAB[task]} for {lang}, got {vocab}")
    layer = model.get("layer_type")
    if layer not in LAYER_TYPES:
        raise ValueError(
            f"model.layer_type must be one of {', '.join(LAYER_TYPES)} (mLSTM/sLSTM are not reimplemented), "
            f"got {layer!r}"
        )
    context = _number(kw, "context_length", "dataset.kwargs", kind=int)
    if not 5 <= context <= MAX_LEN:
        raise ValueError(f"dataset.kwargs.context_length must be in [5, {MAX_LEN}], got {context}")
    train_lengths = _lengths(kw, "dataset.kwargs")
    subpar = kw.get("subpar") or {}
    if not isinstance(subpar, dict):
        raise ValueError(f"dataset.kwargs.subpar must be a mapping, got {subpar!r}")
    split_lengths = {
        s: _lengths(subpar[s], f"dataset.kwargs.subpar.{s}") if isinstance(subpar.get(s), dict) else train_lengths
        for s in ("validation", "test")
    }
    count = kw.get("count") or {}
    if not isinstance(count, dict):
        raise ValueError(f"dataset.kwargs.count must be a mapping, got {count!r}")
    count = {str(k): _number(count, k, "dataset.kwargs.count", kind=int) for k in count}
    simple = layer in ("diagonal", "full_matrix")  # the one-block `simple_recurrent` models
    n_layers = _number(model, "num_blocks" if simple else "n_layers", "model", kind=int)
    if simple and n_layers != 1:  # the Figure-1 / full-matrix model here is the one-block `simple_recurrent` net
        raise ValueError(
            f"model.num_blocks must be 1 for layer_type {layer} (stacked blocks are not built), got {n_layers}"
        )
    d_model = _number(model, "embedding_dim" if simple else "d_model", "model", kind=int)
    clip = training.get("grad_clip_norm")
    clip = 0.0 if clip in (None, "None", "null") else _number(training, "grad_clip_norm", "training")
    train = TrainConfig(
        task=task,
        model={"delta_net": "deltanet", "mamba": "mamba", "diagonal": "figure1", "full_matrix": "fullmatrix"}[layer],
        eig_range=_eig_range(model, layer, "model"),
        d_model=d_model,
        n_layers=n_layers,
        n_heads=_number(model, "n_heads", "model", default=4, kind=int),
        use_short_conv=model.get("use_short_conv", True),
        steps=_number(training, "num_steps", "training", kind=int),
        batch_size=_number(training, "batch_size", "training", kind=int),
        lr=_number(training, "lr", "training"),
        weight_decay=_number(training, "weight_decay", "training", default=0.0),
        warmup=_number(training, "lr_warmup_steps", "training", default=0, kind=int),
        schedule="cosine",  # the official loop: linear warmup, cosine decay to lr·lr_decay_factor
        min_lr_ratio=_number(training, "lr_decay_factor", "training", default=1e-3),
        grad_clip=clip,
        eval_n=count.get("test", 8_192),
        seed=_number(training, "seed", "training", default=42, kind=int),
    )
    if not math.isfinite(train.lr):
        raise ValueError(f"training.lr must be finite, got {train.lr}")
    return OfficialConfig(
        train=train,
        train_lengths=train_lengths,
        validation_lengths=split_lengths["validation"],
        test_lengths=split_lengths["test"],
        context_length=context,
        count=count,
        dataset_seed=_number(kw, "seed", "dataset.kwargs", default=42, kind=int),
        source=str(path),
    )


def load_official_yaml(path: str | Path) -> OfficialConfig:
    """Read an official experiment YAML (`yaml.safe_load`: the file is data) into an `OfficialConfig`."""
    import yaml

    path = Path(path)
    if not path.is_file():
        raise ValueError(f"{path} does not exist or is not a file")
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (yaml.YAMLError, UnicodeDecodeError) as e:
        first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise ValueError(f"{path} is not a readable YAML file ({first})") from None
    return official_config(data, path)
