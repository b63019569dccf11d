"""ETD: Episodic Novelty Through Temporal Distance (Jiang, Liu et al., ICLR 2025, arXiv 2501.15418).

The method of the paper in plain torch/numpy:

- `mrn_distance`: the MRN quasimetric on 64-d codes (Sec. 3 of the paper, following Myers et al. 2024):
  ``d(x, y) = max_i ReLU(a_i(x) - a_i(y)) + sqrt(sum_i (u_i(x) - u_i(y))^2 + eps)``  (Eq. MRN).
- `TemporalDistanceCritic`: feature extractor g, embedding head phi and potential head c; the energy
  ``f(x, y) = c(y) - d(phi(g(x)), phi(g(y)))`` whose symmetric-InfoNCE optimum makes d the successor distance
  ``d_SD(x, y) = log p(s_f=y | s_0=y) - log p(s_f=y | s_0=x)``  (Eq. SD).
- `contrastive_loss`: symmetric InfoNCE (row and column cross-entropies, halved) with an optional logsumexp penalty.
- `truncated_geometric_offsets` / `sample_future_indices`: positives drawn from the discounted future *inside the
  anchor's episode*, ``P(Delta=k) ∝ gamma^(k-1)`` on ``k = 1..R``.
- `ETDReward`: the episodic memory (a preallocated per-env buffer of observations, g-features and codes) and the
  intrinsic reward ``b_t = min_{k <= t} d(phi(s_k), phi(s_{t+1}))`` (Eq. ETD-reward) as one masked min per step,
  with `RewardNormalizer` (EMA, momentum 0.9).
- `mrn_pairwise`: the all-pairs energy of training, its max part in chunks with a scatter backward (no B x B x D/2
  tensor); anchors and positives go through the critic in one pass.

Equation labels follow the spec of this package (the paper body's numbering could not be read); the official code
(Jackory/ETD, `src/algo/intrinsic_rewards/tdd.py`) was used to resolve details. Deliberate differences from the
official code: positives respect the true episode boundary (the official code is off by one; `boundary="official"`
keeps its behaviour), and cached memory features are refreshed after every model update (`stale_features=True`
keeps the official behaviour of never recomputing them).
"""

from __future__ import annotations

import math
from typing import Any, Literal

import numpy as np
import torch
import torch.nn.functional as F
from torch import Tensor, nn

Energy = Literal["mrn_pot", "mrn", "l2", "cos", "dot"]
LossKind = Literal["infonce_symmetric", "infonce", "infonce_backward"]
ENERGIES = ("mrn_pot", "mrn", "l2", "cos", "dot")
LOSSES = ("infonce_symmetric", "infonce", "infonce_backward")
AGGREGATES = ("min", "quantile10", "knn", "mean", "random")  # "mean", "random": deliberately broken (gate checks)


# --------------------------------------------------------------------------------------------------
# Quasimetric and energies


def mrn_distance(x: Tensor, y: Tensor, eps: float = 1e-8) -> Tensor:
    """MRN quasimetric between codes x and y (broadcast over leading dims): first half max-ReLU, second half L2."""
    if x.shape[-1] != y.shape[-1] or x.shape[-1] % 2:
        raise ValueError(f"codes must share an even last dimension, got {x.shape[-1]} and {y.shape[-1]}")
    half = x.shape[-1] // 2
    asym = (x[..., :half] - y[..., :half]).amax(dim=-1).clamp_min(0.0)  # (...): max_i ReLU(a_i(x) - a_i(y))
    sym = torch.sqrt(((x[..., half:] - y[..., half:]) ** 2).sum(dim=-1) + eps)  # (...): Euclidean part
    return asym + sym  # Eq. MRN


class _PairwiseMaxDiff(torch.autograd.Function):
    """M_ij = max_k (x_ik - y_jk) for (B, K) x (M, K), computed in row chunks; the backward scatters the incoming
    gradient to the argmax coordinate, so the (B, M, K) tensor never exists whole (forward) or at all (backward)."""

    @staticmethod
    def forward(ctx: Any, x: Tensor, y: Tensor, max_elements: int) -> Tensor:
        B, K = x.shape
        M = y.shape[0]
        vals = x.new_empty(B, M)
        arg = torch.empty(B, M, dtype=torch.long, device=x.device)
        step = max(1, max_elements // max(1, M * K))  # rows per chunk
        for i in range(0, B, step):
            v, j = (x[i : i + step, None, :] - y[None, :, :]).max(dim=-1)  # (step, M)
            vals[i : i + step], arg[i : i + step] = v, j
        ctx.save_for_backward(arg)
        ctx.shapes = (x.shape, y.shape)
        return vals

    @staticmethod
    def backward(ctx: Any, grad: Tensor) -> tuple[Tensor, Tensor, None]:
        (arg,) = ctx.saved_tensors
        x_shape, y_shape = ctx.shapes
        gx = grad.new_zeros(x_shape).scatter_add_(1, arg, grad)  # dM_ij/dx_ik = 1[k = arg_ij]
        gy = grad.new_zeros(y_shape).scatter_add_(1, arg.T.contiguous(), -grad.T.contiguous())  # = -1[k = arg_ij]
        return gx, gy, None


def mrn_pairwise(x: Tensor, y: Tensor, eps: float = 1e-8, max_elements: int = 1 << 20) -> Tensor:
    """All-pairs MRN distances D_ij = d(x_i, y_j): (B, D) x (M, D) -> (B, M).

    The max part runs in chunks of at most `max_elements` differences (no (B, M, D/2) intermediate; its backward is a
    scatter to the argmax coordinates); the L2 part goes through one matmul.
    """
    half = x.shape[-1] // 2
    # max_i ReLU(.) = ReLU(max_i .)
    asym = _PairwiseMaxDiff.apply(x[:, :half].contiguous(), y[:, :half].contiguous(), max_elements).clamp_min(0.0)
    xs, ys = x[:, half:], y[:, half:]
    sq = (xs * xs).sum(1)[:, None] + (ys * ys).sum(1)[None, :] - 2.0 * xs @ ys.T  # ||u(x) - u(y)||^2, (B, M)
    return asym + torch.sqrt(sq.clamp_min(0.0) + eps)  # Eq. MRN


def pair_distance(x: Tensor, y: Tensor, energy: str = "mrn_pot", eps: float = 1e-8) -> Tensor:
    """The distance implied by an energy (what rewards use): MRN, L2, 1 - cosine, or -dot."""
    if energy in ("mrn_pot", "mrn"):
        return mrn_distance(x, y, eps)
    if energy == "l2":
        return torch.sqrt(((x - y) ** 2).sum(-1) + eps)
    if energy == "cos":
        return 1.0 - F.cosine_similarity(x, y, dim=-1)
    if energy == "dot":
        return -(x * y).sum(-1)
    raise ValueError(f"energy must be one of {ENERGIES}, got {energy!r}")


# --------------------------------------------------------------------------------------------------
# Networks


def _norm(kind: str, shape: int | tuple[int, ...]) -> nn.Module:
    if kind == "layer":
        return nn.LayerNorm(shape)
    if kind == "none":
        return nn.Identity()
    raise ValueError(f"norm must be 'layer' or 'none', got {kind!r}")


class MiniGridCNN(nn.Module):
    """The official "CNN type 0" for 7x7 MiniGrid grids: 3 convs (2x2, stride 1, 32/64/64) + Linear, norms + ReLU."""

    def __init__(self, obs_shape: tuple[int, ...], feature_dim: int = 128, norm: str = "layer") -> None:
        super().__init__()
        c, h, w = obs_shape
        layers: list[nn.Module] = [_norm(norm, (c, h, w))]
        chans = [c, 32, 64, 64]
        for i in range(3):
            h, w = h - 1, w - 1
            layers += [nn.Conv2d(chans[i], chans[i + 1], 2), _norm(norm, (chans[i + 1], h, w)), nn.ReLU()]
        layers += [nn.Flatten(), nn.Linear(64 * h * w, feature_dim), _norm(norm, feature_dim), nn.ReLU()]
        self.net = nn.Sequential(*layers)

    def forward(self, obs: Tensor) -> Tensor:
        """(B, C, H, W) raw grid codes -> (B, F) features; inputs are scaled by 1/255 as in the official code."""
        return self.net(obs.to(self.net[1].weight.dtype) / 255.0)  # in the weights' dtype (float32 unless cast)


class MLPEncoder(nn.Module):
    """Flattened observation -> hidden -> features (LayerNorm on the input, ReLU between layers)."""

    def __init__(self, obs_shape: tuple[int, ...], feature_dim: int = 256, hidden_dim: int = 256, norm: str = "layer"):
        super().__init__()
        n_in = int(np.prod(obs_shape))
        self.net = nn.Sequential(
            nn.Flatten(),
            _norm(norm, n_in),
            nn.Linear(n_in, hidden_dim),
            nn.ReLU(),
            nn.Linear(hidden_dim, feature_dim),
            nn.ReLU(),
        )

    def forward(self, obs: Tensor) -> Tensor:
        """(B, ...) -> (B, F)."""
        return self.net(obs.to(self.net[2].weight.dtype))  # in the weights' dtype (float32 unless cast)


def make_encoder(obs_shape: tuple[int, ...], feature_dim: int, encoder: str = "auto", norm: str = "layer") -> nn.Module:
    """CNN for (C, 7, 7)-like grids, MLP for anything else (`encoder` = 'cnn' | 'mlp' | 'auto')."""
    if encoder == "auto":
        encoder = "cnn" if len(obs_shape) == 3 and min(obs_shape[1:]) >= 4 else "mlp"
    if encoder == "cnn":
        if len(obs_shape) != 3:
            raise ValueError(f"the CNN encoder needs (C, H, W) observations, got shape {obs_shape}")
        return MiniGridCNN(obs_shape, feature_dim, norm)
    if encoder == "mlp":
        return MLPEncoder(obs_shape, feature_dim, norm=norm)
    raise ValueError(f"encoder must be 'cnn', 'mlp' or 'auto', got {encoder!r}")


def _head(n_in: int, hidden: int, n_out: int, norm: str) -> nn.Module:
    return nn.Sequential(nn.Linear(n_in, hidden), _norm(norm, hidden), nn.ReLU(), nn.Linear(hidden, n_out))


class TemporalDistanceCritic(nn.Module):
    """g (features), phi (64-d code) and c (potential) on shared features; energy f(x, y) = c(y) - d(x, y)."""

    def __init__(
        self,
        obs_shape: tuple[int, ...],
        feature_dim: int = 128,  # model_features_dim of src/train.py
        emb_dim: int = 64,
        latent_dim: int = 256,  # model_latents_dim
        energy: str = "mrn_pot",
        encoder: str = "auto",
        norm: str = "layer",
        eps: float = 1e-8,
    ) -> None:
        super().__init__()
        if energy not in ENERGIES:
            raise ValueError(f"energy must be one of {ENERGIES}, got {energy!r}")
        if emb_dim % 2:
            raise ValueError(f"emb_dim must be even (MRN splits it in halves), got {emb_dim}")
        self.obs_shape, self.energy, self.eps = tuple(obs_shape), energy, eps
        self.g = make_encoder(self.obs_shape, feature_dim, encoder, norm)
        self.phi = _head(feature_dim, latent_dim, emb_dim, norm)
        self.c = _head(feature_dim, latent_dim, 1, norm)

    def features(self, obs: Tensor) -> Tensor:
        """g(s): (B, ...) -> (B, F)."""
        return self.g(obs)

    def embed(self, features: Tensor) -> Tensor:
        """phi(g(s)): (B, F) -> (B, D)."""
        return self.phi(features)

    def potential(self, features: Tensor) -> Tensor:
        """c(g(s)): (B, F) -> (B,)."""
        return self.c(features).squeeze(-1)

    def distance(self, x_obs: Tensor, y_obs: Tensor) -> Tensor:
        """Temporal distance d(x_i, y_i) for paired observations: (B, ...) x (B, ...) -> (B,)."""
        return pair_distance(self.embed(self.features(x_obs)), self.embed(self.features(y_obs)), self.energy, self.eps)

    def logits_from_features(self, fx: Tensor, fy: Tensor) -> Tensor:
        """Energy matrix L_ij = f(x_i, y_j) from features: (B, F) x (M, F) -> (B, M)."""
        zx, zy = self.embed(torch.cat([fx, fy])).split([len(fx), len(fy)])  # phi in one pass, (B, D) and (M, D)
        if self.energy in ("mrn_pot", "mrn"):
            logits = -mrn_pairwise(zx, zy, self.eps)  # (B, M)
            if self.energy == "mrn_pot":
                logits = logits + self.potential(fy)[None, :]  # f = c(y) - d(x, y)  (Eq. energy)
            return logits
        if self.energy == "l2":
            return -torch.cdist(zx, zy)
        if self.energy == "cos":
            return F.normalize(zx, dim=-1) @ F.normalize(zy, dim=-1).T
        return zx @ zy.T  # dot

    def logits(self, x_obs: Tensor, y_obs: Tensor) -> Tensor:
        """Energy matrix L_ij = f(x_i, y_j): (B, ...) x (M, ...) -> (B, M); anchors and positives go through g at once."""
        fx, fy = self.features(torch.cat([x_obs, y_obs])).split([len(x_obs), len(y_obs)])
        return self.logits_from_features(fx, fy)


# --------------------------------------------------------------------------------------------------
# Contrastive objective


def contrastive_loss(logits: Tensor, kind: str = "infonce_symmetric", logsumexp_coef: float = 0.0):
    """InfoNCE on an energy matrix whose diagonal holds the positives; returns (loss, stats).

    ``loss = 1/2 [CE_rows(L) + CE_cols(L^T)] + lambda * mean_i (logsumexp_j L_ij)^2``  (Eq. InfoNCE-sym).
    """
    if logits.ndim != 2 or logits.shape[0] != logits.shape[1]:
        raise ValueError(f"logits must be a square (B, B) matrix, got shape {tuple(logits.shape)}")
    if kind not in LOSSES:
        raise ValueError(f"loss kind must be one of {LOSSES}, got {kind!r}")
    labels = torch.arange(logits.shape[0], device=logits.device)
    rows = F.cross_entropy(logits, labels)  # predict y_i among the y_j for anchor x_i
    cols = F.cross_entropy(logits.T, labels)  # predict x_i among the x_j for positive y_i
    if kind == "infonce_symmetric":
        loss = 0.5 * (rows + cols)
    elif kind == "infonce":
        loss = rows
    else:
        loss = cols
    lse = torch.logsumexp(logits, dim=1)
    if logsumexp_coef:
        loss = loss + logsumexp_coef * (lse**2).mean()
    with torch.no_grad():
        acc = (logits.argmax(dim=1) == labels).float().mean()
    stats = {"loss": float(loss.detach()), "acc": float(acc), "logsumexp": float(lse.detach().mean())}
    return loss, stats


# --------------------------------------------------------------------------------------------------
# Positive sampling


def truncated_geometric_offsets(u: np.ndarray, remaining: np.ndarray, gamma: float) -> np.ndarray:
    """Inverse-CDF draw of Delta in {1..R} with P(Delta=k) ∝ gamma^(k-1); R = 0 gives 0."""
    if not 0.0 <= gamma <= 1.0:
        raise ValueError(f"gamma must lie in [0, 1], got {gamma}")
    u = np.asarray(u, dtype=np.float64)
    r = np.asarray(remaining, dtype=np.int64)
    if np.any(r < 0):
        raise ValueError("remaining steps must be >= 0")
    if gamma == 1.0:
        delta = np.ceil(u * r)  # uniform on {1..R}
    elif gamma == 0.0:
        delta = np.ones_like(u)
    else:
        # Delta = ceil(log(1 - (1 - gamma^R) u) / log gamma)  (Eq. trunc-geom)
        delta = np.ceil(np.log1p(-(1.0 - gamma ** r.astype(np.float64)) * u) / math.log(gamma))
    delta = np.clip(delta, 1, np.maximum(r, 1)).astype(np.int64)
    return np.where(r > 0, delta, 0)


def remaining_steps(dones: np.ndarray, boundary: str = "correct") -> np.ndarray:
    """R[t, n]: how many later steps of the anchor's episode the rollout holds.

    `dones[t, n]` is True when the observation at t is the last of its episode. `boundary="official"` reproduces the
    official code's off-by-one (the episode's last observation looks into the next episode and is never a positive).
    """
    if boundary not in ("correct", "official"):
        raise ValueError(f"boundary must be 'correct' or 'official', got {boundary!r}")
    dones = np.asarray(dones, dtype=bool)
    if dones.ndim != 2:
        raise ValueError(f"dones must have shape (T, N), got {dones.shape}")
    T, N = dones.shape
    end = np.empty((T, N), dtype=np.int64)  # end[t] = index of the last observation of t's episode
    if boundary == "correct":
        nxt = np.full(N, T - 1)
        for t in range(T - 1, -1, -1):
            nxt = np.where(dones[t], t, nxt)
            end[t] = nxt
    else:
        nxt = np.full(N, T)  # first t' > t with dones[t'], else T; the episode is taken to end one step before
        for t in range(T - 1, -1, -1):
            end[t] = nxt - 1
            nxt = np.where(dones[t], t, nxt)
    return end - np.arange(T)[:, None]


def sample_future_indices(
    dones: np.ndarray, gamma: float, rng: np.random.Generator, boundary: str = "correct"
) -> tuple[np.ndarray, np.ndarray]:
    """Positive time indices t + Delta (T, N) and the offsets Delta, drawn within each anchor's episode."""
    r = remaining_steps(dones, boundary)
    delta = truncated_geometric_offsets(rng.random(r.shape), r, gamma)
    return np.arange(r.shape[0])[:, None] + delta, delta


# --------------------------------------------------------------------------------------------------
# Reward normalisation and the episodic intrinsic reward


class RewardNormalizer:
    """EMA standardisation of intrinsic rewards, once per rollout (momentum 0.9, official code)."""

    def __init__(self, momentum: float = 0.9, eps: float = 1e-5) -> None:
        if not 0.0 <= momentum < 1.0:
            raise ValueError(f"momentum must lie in [0, 1), got {momentum}")
        self.momentum, self.eps = momentum, eps
        self.mean, self.var = 0.0, 1.0

    def __call__(self, rewards: np.ndarray) -> np.ndarray:
        """Update the stats with this rollout's rewards and return them standardised."""
        b = np.asarray(rewards, dtype=np.float64)
        m = self.momentum
        self.mean = m * self.mean + (1 - m) * float(b.mean())  # mu <- 0.9 mu + 0.1 mean(b)
        self.var = m * self.var + (1 - m) * float(((b - self.mean) ** 2).mean())  # with the updated mu
        return (b - self.mean) / (math.sqrt(self.var) + self.eps)


def _half_sq_norm(codes: Tensor) -> Tensor:
    """Squared norm of the L2 half of MRN codes, (..., D) -> (...)."""
    return codes[..., codes.shape[-1] // 2 :].square().sum(-1)


class ETDReward:
    """ETD's intrinsic reward for N parallel environments, with its temporal-distance critic and optimiser.

    The episodic memory is a pool of fixed-size pages shared by the envs: observations (P, B, ...), g-features
    (P, B, F) and codes (P, D, B), each page owned by one env (`owner`, -1 when free) and holding slots
    rank*B .. rank*B + B-1 of its episode; an env takes the lowest free page when it starts a page and frees its
    pages when its episode ends, and the pool doubles when no page is free. For a transition s -> s' the reward is
    ``min_k d(phi(g(s_k)), phi(g(s')))`` over the memory before s' (Eq. ETD-reward): the distances of every slot of
    the used pages to its owner's s', one masked min per page and one scatter-min per env. Episodes of different
    lengths waste at most one partly filled page each (a padded (N, L) memory spends half its work on padding when
    the episode phases are staggered). Codes are stored by column, so both MRN parts reduce over D.
    """

    name = "etd"

    def __init__(
        self,
        obs_shape: tuple[int, ...],
        n_envs: int,
        device: str = "cpu",
        lr: float = 3e-4,
        gamma_future: float = 0.99,
        loss: str = "infonce_symmetric",
        logsumexp_coef: float = 0.0,
        aggregate: str = "min",
        boundary: str = "correct",
        stale_features: bool = False,
        max_grad_norm: float = 0.5,
        seed: int = 0,
        capacity: int = 128,
        page: int = 32,
        **critic_kwargs: Any,
    ) -> None:
        if aggregate not in AGGREGATES:
            raise ValueError(f"aggregate must be one of {AGGREGATES}, got {aggregate!r}")
        if page < 1 or capacity < 1:
            raise ValueError(f"page and capacity must be >= 1, got page={page}, capacity={capacity}")
        self.critic = TemporalDistanceCritic(obs_shape, **critic_kwargs).to(device)
        self.opt = torch.optim.Adam(self.critic.parameters(), lr=lr, eps=1e-5)
        self.n_envs, self.device, self.obs_shape = n_envs, device, tuple(obs_shape)
        self.gamma_future, self.loss_kind, self.logsumexp_coef = gamma_future, loss, logsumexp_coef
        self.aggregate, self.boundary, self.stale = aggregate, boundary, stale_features
        self.max_grad_norm = max_grad_norm
        self.rng = np.random.default_rng(seed)
        self.page = page
        self.chunk_elements = 1 << 17  # differences per chunk of the distance's max part (512 KiB of float32)
        self.lengths = torch.zeros(n_envs, dtype=torch.long, device=device)
        self.current = torch.full((n_envs,), -1, dtype=torch.long, device=device)  # page of each env's last slot
        self.n_pages = n_envs * -(-capacity // page)  # initial pool: `capacity` slots per env
        self.owner = torch.full((self.n_pages,), -1, dtype=torch.long, device=device)  # env of each page, -1: free
        self.rank = torch.zeros(self.n_pages, dtype=torch.long, device=device)  # page number within its episode
        self.obs_mem: Tensor | None = None  # (P, B, ...), allocated on the first observation (its dtype)
        self.feat_mem = torch.zeros(0)  # (P, B, F)
        self.code_mem = torch.zeros(0)  # (P, D, B): codes stored by column, so reductions run over D
        self.norm_mem = torch.zeros(0)  # (P, B): squared norm of each code's L2 half
        self._work = torch.zeros(0, 0, 0)

    @property
    def capacity(self) -> int:
        """Slots in the pool (all pages)."""
        return self.n_pages * self.page

    def _allocate(self, obs: Tensor, feat_dim: int, code_dim: int, n_pages: int) -> None:
        """(Re)allocate a pool of `n_pages` pages for observations like `obs[0]`, keeping its contents."""
        B, dev = self.page, self.device
        old = (self.obs_mem, self.feat_mem, self.code_mem, self.norm_mem)
        self.obs_mem = torch.zeros(n_pages, B, *obs.shape[1:], dtype=obs.dtype, device=dev)
        self.feat_mem = torch.zeros(n_pages, B, feat_dim, device=dev)
        self.code_mem = torch.zeros(n_pages, code_dim, B, device=dev)
        self.norm_mem = torch.zeros(n_pages, B, device=dev)
        self._clear_codes(slice(None))
        if old[0] is not None:
            n = old[0].shape[0]
            self.obs_mem[:n], self.feat_mem[:n], self.code_mem[:n], self.norm_mem[:n] = old
        grow = n_pages - len(self.owner)
        if grow > 0:
            self.owner = torch.cat([self.owner, self.owner.new_full((grow,), -1)])
            self.rank = torch.cat([self.rank, self.rank.new_zeros(grow)])
        self.n_pages = n_pages

    def _release(self, envs: Tensor) -> None:
        """Empty the memories of the envs in the bool mask `envs` (N,) and free their pages."""
        freed = torch.nonzero((self.owner >= 0) & envs[self.owner.clamp_min(0)]).flatten()
        self.owner[freed] = -1
        if self.obs_mem is not None:
            self._clear_codes(freed)
        self.lengths[envs] = 0
        self.current[envs] = -1

    def _clear_codes(self, pages: Tensor | slice) -> None:
        """Empty slots: +inf in the max part and an infinite squared norm, so that every MRN distance to them is
        +inf (no mask needed), and 0 in the L2 part, so that its dot products stay finite."""
        half = self.code_mem.shape[1] // 2
        self.code_mem[pages, :half], self.code_mem[pages, half:] = float("inf"), 0.0
        self.norm_mem[pages] = float("inf")

    def reset(self, env_ids: Any = None) -> None:
        """Clear the episodic memory of the given environments (all by default)."""
        envs = torch.ones(self.n_envs, dtype=torch.bool, device=self.device)
        if env_ids is not None:
            envs = torch.zeros_like(envs)
            envs[torch.as_tensor(list(env_ids), dtype=torch.long, device=self.device)] = True
        self._release(envs)

    def _pages_of(self, env_id: int) -> Tensor:
        pages = torch.nonzero(self.owner == env_id).flatten()
        return pages[self.rank[pages].argsort()]

    def memory(self, env_id: int) -> tuple[Tensor, Tensor, Tensor]:
        """The observations, features and codes env `env_id` holds now (in the order they were written)."""
        n = int(self.lengths[env_id])
        if self.obs_mem is None or n == 0:
            empty = torch.zeros(0, device=self.device)
            return empty, empty, empty
        p = self._pages_of(env_id)
        obs = self.obs_mem[p].reshape(-1, *self.obs_mem.shape[2:])[:n]
        feats = self.feat_mem[p].reshape(-1, self.feat_mem.shape[-1])[:n]
        codes = self.code_mem[p].transpose(1, 2).reshape(-1, self.code_mem.shape[1])[:n]
        return obs, feats, codes

    def _write(self, rows: Tensor | None, obs: Tensor, feats: Tensor, codes: Tensor) -> None:
        """Append obs/feats/codes (R, ...) at the current lengths of the envs `rows` (R,; None: all envs); an env
        whose last page is full (or that has none) takes the lowest free page first."""
        pos = self.lengths if rows is None else self.lengths[rows]
        slot = pos % self.page
        start = slot == 0
        if bool(start.any()):
            envs = torch.nonzero(start).flatten() if rows is None else rows[start]
            free = torch.nonzero(self.owner < 0).flatten()
            if len(free) < len(envs):  # the pool is full: double it
                self._allocate(obs, feats.shape[-1], codes.shape[-1], max(2 * self.n_pages, self.n_pages + len(envs)))
                free = torch.nonzero(self.owner < 0).flatten()
            new = free[: len(envs)]
            self.owner[new], self.rank[new], self.current[envs] = envs, pos[start] // self.page, new
        pages = self.current if rows is None else self.current[rows]
        self.obs_mem[pages, slot], self.feat_mem[pages, slot], self.code_mem[pages, :, slot] = obs, feats, codes
        self.norm_mem[pages, slot] = _half_sq_norm(codes)
        if rows is None:
            self.lengths += 1
        else:
            self.lengths[rows] += 1

    def _used(self) -> tuple[int, Tensor]:
        """(U, env): the number of pages up to the highest used one and their owners (free pages: 0), (U,)."""
        held = torch.nonzero(self.owner >= 0).flatten()
        U = int(held.max()) + 1 if len(held) else 0
        return U, self.owner[:U].clamp_min(0)

    def _valid(self, U: int, env: Tensor) -> Tensor:
        """Which slots of the first U pages hold an observation, (U, B)."""
        slots = self.rank[:U, None] * self.page + torch.arange(self.page, device=self.device)[None, :]  # (U, B)
        return (self.owner[:U] >= 0)[:, None] & (slots < self.lengths[env][:, None])

    @torch.no_grad()
    def compute(self, obs: np.ndarray, actions: np.ndarray, next_obs: np.ndarray, dones: np.ndarray) -> np.ndarray:
        """Intrinsic rewards (N,) for transitions obs -> next_obs; memories of `dones` envs are cleared after.

        phi only changes at model updates, so the memory's codes phi(g(s_k)) are cached between updates and
        recomputed by `refresh()`: identical to re-applying phi to the whole memory at every step, in O(t) not O(t^2).
        """
        o2 = torch.as_tensor(next_obs, device=self.device)
        empty = torch.nonzero(self.lengths == 0).flatten()  # episode starts: the memory first receives s_0
        batch = o2 if len(empty) == 0 else torch.cat([torch.as_tensor(obs, device=self.device)[empty], o2])
        f = self.critic.features(batch)  # g in one pass
        z = self.critic.embed(f)
        if self.obs_mem is None:
            self._allocate(o2, f.shape[-1], z.shape[-1], self.n_pages)
        if len(empty):
            self._write(empty, batch[: len(empty)], f[: len(empty)], z[: len(empty)])
        f2, z2 = f[len(empty) :], z[len(empty) :]  # (N, F), (N, D)
        U, env = self._used()
        d = self._memory_distances(z2, U, env)  # (U, B): d(memory slot -> its env's new state)
        if self.aggregate == "min":  # b_t = min_k d(phi(s_k), phi(s_t+1))  (Eq. ETD-reward), a min per page
            if self.critic.energy not in ("mrn_pot", "mrn"):  # MRN needs no mask: empty slots' codes give +inf
                d = d.masked_fill_(~self._valid(U, env), float("inf"))
            out = torch.full((self.n_envs,), float("inf"), device=self.device)
            out = out.scatter_reduce_(0, env, d.amin(dim=1), reduce="amin")  # then a min over each env's pages
        else:
            out = self._other_aggregate(d, env, self._valid(U, env))
        done_np = np.asarray(dones, dtype=bool)
        if done_np.any():
            done = torch.as_tensor(done_np, device=self.device)
            self._release(done)
            keep = torch.nonzero(~done).flatten()
            if len(keep):
                self._write(keep, o2[keep], f2[keep], z2[keep])
        else:  # the common step: every env appends s'
            self._write(None, o2, f2, z2)
        return out.cpu().numpy().astype(np.float64)

    def _memory_distances(self, z2: Tensor, U: int, env: Tensor) -> Tensor:
        """d(phi(s_k), phi(s')) of every slot of the first U pages to the new code of the page's env: (U, B)."""
        mem = self.code_mem[:U]  # (U, D, B)
        zp = z2[env]  # (U, D): each page's env's new code
        if self.critic.energy not in ("mrn_pot", "mrn"):
            return pair_distance(mem.transpose(1, 2), zp[:, None, :], self.critic.energy, self.critic.eps)
        half = mem.shape[1] // 2
        # max_i ReLU(a_i(s_k) - a_i(s')), in chunks of pages whose differences stay in the CPU cache
        d = torch.empty(U, self.page, device=self.device)
        step = max(1, self.chunk_elements // (half * self.page))
        diff = self._workspace((min(U, step), half, self.page))
        for i in range(0, U, step):
            j = min(U, i + step)
            torch.amax(torch.sub(mem[i:j, :half], zp[i:j, :half, None], out=diff[: j - i]), dim=1, out=d[i:j])
        d.clamp_min_(0.0)
        # ||u(s_k) - u(s')||^2 = ||u(s_k)||^2 + ||u(s')||^2 - 2 u(s_k).u(s'): cached norms and one batched product
        # per page, as the training's all-pairs form (mrn_pairwise) computes it
        dot = torch.bmm(zp[:, None, half:], mem[:, half:]).squeeze(1)  # (U, B)
        sq = dot.mul_(-2.0).add_(self.norm_mem[:U]).add_(_half_sq_norm(z2)[env][:, None]).clamp_min_(0.0)
        return d.add_(sq.add_(self.critic.eps).sqrt_())  # Eq. MRN, (U, B)

    def _workspace(self, shape: tuple[int, int, int]) -> Tensor:
        """A (U, D/2, B) scratch buffer, grown (never shrunk) as the used pages grow."""
        if self._work.shape[0] < shape[0] or tuple(self._work.shape[1:]) != shape[1:]:
            self._work = torch.empty(max(shape[0], 2 * self._work.shape[0]), *shape[1:], device=self.device)
        return self._work[: shape[0]]

    def _other_aggregate(self, d: Tensor, env: Tensor, valid: Tensor) -> Tensor:
        """The aggregates other than the min, on the distances laid out per env, (N, n_max)."""
        n_max = int(self.lengths.max())
        p, j = torch.nonzero(valid, as_tuple=True)
        dense = torch.zeros(self.n_envs, n_max, device=self.device)
        dense[env[p], self.rank[p] * self.page + j] = d[p, j]
        mask = torch.arange(n_max, device=self.device)[None, :] < self.lengths[:, None]  # (N, L)
        if self.aggregate == "mean":  # a deliberately broken reward: the mean instead of the min
            return (dense * mask).sum(1) / self.lengths
        if self.aggregate == "random":  # broken: the min over random distances (carries no information on s')
            noise = torch.as_tensor(self.rng.random(dense.shape), dtype=dense.dtype, device=self.device)
            return noise.masked_fill(~mask, float("inf")).amin(dim=1)
        return torch.stack([self._aggregate(dense[i, : int(n)]) for i, n in enumerate(self.lengths)])

    def _aggregate(self, d: Tensor) -> Tensor:
        if d.numel() == 1:
            return d[0]
        if self.aggregate == "quantile10":
            return torch.quantile(d, 0.1)
        return d.sort().values[min(9, d.numel() - 1)]  # knn: 10th nearest

    @torch.no_grad()
    def refresh(self, chunk: int = 4096) -> None:
        """After a model update: recompute memory features with the new g (unless `stale_features`) and codes, for
        every stored observation in batches of `chunk`."""
        if self.obs_mem is None:
            return
        rows, cols = torch.nonzero(self._valid(*self._used()), as_tuple=True)
        for k in range(0, len(rows), chunk):
            r, c = rows[k : k + chunk], cols[k : k + chunk]
            if not self.stale:  # official: cached g-features are kept, only phi is re-applied
                self.feat_mem[r, c] = self.critic.features(self.obs_mem[r, c])
            codes = self.critic.embed(self.feat_mem[r, c])
            self.code_mem[r, :, c], self.norm_mem[r, c] = codes, _half_sq_norm(codes)

    def positives(self, dones: np.ndarray) -> np.ndarray:
        """Positive indices (T, N) for a rollout whose `dones[t, n]` marks the last observation of an episode."""
        idx, _ = sample_future_indices(dones, self.gamma_future, self.rng, self.boundary)
        return idx

    def update(self, batch: dict[str, Tensor]) -> dict[str, float]:
        """Training hook of the PPO loop: one contrastive step on the minibatch's (obs, positive obs)."""
        return self.train_step(batch["obs"], batch["pos_obs"])

    def train_step(self, anchors: Tensor, positives: Tensor) -> dict[str, float]:
        """One Adam step of the contrastive objective on a minibatch of (anchor, positive) observations."""
        logits = self.critic.logits(anchors, positives)
        loss, stats = contrastive_loss(logits, self.loss_kind, self.logsumexp_coef)
        self.opt.zero_grad(set_to_none=True)
        loss.backward()
        nn.utils.clip_grad_norm_(self.critic.parameters(), self.max_grad_norm)
        self.opt.step()
        return stats
