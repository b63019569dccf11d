"""Baselines of SA-GFN (Madan et al., ICLR 2025): TB, TB + RND (coupled) and GAFN (Pan et al., ICLR 2023).

Spec §4. TB is `GFlowNet(objective="tb")`. The coupled baselines train ONE network on the intrinsically
augmented reward, so their target distribution is biased and non-stationary -- what SA-GFN decouples:
- TB + RND: terminal novelty, log R = logsumexp(log R_e, log r_i(x)) (the SA-GFN Sibling's reward on one net);
- GAFN: edge and terminal intrinsic rewards in TB form (spec §3.2 (2)), RND with a 128-d output, unsquared
  L2-norm error scaled by 0.1, LeakyReLU MLPs, predictor trained on every visited state of the batch (torchgfn's
  GAFN example settings, spec §4; the RND loss is stepped by its own Adam, equivalent to one joint Adam because the
  parameter sets are disjoint).
"""

from __future__ import annotations

from typing import Any

import torch

from iclr25.sa_gfn.intrinsic import RND
from iclr25.sa_gfn.sagfn import GFlowNet, SiblingReward, intrinsic_targets, visited_states


class IntrinsicGFlowNet(GFlowNet):
    """A single GFlowNet trained on extrinsic + RND intrinsic reward (the coupled design)."""

    def __init__(
        self,
        env,
        reward: SiblingReward | str = "terminal_logsumexp",
        intrinsic_scale: float = 1.0,
        rnd_hidden: int = 256,
        rnd_out: int = 1,
        rnd_error: str = "mse",
        rnd_activation: str = "relu",
        rnd_on: str = "terminal",
        rnd_normalize: str = "none",
        lr_rnd: float = 1e-3,
        seed: int = 0,
        **kw: Any,
    ) -> None:
        super().__init__(env, seed=seed, **kw)
        self.reward = SiblingReward(reward) if isinstance(reward, str) else reward
        if self.reward.edge and self.objective != "tb":
            raise ValueError("edge intrinsic rewards need objective='tb'")
        if rnd_on not in ("terminal", "all"):
            raise ValueError(f"rnd_on must be 'terminal' or 'all', got {rnd_on!r}")
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(seed + 104729)
            self.rnd = RND(
                env.input_dim,
                rnd_hidden,
                rnd_out,
                intrinsic_scale,
                rnd_error,
                activation=rnd_activation,
                normalize=rnd_normalize,
            )
        self.rnd.to(env.device)
        self.rnd_opt = self.rnd.optimizer(lr_rnd)
        self.rnd_on = rnd_on

    def train_step(self) -> dict[str, Any]:
        """Sample on-policy; step the policy on R_e + r_i (pre-step predictor), then the RND predictor."""
        batch = self.sample()
        states = self.env.encode(visited_states(batch) if self.rnd_on == "all" else batch.terminal)
        if self.rnd.normalize != "none":
            self.rnd.observe(states)  # the only update of the normalisation statistics
        log_r, edge = intrinsic_targets(self.env, self.rnd, batch, self.reward)
        loss = self.loss(batch, log_r, edge)
        self.update(loss)
        loss_rnd = self.rnd.loss(states)
        self.rnd_opt.zero_grad(set_to_none=True)
        loss_rnd.backward()
        self.rnd_opt.step()
        x = batch.terminal
        return {
            "loss": loss.item(),
            "loss_rnd": loss_rnd.item(),
            "rnd_weight": self.rnd.weight,
            "sampled": x,
            "train_terminal": x,
        }


def tb_rnd(env, intrinsic_scale: float = 1000.0, **kw: Any) -> IntrinsicGFlowNet:
    """TB + RND: the SA-GFN Sibling's reward (raw novelty, c = 1000 as SA-GFN's default) on a single network."""
    return IntrinsicGFlowNet(env, reward="terminal_logsumexp", intrinsic_scale=intrinsic_scale, **kw)


def gafn(env, intrinsic_scale: float = 0.1, **kw: Any) -> IntrinsicGFlowNet:
    """GAFN (Pan et al. 2023) with torchgfn's example settings (spec §4)."""
    kw.setdefault("activation", "leaky_relu")
    return IntrinsicGFlowNet(
        env,
        reward="gafn_edge",
        intrinsic_scale=intrinsic_scale,
        rnd_out=128,
        rnd_error="l2norm",
        rnd_activation="leaky_relu",
        rnd_on="all",
        objective="tb",
        **kw,
    )
