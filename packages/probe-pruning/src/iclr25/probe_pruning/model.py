"""LLaMA and OPT decoders in plain torch, with Hugging Face weight names, split at the points probe pruning needs.

Every block exposes its two halves so a pruner can run them on a subset of units (real matrix slicing):
`attn_inner(x, positions, heads)` is q/k/v + causal attention, returning the per-head outputs that feed o_proj,
`attn_outer(z, heads)` is o_proj on the matching columns; `mlp_inner(x, channels)` is act(gate)*up (OPT: act(fc1)),
`mlp_outer(z, channels)` is down_proj (OPT: fc2) on the matching columns. With `heads=None` / `channels=None`
every unit is used and the block is the dense HF block. The state-dict keys are those of `LlamaForCausalLM`
and `OPTForCausalLM`, so HF checkpoints load directly (`from_hf_state_dict`, `from_pretrained_dir` in `hf_io`).
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any

import torch
import torch.nn.functional as F
from torch import Tensor, nn

ACTIVATIONS = {"silu": F.silu, "relu": F.relu, "gelu": F.gelu}


@dataclass(frozen=True)
class ModelConfig:
    """The fields of a LlamaConfig / OPTConfig this implementation reads (HF names in `hf_io`)."""

    arch: str = "llama"  # "llama" | "opt"
    vocab_size: int = 256
    hidden_size: int = 64
    num_hidden_layers: int = 4
    num_attention_heads: int = 4
    num_key_value_heads: int = 4
    intermediate_size: int = 176
    max_position_embeddings: int = 2048
    rms_norm_eps: float = 1e-5  # LLaMA RMSNorm; OPT uses LayerNorm with eps 1e-5
    rope_theta: float = 10000.0
    hidden_act: str = "silu"
    tie_word_embeddings: bool = False
    attention_bias: bool = False  # LLaMA: q/k/v/o biases (False in LLaMA-2/3); OPT: always True
    mlp_bias: bool = False

    def __post_init__(self) -> None:
        if self.arch not in ("llama", "opt"):
            raise ValueError(f"arch must be 'llama' or 'opt', got {self.arch!r}")
        if self.hidden_size % self.num_attention_heads:
            raise ValueError("hidden_size must be a multiple of num_attention_heads")
        if self.num_attention_heads % self.num_key_value_heads:
            raise ValueError("num_attention_heads must be a multiple of num_key_value_heads")
        if self.hidden_act not in ACTIVATIONS:
            raise ValueError(f"hidden_act must be one of {', '.join(ACTIVATIONS)}, got {self.hidden_act!r}")

    @property
    def head_dim(self) -> int:
        """Per-head width."""
        return self.hidden_size // self.num_attention_heads

    def to_dict(self) -> dict[str, Any]:
        """Plain dict of the fields."""
        return asdict(self)


@dataclass
class LMOutput:
    """HF-style output: `logits` (B, S, V) and the mean next-token `loss` when labels were given."""

    logits: Tensor
    loss: Tensor | None = None

    def __getitem__(self, i: int) -> Tensor | None:
        return (self.loss, self.logits)[i] if self.loss is not None else (self.logits,)[i]


class RMSNorm(nn.Module):
    """LLaMA RMSNorm (computed in float32, as HF does)."""

    def __init__(self, d: int, eps: float) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.ones(d))
        self.eps = eps

    def forward(self, x: Tensor) -> Tensor:
        dtype = x.dtype
        x = x.float()
        x = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps)
        return self.weight * x.to(dtype)


def rotate_half(x: Tensor) -> Tensor:
    """HF's rotate_half: (x1, x2) -> (-x2, x1)."""
    x1, x2 = x.chunk(2, dim=-1)
    return torch.cat((-x2, x1), dim=-1)


def rope(positions: Tensor, head_dim: int, theta: float, dtype: torch.dtype) -> tuple[Tensor, Tensor]:
    """cos, sin of shape (S, head_dim) at integer `positions` (the probe uses its tokens' true positions)."""
    inv = 1.0 / (theta ** (torch.arange(0, head_dim, 2, device=positions.device, dtype=torch.float32) / head_dim))
    freqs = positions.float()[:, None] * inv[None, :]
    emb = torch.cat((freqs, freqs), dim=-1)
    return emb.cos().to(dtype), emb.sin().to(dtype)


def head_channels(heads: Tensor, head_dim: int) -> Tensor:
    """Channel indices (rows of q, columns of o_proj) of `heads`, in head order."""
    return (heads[:, None] * head_dim + torch.arange(head_dim, device=heads.device)[None, :]).reshape(-1)


def _rows(linear: nn.Linear, idx: Tensor | None, x: Tensor) -> Tensor:
    """`linear` restricted to output rows `idx` (real slicing of weight and bias)."""
    if idx is None:
        return linear(x)
    bias = linear.bias.index_select(0, idx) if linear.bias is not None else None
    return F.linear(x, linear.weight.index_select(0, idx), bias)


def _cols(linear: nn.Linear, idx: Tensor | None, z: Tensor) -> Tensor:
    """`linear` restricted to input columns `idx` (its bias, if any, is kept whole)."""
    if idx is None:
        return linear(z)
    return F.linear(z, linear.weight.index_select(1, idx), linear.bias)


class _Attention(nn.Module):
    def __init__(self, cfg: ModelConfig, out_name: str, bias: bool) -> None:
        super().__init__()
        d, hd = cfg.hidden_size, cfg.head_dim
        self.q_proj = nn.Linear(d, cfg.num_attention_heads * hd, bias=bias)
        self.k_proj = nn.Linear(d, cfg.num_key_value_heads * hd, bias=bias)
        self.v_proj = nn.Linear(d, cfg.num_key_value_heads * hd, bias=bias)
        setattr(self, out_name, nn.Linear(cfg.num_attention_heads * hd, d, bias=bias))
        self.out_name = out_name

    @property
    def out(self) -> nn.Linear:
        return getattr(self, self.out_name)


class _MLP(nn.Module):
    def __init__(self, cfg: ModelConfig) -> None:
        super().__init__()
        self.gate_proj = nn.Linear(cfg.hidden_size, cfg.intermediate_size, bias=cfg.mlp_bias)
        self.up_proj = nn.Linear(cfg.hidden_size, cfg.intermediate_size, bias=cfg.mlp_bias)
        self.down_proj = nn.Linear(cfg.intermediate_size, cfg.hidden_size, bias=cfg.mlp_bias)


class DecoderBlock(nn.Module):
    """Common split forward of a pre-norm decoder block (see the module docstring)."""

    cfg: ModelConfig

    def attn_norm(self, h: Tensor) -> Tensor:
        """Layer-normalised attention input X = LN(R)."""
        raise NotImplementedError

    def mlp_norm(self, h: Tensor) -> Tensor:
        """Layer-normalised MLP input."""
        raise NotImplementedError

    @property
    def attn(self) -> _Attention:
        return self.self_attn

    @property
    def attn_out_weight(self) -> Tensor:
        """o_proj / out_proj weight, (d, H*hd)."""
        return self.attn.out.weight

    @property
    def mlp_out_linear(self) -> nn.Linear:
        """down_proj / fc2."""
        raise NotImplementedError

    def attn_inner(self, x: Tensor, positions: Tensor, heads: Tensor | None = None) -> Tensor:
        """Causal attention of (B, S, d) inputs among themselves at `positions` (S,), for the q heads `heads`
        (None: all); returns the concatenated head outputs (B, S, len(heads)*hd) that feed o_proj. Under GQA the
        k/v heads are never sliced; each kept q head reads its group's k/v head."""
        cfg, a = self.cfg, self.attn
        B, S, _ = x.shape
        H, Hkv, hd = cfg.num_attention_heads, cfg.num_key_value_heads, cfg.head_dim
        gqa = Hkv != H
        q_rows = head_channels(heads, hd) if heads is not None else None
        kv_rows = q_rows if not gqa else None
        nq = H if heads is None else heads.numel()
        q = _rows(a.q_proj, q_rows, x).view(B, S, nq, hd).transpose(1, 2)
        k = _rows(a.k_proj, kv_rows, x).view(B, S, -1, hd).transpose(1, 2)
        v = _rows(a.v_proj, kv_rows, x).view(B, S, -1, hd).transpose(1, 2)
        if gqa:
            group = (heads if heads is not None else torch.arange(H, device=x.device)) // (H // Hkv)
            k, v = k.index_select(1, group), v.index_select(1, group)
        if cfg.arch == "llama":
            cos, sin = rope(positions, hd, cfg.rope_theta, q.dtype)
            q = q * cos + rotate_half(q) * sin
            k = k * cos + rotate_half(k) * sin
        z = F.scaled_dot_product_attention(q, k, v, is_causal=True, scale=1.0 / math.sqrt(hd))
        return z.transpose(1, 2).reshape(B, S, nq * hd)

    def attn_outer(self, z: Tensor, heads: Tensor | None = None) -> Tensor:
        """o_proj on the columns of `heads` (OPT keeps its whole output bias)."""
        cols = head_channels(heads, self.cfg.head_dim) if heads is not None else None
        return _cols(self.attn.out, cols, z)

    def mlp_inner(self, x: Tensor, channels: Tensor | None = None) -> Tensor:
        """The input of down_proj / fc2 for the kept `channels` (None: all)."""
        raise NotImplementedError

    def mlp_outer(self, z: Tensor, channels: Tensor | None = None) -> Tensor:
        """down_proj / fc2 on the kept columns."""
        return _cols(self.mlp_out_linear, channels, z)

    def forward(self, h: Tensor, positions: Tensor) -> Tensor:
        """The dense block."""
        h = h + self.attn_outer(self.attn_inner(self.attn_norm(h), positions))
        return h + self.mlp_outer(self.mlp_inner(self.mlp_norm(h)))


class LlamaBlock(DecoderBlock):
    """`LlamaDecoderLayer`: RMSNorm, RoPE attention (optionally GQA), SwiGLU MLP."""

    def __init__(self, cfg: ModelConfig) -> None:
        super().__init__()
        self.cfg = cfg
        self.self_attn = _Attention(cfg, "o_proj", cfg.attention_bias)
        self.mlp = _MLP(cfg)
        self.input_layernorm = RMSNorm(cfg.hidden_size, cfg.rms_norm_eps)
        self.post_attention_layernorm = RMSNorm(cfg.hidden_size, cfg.rms_norm_eps)
        self.act = ACTIVATIONS[cfg.hidden_act]

    def attn_norm(self, h: Tensor) -> Tensor:
        return self.input_layernorm(h)

    def mlp_norm(self, h: Tensor) -> Tensor:
        return self.post_attention_layernorm(h)

    @property
    def mlp_out_linear(self) -> nn.Linear:
        return self.mlp.down_proj

    def mlp_inner(self, x: Tensor, channels: Tensor | None = None) -> Tensor:
        return self.act(_rows(self.mlp.gate_proj, channels, x)) * _rows(self.mlp.up_proj, channels, x)


class OPTBlock(DecoderBlock):
    """`OPTDecoderLayer` (do_layer_norm_before=True): LayerNorm, biased attention, ReLU fc1/fc2."""

    def __init__(self, cfg: ModelConfig) -> None:
        super().__init__()
        self.cfg = cfg
        d = cfg.hidden_size
        self.self_attn = _Attention(cfg, "out_proj", True)
        self.self_attn_layer_norm = nn.LayerNorm(d, eps=cfg.rms_norm_eps)
        self.fc1 = nn.Linear(d, cfg.intermediate_size)
        self.fc2 = nn.Linear(cfg.intermediate_size, d)
        self.final_layer_norm = nn.LayerNorm(d, eps=cfg.rms_norm_eps)
        self.act = ACTIVATIONS[cfg.hidden_act]

    def attn_norm(self, h: Tensor) -> Tensor:
        return self.self_attn_layer_norm(h)

    def mlp_norm(self, h: Tensor) -> Tensor:
        return self.final_layer_norm(h)

    @property
    def mlp_out_linear(self) -> nn.Linear:
        return self.fc2

    def mlp_inner(self, x: Tensor, channels: Tensor | None = None) -> Tensor:
        return self.act(_rows(self.fc1, channels, x))


class DecoderLM(nn.Module):
    """A causal LM: `embed(ids)`, `layers`, `head(h)`; `forward(input_ids, labels=None) -> LMOutput`.

    Split over several devices by `sharding.shard_model` (embeddings on the first, contiguous blocks of layers, the
    head on the last), the forward moves the hidden states at block boundaries (`to_layer`, `to_head`); unsplit,
    those are no-ops."""

    cfg: ModelConfig
    embed_device: torch.device | None = None  # set by `shard_model`
    layer_devices: tuple[torch.device, ...] | None = None
    head_device: torch.device | None = None

    def embed_modules(self) -> list[nn.Module]:
        """The modules `embed` uses (placed on the first device)."""
        raise NotImplementedError

    def head_modules(self) -> list[nn.Module]:
        """The modules `head` uses (placed on the last device)."""
        raise NotImplementedError

    def to_embed(self, input_ids: Tensor) -> Tensor:
        """Token ids on the embeddings' device."""
        return input_ids if self.embed_device is None else input_ids.to(self.embed_device)

    def to_layer(self, index: int, h: Tensor, positions: Tensor) -> tuple[Tensor, Tensor]:
        """Hidden states and position ids on decoder layer `index`'s device (moved only at a block boundary)."""
        if self.layer_devices is None:
            return h, positions
        device = self.layer_devices[index]
        return h.to(device), positions.to(device)

    def to_head(self, h: Tensor) -> Tensor:
        """Hidden states on the head's device."""
        return h if self.head_device is None else h.to(self.head_device)

    @property
    def layers(self) -> nn.ModuleList:
        """The decoder blocks."""
        raise NotImplementedError

    def embed(self, input_ids: Tensor) -> Tensor:
        """Token (+ OPT position) embeddings."""
        raise NotImplementedError

    def head(self, h: Tensor) -> Tensor:
        """Final norm + LM head."""
        raise NotImplementedError

    def forward(self, input_ids: Tensor, labels: Tensor | None = None) -> LMOutput:
        """Dense forward; `labels` (HF convention: shifted inside, -100 ignored) gives the mean loss."""
        input_ids = self.to_embed(input_ids)
        h = self.embed(input_ids)
        positions = torch.arange(input_ids.shape[1], device=input_ids.device)
        for i, layer in enumerate(self.layers):
            h, positions = self.to_layer(i, h, positions)
            h = layer(h, positions)
        logits = self.head(self.to_head(h))
        return LMOutput(logits, lm_loss(logits, labels) if labels is not None else None)


def lm_loss(logits: Tensor, labels: Tensor) -> Tensor:
    """Mean next-token cross-entropy (logits[:, :-1] predict labels[:, 1:]; -100 ignored), in float32 (labels are
    moved to the logits' device: on a split model the ids sit with the embeddings, the logits with the head)."""
    labels = labels.to(logits.device)
    return F.cross_entropy(logits[:, :-1].float().reshape(-1, logits.shape[-1]), labels[:, 1:].reshape(-1))


class TinyLlama(DecoderLM):
    """`LlamaForCausalLM` with the same parameter names (`model.layers.N.self_attn.q_proj.weight`, ...)."""

    def __init__(self, cfg: ModelConfig) -> None:
        super().__init__()
        if cfg.arch != "llama":
            raise ValueError("TinyLlama needs arch='llama'")
        self.cfg = cfg
        self.model = nn.Module()
        self.model.embed_tokens = nn.Embedding(cfg.vocab_size, cfg.hidden_size)
        self.model.layers = nn.ModuleList(LlamaBlock(cfg) for _ in range(cfg.num_hidden_layers))
        self.model.norm = RMSNorm(cfg.hidden_size, cfg.rms_norm_eps)
        self.lm_head = nn.Linear(cfg.hidden_size, cfg.vocab_size, bias=False)
        if cfg.tie_word_embeddings:
            self.lm_head.weight = self.model.embed_tokens.weight

    @property
    def layers(self) -> nn.ModuleList:
        return self.model.layers

    def embed_modules(self) -> list[nn.Module]:
        return [self.model.embed_tokens]

    def head_modules(self) -> list[nn.Module]:
        return [self.model.norm, self.lm_head]

    def embed(self, input_ids: Tensor) -> Tensor:
        return self.model.embed_tokens(input_ids)

    def head(self, h: Tensor) -> Tensor:
        return self.lm_head(self.model.norm(h))


class TinyOPT(DecoderLM):
    """`OPTForCausalLM` (pre-norm variants, word_embed_proj_dim == hidden_size) with HF parameter names."""

    POSITION_OFFSET = 2  # OPTLearnedPositionalEmbedding

    def __init__(self, cfg: ModelConfig) -> None:
        super().__init__()
        if cfg.arch != "opt":
            raise ValueError("TinyOPT needs arch='opt'")
        self.cfg = cfg
        d = cfg.hidden_size
        self.model = nn.Module()
        self.model.decoder = nn.Module()
        dec = self.model.decoder
        dec.embed_tokens = nn.Embedding(cfg.vocab_size, d)
        dec.embed_positions = nn.Embedding(cfg.max_position_embeddings + self.POSITION_OFFSET, d)
        dec.layers = nn.ModuleList(OPTBlock(cfg) for _ in range(cfg.num_hidden_layers))
        dec.final_layer_norm = nn.LayerNorm(d, eps=cfg.rms_norm_eps)
        self.lm_head = nn.Linear(d, cfg.vocab_size, bias=False)
        self.lm_head.weight = dec.embed_tokens.weight  # OPT ties its LM head

    @property
    def layers(self) -> nn.ModuleList:
        return self.model.decoder.layers

    def embed_modules(self) -> list[nn.Module]:
        return [self.model.decoder.embed_tokens, self.model.decoder.embed_positions]

    def head_modules(self) -> list[nn.Module]:
        return [self.model.decoder.final_layer_norm, self.lm_head]

    def embed(self, input_ids: Tensor) -> Tensor:
        dec = self.model.decoder
        pos = torch.arange(input_ids.shape[1], device=input_ids.device) + self.POSITION_OFFSET
        return dec.embed_tokens(input_ids) + dec.embed_positions(pos)[None]

    def head(self, h: Tensor) -> Tensor:
        return self.lm_head(self.model.decoder.final_layer_norm(h))


def build_model(cfg: ModelConfig) -> DecoderLM:
    """A randomly initialised TinyLlama or TinyOPT for `cfg` (HF-like init: normal(0, 0.02))."""
    model = TinyLlama(cfg) if cfg.arch == "llama" else TinyOPT(cfg)
    for module in model.modules():
        if isinstance(module, nn.Linear | nn.Embedding):
            nn.init.normal_(module.weight, std=0.02)
            if isinstance(module, nn.Linear) and module.bias is not None:
                nn.init.zeros_(module.bias)
    return model
