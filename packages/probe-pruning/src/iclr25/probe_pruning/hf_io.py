"""Hugging Face in/out: `config.json` + safetensors (single or sharded) or `pytorch_model.bin` folders, a loaded
`transformers` model, and saving our models in the same layout. Nothing in a user's folder is ever run: `.bin`
files go through `torch.load(weights_only=True)`, a config asking for remote code is refused."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import torch
from torch import Tensor

from iclr25.probe_pruning.model import DecoderLM, ModelConfig, TinyLlama, TinyOPT
from iclr25.shared.safeload import UnsafeFileError, load_checkpoint, reading_file

LLAMA_TYPES = ("llama", "mistral", "qwen2")  # same block layout and names (no sliding window used here)


def config_from_hf(data: dict[str, Any]) -> ModelConfig:
    """Our `ModelConfig` from a LlamaConfig / OPTConfig dict (as in config.json)."""
    kind = data.get("model_type", "")
    if kind in LLAMA_TYPES:
        if data.get("rope_scaling"):
            raise ValueError(f"rope_scaling {data['rope_scaling']!r} is not supported (plain RoPE only)")
        heads = int(data["num_attention_heads"])
        if data.get("head_dim") not in (None, int(data["hidden_size"]) // heads):
            raise ValueError("a head_dim different from hidden_size / num_attention_heads is not supported")
        return ModelConfig(
            arch="llama",
            vocab_size=int(data["vocab_size"]),
            hidden_size=int(data["hidden_size"]),
            num_hidden_layers=int(data["num_hidden_layers"]),
            num_attention_heads=heads,
            num_key_value_heads=int(data.get("num_key_value_heads") or heads),
            intermediate_size=int(data["intermediate_size"]),
            max_position_embeddings=int(data.get("max_position_embeddings", 2048)),
            rms_norm_eps=float(data.get("rms_norm_eps", 1e-6)),
            rope_theta=float(data.get("rope_theta", 10000.0)),
            hidden_act=str(data.get("hidden_act", "silu")),
            tie_word_embeddings=bool(data.get("tie_word_embeddings", False)),
            attention_bias=bool(data.get("attention_bias", kind == "qwen2")),
            mlp_bias=bool(data.get("mlp_bias", False)),
        )
    if kind == "opt":
        d = int(data["hidden_size"])
        if int(data.get("word_embed_proj_dim", d)) != d:
            raise ValueError("OPT with word_embed_proj_dim != hidden_size (opt-350m) is not supported")
        if not data.get("do_layer_norm_before", True):
            raise ValueError("post-norm OPT (do_layer_norm_before=false) is not supported")
        heads = int(data["num_attention_heads"])
        return ModelConfig(
            arch="opt",
            vocab_size=int(data["vocab_size"]),
            hidden_size=d,
            num_hidden_layers=int(data["num_hidden_layers"]),
            num_attention_heads=heads,
            num_key_value_heads=heads,
            intermediate_size=int(data["ffn_dim"]),
            max_position_embeddings=int(data.get("max_position_embeddings", 2048)),
            rms_norm_eps=1e-5,
            hidden_act=str(data.get("activation_function", "relu")),
            tie_word_embeddings=True,
            attention_bias=True,
        )
    raise ValueError(f"model_type {kind!r} is not supported (llama, mistral, qwen2 or opt)")


def config_to_hf(cfg: ModelConfig) -> dict[str, Any]:
    """A config.json dict transformers reads back as LlamaConfig / OPTConfig."""
    if cfg.arch == "llama":
        return {
            "model_type": "llama",
            "architectures": ["LlamaForCausalLM"],
            "vocab_size": cfg.vocab_size,
            "hidden_size": cfg.hidden_size,
            "num_hidden_layers": cfg.num_hidden_layers,
            "num_attention_heads": cfg.num_attention_heads,
            "num_key_value_heads": cfg.num_key_value_heads,
            "intermediate_size": cfg.intermediate_size,
            "max_position_embeddings": cfg.max_position_embeddings,
            "rms_norm_eps": cfg.rms_norm_eps,
            "rope_theta": cfg.rope_theta,
            "hidden_act": cfg.hidden_act,
            "tie_word_embeddings": cfg.tie_word_embeddings,
            "attention_bias": cfg.attention_bias,
            "mlp_bias": cfg.mlp_bias,
        }
    return {
        "model_type": "opt",
        "architectures": ["OPTForCausalLM"],
        "vocab_size": cfg.vocab_size,
        "hidden_size": cfg.hidden_size,
        "num_hidden_layers": cfg.num_hidden_layers,
        "num_attention_heads": cfg.num_attention_heads,
        "ffn_dim": cfg.intermediate_size,
        "max_position_embeddings": cfg.max_position_embeddings,
        "activation_function": cfg.hidden_act,
        "do_layer_norm_before": True,
        "word_embed_proj_dim": cfg.hidden_size,
        "enable_bias": True,
    }


def from_hf_state_dict(
    config: ModelConfig | dict[str, Any], state_dict: dict[str, Tensor], dtype: torch.dtype | None = None
) -> DecoderLM:
    """Build TinyLlama / TinyOPT from an HF config and state dict (HF key names; a missing tied lm_head is tied)."""
    cfg = config if isinstance(config, ModelConfig) else config_from_hf(config)
    with torch.device("meta"):
        model = TinyLlama(cfg) if cfg.arch == "llama" else TinyOPT(cfg)
    state = {k: v for k, v in state_dict.items() if not k.endswith("rotary_emb.inv_freq")}
    tied = cfg.tie_word_embeddings or cfg.arch == "opt"
    if tied:
        state.pop("lm_head.weight", None)
    expected = set(model.state_dict()) - ({"lm_head.weight"} if tied else set())
    missing, unexpected = sorted(expected - set(state)), sorted(set(state) - expected)
    if missing or unexpected:
        raise ValueError(f"state dict does not match the config: missing {missing[:3]}, unexpected {unexpected[:3]}")
    if dtype is not None:
        state = {k: v.to(dtype) for k, v in state.items()}
    model.load_state_dict(state, strict=False, assign=True)
    if tied:
        emb = model.model.embed_tokens if cfg.arch == "llama" else model.model.decoder.embed_tokens
        model.lm_head.weight = emb.weight
    return model.eval()


def from_transformers(hf_model: Any) -> DecoderLM:
    """Our model from a loaded `transformers` LlamaForCausalLM / OPTForCausalLM (weights shared, not copied)."""
    return from_hf_state_dict(hf_model.config.to_dict(), dict(hf_model.state_dict()))


def _read_safetensors(path: Path) -> dict[str, Tensor]:
    from safetensors.torch import load_file

    with reading_file(path, "safetensors file") as p:
        return load_file(str(p))


def load_state_dict_dir(folder: str | Path) -> dict[str, Tensor]:
    """The weights of an HF folder: model.safetensors, sharded safetensors (index json) or pytorch_model.bin
    (weights-only)."""
    folder = Path(folder)
    single = folder / "model.safetensors"
    if single.is_file():
        return _read_safetensors(single)
    for index_name, reader in (
        ("model.safetensors.index.json", _read_safetensors),
        ("pytorch_model.bin.index.json", lambda p: load_checkpoint(p, what="PyTorch weights file")),
    ):
        index = folder / index_name
        if index.is_file():
            with reading_file(index, "checkpoint index"):
                shards = sorted(set(json.loads(index.read_text())["weight_map"].values()))
            state: dict[str, Tensor] = {}
            for shard in shards:
                if Path(shard).name != shard:
                    raise UnsafeFileError(f"{index} names a shard outside its folder: {shard!r}")
                state.update(reader(folder / shard))
            return state
    binary = folder / "pytorch_model.bin"
    if binary.is_file():
        state = load_checkpoint(binary, what="PyTorch weights file")
        if not isinstance(state, dict) or not all(isinstance(v, Tensor) for v in state.values()):
            raise UnsafeFileError(f"{binary} is not a state dict of tensors")
        return state
    raise UnsafeFileError(f"{folder} holds no model.safetensors, sharded safetensors or pytorch_model.bin")


def read_config(folder: str | Path) -> ModelConfig:
    """The model config of an HF folder; a config that asks for remote code is refused (nothing is run)."""
    folder = Path(folder)
    if not folder.is_dir():
        raise UnsafeFileError(f"{folder} is not a folder (expected an HF checkpoint folder with config.json)")
    path = folder / "config.json"
    with reading_file(path, "model config.json") as p:
        data = json.loads(p.read_text())
        if not isinstance(data, dict):
            raise ValueError("not a JSON object")
        if "auto_map" in data:
            raise ValueError("it asks for remote code (auto_map), which is never run")
        return config_from_hf(data)


def from_pretrained_dir(folder: str | Path, dtype: torch.dtype | None = None) -> DecoderLM:
    """Load TinyLlama / TinyOPT from a local HF checkpoint folder."""
    folder = Path(folder)
    cfg = read_config(folder)
    state = load_state_dict_dir(folder)
    try:
        return from_hf_state_dict(cfg, state, dtype)
    except (ValueError, RuntimeError) as e:
        raise UnsafeFileError(f"{folder}: {' '.join(str(e).split())[:200]}") from None


def save_pretrained(model: DecoderLM, folder: str | Path) -> Path:
    """Write config.json + model.safetensors (HF layout; tied weights stored once)."""
    from safetensors.torch import save

    from iclr25.shared.files import write_bytes, write_text

    folder = Path(folder)
    write_text(folder / "config.json", json.dumps(config_to_hf(model.cfg), indent=2) + "\n")
    state = {k: v.detach().contiguous().cpu() for k, v in model.state_dict().items()}
    if model.cfg.tie_word_embeddings or model.cfg.arch == "opt":
        state.pop("lm_head.weight", None)
    write_bytes(folder / "model.safetensors", save(state, metadata={"format": "pt"}))
    return folder
