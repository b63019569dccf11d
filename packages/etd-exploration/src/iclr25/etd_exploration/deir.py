"""DEIR as a baseline of ETD: Wan, Tang, Tian & Kaneko, "DEIR: Efficient and Robust Exploration through
Discriminative-Model-Based Episodic Intrinsic Rewards" (IJCAI 2023, arXiv 2304.10770).

The ETD code base is a fork of DEIR's (swan-utokyo/deir, `src/algo/intrinsic_rewards/deir.py`), and ETD's paper
compares against it. In plain torch, plugged into this package's PPO loop like every other intrinsic reward:

- `DEIRModel`: observation embeddings ``e = g(o)`` (the MiniGrid CNN), trajectory embeddings
  ``h_t = GRU(h_{t-1}, e_t)`` (zero at an episode's start) and a discriminator head
  ``D(h_t, h'_{t+1}, a_t) = MLP([h_t, h'_{t+1}, onehot(a_t)])`` with ``h'_{t+1} = GRU(h_t, e(o'))`` that tells the
  real next observation ``o' = o_{t+1}`` from a fake one (a logit; sigmoid = probability of "real").
- `discriminator_loss`: binary cross-entropy on real (label 1) and fake (label 0) transitions, each averaged over its
  valid samples, the smaller set up-weighted to balance them, then halved (the official `_get_training_losses`).
- `deir_rewards`: the episodic reward of the paper's Eq. 4 (Algorithm A1 of its appendix),
  ``r_t = min_{k=0..t} ||e_k - e_{t+1}||^2 / (||h_{k-1} - h_t|| + 1e-6)`` with ``h_{-1} = 0``: the squared
  observation distance to each state of the episode, scaled down when the trajectory that led there was similar (the
  conditional-mutual-information term of the paper's derivation), minimised over the episode.
- `DEIRReward`: the episodic memory (a preallocated per-env buffer of e_k and h_{k-1}, one masked min per step, as
  `ETDReward`), the fake-observation queue (100,000 observations, filled with the next observations whose reward is
  at least the running mean of the raw rewards, every one during the first rollout: Algorithm A2) and the training
  step (one per PPO minibatch, Adam 3e-4, gradient-norm clip 0.5).

Defaults are DEIR's `src/train.py` (model features 128, GRU on, latents 256, one MLP layer, queue 100,000). Norms
are LayerNorm as everywhere in this package (DEIR's default is BatchNorm). Differences from the official code: the
done-step transition scores and trains on the true final observation (the official auto-reset hands the next
episode's first one, which is why it drops those transitions from the real samples); the cached memory embeddings
are not recomputed after an update, exactly as in the official code. `recurrent=False` reproduces `use_model_rnn=0`
(the setting of ETD's run scripts): the CNN embeddings stand in for the trajectory embeddings.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch
import torch.nn.functional as F
from torch import Tensor, nn

from iclr25.etd_exploration.etd import RewardNormalizer, make_encoder

DEIR_EPS = 1e-6  # added to the trajectory distance (official `deir.py`)


def deir_rewards(
    obs_mem: Tensor, trj_mem: Tensor, valid: Tensor, e_new: Tensor, h_now: Tensor, eps: float = DEIR_EPS
) -> Tensor:
    """Eq. 4: min_k ||e_k - e'||^2 / (||h_{k-1} - h_t|| + eps) over the valid memory slots.

    obs_mem (N, L, F) holds e_0..e_t, trj_mem (N, L, H) the trajectory embeddings h_{-1}=0, h_0..h_{t-1} paired
    with them, valid (N, L) marks the filled slots, e_new (N, F) = e_{t+1} and h_now (N, H) = h_t. Squared distances
    go through one batched matmul each (cached norms are not worth it here: the embeddings are not refreshed).
    """
    obs_d2 = _sq_dists(obs_mem, e_new)  # ||e_k - e_{t+1}||^2, (N, L)
    trj_d = torch.sqrt(_sq_dists(trj_mem, h_now))  # ||h_{k-1} - h_t||, (N, L)
    ratio = obs_d2 / (trj_d + eps)
    return ratio.masked_fill(~valid, float("inf")).amin(dim=1)


def _sq_dists(mem: Tensor, x: Tensor) -> Tensor:
    """||mem[n, k] - x[n]||^2 for (N, L, D) x (N, D) -> (N, L), clamped at 0 against rounding."""
    cross = torch.bmm(mem, x[:, :, None]).squeeze(-1)
    return ((mem * mem).sum(-1) + (x * x).sum(-1)[:, None] - 2.0 * cross).clamp_min(0.0)


def discriminator_loss(
    real_logits: Tensor, fake_logits: Tensor, valid_real: Tensor, valid_fake: Tensor
) -> tuple[Tensor, dict[str, float]]:
    """Balanced binary cross-entropy of the discriminator (official `_get_training_losses`).

    ``L_real = mean_{valid real} BCE(D, 1)``, ``L_fake = mean_{valid fake} BCE(D, 0)``; the loss of the smaller valid
    set is multiplied by (larger count / smaller count); ``loss = (L_real + L_fake) / 2``. A fake sample is invalid when
    it equals the real next observation; a set with no valid sample contributes 0.
    """
    vr, vf = valid_real.float(), valid_fake.float()
    n_real, n_fake = float(vr.sum()), float(vf.sum())
    bce_real = F.binary_cross_entropy_with_logits(real_logits, torch.ones_like(real_logits), reduction="none")
    bce_fake = F.binary_cross_entropy_with_logits(fake_logits, torch.zeros_like(fake_logits), reduction="none")
    loss_real = (bce_real * vr).sum() / n_real if n_real > 0 else real_logits.sum() * 0.0
    loss_fake = (bce_fake * vf).sum() / n_fake if n_fake > 0 else fake_logits.sum() * 0.0
    if 0 < n_real < n_fake:
        loss_real = loss_real * (n_fake / n_real)
    if 0 < n_fake < n_real:
        loss_fake = loss_fake * (n_real / n_fake)
    loss = 0.5 * (loss_real + loss_fake)
    with torch.no_grad():
        acc = 0.5 * (((real_logits > 0).float() * vr).sum() / max(n_real, 1.0))
        acc = acc + 0.5 * (((fake_logits <= 0).float() * vf).sum() / max(n_fake, 1.0))
    stats = {"dsc_loss": float(loss.detach()), "dsc_acc": float(acc), "dsc_valid_fake": n_fake}
    return loss, stats


class DEIRModel(nn.Module):
    """CNN observation embeddings, GRU trajectory embeddings and the discriminator head (official `deir.py`)."""

    def __init__(
        self,
        obs_shape: tuple[int, ...],
        n_actions: int,
        feature_dim: int = 128,  # model_features_dim of DEIR's src/train.py
        latent_dim: int = 256,  # model_latents_dim
        recurrent: bool = True,  # use_model_rnn
        norm: str = "layer",
    ) -> None:
        super().__init__()
        self.n_actions, self.feature_dim, self.recurrent = n_actions, feature_dim, recurrent
        self.g = make_encoder(tuple(obs_shape), feature_dim, "auto", norm)
        self.gru = nn.GRUCell(feature_dim, feature_dim) if recurrent else None
        layers: list[nn.Module] = [nn.Linear(2 * feature_dim + n_actions, latent_dim)]
        layers += [nn.LayerNorm(latent_dim) if norm == "layer" else nn.Identity(), nn.ReLU(), nn.Linear(latent_dim, 1)]
        self.head = nn.Sequential(*layers)

    def embed(self, obs: Tensor) -> Tensor:
        """Observation embeddings e = g(o): (B, ...) -> (B, F)."""
        return self.g(obs)

    def trajectory(self, e: Tensor, state: Tensor) -> Tensor:
        """h_t = GRU(h_{t-1}, e_t): (B, F), (B, F) -> (B, F); without the RNN h_t = e_t."""
        return self.gru(e, state) if self.gru is not None else e

    def logits(self, h: Tensor, h_next: Tensor, actions: Tensor) -> Tensor:
        """Discriminator logits D(h_t, h'_{t+1}, a_t): (B, F), (B, F), (B,) -> (B,)."""
        onehot = F.one_hot(actions.long(), self.n_actions).to(h.dtype)
        return self.head(torch.cat([h, h_next, onehot], dim=-1)).squeeze(-1)


class DEIRReward:
    """DEIR's intrinsic reward for N parallel environments, with its model, optimiser and fake-observation queue.

    Interface of every intrinsic reward here: `compute` at collection time, `rollout_inputs` once the rollout is
    collected (the trajectory states h_{t-1} the training step starts from, like the official `last_model_mems`),
    `update` once per PPO minibatch, `refresh` after the update (updates the running reward mean of the queue rule).
    """

    name = "deir"

    def __init__(
        self,
        obs_shape: tuple[int, ...],
        n_envs: int,
        n_actions: int = 7,
        device: str = "cpu",
        lr: float = 3e-4,
        max_grad_norm: float = 0.5,
        queue_len: int = 100_000,  # dsc_obs_queue_len
        seed: int = 0,
        capacity: int = 128,
        **model_kwargs: Any,
    ) -> None:
        if queue_len < 1:
            raise ValueError(f"queue_len must be >= 1, got {queue_len}")
        self.model = DEIRModel(obs_shape, n_actions, **model_kwargs).to(device)
        self.opt = torch.optim.Adam(self.model.parameters(), lr=lr, eps=1e-5)
        self.n_envs, self.device, self.max_grad_norm = n_envs, device, max_grad_norm
        self.rng = np.random.default_rng(seed)
        F_ = self.model.feature_dim
        self.state = torch.zeros(n_envs, F_, device=device)  # h_{t-1}; zero at an episode's start
        self.lengths = torch.zeros(n_envs, dtype=torch.long, device=device)
        self.obs_mem = torch.zeros(n_envs, capacity, F_, device=device)  # e_k
        self.trj_mem = torch.zeros(n_envs, capacity, F_, device=device)  # h_{k-1}
        self.queue_len, self.queue_filled, self.queue_pos = queue_len, 0, 0
        self.queue: Tensor | None = None  # (queue_len, ...), allocated on the first observation (its dtype)
        self.reward_stats = RewardNormalizer()  # the running mean of the raw rewards (official `int_rew_stats`)
        self.rollouts = 0
        self._rollout_states: list[Tensor] = []
        self._rollout_rewards: list[np.ndarray] = []

    # episodic memory -------------------------------------------------------------------------------

    def reset(self, env_ids: Any = None) -> None:
        """Clear the episodic memory and trajectory state of the given environments (all by default)."""
        rows = slice(None) if env_ids is None else torch.as_tensor(list(env_ids), dtype=torch.long, device=self.device)
        self.lengths[rows] = 0
        self.state[rows] = 0.0

    def _write(self, rows: Tensor, e: Tensor, h_prev: Tensor) -> None:
        """Append (e_k, h_{k-1}) at the current lengths of envs `rows`, doubling the capacity when full."""
        if len(rows) and int(self.lengths[rows].max()) >= self.obs_mem.shape[1]:
            cap = self.obs_mem.shape[1]
            grow = torch.zeros(self.n_envs, cap, self.obs_mem.shape[2], device=self.device)
            self.obs_mem = torch.cat([self.obs_mem, grow], dim=1)
            self.trj_mem = torch.cat([self.trj_mem, torch.zeros_like(grow)], dim=1)
        pos = self.lengths[rows]
        self.obs_mem[rows, pos], self.trj_mem[rows, pos] = e, h_prev
        self.lengths[rows] += 1

    @torch.no_grad()
    def compute(self, obs: np.ndarray, actions: np.ndarray, next_obs: np.ndarray, dones: np.ndarray) -> np.ndarray:
        """Rewards (N,) for transitions obs -> next_obs (Eq. 4); memories and states of `dones` envs are cleared after.

        Algorithm A1: e_t, e_{t+1} and h_t = GRU(h_{t-1}, e_t); an empty memory first receives (e_t, h_{-1} = 0); the
        reward compares (e_{t+1}, h_t) with every (e_k, h_{k-1}) of the episode; then (e_{t+1}, h_t) is appended.
        """
        o = torch.as_tensor(obs, device=self.device)
        o2 = torch.as_tensor(next_obs, device=self.device)
        if self.queue is None:  # the official queue starts with the first observations
            self.queue = torch.zeros(self.queue_len, *o.shape[1:], dtype=o.dtype, device=self.device)
            self._enqueue(o)
        self._rollout_states.append(self.state.clone())  # h_{t-1}, the training step's starting state
        e_t, e_next = self.model.embed(torch.cat([o, o2])).split(len(o))
        h_t = self.model.trajectory(e_t, self.state)
        empty = torch.nonzero(self.lengths == 0).flatten()
        self._write(empty, e_t[empty], torch.zeros_like(h_t[empty]))  # episode start: e_0 with h_{-1} = 0
        n_max = int(self.lengths.max())
        valid = torch.arange(n_max, device=self.device)[None, :] < self.lengths[:, None]
        r = deir_rewards(self.obs_mem[:, :n_max], self.trj_mem[:, :n_max], valid, e_next, h_t)
        rewards = r.cpu().numpy().astype(np.float64)
        done = torch.as_tensor(np.asarray(dones, dtype=bool), device=self.device)
        self.lengths[done] = 0
        keep = torch.nonzero(~done).flatten()
        self._write(keep, e_next[keep], h_t[keep])
        self.state = h_t.masked_fill(done[:, None], 0.0)  # the trajectory state restarts with the episode
        # Algorithm A2: the queue takes next observations whose reward reaches the running mean (all at first)
        insert = np.ones(len(rewards), bool) if self.rollouts == 0 else rewards >= self.reward_stats.mean
        self._enqueue(o2[torch.as_tensor(insert, device=self.device)])
        self._rollout_rewards.append(rewards)
        return rewards

    # fake-observation queue ------------------------------------------------------------------------

    def _enqueue(self, obs: Tensor) -> None:
        """Write observations into the ring buffer (oldest overwritten once full)."""
        n = len(obs)
        if n == 0:
            return
        idx = (self.queue_pos + torch.arange(n, device=self.device)) % self.queue_len
        self.queue[idx] = obs[-self.queue_len :] if n > self.queue_len else obs
        self.queue_pos = (self.queue_pos + n) % self.queue_len
        self.queue_filled += n

    def fake_observations(self, next_obs: Tensor) -> tuple[Tensor, Tensor]:
        """Fakes (B, ...) from the queue and whether each differs from the real next observation (official
        `_get_fake_obs`: two random draws, the first one unless it equals the real observation)."""
        if self.queue is None:
            raise ValueError("the fake-observation queue is empty: call compute() before update()")
        n = min(self.queue_filled, self.queue_len)
        i1 = torch.as_tensor(self.rng.integers(0, n, len(next_obs)), device=self.device)
        i2 = torch.as_tensor(self.rng.integers(0, n, len(next_obs)), device=self.device)
        f1, f2 = self.queue[i1], self.queue[i2]
        diff1 = (f1 != next_obs).flatten(1).any(1)  # (B,)
        diff2 = (f2 != next_obs).flatten(1).any(1)
        shape = (-1,) + (1,) * (next_obs.ndim - 1)
        return torch.where(diff1.view(shape), f1, f2), diff1 | diff2

    # training --------------------------------------------------------------------------------------

    def rollout_inputs(self) -> dict[str, Tensor]:
        """The rollout's starting trajectory states h_{t-1}, flat in (t * N + n) order; clears them."""
        states = torch.stack(self._rollout_states).reshape(-1, self.model.feature_dim)
        self._rollout_states = []
        return {"deir_state": states}

    def update(self, batch: dict[str, Tensor]) -> dict[str, float]:
        """One discriminator step on the minibatch's real transitions (obs, action, next obs) and as many fakes, from
        the stored trajectory states `deir_state` (zero states when the batch has none)."""
        obs, real, actions = batch["obs"], batch["next_obs"], batch["actions"]
        state = batch.get("deir_state")
        if state is None:
            state = torch.zeros(len(obs), self.model.feature_dim, device=obs.device)
        fake, differs = self.fake_observations(real)
        e_t, e_real, e_fake = self.model.embed(torch.cat([obs, real, fake])).split(len(obs))
        h_t = self.model.trajectory(e_t, state)
        h_next = self.model.trajectory(torch.cat([e_real, e_fake]), torch.cat([h_t, h_t]))
        logits = self.model.logits(torch.cat([h_t, h_t]), h_next, torch.cat([actions, actions]))
        real_logits, fake_logits = logits.split(len(obs))
        loss, stats = discriminator_loss(real_logits, fake_logits, torch.ones_like(differs), differs)
        self.opt.zero_grad(set_to_none=True)
        loss.backward()
        nn.utils.clip_grad_norm_(self.model.parameters(), self.max_grad_norm)
        self.opt.step()
        return stats

    def refresh(self) -> None:
        """After the update: fold this rollout's raw rewards into the running mean (momentum 0.9) of the queue rule;
        the memory's embeddings are kept as computed (official)."""
        if self._rollout_rewards:
            self.reward_stats(np.concatenate(self._rollout_rewards))
        self._rollout_rewards = []
        self.rollouts += 1
