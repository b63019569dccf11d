"""GFlowNet core used by SA-GFN (Madan et al., ICLR 2025; spec §3.1): policies, batched sampling, TB/DB/SubTB, exact P_T.

- Trajectory Balance (Malkin et al. 2022), spec §3.1 eq. (TB):
  L = (log Z + sum_t log P_F(s_{t+1}|s_t) - log R(x) - sum_t log P_B(s_t|s_{t+1}))^2
- Detailed Balance (Bengio et al. 2023), eq. (DB), with the terminal edge log F(x) + log P_F(s_f|x) = log R(x).
- SubTB(lambda) (Madan et al. 2023), eq. (SubTB): lambda^(j-i)-weighted squared residuals of all sub-trajectories.
- Exact terminal distribution of a HyperGrid policy by dynamic programming over the DAG (spec §3.4).

Trajectories are padded tensors: `states (B, L, D)`, `actions (B, L)` with L = env.max_len; trajectory b takes
`lengths[b]` actions, the last one "stop", and visits states 0 .. lengths[b] - 1 (padding repeats its terminal state).
Sampling loops over time steps only; every step is one batched policy call.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn

__all__ = [
    "GFlowNetModel",
    "PolicyNet",
    "TrajectoryBatch",
    "detailed_balance",
    "exact_terminal_distribution",
    "l1_mean",
    "modes_captured",
    "recompute_logprobs",
    "sample_trajectories",
    "subtrajectory_balance",
    "total_variation",
    "trajectory_balance",
]

ACTIVATIONS = {"relu": nn.ReLU, "leaky_relu": nn.LeakyReLU}


class PolicyNet(nn.Module):
    """MLP trunk with three heads: forward logits (A), backward logits (A - 1) and log state flow (1).

    `uniform_pb=True` ignores the backward head (P_B uniform over parents), the HyperGrid default (spec §6a).
    """

    def __init__(
        self,
        input_dim: int,
        n_actions: int,
        hidden: int = 256,
        n_layers: int = 2,
        uniform_pb: bool = True,
        activation: str = "relu",
    ) -> None:
        super().__init__()
        if activation not in ACTIVATIONS:
            raise ValueError(f"activation must be one of {list(ACTIVATIONS)}, got {activation!r}")
        if hidden < 1 or n_layers < 1:
            raise ValueError(f"hidden and n_layers must be >= 1, got {hidden}, {n_layers}")
        layers: list[nn.Module] = []
        width = input_dim
        for _ in range(n_layers):
            layers += [nn.Linear(width, hidden), ACTIVATIONS[activation]()]
            width = hidden
        self.trunk = nn.Sequential(*layers)
        self.n_actions, self.uniform_pb = n_actions, uniform_pb
        self.head = nn.Linear(hidden, n_actions + (n_actions - 1) + 1)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """(forward logits (..., A), backward logits (..., A - 1), log flow (...))."""
        out = self.head(self.trunk(x))
        a = self.n_actions
        return out[..., :a], out[..., a : 2 * a - 1], out[..., -1]


class GFlowNetModel(nn.Module):
    """A policy plus a learned log Z (TB); DB and SubTB use the policy's state-flow head instead."""

    def __init__(self, policy: PolicyNet) -> None:
        super().__init__()
        self.policy = policy
        self.log_Z = nn.Parameter(torch.zeros(()))  # initialised at 0 (spec §3.3)

    def optimizer(self, lr: float = 1e-3, lr_logz: float = 1e-1) -> torch.optim.Adam:
        """Adam with lr 1e-3 on the policy and 1e-1 on log Z (spec §3.3)."""
        return torch.optim.Adam(
            [{"params": self.policy.parameters(), "lr": lr}, {"params": [self.log_Z], "lr": lr_logz}]
        )


@dataclass
class TrajectoryBatch:
    """A padded batch of complete trajectories (see the module docstring for the layout)."""

    states: torch.Tensor  # (B, L, D) long
    actions: torch.Tensor  # (B, L) long, -1 after the stop action
    lengths: torch.Tensor  # (B,) number of actions, stop included

    @property
    def terminal(self) -> torch.Tensor:
        """(B, D) terminal states x."""
        idx = (self.lengths - 1).view(-1, 1, 1).expand(-1, 1, self.states.shape[-1])
        return self.states.gather(1, idx).squeeze(1)

    def __len__(self) -> int:
        return self.states.shape[0]

    def __getitem__(self, idx: slice | torch.Tensor) -> TrajectoryBatch:
        return TrajectoryBatch(self.states[idx], self.actions[idx], self.lengths[idx])

    @staticmethod
    def cat(batches: list[TrajectoryBatch]) -> TrajectoryBatch:
        """Concatenate batches from the same environment."""
        return TrajectoryBatch(*(torch.cat([getattr(b, f) for b in batches]) for f in ("states", "actions", "lengths")))


def _masked_log_softmax(logits: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    return torch.log_softmax(logits.masked_fill(~mask, float("-inf")), dim=-1)


@torch.no_grad()
def sample_trajectories(
    env, policy: PolicyNet, n: int, epsilon: float = 0.0, generator: torch.Generator | None = None
) -> TrajectoryBatch:
    """Sample `n` trajectories with P_F, mixed with probability `epsilon` with uniform valid actions."""
    if n < 1:
        raise ValueError(f"n must be >= 1, got {n}")
    if not 0.0 <= epsilon <= 1.0:
        raise ValueError(f"epsilon must be in [0, 1], got {epsilon}")
    device = env.device
    L, stop = env.max_len, env.n_actions - 1
    x = env.s0(n)
    states = x.unsqueeze(1).repeat(1, L, 1)  # (B, L, D); padding repeats the terminal state
    actions = torch.full((n, L), -1, dtype=torch.long, device=device)
    lengths = torch.zeros(n, dtype=torch.long, device=device)
    done = torch.zeros(n, dtype=torch.bool, device=device)
    for t in range(L):
        mask = env.forward_mask(x)  # (B, A)
        probs = _masked_log_softmax(policy(env.encode(x))[0], mask).exp()
        if epsilon > 0:
            probs = (1 - epsilon) * probs + epsilon * mask / mask.sum(-1, keepdim=True)
        u = torch.rand(n, 1, generator=generator, device=device)
        a = (probs.cumsum(-1) < u * probs.sum(-1, keepdim=True)).sum(-1).clamp(max=stop)  # inverse CDF, (B,)
        a = torch.where(mask.gather(1, a.unsqueeze(1)).squeeze(1), a, stop)  # float round-off guard
        a = a.masked_fill(done, -1)
        actions[:, t] = a
        stopping = a == stop
        lengths = torch.where(stopping, t + 1, lengths)
        moving = (a >= 0) & ~stopping
        x = torch.where(moving.unsqueeze(1), env.step(x, a.clamp(0, stop - 1)), x)
        if t + 1 < L:
            states[:, t + 1] = x
        done = done | stopping
        if bool(done.all()):
            states[:, t + 2 :] = x.unsqueeze(1)
            break
    if not bool(done.all()):
        raise RuntimeError("a trajectory did not stop within env.max_len actions")
    return TrajectoryBatch(states, actions, lengths)


def recompute_logprobs(env, policy: PolicyNet, batch: TrajectoryBatch) -> tuple[torch.Tensor, ...]:
    """log P_F, log P_B per action and log F per state of `batch` under `policy` (with gradients).

    Returns (log_pf (B, L), log_pb (B, L), log_flow (B, L), valid (B, L) bool) where log_pb[:, t] is
    log P_B(s_t | s_{t+1}) for non-stop actions and 0 for the stop action and padding; padding is 0 in log_pf.
    Used for on-policy data and to evaluate one network on another's trajectories (spec §3.4).
    """
    _B, L, _ = batch.states.shape
    t = torch.arange(L, device=batch.states.device)
    valid = t < batch.lengths.unsqueeze(1)  # (B, L) actions taken
    moves = t < (batch.lengths - 1).unsqueeze(1)  # (B, L) non-stop actions
    logits_f, logits_b, log_flow = policy(env.encode(batch.states))  # (B, L, A), (B, L, A-1), (B, L)
    a = batch.actions.clamp(min=0).unsqueeze(-1)
    logp_f = _masked_log_softmax(logits_f, env.forward_mask(batch.states))
    log_pf = logp_f.gather(-1, a).squeeze(-1).masked_fill(~valid, 0.0)
    nxt = torch.cat([batch.states[:, 1:], batch.states[:, -1:]], dim=1)  # s_{t+1}, (B, L, D)
    if policy.uniform_pb:
        log_pb = -env.log_n_parents(nxt)
    else:
        logits_b_next = torch.cat([logits_b[:, 1:], logits_b[:, -1:]], dim=1)
        logp_b = _masked_log_softmax(logits_b_next, env.backward_mask(nxt))
        log_pb = logp_b.gather(-1, a.clamp(max=env.n_actions - 2)).squeeze(-1)
    log_pb = torch.where(moves, log_pb, torch.zeros_like(log_pb))
    log_flow = log_flow.masked_fill(~valid, 0.0)
    return log_pf, log_pb, log_flow, valid


def _check_log_rewards(log_rewards: torch.Tensor, n: int) -> None:
    if log_rewards.shape != (n,):
        raise ValueError(f"log_rewards must have shape ({n},), got {tuple(log_rewards.shape)}")
    if log_rewards.requires_grad:
        raise ValueError("log_rewards must be detached: rewards (intrinsic ones included) never carry gradients")


def trajectory_balance(
    log_pf: torch.Tensor, log_pb: torch.Tensor, log_Z: torch.Tensor, log_rewards: torch.Tensor
) -> torch.Tensor:
    """Mean TB loss over the batch; `log_rewards` (B,) may be any detached override (e.g. intrinsic)."""
    _check_log_rewards(log_rewards, log_pf.shape[0])
    residual = log_Z + log_pf.sum(1) - log_rewards - log_pb.sum(1)  # eq. (TB)
    return residual.pow(2).mean()


def detailed_balance(
    log_pf: torch.Tensor,
    log_pb: torch.Tensor,
    log_flow: torch.Tensor,
    lengths: torch.Tensor,
    log_rewards: torch.Tensor,
) -> torch.Tensor:
    """Mean DB loss over every transition of the batch, the terminal edge included."""
    _check_log_rewards(log_rewards, log_pf.shape[0])
    _B, L = log_pf.shape
    t = torch.arange(L, device=log_pf.device)
    n = (lengths - 1).unsqueeze(1)  # index of the stop action / terminal state
    next_flow = torch.cat([log_flow[:, 1:], log_flow[:, -1:]], dim=1)
    next_flow = torch.where(t == n, log_rewards.unsqueeze(1), next_flow)  # F(s_f) P_F(s_f|x) := R(x)
    residual = log_flow + log_pf - next_flow - log_pb  # eq. (DB), (B, L)
    valid = t <= n
    return residual.pow(2).masked_fill(~valid, 0.0).sum() / valid.sum()


def subtrajectory_balance(
    log_pf: torch.Tensor,
    log_pb: torch.Tensor,
    log_flow: torch.Tensor,
    lengths: torch.Tensor,
    log_rewards: torch.Tensor,
    lam: float = 0.9,
) -> torch.Tensor:
    """SubTB(lambda): per trajectory sum_{i<j} lam^(j-i) delta_ij^2 / sum lam^(j-i), averaged over the batch.

    Positions 0 .. n are the states s_0 .. s_n = x and position n + 1 the sink, whose "flow" is log R(x).
    """
    _check_log_rewards(log_rewards, log_pf.shape[0])
    if lam <= 0:
        raise ValueError(f"lam must be > 0, got {lam}")
    B, L = log_pf.shape
    P = L + 1
    pos = torch.arange(P, device=log_pf.device)
    n1 = lengths.unsqueeze(1)  # sink position n + 1 = number of actions
    phi = torch.cat([log_flow, torch.zeros(B, 1, device=log_pf.device, dtype=log_flow.dtype)], dim=1)
    phi = torch.where(pos == n1, log_rewards.unsqueeze(1).to(phi.dtype), phi)  # (B, P)
    w = torch.cat([torch.zeros(B, 1, device=log_pf.device, dtype=log_pf.dtype), log_pf - log_pb], dim=1)
    C = w.cumsum(1)  # C_k = sum_{m<k} (log P_F - log P_B), (B, P)
    delta = phi.unsqueeze(2) + C.unsqueeze(1) - C.unsqueeze(2) - phi.unsqueeze(1)  # delta[b,i,j], eq. (SubTB)
    gap = (pos.unsqueeze(0) - pos.unsqueeze(1)).to(log_pf.dtype)  # j - i
    pair = (gap > 0) & (pos.unsqueeze(0) <= n1.unsqueeze(2))  # i < j <= n + 1, (B, P, P)
    weight = torch.where(pair, lam ** gap.clamp(min=0), torch.zeros_like(gap))
    per_traj = (weight * delta.pow(2)).sum((1, 2)) / weight.sum((1, 2))
    return per_traj.mean()


# --------------------------------------------------------------------------------------------- evaluation
@torch.no_grad()
def exact_terminal_distribution(env, policy: PolicyNet) -> torch.Tensor:
    """P_T(x) over `env.all_states()` (float64) by DP in topological order (spec §3.4).

    u(s_0) = 1, u(s') = sum_parents u(s) P_F(s'|s), P_T(x) = u(x) P_F(s_f|x).
    """
    X = env.all_states()  # (N, D)
    log_pf = _masked_log_softmax(policy(env.encode(X))[0].double(), env.forward_mask(X))  # (N, A)
    pf = log_pf.exp()
    level = X.sum(-1)
    u = torch.zeros(X.shape[0], dtype=torch.float64, device=X.device)
    u[0] = 1.0  # row-major index of the origin
    for lv in range(int(level.max())):
        idx = (level == lv).nonzero().squeeze(-1)
        for d in range(env.ndim):
            ok = idx[X[idx, d] < env.height - 1]
            u.index_add_(0, ok + env.strides[d], u[ok] * pf[ok, d])
    return u * pf[:, -1]


def l1_mean(p: torch.Tensor, q: torch.Tensor) -> float:
    """(1/|X|) sum_x |p(x) - q(x)| (TB/SubTB papers' convention)."""
    return float((p.double() - q.double()).abs().mean())


def total_variation(p: torch.Tensor, q: torch.Tensor) -> float:
    """1/2 sum_x |p(x) - q(x)|."""
    return float(0.5 * (p.double() - q.double()).abs().sum())


def modes_captured(env, p: torch.Tensor, threshold: float = 0.05) -> int:
    """Mode regions whose mode states hold total probability >= `threshold` under `p` (over all_states)."""
    X = env.all_states()
    is_mode = env.mode_mask(X)
    mass = torch.zeros(2**env.ndim, dtype=torch.float64, device=p.device)
    mass.index_add_(0, env.mode_region(X[is_mode]), p.double()[is_mode])
    return int((mass >= threshold).sum())
