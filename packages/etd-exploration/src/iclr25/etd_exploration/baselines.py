"""Intrinsic-reward baselines ETD (arXiv 2501.15418) is compared with, as in its official code (DEIR code base).

All share ETD's interface: `compute(obs, actions, next_obs, dones) -> (N,)` rewards at collection time, `reset`,
`refresh` after an update, and `update(batch)` once per PPO minibatch.

- `NoModel`: no bonus.
- `EpisodicCount`: 1 the first time an exact observation is seen in the episode, else 0.
- `RND`: lifelong novelty ``||f(s') - f_target(s')||^2`` (Burda et al. 2019), standardised with running stats.
- `NovelD`: ``max(e(s') - alpha e(s), 0) * 1[first visit of s' in the episode]`` (Zhang et al. 2021), alpha=0.5.
- `E3B`: elliptical bonus ``psi^T C^-1 psi`` on inverse-dynamics features, Sherman-Morrison updates, C^-1 = I/lambda
  at episode start (Henaff et al. 2022); like the official code it scores the current observation s_t.
- `DEIRReward` (module `deir`): DEIR's discriminator-based episodic reward (Wan et al. 2023), the method whose code
  base ETD's official code forks.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch
import torch.nn.functional as F
from torch import Tensor, nn

from iclr25.etd_exploration.config import INTRINSICS as _INTRINSICS
from iclr25.etd_exploration.etd import make_encoder


class NoModel:
    """PPO without intrinsic reward."""

    name = "none"

    def __init__(self, obs_shape: tuple[int, ...], n_envs: int, **_: Any) -> None:
        self.n_envs = n_envs

    def reset(self, env_ids: Any = None) -> None:
        """Nothing to reset."""

    def compute(self, obs: np.ndarray, actions: np.ndarray, next_obs: np.ndarray, dones: np.ndarray) -> np.ndarray:
        """Zeros."""
        return np.zeros(self.n_envs)

    def refresh(self) -> None:
        """Nothing to refresh."""

    def update(self, batch: dict[str, Tensor]) -> dict[str, float]:
        """Nothing to train."""
        return {}


class EpisodicCount(NoModel):
    """Bonus 1 for an observation not yet seen in the current episode (hash of its bytes), else 0."""

    name = "count"

    def __init__(self, obs_shape: tuple[int, ...], n_envs: int, **_: Any) -> None:
        super().__init__(obs_shape, n_envs)
        self.seen: list[set[bytes]] = [set() for _ in range(n_envs)]

    def reset(self, env_ids: Any = None) -> None:
        """Forget the episode's observations."""
        for i in range(self.n_envs) if env_ids is None else env_ids:
            self.seen[i] = set()

    def first_visits(self, obs: np.ndarray, next_obs: np.ndarray, dones: np.ndarray) -> np.ndarray:
        """1.0 where next_obs is new to its episode (the episode's first obs counts as seen)."""
        out = np.zeros(self.n_envs)
        for i in range(self.n_envs):
            if not self.seen[i]:
                self.seen[i].add(np.ascontiguousarray(obs[i]).tobytes())
            key = np.ascontiguousarray(next_obs[i]).tobytes()
            out[i] = float(key not in self.seen[i])
            self.seen[i].add(key)
            if dones[i]:
                self.seen[i] = set()
        return out

    def compute(self, obs: np.ndarray, actions: np.ndarray, next_obs: np.ndarray, dones: np.ndarray) -> np.ndarray:
        """Episodic first-visit indicator."""
        return self.first_visits(obs, next_obs, dones)


class _RunningStats:
    """Total-average mean/variance (parallel Welford) of a scalar stream."""

    def __init__(self) -> None:
        self.mean, self.var, self.count = 0.0, 1.0, 1e-4

    def update(self, x: np.ndarray) -> None:
        bm, bv, bn = float(np.mean(x)), float(np.var(x)), x.size
        delta, total = bm - self.mean, self.count + bn
        self.mean += delta * bn / total
        self.var = (self.var * self.count + bv * bn + delta**2 * self.count * bn / total) / total
        self.count = total


class RND(NoModel):
    """Random Network Distillation: predictor error against a fixed random target, standardised."""

    name = "rnd"

    def __init__(
        self, obs_shape: tuple[int, ...], n_envs: int, device: str = "cpu", lr: float = 3e-4, dim: int = 64, **_: Any
    ) -> None:
        super().__init__(obs_shape, n_envs)
        self.device = device
        self.target = nn.Sequential(make_encoder(obs_shape, 128), nn.Linear(128, dim)).to(device)
        self.predictor = nn.Sequential(
            make_encoder(obs_shape, 128), nn.Linear(128, 128), nn.ReLU(), nn.Linear(128, dim)
        )
        self.predictor.to(device)
        for p in self.target.parameters():
            p.requires_grad_(False)
        self.opt = torch.optim.Adam(self.predictor.parameters(), lr=lr, eps=1e-5)
        self.stats = _RunningStats()

    @torch.no_grad()
    def errors(self, obs: np.ndarray | Tensor) -> np.ndarray:
        """Raw prediction errors e(s) (B,)."""
        o = torch.as_tensor(obs, device=self.device)
        return ((self.predictor(o) - self.target(o)) ** 2).sum(-1).cpu().numpy()

    def compute(self, obs: np.ndarray, actions: np.ndarray, next_obs: np.ndarray, dones: np.ndarray) -> np.ndarray:
        """Standardised e(s')."""
        e = self.errors(next_obs)
        self.stats.update(e)
        return (e - self.stats.mean) / (np.sqrt(self.stats.var) + 1e-8)

    def update(self, batch: dict[str, Tensor]) -> dict[str, float]:
        """One predictor step on the minibatch's next observations."""
        o = batch["next_obs"]
        loss = ((self.predictor(o) - self.target(o)) ** 2).sum(-1).mean()
        self.opt.zero_grad(set_to_none=True)
        loss.backward()
        nn.utils.clip_grad_norm_(self.predictor.parameters(), 0.5)
        self.opt.step()
        return {"rnd_loss": float(loss.detach())}


class NovelD(RND):
    """NovelD: RND-error increase from s to s', paid only on the episode's first visit of s'."""

    name = "noveld"

    def __init__(self, obs_shape: tuple[int, ...], n_envs: int, alpha: float = 0.5, beta: float = 0.0, **kw: Any):
        super().__init__(obs_shape, n_envs, **kw)
        self.alpha, self.beta = alpha, beta
        self.count = EpisodicCount(obs_shape, n_envs)

    def reset(self, env_ids: Any = None) -> None:
        """Forget the episodes' observations."""
        self.count.reset(env_ids)

    def compute(self, obs: np.ndarray, actions: np.ndarray, next_obs: np.ndarray, dones: np.ndarray) -> np.ndarray:
        """max(e(s') - alpha e(s), beta) * first-visit(s'), errors standardised by running stats."""
        e0, e1 = self.errors(obs), self.errors(next_obs)
        self.stats.update(np.concatenate([e0, e1]))
        sd = np.sqrt(self.stats.var) + 1e-8
        novelty = np.maximum(e1 / sd - self.alpha * e0 / sd, self.beta)
        return novelty * self.count.first_visits(obs, next_obs, dones)


class E3B(NoModel):
    """E3B: elliptical episodic bonus on the features of an inverse-dynamics model."""

    name = "e3b"

    def __init__(
        self,
        obs_shape: tuple[int, ...],
        n_envs: int,
        n_actions: int = 7,
        device: str = "cpu",
        lr: float = 3e-4,
        ridge: float = 0.1,
        dim: int = 64,
        **_: Any,
    ) -> None:
        super().__init__(obs_shape, n_envs)
        self.device, self.ridge, self.dim = device, ridge, dim
        self.encoder = make_encoder(obs_shape, dim).to(device)
        self.inverse = nn.Sequential(nn.Linear(2 * dim, 256), nn.ReLU(), nn.Linear(256, n_actions)).to(device)
        params = list(self.encoder.parameters()) + list(self.inverse.parameters())
        self.opt = torch.optim.Adam(params, lr=lr, eps=1e-5)
        self.cinv = torch.eye(dim, device=device).repeat(n_envs, 1, 1) / ridge  # (N, D, D)

    def reset(self, env_ids: Any = None) -> None:
        """C^-1 <- I / lambda for the given environments."""
        for i in range(self.n_envs) if env_ids is None else env_ids:
            self.cinv[i] = torch.eye(self.dim, device=self.device) / self.ridge

    @torch.no_grad()
    def compute(self, obs: np.ndarray, actions: np.ndarray, next_obs: np.ndarray, dones: np.ndarray) -> np.ndarray:
        """b = psi^T C^-1 psi, then C^-1 <- C^-1 - (C^-1 psi)(C^-1 psi)^T / (1 + psi^T C^-1 psi)."""
        psi = self.encoder(torch.as_tensor(obs, device=self.device))  # (N, D)
        u = torch.einsum("nij,nj->ni", self.cinv, psi)  # C^-1 psi
        b = (psi * u).sum(-1)  # (N,)
        self.cinv -= u[:, :, None] * u[:, None, :] / (1.0 + b)[:, None, None]  # Sherman-Morrison
        for i in np.flatnonzero(dones):
            self.cinv[i] = torch.eye(self.dim, device=self.device) / self.ridge
        return b.cpu().numpy()

    def update(self, batch: dict[str, Tensor]) -> dict[str, float]:
        """One inverse-dynamics step: predict a_t from (psi(s_t), psi(s_t+1))."""
        z = torch.cat([self.encoder(batch["obs"]), self.encoder(batch["next_obs"])], dim=-1)
        loss = F.cross_entropy(self.inverse(z), batch["actions"].long())
        self.opt.zero_grad(set_to_none=True)
        loss.backward()
        nn.utils.clip_grad_norm_(self.encoder.parameters(), 0.5)
        self.opt.step()
        return {"inverse_loss": float(loss.detach())}


def make_intrinsic(name: str, obs_shape: tuple[int, ...], n_envs: int, **kwargs: Any) -> Any:
    """Build an intrinsic reward by name: etd | none | count | rnd | noveld | e3b | deir (or a broken ETD)."""
    from iclr25.etd_exploration.deir import DEIRReward
    from iclr25.etd_exploration.etd import ETDReward

    table = {"etd": ETDReward, "none": NoModel, "count": EpisodicCount, "rnd": RND, "noveld": NovelD, "e3b": E3B}
    table["deir"] = DEIRReward
    if name in ("etd-mean", "etd-random"):  # deliberately broken ETD: the min over memory -> mean / random distances
        kwargs["aggregate"] = name.removeprefix("etd-")
        name = "etd"
    if name not in table:
        raise ValueError(f"intrinsic reward must be one of {', '.join(INTRINSICS)}, got {name!r}")
    if name not in ("e3b", "deir"):
        kwargs.pop("n_actions", None)
    return table[name](obs_shape, n_envs, **kwargs)


INTRINSICS = _INTRINSICS  # the names make_intrinsic builds (one list, in config.py)
