"""SA-GFN: Sibling Augmented GFlowNets (Madan, Lamb, Bengio, Berseth, Bengio; ICLR 2025, OpenReview HH4KWP8RP5).

Spec §3.2-§3.4. Two GFlowNets with separate parameters and optimisers:
- the Behavior net B is trained on the extrinsic reward R_e only, on its own trajectories and on the Sibling's
  trajectories relabelled with R_e (log P_F / log P_B recomputed under B's nets);
- the Sibling net S is trained on its own trajectories with the sibling reward R_S, which mixes R_e with an
  RND novelty r_i (detached). Two forms behind `SiblingReward.kind` (the paper's exact form is not public):
  "terminal_logsumexp" (project default): log R_S = beta_SN * logsumexp(beta_e log R_e, beta_i log r_i(x)),
  "gafn_terminal": log(R_e(x) + r_i(x)),
  "gafn_edge": GAFN's TB target log(R_e + r_i(x)) + sum_t log(P_B(s_t|s_{t+1}) + r_i(s_{t+1}) / F(s_{t+1})).
One iteration (spec §3.3): sample S then B; the RND statistics observe the Sibling's states; r_i from the pre-step
predictor; step B, then S, then RND. `relabel=False` is the coupled ablation (the Behavior net takes the Sibling's
trajectories with the Sibling's reward R_S instead of R_e); `freeze_rnd=True` never steps the predictor, so the
novelty bonus stays fixed and the Sibling's target stays off R_e (the decoupling test). `intrinsic="noveld"` is the
NovelD ablation: r_i(x) = max(n(x) - alpha n(parent), 0) with the same RND n (Zhang et al. 2021).
The official code is not public; defaults follow the spec (third-party defaults) and are marked there.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch

from iclr25.sa_gfn.gflownet import (
    GFlowNetModel,
    PolicyNet,
    TrajectoryBatch,
    detailed_balance,
    exact_terminal_distribution,
    recompute_logprobs,
    sample_trajectories,
    subtrajectory_balance,
    trajectory_balance,
)
from iclr25.sa_gfn.intrinsic import RND

OBJECTIVES = ("tb", "db", "subtb")
SIBLING_REWARDS = ("terminal_logsumexp", "gafn_terminal", "gafn_edge")
R_I_FLOOR = 1e-12  # clamp of r_i before the log (spec §3.4)


def gfn_loss(
    env,
    model: GFlowNetModel,
    batch: TrajectoryBatch,
    log_rewards: torch.Tensor,
    objective: str = "tb",
    lam: float = 0.9,
    edge_log_ri: torch.Tensor | None = None,
) -> torch.Tensor:
    """The objective's loss of `model` on `batch` with the (detached) `log_rewards`; log-probs are recomputed.

    `edge_log_ri` (B, L): log of GAFN edge intrinsic rewards r_i(s_{t+1}) for each non-stop action (TB only).
    """
    log_pf, log_pb, log_flow, _ = recompute_logprobs(env, model.policy, batch)
    if edge_log_ri is not None:
        if objective != "tb":
            raise ValueError("edge intrinsic rewards (gafn_edge) are implemented for the TB objective only")
        t = torch.arange(log_pb.shape[1], device=log_pb.device)
        moves = t < (batch.lengths - 1).unsqueeze(1)
        next_flow = torch.cat([log_flow[:, 1:], log_flow[:, -1:]], dim=1)
        aug = torch.logaddexp(log_pb, edge_log_ri - next_flow)  # log(P_B + r_i(s') / F(s')), GAFN TB
        log_pb = torch.where(moves, aug, log_pb)
    if objective == "tb":
        return trajectory_balance(log_pf, log_pb, model.log_Z, log_rewards)
    if objective == "db":
        return detailed_balance(log_pf, log_pb, log_flow, batch.lengths, log_rewards)
    if objective == "subtb":
        return subtrajectory_balance(log_pf, log_pb, log_flow, batch.lengths, log_rewards, lam=lam)
    raise ValueError(f"objective must be one of {OBJECTIVES}, got {objective!r}")


class GFlowNet:
    """One GFlowNet (policy + log Z + optimiser) trained on-policy with TB, DB or SubTB(lambda)."""

    def __init__(
        self,
        env,
        objective: str = "tb",
        hidden: int = 256,
        n_layers: int = 2,
        uniform_pb: bool = True,
        batch_size: int = 16,
        lr: float = 1e-3,
        lr_logz: float = 1e-1,
        lam: float = 0.9,
        epsilon: float = 0.0,
        activation: str = "relu",
        seed: int = 0,
    ) -> None:
        if objective not in OBJECTIVES:
            raise ValueError(f"objective must be one of {OBJECTIVES}, got {objective!r}")
        if batch_size < 1:
            raise ValueError(f"batch_size must be >= 1, got {batch_size}")
        self.env, self.objective, self.batch_size, self.lam, self.epsilon = env, objective, batch_size, lam, epsilon
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(seed)
            policy = PolicyNet(env.input_dim, env.n_actions, hidden, n_layers, uniform_pb, activation)
        self.model = GFlowNetModel(policy).to(env.device)
        self.opt = self.model.optimizer(lr, lr_logz)
        self.generator = torch.Generator(device=env.device).manual_seed(seed + 1_000_003)

    @property
    def policy(self) -> PolicyNet:
        """The forward/backward policy network."""
        return self.model.policy

    def sample(self, n: int | None = None, epsilon: float | None = None) -> TrajectoryBatch:
        """Sample `n` trajectories from the current policy."""
        eps = self.epsilon if epsilon is None else epsilon
        return sample_trajectories(self.env, self.policy, n or self.batch_size, eps, self.generator)

    def loss(self, batch: TrajectoryBatch, log_rewards: torch.Tensor, edge_log_ri: torch.Tensor | None = None):
        """This net's loss on `batch` with the given log-rewards."""
        return gfn_loss(self.env, self.model, batch, log_rewards, self.objective, self.lam, edge_log_ri)

    def update(self, loss: torch.Tensor) -> None:
        """One optimiser step on `loss`."""
        self.opt.zero_grad(set_to_none=True)
        loss.backward()
        self.opt.step()

    def train_step(self) -> dict[str, Any]:
        """Sample a batch on-policy and take one step on the extrinsic reward."""
        batch = self.sample()
        loss = self.loss(batch, self.env.log_reward(batch.terminal))
        self.update(loss)
        x = batch.terminal
        return {"loss": loss.item(), "sampled": x, "train_terminal": x}

    def exact_distribution(self) -> torch.Tensor:
        """Exact P_T over the environment's states (HyperGrid)."""
        return exact_terminal_distribution(self.env, self.policy)

    @property
    def log_Z(self) -> float:
        """The learned log Z (TB) or log F(s_0) (DB, SubTB)."""
        if self.objective == "tb":
            return self.model.log_Z.item()
        with torch.no_grad():
            return float(self.policy(self.env.encode(self.env.s0(1)))[2][0])


@dataclass(frozen=True)
class SiblingReward:
    """The Sibling's target reward R_S from R_e and the novelty r_i (spec §3.2; both forms behind `kind`)."""

    kind: str = "terminal_logsumexp"
    beta_e: float = 1.0
    beta_i: float = 1.0
    beta_sn: float = 1.0

    def __post_init__(self) -> None:
        if self.kind not in SIBLING_REWARDS:
            raise ValueError(f"sibling_reward must be one of {SIBLING_REWARDS}, got {self.kind!r}")

    def terminal(self, log_re: torch.Tensor, r_i: torch.Tensor) -> torch.Tensor:
        """log R_S(x) from the extrinsic log-reward and the terminal novelty r_i(x)."""
        log_ri = r_i.clamp(min=R_I_FLOOR).log()
        if self.kind == "terminal_logsumexp":
            return self.beta_sn * torch.logaddexp(self.beta_e * log_re, self.beta_i * log_ri)  # spec §3.2 (1)
        return torch.logaddexp(log_re, log_ri)  # log(R_e + r_i), GAFN terminal form, spec §3.2 (2)

    @property
    def edge(self) -> bool:
        """Whether intermediate states get intrinsic rewards too."""
        return self.kind == "gafn_edge"


def parents_of_terminal(batch: TrajectoryBatch) -> torch.Tensor:
    """(B, D) the state before x on each trajectory (x itself when x = s_0)."""
    idx = (batch.lengths - 2).clamp(min=0).view(-1, 1, 1).expand(-1, 1, batch.states.shape[-1])
    return batch.states.gather(1, idx).squeeze(1)


def noveld_terminal(env, rnd: RND, batch: TrajectoryBatch, alpha: float = 0.5) -> torch.Tensor:
    """NovelD novelty of the terminal transition: max(n(x) - alpha * n(parent of x), 0) (Zhang et al. 2021, Eq. 3;
    each state is visited once per trajectory, so the episodic first-visit factor is 1)."""
    x, parent = batch.terminal, parents_of_terminal(batch)
    return (rnd.novelty(env.encode(x)) - alpha * rnd.novelty(env.encode(parent))).clamp(min=0)


def intrinsic_targets(
    env, rnd: RND, batch: TrajectoryBatch, reward: SiblingReward, noveld_alpha: float | None = None
) -> tuple[torch.Tensor, torch.Tensor | None]:
    """Detached (log R_S (B,), edge log r_i (B, L) or None) of `batch` with the current predictor.

    `noveld_alpha`: use the NovelD terminal novelty instead of RND's (terminal sibling-reward forms only).
    """
    x = batch.terminal
    r_i = rnd.novelty(env.encode(x)) if noveld_alpha is None else noveld_terminal(env, rnd, batch, noveld_alpha)
    log_rs = reward.terminal(env.log_reward(x), r_i)
    edge = None
    if reward.edge:
        nxt = torch.cat([batch.states[:, 1:], batch.states[:, -1:]], dim=1)  # s_{t+1}
        edge = rnd.novelty(env.encode(nxt)).clamp(min=R_I_FLOOR).log()  # (B, L)
    return log_rs.detach(), edge


def visited_states(batch: TrajectoryBatch) -> torch.Tensor:
    """Every distinct (trajectory, position) state of the batch, s_0 .. x: (sum of lengths, D)."""
    t = torch.arange(batch.states.shape[1], device=batch.states.device)
    return batch.states[t < batch.lengths.unsqueeze(1)]


class SAGFN:
    """Sibling Augmented GFlowNet: a Behavior net on R_e fed by its own and a novelty-seeking Sibling's data."""

    def __init__(
        self,
        env,
        objective: str = "tb",
        hidden: int = 256,
        n_layers: int = 2,
        uniform_pb: bool = True,
        sibling_reward: SiblingReward | str = "terminal_logsumexp",
        intrinsic_scale: float = 1000.0,
        n_sibling: int = 16,
        n_behavior: int = 8,
        n_mix: int = 8,
        rnd_hidden: int = 256,
        rnd_out: int = 1,
        rnd_error: str = "mse",
        rnd_normalize: str = "none",
        relabel: bool = True,
        freeze_rnd: bool = False,
        intrinsic: str = "rnd",
        noveld_alpha: float = 0.5,
        lr: float = 1e-3,
        lr_logz: float = 1e-1,
        lr_rnd: float = 1e-3,
        lam: float = 0.9,
        seed: int = 0,
    ) -> None:
        if not 0 <= n_mix <= n_sibling:
            raise ValueError(f"n_mix must be in [0, n_sibling={n_sibling}], got {n_mix}")
        if n_behavior < 0 or n_mix + n_behavior == 0:
            raise ValueError("the Behavior batch (n_mix + n_behavior) must not be empty")
        self.env = env
        self.sibling_reward = SiblingReward(sibling_reward) if isinstance(sibling_reward, str) else sibling_reward
        if self.sibling_reward.edge and objective != "tb":
            raise ValueError("sibling_reward='gafn_edge' needs objective='tb'")
        kw = dict(objective=objective, hidden=hidden, n_layers=n_layers, uniform_pb=uniform_pb, lr=lr)
        kw |= dict(lr_logz=lr_logz, lam=lam)
        self.behavior = GFlowNet(env, batch_size=max(n_behavior, 1), seed=seed, **kw)
        self.sibling = GFlowNet(env, batch_size=n_sibling, seed=seed + 7919, **kw)
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(seed + 104729)
            self.rnd = RND(env.input_dim, rnd_hidden, rnd_out, intrinsic_scale, rnd_error, normalize=rnd_normalize)
            self.rnd.to(env.device)
        self.rnd_opt = self.rnd.optimizer(lr_rnd)
        self.n_mix, self.n_behavior = n_mix, n_behavior
        self.relabel, self.freeze_rnd = relabel, freeze_rnd
        if intrinsic not in ("rnd", "noveld"):
            raise ValueError(f"intrinsic must be 'rnd' or 'noveld', got {intrinsic!r}")
        if intrinsic == "noveld" and self.sibling_reward.edge:
            raise ValueError("intrinsic='noveld' is implemented for the terminal sibling-reward forms only")
        self.noveld_alpha = noveld_alpha if intrinsic == "noveld" else None

    @property
    def policy(self) -> PolicyNet:
        """The Behavior policy: the sampler every target-distribution metric is computed on."""
        return self.behavior.policy

    def behavior_loss(
        self,
        sibling_batch: TrajectoryBatch,
        own_batch: TrajectoryBatch | None,
        sibling_log_rs: torch.Tensor | None = None,
    ) -> torch.Tensor:
        """L_B on the first `n_mix` sibling trajectories + the Behavior's own, relabelled with R_e (spec §3.3).

        With `relabel=False` (coupled ablation) the sibling trajectories keep their sibling reward `sibling_log_rs`.
        """
        parts = [sibling_batch[: self.n_mix]] + ([own_batch] if own_batch is not None else [])
        mix = TrajectoryBatch.cat([p for p in parts if len(p)])
        log_r = self.env.log_reward(mix.terminal)  # extrinsic reward only
        if not self.relabel:
            if sibling_log_rs is None:
                raise ValueError("relabel=False needs the sibling log-rewards")
            log_r = torch.cat([sibling_log_rs[: self.n_mix], log_r[self.n_mix :]])
        return self.behavior.loss(mix, log_r)

    def train_step(self) -> dict[str, Any]:
        """One decoupled SA-GFN iteration (spec §3.3): B step, S step, RND step."""
        tS = self.sibling.sample()
        tB = self.behavior.sample(self.n_behavior) if self.n_behavior else None
        rnd_states = self.env.encode(visited_states(tS) if self.sibling_reward.edge else tS.terminal)
        if self.rnd.normalize != "none":
            self.rnd.observe(rnd_states)  # the only update of the normalisation statistics
        log_rs, edge = intrinsic_targets(self.env, self.rnd, tS, self.sibling_reward, self.noveld_alpha)  # pre-step
        loss_b = self.behavior_loss(tS, tB, log_rs)
        loss_s = self.sibling.loss(tS, log_rs, edge)
        self.behavior.update(loss_b)
        self.sibling.update(loss_s)
        loss_rnd = self.rnd.loss(rnd_states)
        if not self.freeze_rnd:
            self.rnd_opt.zero_grad(set_to_none=True)
            loss_rnd.backward()
            self.rnd_opt.step()
        sampled = tB.terminal if tB is not None else tS.terminal[:0]
        train = torch.cat([tS.terminal[: self.n_mix], sampled])
        return {
            "loss": loss_b.item(),
            "loss_sibling": loss_s.item(),
            "loss_rnd": loss_rnd.item(),
            "rnd_weight": self.rnd.weight,
            "sampled": sampled,
            "train_terminal": train,
            "sibling_terminal": tS.terminal,
        }

    def exact_distribution(self) -> torch.Tensor:
        """Exact P_T of the Behavior net (the Sibling is deliberately biased)."""
        return self.behavior.exact_distribution()

    @property
    def log_Z(self) -> float:
        """The Behavior net's log Z."""
        return self.behavior.log_Z
