"""Slow, loop-by-loop forms of ETD's pieces (arXiv 2501.15418), used to test the fast ones in `etd.py`.

Each function follows its equation literally: MRN distance per pair, InfoNCE as averaged log-softmaxes, the
episode boundary by walking forward in time, the episodic reward by a loop over the memory.
"""

from __future__ import annotations

import numpy as np
import torch
from torch import Tensor


def mrn_distance_ref(x: Tensor, y: Tensor, eps: float = 1e-8) -> Tensor:
    """MRN distance for paired rows x, y (B, D), one pair at a time."""
    half = x.shape[-1] // 2
    out = []
    for xi, yi in zip(x, y, strict=True):
        asym = max(torch.clamp(xi[k] - yi[k], min=0.0) for k in range(half))
        sym = torch.sqrt(sum((xi[k] - yi[k]) ** 2 for k in range(half, x.shape[-1])) + eps)
        out.append(asym + sym)
    return torch.stack(out)


def contrastive_loss_ref(logits: Tensor) -> Tensor:
    """Symmetric InfoNCE: mean over i of -1/2 [log softmax_j(L_ij) at j=i + log softmax_j(L_ji) at j=i]."""
    B = logits.shape[0]
    total = logits.new_zeros(())
    for i in range(B):
        row = logits[i, i] - torch.logsumexp(logits[i, :], 0)
        col = logits[i, i] - torch.logsumexp(logits[:, i], 0)
        total = total - 0.5 * (row + col)
    return total / B


def remaining_steps_ref(dones: np.ndarray) -> np.ndarray:
    """R[t, n] by walking forward from t until the episode's last observation or the rollout's end."""
    T, N = dones.shape
    out = np.zeros((T, N), dtype=np.int64)
    for n in range(N):
        for t in range(T):
            k = t
            while k < T - 1 and not dones[k, n]:
                k += 1
            out[t, n] = k - t
    return out


def truncated_geometric_pmf(R: int, gamma: float) -> np.ndarray:
    """P(Delta = k) for k = 1..R, proportional to gamma^(k-1)."""
    w = np.array([gamma ** (k - 1) if gamma > 0 else float(k == 1) for k in range(1, R + 1)])
    return w / w.sum()


def episodic_rewards_ref(z_obs: Tensor, z_next: Tensor, dones: np.ndarray, eps: float = 1e-8) -> np.ndarray:
    """One environment's rewards for transitions z_obs[t] -> z_next[t] (codes, (T, D)): min_k d(memory_k, new)."""
    rewards = np.zeros(len(dones))
    memory: list[Tensor] = []
    for t in range(len(dones)):
        if not memory:
            memory.append(z_obs[t])  # episode start: the memory holds s_0
        rewards[t] = min(float(mrn_distance_ref(m[None], z_next[t][None], eps)[0]) for m in memory)
        if dones[t]:
            memory = []
        else:
            memory.append(z_next[t])
    return rewards


def deir_rewards_ref(model: torch.nn.Module, obs: Tensor, next_obs: Tensor, dones: np.ndarray) -> np.ndarray:
    """One environment's DEIR rewards, the official list form of Algorithm A1 (DEIR, arXiv 2304.10770) step by step.

    The observation history grows [e_t, e_t+1, ...] and the trajectory history [0, h_t, h_t+1, ...]; the reward
    divides the squared distances of history[:-1] to the newest e by the distances of trj[:-2] to trj[-2] (Eq. 4).
    """
    rewards = np.zeros(len(dones))
    mem = torch.zeros(1, model.feature_dim)
    obs_hist: Tensor | None = None
    trj_hist: Tensor | None = None
    for t in range(len(dones)):
        e_t, e_n = model.embed(obs[t : t + 1]), model.embed(next_obs[t : t + 1])
        h_t = model.trajectory(e_t, mem)
        h_n = model.trajectory(e_n, h_t)
        obs_hist = torch.cat([e_t, e_n]) if obs_hist is None else torch.cat([obs_hist, e_n])
        trj_hist = torch.cat([torch.zeros_like(h_t), h_t, h_n]) if trj_hist is None else torch.cat([trj_hist, h_n])
        obs_d = torch.cdist(obs_hist[:-1][None], obs_hist[-1:][None])[0, :, 0]
        trj_d = torch.cdist(trj_hist[:-2][None], trj_hist[-2:-1][None])[0, :, 0]
        rewards[t] = float((obs_d**2 / (trj_d + 1e-6)).min())
        mem = h_t
        if dones[t]:
            mem, obs_hist, trj_hist = torch.zeros_like(mem), None, None
    return rewards
