"""Cost of ETD's intrinsic reward (arXiv 2501.15418, Sec. 4) as a fraction of one PPO iteration, by episode length.

One PPO iteration at the official sizes (16 envs x 512 steps, minibatch 512, 4 epochs) without a bonus is timed on a
real MiniGrid env; ETD's share is timed separately on the same sizes, with episodes of exactly `episode_len` steps
whose phases are staggered across envs, after a warm-up of `episode_len` steps so that the episodic memories hold
their steady-state sizes (uniform on 0..L-1). Reported per length (CPU seconds, one torch thread):

- `score_s`: scoring the rollout's 8,192 transitions against the memories (encoding s', one masked min per step);
- `refresh_s`: re-encoding every stored observation after the model update (`stale_features=False`);
- `train_s`: the critic's 64 contrastive steps (one per PPO minibatch, as in the official code);
- `ppo_s`: the no-bonus PPO iteration (env stepping, policy, GAE, PPO update);
- `reward_fraction = (score_s + refresh_s) / ppo_s` and `total_fraction = (score_s + refresh_s + train_s) / ppo_s`.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np
import torch

from iclr25.etd_exploration.config import PPOConfig
from iclr25.etd_exploration.etd import ETDReward
from iclr25.etd_exploration.ppo import train


def ppo_iteration_seconds(n_envs: int = 16, n_steps: int = 512, batch_size: int = 512, seed: int = 0) -> float:
    """CPU seconds of one no-bonus PPO iteration (rollout + update) on MiniGrid-FourRooms with the official policy."""
    cfg = PPOConfig(
        env_id="MiniGrid-FourRooms-v0",
        intrinsic="none",
        total_frames=n_envs * n_steps,
        n_envs=n_envs,
        n_steps=n_steps,
        batch_size=batch_size,
        seed=seed,
    )
    start = time.process_time()
    train(cfg, visitation=False)
    return time.process_time() - start


def etd_seconds(
    episode_len: int,
    n_envs: int = 16,
    n_steps: int = 512,
    batch_size: int = 512,
    n_epochs: int = 4,
    seed: int = 0,
    **etd_kwargs: Any,
) -> dict[str, float]:
    """CPU seconds ETD spends per PPO iteration with episodes of `episode_len` steps (scoring, refresh, training)."""
    rng = np.random.default_rng(seed)
    torch.manual_seed(seed)
    shape = (3, 7, 7)
    etd = ETDReward(shape, n_envs, seed=seed, **etd_kwargs)
    offset = (np.arange(n_envs) * episode_len) // n_envs  # staggered episode phases

    def stream(t: int) -> tuple[np.ndarray, np.ndarray]:
        obs = rng.integers(0, 11, (n_envs, *shape), dtype=np.uint8)
        return obs, (t + offset) % episode_len == episode_len - 1

    obs = rng.integers(0, 11, (n_envs, *shape), dtype=np.uint8)
    for t in range(episode_len):  # warm-up: memories reach their steady-state sizes
        nxt, done = stream(t)
        etd.compute(obs, np.zeros(n_envs), nxt, done)
        obs = nxt
    start = time.process_time()
    for t in range(episode_len, episode_len + n_steps):
        nxt, done = stream(t)
        etd.compute(obs, np.zeros(n_envs), nxt, done)
        obs = nxt
    score = time.process_time() - start
    start = time.process_time()
    etd.refresh()
    refresh = time.process_time() - start
    anchors = torch.as_tensor(rng.integers(0, 11, (batch_size, *shape), dtype=np.uint8))
    positives = torch.as_tensor(rng.integers(0, 11, (batch_size, *shape), dtype=np.uint8))
    n_updates = n_epochs * -(-n_envs * n_steps // batch_size)
    start = time.process_time()
    for _ in range(n_updates):
        etd.update({"obs": anchors, "pos_obs": positives})
    return {"score_s": score, "refresh_s": refresh, "train_s": time.process_time() - start}


def overhead_table(episode_lens: tuple[int, ...] = (100, 640, 2560), seed: int = 0) -> dict[str, dict[str, float]]:
    """Per episode length: ETD's scoring and training seconds and their fractions of a no-bonus PPO iteration."""
    ppo = ppo_iteration_seconds(seed=seed)
    out = {}
    for L in episode_lens:
        etd = etd_seconds(L, seed=seed)
        out[str(L)] = {
            **etd,
            "ppo_s": ppo,
            "reward_fraction": (etd["score_s"] + etd["refresh_s"]) / ppo,
            "total_fraction": (etd["score_s"] + etd["refresh_s"] + etd["train_s"]) / ppo,
        }
    return out


def main(argv: list[str] | None = None) -> int:
    """`python -m iclr25.etd_exploration.bench OUT.json`: write the overhead table (one torch thread)."""
    import json
    import sys
    from pathlib import Path

    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1 or not args[0].endswith(".json"):
        print("usage: python -m iclr25.etd_exploration.bench OUT.json", file=sys.stderr)
        return 2
    torch.set_num_threads(1)
    table = overhead_table()
    Path(args[0]).write_text(json.dumps(table, indent=1) + "\n")
    print(json.dumps(table, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
