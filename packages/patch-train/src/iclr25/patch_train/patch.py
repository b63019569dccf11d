"""Patch-level training: patch inputs, the next-patch loss and the training-cost accounting.

Shao, Meng and Zhou, "Beyond Next Token Prediction: Patch-Level Training for Large Language Models",
ICLR 2025, arXiv 2407.12665.

- Eq. 1 (`patchify`): the input embedding of patch i is the mean of the K token embeddings
  x_{iK} ... x_{iK+K-1}. A block of K*T tokens becomes T patches (not T/K: official issue #3), and the
  patches take the RoPE positions 0 ... T-1, the positions the token stage uses.
- Eq. 2 (`patch_lm_loss`): the output at patch i is one distribution q_i over the vocabulary, scored
  against every one of the K tokens of patch i+1 (a "bag of tokens" prediction; official issue #1).
  Like the official code, the loss is the mean over k of a per-column mean NLL (ignore_index -100),
  which differs from a global mean over valid targets only when some labels are ignored.
- Section 2.2 (`training_cost`): patch training on a fraction lambda of the data costs
  lambda/K + (1 - lambda) of token-level training on the same data.

`patch_forward` works with any Hugging Face causal LM that accepts `inputs_embeds` and `position_ids`
(the LLaMA classes of `transformers` are the reference). The official code casts the input embeddings
to bf16 inside the model; we rely on autocast instead.
"""

from __future__ import annotations

import math
from typing import Any

import torch
import torch.nn.functional as F

from iclr25.patch_train.config import MODEL_SIZES  # name: d_model, d_ff, layers, heads (paper Section 3.1)

IGNORE_INDEX = -100


def training_cost(lam: float, K: int) -> float:
    """Cost of two-stage training relative to token-level training on the same data: lam/K + (1 - lam)."""
    if not 0.0 <= lam <= 1.0:
        raise ValueError(f"lam must lie in [0, 1], got {lam}")
    if int(K) != K or K < 1:
        raise ValueError(f"K must be a positive integer, got {K}")
    return lam / K + (1.0 - lam)  # Section 2.2


def patchify(embeds: torch.Tensor, K: int) -> torch.Tensor:
    """Average each run of K consecutive token embeddings into one patch embedding (Eq. 1)."""
    if embeds.dim() != 3:
        raise ValueError(f"embeds must be (B, L, d), got shape {tuple(embeds.shape)}")
    B, L, d = embeds.shape
    if K < 1 or L % K:
        raise ValueError(f"sequence length {L} must be a positive multiple of the patch size K={K}")
    return embeds.view(B, L // K, K, d).mean(dim=2)  # (B, T, d), Eq. 1


def patch_position_ids(batch: int, T: int, device: torch.device | str | None = None) -> torch.Tensor:
    """RoPE positions of a patch sequence: the patch indices 0 ... T-1 (not iK, not 0 ... KT-1)."""
    return torch.arange(T, device=device).unsqueeze(0).expand(batch, T)  # (B, T)


def patch_lm_loss(logits: torch.Tensor, labels: torch.Tensor, K: int, ignore_index: int = IGNORE_INDEX) -> torch.Tensor:
    """Next-patch loss (Eq. 2): the mean over k of the mean NLL of q_i at token k of patch i+1.

    logits: (B, T, V), one distribution per patch; labels: (B, K*T) token ids of the same block. The last
    patch's prediction is unused and the first patch's tokens are never targets. With K=1 this is the
    ordinary shifted next-token cross-entropy.
    """
    if logits.dim() != 3 or labels.dim() != 2:
        raise ValueError(
            f"logits must be (B, T, V) and labels (B, K*T); got {tuple(logits.shape)}, {tuple(labels.shape)}"
        )
    B, T, _ = logits.shape
    if labels.shape != (B, K * T):
        raise ValueError(f"labels must have shape (B, K*T) = {(B, K * T)}, got {tuple(labels.shape)}")
    if T < 2:
        raise ValueError("need at least two patches: the first patch's tokens are never targets")
    dtype = torch.promote_types(logits.dtype, torch.float32)  # at least fp32 under autocast
    logp = F.log_softmax(logits[:, :-1].to(dtype), dim=-1)  # (B, T-1, V): q_i for i = 0 ... T-2
    targets = labels[:, K:].reshape(B, T - 1, K)  # the K tokens of the next patch
    valid = targets != ignore_index
    if bool(valid.all()):  # every column has B*(T-1) targets: the mean of column means is the plain mean
        return -logp.gather(2, targets).mean()
    nll = -logp.gather(2, targets.clamp_min(0)) * valid  # (B, T-1, K)
    per_k = nll.sum((0, 1)) / valid.sum((0, 1)).clamp_min(1)  # per-column mean over non-ignored targets
    return per_k.mean()  # Eq. 2: average of the K column means (official convention)


def token_lm_loss(logits: torch.Tensor, labels: torch.Tensor, ignore_index: int = IGNORE_INDEX) -> torch.Tensor:
    """Standard shifted next-token cross-entropy (the K=1 case of Eq. 2)."""
    V = logits.shape[-1]
    return F.cross_entropy(logits[:, :-1].float().reshape(-1, V), labels[:, 1:].reshape(-1), ignore_index=ignore_index)


def patch_forward(
    model: Any, input_ids: torch.Tensor, K: int = 1, labels: torch.Tensor | None = None
) -> tuple[torch.Tensor, torch.Tensor | None]:
    """Run a Hugging Face causal LM at patch size K; returns (logits (B, T, V), loss or None).

    K=1 is ordinary token-level language modelling. For K>1 the block of K*T tokens is averaged into T
    patch embeddings (Eq. 1) at positions 0 ... T-1, and the loss is the next-patch loss (Eq. 2).
    The official model ignores attention masks (packed blocks, causal only); so do we.
    """
    if input_ids.dim() != 2:
        raise ValueError(f"input_ids must be (B, L), got shape {tuple(input_ids.shape)}")
    if K == 1:
        logits = model(input_ids=input_ids).logits  # (B, T, V)
        loss = token_lm_loss(logits, labels) if labels is not None else None
        return logits, loss
    B = input_ids.shape[0]
    embeds = patchify(model.get_input_embeddings()(input_ids), K)  # (B, T, d)
    T = embeds.shape[1]
    logits = model(inputs_embeds=embeds, position_ids=patch_position_ids(B, T, input_ids.device)).logits
    loss = patch_lm_loss(logits, labels, K) if labels is not None else None
    return logits, loss


# --------------------------------------------------------------------------------------------------
# Models: the LLaMA architecture of the paper (pre-RMSNorm, SwiGLU, RoPE, untied head).


def make_llama(
    size: str = "tiny", vocab_size: int = 256, max_len: int = 2048, init_std: float = 0.02, **overrides: int
) -> Any:
    """A randomly initialised `transformers` LlamaForCausalLM of one of the paper's sizes (`MODEL_SIZES`)."""
    if size not in MODEL_SIZES:
        raise ValueError(f"unknown model size {size!r}; allowed: {', '.join(MODEL_SIZES)}")
    from transformers import LlamaConfig, LlamaForCausalLM

    dims = {**MODEL_SIZES[size], **overrides}
    cfg = LlamaConfig(
        vocab_size=vocab_size,
        hidden_size=dims["d_model"],
        intermediate_size=dims["d_ff"],
        num_hidden_layers=dims["n_layers"],
        num_attention_heads=dims["n_heads"],
        num_key_value_heads=dims["n_heads"],
        max_position_embeddings=max_len,
        tie_word_embeddings=False,
        initializer_range=init_std,
        bos_token_id=None,
        eos_token_id=None,
        pad_token_id=None,
    )
    cfg._attn_implementation = "sdpa"
    return LlamaForCausalLM(cfg)


def count_params(model: Any, include_embedding: bool = False) -> int:
    """Parameters of the model; the input embedding table is left out unless asked (it costs no FLOPs)."""
    total = sum(p.numel() for p in model.parameters())
    if not include_embedding:
        total -= model.get_input_embeddings().weight.numel()
    return total


def llama_params(size: str, vocab_size: int) -> int:
    """Non-embedding parameters of a LLaMA of `MODEL_SIZES[size]` (attention, SwiGLU, norms, untied head)."""
    dims = MODEL_SIZES[size]
    d, ff, n_layers = dims["d_model"], dims["d_ff"], dims["n_layers"]
    return n_layers * (4 * d * d + 3 * d * ff + 2 * d) + d + d * vocab_size


def flops_per_position_dims(n_params: int, n_layers: int, d_model: int, context: int) -> float:
    """Training FLOPs of one sequence position: 6 N + 6 L T d (Kaplan et al.; attention included)."""
    return 6.0 * n_params + 6.0 * n_layers * context * d_model


def flops_per_position(model: Any, context: int) -> float:
    """Training FLOPs of one sequence position: 6 N (weights incl. head) + 6 L T d (attention), Kaplan et al.

    A patch position costs what a token position costs (same backbone, same context of T positions, one
    LM-head row); averaging K embeddings and gathering K log-probabilities are negligible.
    """
    cfg = model.config
    return flops_per_position_dims(count_params(model), cfg.num_hidden_layers, cfg.hidden_size, context)


def perplexity(nll: float) -> float:
    """exp(nll), guarded against overflow."""
    return math.exp(min(nll, 700.0))
