"""`iclr25 smoke`: one optimizer step of the full preset's token stage: the 370M LLaMA (d 1024, 24 layers,
16 heads, untied head, Hugging Face `LlamaForCausalLM`) on 2**21 tokens per step (1,024 sequences of T = 2,048)
in micro-batches of 16, bf16 autocast on CUDA, the stage's fused AdamW (0.9, 0.95; weight decay 0.1), clipping 1
and warmup + cosine schedule, through the package's own `StageLoop` (the token stage runs the most positions per
step; a patch-stage step runs a quarter of them). Synthetic token ids over a 32,000-id vocabulary (the LLaMA
tokenizer of the official scripts; the preset's tokenizer file is not read). `reduced` (the CPU run of CI, where a
370M step does not fit in seconds) trains the package's tiny LLaMA (d 64, 2 layers) on one sequence of 128 tokens
a step through the same loop."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from iclr25.patch_train.config import PRESETS
from iclr25.patch_train.patch import make_llama
from iclr25.patch_train.plan import plan_token_only
from iclr25.patch_train.stage import OptimConfig, StageLoop

VOCAB = 32_000
CPU_MODEL, CPU_TOKENS = "tiny", 128  # reduced: the tiny LLaMA, one sequence of 128 tokens per step


def build(device: str, reduced: bool) -> Callable[[], int]:
    c = PRESETS["full"]
    size, T, tokens, mb = (
        (CPU_MODEL, CPU_TOKENS, CPU_TOKENS, 1) if reduced else (c.model, c.T, c.tokens_per_step, c.micro_batch)
    )
    (plan,) = plan_token_only(T, tokens, c.token_steps, c.lr, c.warmup)
    model = make_llama(size, VOCAB, c.max_len or c.T, **c.extra).to(device)
    # uint16 ids, as the preset's memory-mapped corpus; one random sequence repeated as every row (a view, no copy)
    ids = np.random.default_rng(0).integers(0, VOCAB, (1, T), dtype=np.uint16)
    blocks = np.broadcast_to(ids, (plan.steps * plan.seqs_per_step, T))
    loop = StageLoop(model, plan, blocks, optim=OptimConfig(micro_batch=mb), device=device)

    def step() -> int:
        loop.step()
        return plan.seqs_per_step

    return step
