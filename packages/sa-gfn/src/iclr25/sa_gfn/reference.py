"""Slow, obviously-correct forms of the GFlowNet pieces SA-GFN (Madan et al., ICLR 2025) is built on.

One trajectory and one transition at a time, in Python loops, straight from the equations of spec §3.1:
TB, DB and SubTB(lambda) residuals, per-step log-probabilities, and the terminal distribution of a HyperGrid
policy by pulling probability from each state's parents. The vectorised forms in `gflownet.py` are tested
against these (values and gradients).
"""

from __future__ import annotations

import itertools

import torch

from iclr25.sa_gfn.gflownet import PolicyNet, TrajectoryBatch


def trajectory_logprobs(env, policy: PolicyNet, batch: TrajectoryBatch, b: int):
    """Lists (log P_F per action, log P_B per non-stop action, log F per state) of trajectory `b`."""
    n_act = int(batch.lengths[b])
    log_pf, log_pb, log_flow = [], [], []
    for t in range(n_act):
        s = batch.states[b, t]
        a = int(batch.actions[b, t])
        logits_f, _, flow = policy(env.encode(s.unsqueeze(0)))
        logits_f = logits_f[0].masked_fill(~env.forward_mask(s.unsqueeze(0))[0], float("-inf"))
        log_pf.append(torch.log_softmax(logits_f, -1)[a])
        log_flow.append(flow[0])
        if a != env.n_actions - 1:
            s_next = batch.states[b, t + 1]
            if policy.uniform_pb:
                n_par = int(env.backward_mask(s_next.unsqueeze(0))[0].sum())
                log_pb.append(torch.tensor(-float(torch.log(torch.tensor(float(n_par))))))
            else:
                _, logits_b, _ = policy(env.encode(s_next.unsqueeze(0)))
                logits_b = logits_b[0].masked_fill(~env.backward_mask(s_next.unsqueeze(0))[0], float("-inf"))
                log_pb.append(torch.log_softmax(logits_b, -1)[a])
    return log_pf, log_pb, log_flow


def tb_loss(env, policy, log_Z, batch, log_rewards) -> torch.Tensor:
    """TB: mean over trajectories of (log Z + sum log P_F - log R - sum log P_B)^2."""
    losses = []
    for b in range(len(batch)):
        log_pf, log_pb, _ = trajectory_logprobs(env, policy, batch, b)
        r = log_Z + sum(log_pf) - log_rewards[b] - sum(log_pb, torch.tensor(0.0))
        losses.append(r**2)
    return torch.stack(losses).mean()


def db_loss(env, policy, batch, log_rewards) -> torch.Tensor:
    """DB: mean over all transitions, terminal edge log F(x) + log P_F(stop|x) - log R(x) included."""
    terms = []
    for b in range(len(batch)):
        log_pf, log_pb, log_flow = trajectory_logprobs(env, policy, batch, b)
        n = len(log_pf) - 1
        for t in range(n):
            terms.append((log_flow[t] + log_pf[t] - log_flow[t + 1] - log_pb[t]) ** 2)
        terms.append((log_flow[n] + log_pf[n] - log_rewards[b]) ** 2)
    return torch.stack(terms).mean()


def subtb_loss(env, policy, batch, log_rewards, lam: float = 0.9) -> torch.Tensor:
    """SubTB(lambda): every sub-trajectory i < j of s_0 .. s_n, s_f (flow of s_f := R(x)), lam^(j-i) weights."""
    per_traj = []
    for b in range(len(batch)):
        log_pf, log_pb, log_flow = trajectory_logprobs(env, policy, batch, b)
        n = len(log_pf) - 1
        phi = [*log_flow, log_rewards[b]]  # positions 0 .. n + 1
        edge = [log_pf[k] - (log_pb[k] if k < n else 0.0) for k in range(n + 1)]
        num, den = 0.0, 0.0
        for i, j in itertools.combinations(range(n + 2), 2):
            delta = phi[i] + sum(edge[i:j]) - phi[j]
            num = num + lam ** (j - i) * delta**2
            den += lam ** (j - i)
        per_traj.append(num / den)
    return torch.stack(per_traj).mean()


@torch.no_grad()
def terminal_distribution(env, policy: PolicyNet) -> dict[tuple[int, ...], float]:
    """P_T(x) for every HyperGrid state, pulling u(s) = sum_parents u(p) P_F(s|p) in lexicographic order."""
    H, D = env.height, env.ndim
    u: dict[tuple[int, ...], float] = {}
    pf: dict[tuple[int, ...], torch.Tensor] = {}
    for s in sorted(itertools.product(range(H), repeat=D), key=sum):  # parents precede children
        x = torch.tensor([s])
        logits = policy(env.encode(x))[0][0].masked_fill(~env.forward_mask(x)[0], float("-inf"))
        pf[s] = torch.softmax(logits.double(), -1)
        if sum(s) == 0:
            u[s] = 1.0
            continue
        total = 0.0
        for d in range(D):
            if s[d] > 0:
                p = (*s[:d], s[d] - 1, *s[d + 1 :])
                total += u[p] * float(pf[p][d])
        u[s] = total
    return {s: u[s] * float(pf[s][-1]) for s in u}


@torch.no_grad()
def sample_one(env, policy: PolicyNet, generator: torch.Generator) -> tuple[int, ...]:
    """One terminal state sampled step by step."""
    x = env.s0(1)
    while True:
        logits = policy(env.encode(x))[0][0].masked_fill(~env.forward_mask(x)[0], float("-inf"))
        a = int(torch.multinomial(torch.softmax(logits, -1), 1, generator=generator))
        if a == env.n_actions - 1:
            return tuple(int(v) for v in x[0])
        x = env.step(x, torch.tensor([a]))
