"""The comparisons of arXiv 2407.12665 (Table 1, Table 4, Fig. 5) as stage plans.

Given a token-level budget of `token_steps` optimizer steps of `tokens_per_step` tokens:
- "token": token-level training from scratch for `token_steps` steps (cost 1.0x);
- "patch": two-stage training at equal compute, reading 1/C(lam, K) times the data (Table 4 reading);
- "scratch": token-level training from scratch on the patch run's (1 - lam) remainder only (Fig. 5);
- "patch_equal_data": two-stage training on the same data as "token" (cost C(lam, K), Table 1).
"""

from __future__ import annotations

from iclr25.patch_train.config import RUNS
from iclr25.patch_train.plan import StagePlan, plan_token_only, plan_two_stage

__all__ = ["RUNS", "comparison_plans"]


def comparison_plans(
    K: int, lam: float, T: int, tokens_per_step: int, token_steps: int, lr: float, warmup: int | float
) -> dict[str, list[StagePlan]]:
    """Stage plans of the four runs compared in the paper, keyed by `RUNS`."""
    patch = plan_two_stage(K, lam, T, tokens_per_step, compute_budget=token_steps, lr=lr, warmup=warmup)
    equal_data = plan_two_stage(
        K, lam, T, tokens_per_step, total_tokens=token_steps * tokens_per_step, lr=lr, warmup=warmup
    )
    remainder = [p for p in patch if p.stage == "token"]
    return {
        "token": plan_token_only(T, tokens_per_step, token_steps, lr=lr, warmup=warmup),
        "patch": patch,
        "scratch": remainder,
        "patch_equal_data": equal_data,
    }
