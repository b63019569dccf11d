"""A plain-torch LLaMA with the parameter names of `transformers`' LlamaForCausalLM (the fast CPU path).

Same architecture as the paper's models (Section 3.1): pre-RMSNorm, rotary positions (RoPE, the
rotate-half convention of the official code), causal multi-head attention, SwiGLU MLP, untied head. The
state dict is interchangeable with the Hugging Face class (`from_hf` / `to_hf`), so a run can train on this
module and save an ordinary Hugging Face checkpoint. Hidden states travel as (B*T, d) matrices, so each projection
is one matmul without the reshapes of a batched one. It exists for speed: at the CPU scale a forward of the
Hugging Face class spends several milliseconds in Python (mask and rotary set-up, hooks, output objects),
which does not shrink with the sequence length and would make the patch stage's extra steps cost time
that its FLOPs do not (the README's timing study). `forward` takes `input_ids` or `inputs_embeds` and
`position_ids`, like the Hugging Face class, so `patch.patch_forward` runs on either.
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn


class _RMSNorm(nn.Module):
    def __init__(self, d: int, eps: float) -> None:
        super().__init__()
        self.weight, self.eps = nn.Parameter(torch.ones(d)), eps

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if x.dtype == torch.float32:  # one fused op (the same formula in float32)
            return F.rms_norm(x, (x.shape[-1],), self.weight, self.eps)
        dtype = x.dtype
        x = x.float()
        return self.weight * (x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps)).to(dtype)


class _Attention(nn.Module):
    def __init__(self, d: int, heads: int) -> None:
        super().__init__()
        self.heads = heads
        self.q_proj, self.k_proj = nn.Linear(d, d, bias=False), nn.Linear(d, d, bias=False)
        self.v_proj, self.o_proj = nn.Linear(d, d, bias=False), nn.Linear(d, d, bias=False)

    def forward(self, x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor, B: int, T: int) -> torch.Tensor:
        d, h = x.shape[-1], self.heads  # x: (B*T, d)
        qkv = F.linear(x, torch.cat([self.q_proj.weight, self.k_proj.weight, self.v_proj.weight]))  # one matmul
        qkv = qkv.view(B, T, 3, h, d // h).permute(2, 0, 3, 1, 4)  # (3, B, h, T, d/h)
        q, k = _rope(qkv[:2], cos, sin).unbind(0)  # rotate q and k in one go
        y = F.scaled_dot_product_attention(q, k, qkv[2], is_causal=True)
        return F.linear(y.transpose(1, 2).reshape(B * T, d), self.o_proj.weight)


class _MLP(nn.Module):
    def __init__(self, d: int, ff: int) -> None:
        super().__init__()
        self.gate_proj, self.up_proj = nn.Linear(d, ff, bias=False), nn.Linear(d, ff, bias=False)
        self.down_proj = nn.Linear(ff, d, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        gate, up = F.linear(x, torch.cat([self.gate_proj.weight, self.up_proj.weight])).chunk(2, dim=-1)
        return F.linear(F.silu(gate) * up, self.down_proj.weight)  # SwiGLU


class _Layer(nn.Module):
    def __init__(self, d: int, ff: int, heads: int, eps: float) -> None:
        super().__init__()
        self.self_attn, self.mlp = _Attention(d, heads), _MLP(d, ff)
        self.input_layernorm, self.post_attention_layernorm = _RMSNorm(d, eps), _RMSNorm(d, eps)

    def forward(self, x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor, B: int, T: int) -> torch.Tensor:
        x = x + self.self_attn(self.input_layernorm(x), cos, sin, B, T)
        return x + self.mlp(self.post_attention_layernorm(x))


def _rope(x: torch.Tensor, cos: torch.Tensor, signed_sin: torch.Tensor) -> torch.Tensor:
    """Rotary embedding, rotate-half convention: x*cos + [-x2, x1]*sin = x*cos + roll(x, d/2)*[-sin, sin]."""
    return x * cos + x.roll(x.shape[-1] // 2, dims=-1) * signed_sin


class _Body(nn.Module):
    def __init__(self, vocab: int, d: int, ff: int, n_layers: int, heads: int, eps: float) -> None:
        super().__init__()
        self.embed_tokens = nn.Embedding(vocab, d)
        self.layers = nn.ModuleList(_Layer(d, ff, heads, eps) for _ in range(n_layers))
        self.norm = _RMSNorm(d, eps)


class FastLlama(nn.Module):
    """LLaMA in plain torch; `forward(input_ids | inputs_embeds, position_ids)` returns an object with `.logits`."""

    def __init__(self, config: Any) -> None:
        super().__init__()
        d, heads = config.hidden_size, config.num_attention_heads
        if getattr(config, "num_key_value_heads", heads) != heads:
            raise ValueError("FastLlama implements multi-head attention only (num_key_value_heads == heads)")
        self.config = config
        self.model = _Body(
            config.vocab_size, d, config.intermediate_size, config.num_hidden_layers, heads, config.rms_norm_eps
        )
        self.lm_head = nn.Linear(d, config.vocab_size, bias=False)
        theta = (getattr(config, "rope_parameters", None) or {}).get("rope_theta", getattr(config, "rope_theta", 1e4))
        dim = d // heads
        inv_freq = 1.0 / (theta ** (torch.arange(0, dim, 2, dtype=torch.float32) / dim))
        angles = torch.outer(torch.arange(config.max_position_embeddings, dtype=torch.float32), inv_freq)
        angles = torch.cat([angles, angles], dim=-1)  # (max_len, dim)
        signed = torch.cat([-torch.ones(dim // 2), torch.ones(dim // 2)])  # roll(x, d/2) = [x2, x1] -> [-x2, x1]
        self.register_buffer("rope_cos", angles.cos(), persistent=False)
        self.register_buffer("rope_sin", angles.sin() * signed, persistent=False)

    def get_input_embeddings(self) -> nn.Embedding:
        """The token embedding table."""
        return self.model.embed_tokens

    def forward(
        self,
        input_ids: torch.Tensor | None = None,
        inputs_embeds: torch.Tensor | None = None,
        position_ids: torch.Tensor | None = None,
    ) -> SimpleNamespace:
        """Logits (B, T, V) of a causal LM over token ids or given input embeddings at `position_ids` (default 0..T-1)."""
        x = self.model.embed_tokens(input_ids) if inputs_embeds is None else inputs_embeds
        B, T, d = x.shape
        if position_ids is None:
            cos, sin = self.rope_cos[:T], self.rope_sin[:T]  # (T, dim): broadcast over batch and heads
        else:
            cos, sin = self.rope_cos[position_ids].unsqueeze(1), self.rope_sin[position_ids].unsqueeze(1)
        cos, sin = cos.to(x.dtype), sin.to(x.dtype)
        x = x.reshape(B * T, d)  # (B*T, d) between the layers: every projection is one plain matmul
        for layer in self.model.layers:
            x = layer(x, cos, sin, B, T)
        return SimpleNamespace(logits=F.linear(self.model.norm(x), self.lm_head.weight).view(B, T, -1))


def from_hf(hf_model: Any) -> FastLlama:
    """A `FastLlama` with the weights (copied) of a Hugging Face LlamaForCausalLM."""
    fast = FastLlama(hf_model.config)
    fast.load_state_dict(hf_model.state_dict())
    return fast.to(next(hf_model.parameters()).device)


def to_hf(fast: FastLlama) -> Any:
    """A Hugging Face LlamaForCausalLM with the weights (copied) of `fast` (e.g. for `save_pretrained`)."""
    from transformers import LlamaForCausalLM

    hf = LlamaForCausalLM(fast.config)
    hf.load_state_dict(fast.state_dict())
    return hf.to(next(fast.parameters()).device)
