"""PPO with episodic intrinsic rewards, as ETD (arXiv 2501.15418, Sec. 4 and Alg. 1) trains it on MiniGrid.

Per rollout: collect T steps from N envs, scoring every transition with the intrinsic reward at collection time;
standardise the intrinsic rewards with EMA stats and scale them by beta (``r = c_ext r_ext + beta b``, Eq. reward);
GAE(lambda); then for each epoch and each shuffled minibatch one intrinsic-model step (ETD: contrastive step on
(s_t, s_{t+Delta}) pairs drawn inside episodes) before the PPO step. One value head for the summed reward.
Defaults are the official `src/train.py` values (16 envs, 512 steps, minibatch 512, 4 epochs, clip 0.2, ...).

The policy is the official recurrent one (`src/algo/ppo_model.py`): CNN -> GRUCell(64) -> 256-wide policy and value
latents -> zero-initialised action and value layers; its state is zeroed when an episode ends, and the official
trainer evaluates each shuffled transition from the GRU state stored at collection time (`minibatch="transitions"`;
`"sequences"` unrolls whole env rollouts instead). Advantages are standardised by the official moving averages
(`AdvantageNormalizer`). Differences: PyTorch's default initialisation instead of the official name-hashed seeding.
"""

from __future__ import annotations

import time
from dataclasses import asdict
from typing import Any

import numpy as np
import torch
from torch import Tensor, nn
from torch.distributions import Categorical

from iclr25.etd_exploration.baselines import make_intrinsic
from iclr25.etd_exploration.config import PPOConfig
from iclr25.etd_exploration.envs import VecEnv
from iclr25.etd_exploration.etd import MiniGridCNN, RewardNormalizer
from iclr25.shared.progress import progress


class ActorCritic(nn.Module):
    """The official PPO policy (`src/algo/ppo_model.py`), or today's feed-forward one with `recurrent=False`.

    Recurrent (default): MiniGrid CNN type 0 (features 64) -> GRUCell(64, 64) -> policy and value latents
    Linear(64, 256) + LayerNorm + ReLU (`latents_dim` 256, one layer) -> action / value layers initialised to zero, so
    the first policy is uniform and the first values are 0. Feed-forward: CNN -> Linear(64, 64) + ReLU -> outputs.
    """

    def __init__(
        self,
        obs_shape: tuple[int, ...],
        n_actions: int,
        features_dim: int = 64,  # features_dim of src/train.py = GRU hidden size
        latents_dim: int = 256,  # latents_dim of src/train.py
        recurrent: bool = True,
    ) -> None:
        super().__init__()
        self.recurrent, self.hidden_dim = recurrent, features_dim if recurrent else 0
        self.body = MiniGridCNN(obs_shape, features_dim)
        if recurrent:
            self.gru = nn.GRUCell(features_dim, features_dim)

            def latent() -> nn.Module:
                return nn.Sequential(nn.Linear(features_dim, latents_dim), nn.LayerNorm(latents_dim), nn.ReLU())

            self.pi = nn.Sequential(latent(), nn.Linear(latents_dim, n_actions))
            self.v = nn.Sequential(latent(), nn.Linear(latents_dim, 1))
            for out in (self.pi[-1], self.v[-1]):  # official _init_modules: zero action_net and value_net
                nn.init.zeros_(out.weight)
                nn.init.zeros_(out.bias)
        else:
            self.pi = nn.Sequential(nn.Linear(features_dim, 64), nn.ReLU(), nn.Linear(64, n_actions))
            self.v = nn.Sequential(nn.Linear(features_dim, 64), nn.ReLU(), nn.Linear(64, 1))

    def initial_state(self, n: int, device: str | torch.device = "cpu") -> Tensor:
        """Zero recurrent state (n, H); H = 0 for the feed-forward policy."""
        return torch.zeros(n, self.hidden_dim, device=device)

    def _heads(self, h: Tensor) -> tuple[Categorical, Tensor]:
        return Categorical(logits=self.pi(h)), self.v(h).squeeze(-1)

    def step(self, obs: Tensor, state: Tensor) -> tuple[Categorical, Tensor, Tensor]:
        """One step: (B, C, H, W), state (B, H) -> (action distribution, values (B,), next state (B, H))."""
        x = self.body(obs)  # (B, F)
        if self.recurrent:
            state = self.gru(x, state)
            x = state
        dist, value = self._heads(x)
        return dist, value, state

    def rnn_states(self, features: Tensor, state: Tensor, starts: Tensor) -> Tensor:
        """GRU outputs (T, B, H) for features (T, B, F) from `state` (B, H); where starts[t, b] = 1 the state is reset
        to zero before step t (the official rollout zeroes it when an episode ends)."""
        keep = 1.0 - starts.float()
        outs = []
        for t in range(features.shape[0]):
            state = self.gru(features[t], state * keep[t, :, None])
            outs.append(state)
        return torch.stack(outs)

    def unroll(self, obs: Tensor, state: Tensor, starts: Tensor) -> tuple[Categorical, Tensor]:
        """Whole sequences: obs (T, B, C, H, W), state (B, H) before step 0, starts (T, B) -> action distribution and
        values over the T * B steps in time-major order."""
        T, B = obs.shape[:2]
        x = self.body(obs.reshape(T * B, *obs.shape[2:]))  # (T * B, F): the CNN in one pass
        if self.recurrent:
            x = self.rnn_states(x.reshape(T, B, -1), state, starts).reshape(T * B, -1)  # (T * B, H)
        return self._heads(x)

    def forward(self, obs: Tensor, state: Tensor | None = None) -> tuple[Categorical, Tensor]:
        """(B, C, H, W) [, state (B, H), zero by default] -> (action distribution, values (B,))."""
        if state is None:
            state = self.initial_state(obs.shape[0], obs.device)
        dist, value, _ = self.step(obs, state)
        return dist, value


CPU_PARTS = ("env", "policy", "intrinsic_score", "ppo_update", "intrinsic_train", "intrinsic_refresh", "total")


def _tick(acc: dict[str, float], key: str, since: float) -> float:
    """Add the CPU time since `since` to acc[key]; return the current CPU time."""
    now = time.process_time()
    acc[key] += now - since
    return now


def gae(rewards: np.ndarray, values: np.ndarray, dones: np.ndarray, last_value: np.ndarray, gamma: float, lam: float):
    """GAE(lambda) advantages and returns for (T, N) arrays; no bootstrap across `dones` (time limits included)."""
    T = len(rewards)
    adv = np.zeros_like(rewards)
    last = np.zeros(rewards.shape[1])
    for t in range(T - 1, -1, -1):
        next_v = last_value if t == T - 1 else values[t + 1]
        nonterminal = 1.0 - dones[t]
        delta = rewards[t] + gamma * next_v * nonterminal - values[t]  # TD error
        last = delta + gamma * lam * nonterminal * last
        adv[t] = last
    return adv, adv + values


def make_policy(obs_shape: tuple[int, ...], n_actions: int, cfg: PPOConfig | dict[str, Any]) -> ActorCritic:
    """The policy a PPOConfig (or its dict, as saved by `train`) describes; older dicts without `policy` are GRU."""
    c = asdict(cfg) if isinstance(cfg, PPOConfig) else cfg
    return ActorCritic(
        obs_shape, n_actions, c["features_dim"], c.get("latents_dim", 256), c.get("policy", "gru") == "gru"
    )


class AdvantageNormalizer:
    """The official advantage normaliser (`adv_norm=2`, `RunningMeanStd` with momentum 0.9, eps 1e-5).

    Starts at mean 0 and variance 1; per rollout: ``mu <- m mu + (1 - m) mean_t(A)`` per env column,
    ``var <- m var + (1 - m) mean((A - mu)^2)`` around the *updated* per-env mean, ``A <- (A - mu) / (sqrt(var) + eps)``.
    """

    def __init__(self, momentum: float = 0.9, eps: float = 1e-5) -> None:
        self.m, self.eps = momentum, eps
        self.mean: np.ndarray | float = 0.0
        self.var = 1.0

    def __call__(self, adv: np.ndarray) -> np.ndarray:
        """Update the statistics with a (T, N) rollout of advantages and return them standardised."""
        self.mean = self.m * self.mean + (1 - self.m) * adv.mean(0)  # (N,)
        self.var = self.m * self.var + (1 - self.m) * float(np.mean((adv - self.mean) ** 2))
        return (adv - self.mean) / (np.sqrt(self.var) + self.eps)


def _minibatches(cfg: PPOConfig, rng: np.random.Generator) -> list[np.ndarray]:
    """Flat (t * N + n) indices of one epoch's minibatches: shuffled transitions (official) or whole env sequences."""
    T, N = cfg.n_steps, cfg.n_envs
    if cfg.minibatch == "transitions":
        perm = rng.permutation(T * N)
        return [perm[k : k + cfg.batch_size] for k in range(0, T * N, cfg.batch_size)]
    per = max(1, cfg.batch_size // T)  # env columns per minibatch
    cols = rng.permutation(N)
    return [(np.arange(T)[:, None] * N + cols[None, k : k + per]).reshape(-1) for k in range(0, N, per)]


def ppo_step(policy: ActorCritic, opt: torch.optim.Optimizer, mb: dict[str, Tensor], cfg: PPOConfig) -> dict:
    """One clipped-PPO Adam step on a minibatch (obs, state, start, actions, logp, adv, ret); returns the losses."""
    if cfg.minibatch == "transitions":  # official: one step from the state stored at collection
        dist, value, _ = policy.step(mb["obs"], mb["state"])
    else:  # whole sequences from the state before the rollout's first step
        T = cfg.n_steps
        cols = len(mb["obs"]) // T
        seq = mb["obs"].reshape(T, cols, *mb["obs"].shape[1:])
        dist, value = policy.unroll(seq, mb["state"][:cols], mb["start"].reshape(T, cols))
    logp = dist.log_prob(mb["actions"])
    ratio = torch.exp(logp - mb["logp"])
    pg = -torch.min(ratio * mb["adv"], ratio.clamp(1 - cfg.clip, 1 + cfg.clip) * mb["adv"]).mean()
    v_loss = ((value - mb["ret"]) ** 2).mean()
    entropy = dist.entropy().mean()
    loss = pg + cfg.vf_coef * v_loss - cfg.ent_coef * entropy
    opt.zero_grad(set_to_none=True)
    loss.backward()
    nn.utils.clip_grad_norm_(policy.parameters(), cfg.max_grad_norm)
    opt.step()
    return {"pg_loss": pg.item(), "v_loss": v_loss.item(), "entropy": entropy.item()}


def train(cfg: PPOConfig, device: str = "cpu", log: Any = None, visitation: bool = True) -> dict[str, Any]:
    """Train PPO (+ intrinsic reward) and return curves, episode stats, timings and the trained modules."""
    torch.manual_seed(cfg.seed)
    rng = np.random.default_rng(cfg.seed)
    envs = VecEnv(cfg.env_id, cfg.n_envs, cfg.seed, cfg.noise_scale, cfg.max_episode_steps)
    N, T = cfg.n_envs, cfg.n_steps
    policy = make_policy(envs.obs_shape, envs.n_actions, cfg).to(device)
    opt = torch.optim.Adam(policy.parameters(), lr=cfg.lr, eps=1e-5)
    kwargs: dict[str, Any] = {"device": device, "n_actions": envs.n_actions}
    if cfg.intrinsic.startswith("etd"):
        kwargs.update(
            lr=cfg.model_lr,
            gamma_future=cfg.gamma_future,
            boundary=cfg.boundary,
            stale_features=cfg.stale_features,
            feature_dim=cfg.model_features_dim,
            seed=cfg.seed,
        )
    elif cfg.intrinsic == "deir":
        kwargs.update(lr=cfg.model_lr, feature_dim=cfg.model_features_dim, seed=cfg.seed)
    intr = make_intrinsic(cfg.intrinsic, envs.obs_shape, N, **kwargs)
    normalizer = RewardNormalizer()
    adv_norm = AdvantageNormalizer()
    grid = envs.envs[0].unwrapped
    visits = np.zeros((grid.height, grid.width), dtype=np.int64)

    obs = envs.reset()
    state = policy.initial_state(N, device)  # recurrent state, zeroed when an episode ends (official)
    start = np.ones(N)  # 1 where obs is the first observation of an episode
    frames, rollouts = 0, 0
    episodes: list[dict[str, float]] = []
    curve: list[dict[str, float]] = []
    t_int = t_total = 0.0
    cpu = dict.fromkeys(CPU_PARTS, 0.0)  # CPU seconds (user + sys) by part of the loop
    bar = progress(total=cfg.total_frames, desc=f"PPO {cfg.intrinsic} {cfg.env_id}", unit="frame")
    while frames < cfg.total_frames:
        tic, cpu_tic = time.perf_counter(), time.process_time()
        buf_obs = np.zeros((T, N, *envs.obs_shape), dtype=obs.dtype)
        buf_next = np.zeros_like(buf_obs)
        buf_state = torch.zeros(T, N, policy.hidden_dim, device=device)  # state *before* step t
        buf_act = np.zeros((T, N), dtype=np.int64)
        buf_logp, buf_val = np.zeros((T, N), np.float32), np.zeros((T, N), np.float32)
        buf_rext, buf_rint, buf_done, buf_start = (np.zeros((T, N)) for _ in range(4))
        for t in range(T):
            c = time.process_time()
            with torch.no_grad():
                dist, value, next_state = policy.step(torch.as_tensor(obs, device=device), state)
                action = dist.sample()
            a = action.cpu().numpy()
            c = _tick(cpu, "policy", c)
            next_obs, r, done, final_obs, infos = envs.step(a)
            c = _tick(cpu, "env", c)
            s = time.perf_counter()
            buf_rint[t] = intr.compute(obs, a, final_obs, done)
            t_int += time.perf_counter() - s
            _tick(cpu, "intrinsic_score", c)
            if visitation:
                pos = envs.agent_pos()
                np.add.at(visits, (pos[:, 1] % visits.shape[0], pos[:, 0] % visits.shape[1]), 1)
            buf_obs[t], buf_next[t], buf_act[t], buf_state[t], buf_start[t] = obs, final_obs, a, state, start
            buf_logp[t], buf_val[t] = dist.log_prob(action).cpu().numpy(), value.cpu().numpy()
            buf_rext[t], buf_done[t] = r, done
            for info in infos:
                episodes.append({"frame": frames + (t + 1) * N, **info})
            obs, start = next_obs, done.astype(np.float64)
            state = next_state * torch.as_tensor(1.0 - start, dtype=torch.float32, device=device)[:, None]
        frames += T * N
        rollouts += 1
        with torch.no_grad():
            last_value = policy.step(torch.as_tensor(obs, device=device), state)[1].cpu().numpy()
        b = np.zeros((T, N)) if cfg.intrinsic == "none" else normalizer(buf_rint) * cfg.int_coef  # (Eq. norm)
        rewards = cfg.ext_coef * buf_rext + b  # r = c_ext r_ext + beta b  (Eq. reward)
        adv, ret = gae(rewards, buf_val, buf_done, last_value, cfg.gamma, cfg.gae_lambda)
        adv = adv_norm(adv) if cfg.adv_norm == "ema" else (adv - adv.mean()) / (adv.std() + 1e-8)
        pos_idx = intr.positives(buf_done.astype(bool)) if hasattr(intr, "positives") else None

        flat = {
            "obs": torch.as_tensor(buf_obs.reshape(T * N, *envs.obs_shape), device=device),
            "next_obs": torch.as_tensor(buf_next.reshape(T * N, *envs.obs_shape), device=device),
            "state": buf_state.reshape(T * N, -1),
            "start": torch.as_tensor(buf_start.reshape(-1), dtype=torch.float32, device=device),
            "actions": torch.as_tensor(buf_act.reshape(-1), device=device),
            "logp": torch.as_tensor(buf_logp.reshape(-1), device=device),
            "adv": torch.as_tensor(adv.reshape(-1), dtype=torch.float32, device=device),
            "ret": torch.as_tensor(ret.reshape(-1), dtype=torch.float32, device=device),
        }
        if pos_idx is not None:  # positive of anchor (t, n) is obs[t + Delta, n]
            flat_pos = (pos_idx * N + np.arange(N)[None, :]).reshape(-1)
            flat["pos_obs"] = flat["obs"][torch.as_tensor(flat_pos, device=device)]
        if hasattr(intr, "rollout_inputs"):  # per-step inputs the intrinsic model kept (DEIR: its GRU states)
            flat.update(intr.rollout_inputs())
        stats: dict[str, float] = {}
        for _ in range(cfg.n_epochs):
            for idx_np in _minibatches(cfg, rng):
                idx = torch.as_tensor(idx_np, device=device)
                mb = {key: v[idx] for key, v in flat.items()}
                s, c = time.perf_counter(), time.process_time()
                stats.update(intr.update(mb))  # the intrinsic model's step comes before PPO's on each minibatch
                t_int += time.perf_counter() - s
                c = _tick(cpu, "intrinsic_train", c)
                stats.update(ppo_step(policy, opt, mb, cfg))
                _tick(cpu, "ppo_update", c)
        s, c = time.perf_counter(), time.process_time()
        intr.refresh()
        t_int += time.perf_counter() - s
        _tick(cpu, "intrinsic_refresh", c)
        t_total += time.perf_counter() - tic
        _tick(cpu, "total", cpu_tic)
        recent = [e for e in episodes if e["frame"] > frames - T * N]
        row = {
            "frames": frames,
            "return": float(np.mean([e["return"] for e in recent])) if recent else float("nan"),
            "success": float(np.mean([e["success"] for e in recent])) if recent else float("nan"),
            "unique_cells": float(np.mean([e["unique_cells"] for e in recent])) if recent else float("nan"),
            "int_rew_raw": float(buf_rint.mean()),
            "fps": frames / t_total,
            **{k: v for k, v in stats.items() if isinstance(v, float)},
        }
        curve.append(row)
        if log is not None:
            log.log({f"{cfg.intrinsic}/{k}": v for k, v in row.items()}, step=frames)
        bar.update(T * N)
    bar.close()
    return {
        "config": asdict(cfg),
        "curve": curve,
        "episodes": episodes,
        "visits": visits,
        "frames": frames,
        "seconds": t_total,
        "fps": frames / t_total,
        "intrinsic_seconds": t_int,
        "intrinsic_fraction": t_int / t_total,
        "cpu_seconds": cpu,
        "policy": policy,
        "intrinsic": intr,
    }


def late_mean(episodes: list[dict[str, float]], key: str, frames: int, fraction: float = 0.2) -> float:
    """Mean of `key` over episodes finished in the last `fraction` of training frames."""
    vals = [e[key] for e in episodes if e["frame"] > (1 - fraction) * frames]
    return float(np.mean(vals)) if vals else float("nan")


@torch.no_grad()
def evaluate_policy(
    policy: ActorCritic, env_id: str, episodes: int = 10, seed: int = 12345, noise_scale: float = 0.0, device="cpu"
) -> dict[str, float]:
    """Mean return, success and unique cells of a (sampling) policy over fresh levels."""
    if episodes < 1:
        raise ValueError(f"episodes must be >= 1, got {episodes}")
    envs = VecEnv(env_id, 1, seed, noise_scale)
    obs = envs.reset()
    state = policy.initial_state(1, device)
    done_eps: list[dict] = []
    while len(done_eps) < episodes:
        dist, _, state = policy.step(torch.as_tensor(obs, device=device), state)
        obs, _, done, _, infos = envs.step(dist.sample().cpu().numpy())
        state = state * torch.as_tensor(1.0 - done, dtype=torch.float32, device=device)[:, None]
        done_eps += infos
    return {k: float(np.mean([e[k] for e in done_eps])) for k in ("return", "success", "unique_cells", "length")}
