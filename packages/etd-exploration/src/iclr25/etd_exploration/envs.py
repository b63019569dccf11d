"""MiniGrid environments for ETD (arXiv 2501.15418, Sec. 5): partial egocentric 7x7 grids, a new level per episode.

- `register_extra_envs`: the ids the official code (inherited from DEIR) uses that `minigrid` does not register.
- `make_env`: `MiniGrid-...` id -> gymnasium env with channels-first `(3, 7, 7)` uint8 observations and optional
  Gaussian observation noise (std in raw grid-code units, fresh every step; the official `image_noise_scale`).
- `VecEnv`: a plain loop over environments with same-step auto-reset, so that rollouts, episodic memories and
  positives line up: `step` returns the true final observation of a finished episode separately.
  `done = terminated or truncated` as in the official (old gym API) stack: no bootstrap at the time limit.
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np

EXTRA_ENVS: dict[str, tuple[str, dict[str, Any]]] = {
    "MiniGrid-DoorKey-32x32-v0": ("minigrid.envs:DoorKeyEnv", {"size": 32}),
    "MiniGrid-KeyCorridorS8R4-v0": ("minigrid.envs:KeyCorridorEnv", {"room_size": 8, "num_rows": 4}),
    "MiniGrid-KeyCorridorS10R5-v0": ("minigrid.envs:KeyCorridorEnv", {"room_size": 10, "num_rows": 5}),
    "MiniGrid-KeyCorridorS12R6-v0": ("minigrid.envs:KeyCorridorEnv", {"room_size": 12, "num_rows": 6}),
    "MiniGrid-MultiRoom-N12-S10-v0": ("minigrid.envs:MultiRoomEnv", {"minNumRooms": 12, "maxNumRooms": 12}),
    "MiniGrid-MultiRoom-N30-S10-v0": (
        "minigrid.envs:MultiRoomEnv",
        {"minNumRooms": 30, "maxNumRooms": 30, "width": 45, "height": 45},
    ),
}
for _size in (8, 16):
    for _view in (5, 3):
        EXTRA_ENVS[f"MiniGrid-DoorKey-{_size}x{_size}-ViewSize-{_view}x{_view}-v0"] = (
            "minigrid.envs:DoorKeyEnv",
            {"size": _size, "agent_view_size": _view},
        )
for _view in (5, 3):
    EXTRA_ENVS[f"MiniGrid-KeyCorridorS6R3V{_view}-v0"] = (
        "minigrid.envs:KeyCorridorEnv",
        {"room_size": 6, "num_rows": 3, "agent_view_size": _view},
    )
    EXTRA_ENVS[f"MiniGrid-FourRooms-ViewSize-{_view}x{_view}-v0"] = (
        "minigrid.envs:FourRoomsEnv",
        {"agent_view_size": _view},
    )


def register_extra_envs() -> list[str]:
    """Register the official code's extra MiniGrid ids (idempotent); returns the ids."""
    import minigrid  # noqa: F401  (registers the standard ids)

    for env_id, (entry, kwargs) in EXTRA_ENVS.items():
        if env_id not in gym.registry:
            gym.register(id=env_id, entry_point=entry, kwargs=kwargs)
    return list(EXTRA_ENVS)


def normalize_env_id(env_id: str) -> str:
    """Accept 'DoorKey-8x8', 'minigrid:DoorKey-8x8' or the full 'MiniGrid-DoorKey-8x8-v0'."""
    name = env_id.removeprefix("minigrid:")
    if not name.startswith("MiniGrid-"):
        name = "MiniGrid-" + name
    if not name.rsplit("-", 1)[-1].startswith("v"):
        name += "-v0"
    return name


class _ChannelsFirst(gym.ObservationWrapper):
    """(H, W, 3) grid codes -> (3, H, W), plus optional Gaussian noise on the raw codes."""

    def __init__(self, env: gym.Env, noise_scale: float = 0.0, seed: int | None = None) -> None:
        super().__init__(env)
        h, w, c = env.observation_space.shape
        self.noise_scale = float(noise_scale)
        self.rng = np.random.default_rng(seed)
        dtype = np.float32 if self.noise_scale > 0 else np.uint8
        self.observation_space = gym.spaces.Box(-np.inf if dtype == np.float32 else 0, 255, (c, h, w), dtype)

    def observation(self, obs: np.ndarray) -> np.ndarray:
        out = np.ascontiguousarray(obs.transpose(2, 0, 1))
        if self.noise_scale > 0:
            out = out.astype(np.float32) + self.rng.normal(0.0, self.noise_scale, out.shape).astype(np.float32)
        return out


def make_env(env_id: str, noise_scale: float = 0.0, seed: int | None = None, **kwargs: Any) -> gym.Env:
    """A MiniGrid env with channels-first egocentric observations `(3, view, view)`."""
    from minigrid.wrappers import ImgObsWrapper

    if noise_scale < 0:
        raise ValueError(f"noise_scale must be >= 0, got {noise_scale}")
    register_extra_envs()
    name = normalize_env_id(env_id)
    if name not in gym.registry:
        known = sorted(e for e in gym.registry if e.startswith("MiniGrid-"))
        raise ValueError(f"unknown MiniGrid environment {env_id!r}; known ids include {', '.join(known[:12])}, ...")
    env = gym.make(name, **kwargs)
    return _ChannelsFirst(ImgObsWrapper(env), noise_scale, seed)


class VecEnv:
    """N environments stepped in a Python loop with same-step auto-reset (each seeded once: a new level per episode)."""

    def __init__(
        self, env_id: str, n_envs: int, seed: int = 0, noise_scale: float = 0.0, max_episode_steps: int = 0
    ) -> None:
        if n_envs < 1:
            raise ValueError(f"n_envs must be >= 1, got {n_envs}")
        kw = {"max_steps": max_episode_steps} if max_episode_steps else {}  # MiniGrid's own time limit otherwise
        self.envs = [make_env(env_id, noise_scale, seed + 7919 * i, **kw) for i in range(n_envs)]
        self.n_envs, self.seed = n_envs, seed
        self.obs_shape = self.envs[0].observation_space.shape
        self.n_actions = int(self.envs[0].action_space.n)
        self.ep_return = np.zeros(n_envs)
        self.ep_len = np.zeros(n_envs, dtype=np.int64)
        self.ep_cells: list[set[tuple[int, int]]] = [set() for _ in range(n_envs)]

    def agent_pos(self) -> np.ndarray:
        """Agent cells (N, 2) as (x, y)."""
        return np.array([tuple(e.unwrapped.agent_pos) for e in self.envs])

    def reset(self) -> np.ndarray:
        """Reset every env (seeded once) and return the stacked observations."""
        obs = [e.reset(seed=self.seed + 7919 * i)[0] for i, e in enumerate(self.envs)]
        for i in range(self.n_envs):
            self.ep_cells[i] = {tuple(self.envs[i].unwrapped.agent_pos)}
        return np.stack(obs)

    def step(self, actions: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, list[dict]]:
        """Returns (next_obs after auto-reset, rewards, dones, true next obs, finished-episode infos)."""
        obs, rews, dones, finals, infos = [], np.zeros(self.n_envs), np.zeros(self.n_envs, bool), [], []
        for i, (env, a) in enumerate(zip(self.envs, actions, strict=True)):
            o, r, term, trunc, _ = env.step(int(a))
            self.ep_return[i] += r
            self.ep_len[i] += 1
            self.ep_cells[i].add(tuple(env.unwrapped.agent_pos))
            finals.append(o)
            rews[i], dones[i] = r, term or trunc
            if dones[i]:
                infos.append(
                    {
                        "return": self.ep_return[i],
                        "length": int(self.ep_len[i]),
                        "success": float(term and r > 0),
                        "unique_cells": len(self.ep_cells[i]),
                    }
                )
                o, _ = env.reset()
                self.ep_return[i], self.ep_len[i] = 0.0, 0
                self.ep_cells[i] = {tuple(env.unwrapped.agent_pos)}
            obs.append(o)
        return np.stack(obs), rews, dones, np.stack(finals), infos
