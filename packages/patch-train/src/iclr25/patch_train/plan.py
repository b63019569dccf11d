"""The two-stage schedule of arXiv 2407.12665 (Section 2.2, Section 3.1) and its cost accounting.

Stage 1 reads the first lambda of the data at patch size K in blocks of K*T tokens; stage 2 reads the
rest at token level in blocks of T tokens. Tokens per optimizer step are equal in both stages (the
official scripts: 256 x 8,192 tokens, then 1,024 x 2,048 tokens, both 2,097,152 per step), so the patch
stage runs K times fewer sequence positions per step. Each stage gets a fresh AdamW and its own
warmup + cosine schedule (the official run_patch.sh starts stage 2 from the stage-1 weights only).

Step counts come from `round()`, never `int()`: 2/3/4 + 1 - 2/3 is 0.5000000000000001 in floating point,
and a 135,000-step budget gives 179,999.99... patch steps before rounding.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Literal

from iclr25.patch_train.patch import training_cost

Stage = Literal["patch", "token"]


@dataclass(frozen=True)
class StagePlan:
    """One training stage: its patch size, block length, sequences per step, steps, warmup and lr."""

    stage: Stage
    K: int  # patch size (1 for the token stage)
    block_tokens: int  # tokens per sequence: K*T (patch stage) or T
    seqs_per_step: int  # sequences per optimizer step (before gradient accumulation is split out)
    steps: int
    warmup: int
    lr: float

    @property
    def tokens_per_step(self) -> int:
        """Tokens read per optimizer step."""
        return self.block_tokens * self.seqs_per_step

    @property
    def positions_per_step(self) -> int:
        """Sequence positions the model runs per step (tokens / K): what the compute scales with."""
        return self.tokens_per_step // self.K

    @property
    def tokens(self) -> int:
        """Tokens the stage reads in all."""
        return self.steps * self.tokens_per_step

    @property
    def positions(self) -> int:
        """Sequence positions the stage runs in all."""
        return self.steps * self.positions_per_step

    def to_dict(self) -> dict[str, float | int | str]:
        """Plain dict, for reports."""
        return {**asdict(self), "tokens": self.tokens, "positions": self.positions}


def warmup_steps(steps: int, warmup: int | float) -> int:
    """Warmup as a step count: an int is taken as is (capped at `steps`), a float in (0, 1) as a fraction."""
    if isinstance(warmup, float) and 0.0 < warmup < 1.0:
        return max(1, round(warmup * steps)) if steps > 0 else 0
    return min(int(warmup), steps)


def plan_two_stage(
    K: int,
    lam: float,
    T: int,
    tokens_per_step: int,
    total_tokens: int | None = None,
    compute_budget: int | None = None,
    lr: float = 3e-4,
    warmup: int | float = 2000,
) -> list[StagePlan]:
    """Plan patch + token stages for `total_tokens` of data (equal data) or `compute_budget` token steps.

    `compute_budget` is in token-level optimizer steps of `tokens_per_step` tokens: the plan then reads
    budget / C(lam, K) steps' worth of data (equal compute). With lam=0 or K=1 it is plain token training.
    """
    if (total_tokens is None) == (compute_budget is None):
        raise ValueError("give exactly one of total_tokens (equal data) or compute_budget (equal compute)")
    if T < 2 or tokens_per_step % T or tokens_per_step % (K * T):
        raise ValueError(f"tokens_per_step={tokens_per_step} must be a multiple of K*T={K * T} (T>=2)")
    # equal compute: 1/C(lam, K) times the data of the token-level budget
    data_steps = total_tokens / tokens_per_step if total_tokens is not None else compute_budget / training_cost(lam, K)
    if K > 1:
        patch_steps, token_steps = round(lam * data_steps), round((1.0 - lam) * data_steps)
    else:
        patch_steps, token_steps = 0, round(data_steps)
    plans = []
    if patch_steps > 0:
        plans.append(
            StagePlan("patch", K, K * T, tokens_per_step // (K * T), patch_steps, warmup_steps(patch_steps, warmup), lr)
        )
    if token_steps > 0:
        plans.append(StagePlan("token", 1, T, tokens_per_step // T, token_steps, warmup_steps(token_steps, warmup), lr))
    return plans


def plan_token_only(
    T: int, tokens_per_step: int, steps: int, lr: float = 3e-4, warmup: int | float = 2000
) -> list[StagePlan]:
    """The token-level baseline: `steps` steps of blocks of T tokens."""
    return [StagePlan("token", 1, T, tokens_per_step // T, steps, warmup_steps(steps, warmup), lr)]


def plan_flops(plans: list[StagePlan], flops_per_position: float) -> float:
    """Analytic training FLOPs of a plan: positions x FLOPs per position (attention included)."""
    return float(sum(p.positions for p in plans) * flops_per_position)


def hf_cosine_lr(step: int, lr: float, warmup: int, total: int) -> float:
    """Hugging Face `cosine` schedule: lr*s/w during warmup (lr(0) = 0), then lr*(1+cos(pi*progress))/2."""
    if step < warmup:
        return lr * step / max(1, warmup)
    progress = (step - warmup) / max(1, total - warmup)
    return lr * 0.5 * (1.0 + math.cos(math.pi * min(1.0, progress)))
