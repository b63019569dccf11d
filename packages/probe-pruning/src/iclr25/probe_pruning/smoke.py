"""`iclr25 smoke`: the full preset's TinyLlama (byte vocabulary, d 64, 4 layers, 4 heads, SwiGLU 176) trained
with AdamW on batches of 16 x 1,024 tokens, as `training.train_lm` builds and trains it."""

from __future__ import annotations

from collections.abc import Callable

import torch

from iclr25.probe_pruning.config import PRESETS
from iclr25.probe_pruning.model import ModelConfig, build_model

CPU_BATCH = 2


def build(device: str, reduced: bool) -> Callable[[], int]:
    c = PRESETS["full"]
    batch = CPU_BATCH if reduced else c.train_batch
    cfg = ModelConfig(
        arch="llama", vocab_size=256, hidden_size=c.d_model, num_hidden_layers=c.n_layers, num_attention_heads=c.n_heads,
        num_key_value_heads=c.n_heads, intermediate_size=c.d_ff, max_position_embeddings=max(c.seq_len, 2048),
    )  # fmt: skip
    model = build_model(cfg).to(device).train()
    opt = torch.optim.AdamW(model.parameters(), lr=c.lr, weight_decay=c.weight_decay)
    ids = torch.randint(0, 256, (batch, c.seq_len), device=device)

    def step() -> int:
        loss = model(ids, labels=ids).loss
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        return batch

    return step
