"""`iclr25 smoke`: one PPO update of the full preset's ETD run on MiniGrid-DoorKey-16x16 (recurrent CNN-GRU
policy, minibatch 512 of a 16 x 512 rollout): the ETD temporal-distance critic's contrastive Adam step and then the
clipped-PPO Adam step, as `ppo.train` runs them on each minibatch, through the package's own `ETDReward.update` and
`ppo_step`. The rollout (MiniGrid stepping and the intrinsic reward) is not timed: synthetic observations stand in. On the CPU
one torch thread, as the package's own CPU runs use."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import torch

from iclr25.etd_exploration.baselines import make_intrinsic
from iclr25.etd_exploration.config import PRESETS
from iclr25.etd_exploration.envs import VecEnv
from iclr25.etd_exploration.ppo import PPOConfig, make_policy, ppo_step


def build(device: str, reduced: bool) -> Callable[[], int]:
    c = PRESETS["full"]
    if device == "cpu":  # as the package's CPU runs (`threads` 1): its many small ops gain nothing from more
        torch.set_num_threads(1)
    cfg = PPOConfig(
        env_id=c.full_envs[0],
        intrinsic="etd",
        total_frames=c.full_frames,
        n_envs=c.ppo_envs,
        n_steps=c.ppo_steps,
        batch_size=c.ppo_batch,
        n_epochs=c.ppo_epochs,
        ext_coef=1.0,
        int_coef=c.int_coef,
    )
    envs = VecEnv(cfg.env_id, 1, cfg.seed)  # the task's observation shape, dtype and action count
    shape, n_actions, dtype = envs.obs_shape, envs.n_actions, envs.reset().dtype
    policy = make_policy(shape, n_actions, cfg).to(device)
    opt = torch.optim.Adam(policy.parameters(), lr=cfg.lr, eps=1e-5)
    intr = make_intrinsic(
        "etd",
        shape,
        cfg.n_envs,
        device=device,
        n_actions=n_actions,
        lr=cfg.model_lr,
        gamma_future=cfg.gamma_future,
        boundary=cfg.boundary,
        stale_features=cfg.stale_features,
        feature_dim=cfg.model_features_dim,
        seed=cfg.seed,
    )
    rng = np.random.default_rng(0)
    B = cfg.batch_size

    def obs() -> torch.Tensor:
        return torch.as_tensor(rng.integers(0, 11, (B, *shape)).astype(dtype), device=device)

    mb = {
        "obs": obs(),
        "pos_obs": obs(),
        "state": torch.randn(B, policy.hidden_dim, device=device),
        "start": torch.zeros(B, device=device),
        "actions": torch.as_tensor(rng.integers(0, n_actions, B), device=device),
        "logp": torch.full((B,), -float(np.log(n_actions)), device=device),
        "adv": torch.randn(B, device=device),
        "ret": torch.randn(B, device=device),
    }

    def step() -> int:
        intr.update(mb)  # the intrinsic model's step comes before PPO's on each minibatch
        ppo_step(policy, opt, mb, cfg)
        return B

    return step
