"""Parity with torchgfn (skipped when it is not installed; spec §8): HyperGrid rewards, true distribution, TB/DB/SubTB.

torchgfn is not a dependency of this package (it pins numpy < 2). To run these tests, install it beside the package
in a separate environment (the README gives the commands). Everything is compared on identical inputs: the same
states, the same trajectories (sampled by torchgfn's own sampler with our network, then converted to our padded
layout) and the same network outputs (torchgfn's estimators wrap the heads of our `PolicyNet`), so the only
differences left are floating-point summation order.
"""

from __future__ import annotations

import pytest
import torch
from torch import nn

gfn = pytest.importorskip("gfn", reason="torchgfn is not installed")
pytest.importorskip("gfn.gym", reason="torchgfn is not installed")

from gfn.estimators import DiscretePolicyEstimator, ScalarEstimator  # noqa: E402
from gfn.gflownet import DBGFlowNet, SubTBGFlowNet, TBGFlowNet  # noqa: E402
from gfn.gym import HyperGrid as TgHyperGrid  # noqa: E402
from gfn.preprocessors import KHotPreprocessor  # noqa: E402
from gfn.samplers import Sampler  # noqa: E402
from gfn.utils.modules import DiscreteUniform  # noqa: E402

from iclr25.sa_gfn.envs import HyperGrid  # noqa: E402
from iclr25.sa_gfn.gflownet import (  # noqa: E402
    PolicyNet,
    TrajectoryBatch,
    detailed_balance,
    recompute_logprobs,
    subtrajectory_balance,
    trajectory_balance,
)

SPARSE_EPS = 1e-12  # torchgfn's SparseReward adds 1e-12 everywhere (targets: 1 + 1e-12)
# (ndim, height): the paper's grids (32x32, 64x64, 8^4) and small ones, including H = 11 where a boundary of the
# standard reward is hit exactly in decimal (0.3, 0.4)
GRIDS = [(2, 8), (2, 11), (2, 16), (2, 32), (2, 64), (3, 11), (4, 8)]
TOL = {torch.float32: dict(rtol=1e-5, atol=1e-6), torch.float64: dict(rtol=1e-10, atol=1e-12)}


@pytest.fixture(params=[torch.float32, torch.float64], ids=["float32", "float64"])
def dtype(request):
    """Run under each default dtype (both libraries compute rewards and losses in the default dtype)."""
    old = torch.get_default_dtype()
    torch.set_default_dtype(request.param)
    yield request.param
    torch.set_default_dtype(old)


def _envs(ndim: int, height: int, reward: str, R0: float = 0.1):
    ours = HyperGrid(ndim, height, reward, R0=R0, eps=SPARSE_EPS)
    kw = {"R0": R0, "R1": 0.5, "R2": 2.0} if reward == "standard" else {}
    theirs = TgHyperGrid(
        ndim,
        height,
        reward_fn_str="original" if reward == "standard" else "sparse",
        reward_fn_kwargs=kw,
        validate_modes=False,
    )
    return ours, theirs


# --------------------------------------------------------------------------------------------- rewards
def _on_boundary(X: torch.Tensor, height: int) -> torch.Tensor:
    """States with a coordinate exactly on a boundary of the standard reward, |x/(H-1) - 0.5| in {1/4, 3/10, 2/5}."""
    a = (2 * X - (height - 1)).abs()  # |x/(H-1) - 0.5| = a / (2 (H-1)), in exact integer arithmetic
    h1 = height - 1
    return ((4 * a == 2 * h1) | (10 * a == 6 * h1) | (5 * a == 4 * h1)).any(-1)


@pytest.mark.parametrize("R0", [1e-1, 1e-3, 1e-4])
@pytest.mark.parametrize(("ndim", "height"), GRIDS, ids=[f"{d}x{h}" for d, h in GRIDS])
def test_standard_reward_and_true_distribution(ndim, height, R0, dtype):
    ours, theirs = _envs(ndim, height, "standard", R0)
    X = ours.all_states()
    r_ours = ours.reward(X)
    r_theirs = theirs.reward(theirs.States(X)).to(r_ours.dtype)
    # torchgfn computes |x/(H-1) - 0.5| in the default dtype: in float32 its 1e-12 margin is lost, so a state exactly
    # on a boundary (only H = 11 here: x = 9 gives 0.39999998 < 0.4) can differ. Ours computes in float64 always.
    same = ~_on_boundary(X, height) if dtype == torch.float32 else torch.ones(len(X), dtype=torch.bool)
    torch.testing.assert_close(r_ours[same], r_theirs[same], **TOL[dtype])
    if dtype == torch.float64 or bool(same.all()):
        assert torch.equal(ours.mode_mask(X), r_theirs >= R0 + 0.5 + 2.0 - 1e-6)  # same mode layout, exactly
        p_theirs = (r_theirs / r_theirs.sum()).double()  # torchgfn's true_dist, without its enumeration pool
        torch.testing.assert_close(ours.true_distribution(), p_theirs, **TOL[dtype])
        torch.testing.assert_close(ours.log_reward(X), theirs.log_reward(theirs.States(X)).to(dtype), **TOL[dtype])


def test_float32_boundary_states_h11():
    """The one divergence found: torchgfn in float32 puts the R2 band on x = 9 of an 11-grid (|0.9 - 0.5| = 0.4)."""
    ours, theirs = _envs(2, 11, "standard", 0.1)
    X = ours.all_states()
    r_theirs = theirs.reward(theirs.States(X))  # default dtype float32
    differ = (ours.reward(X) - r_theirs).abs() > 1e-3
    assert X[differ].tolist() == [[9, 9]]  # ours: no mode on an 11-grid (no x/10 strictly inside (0.1, 0.2))
    assert int(ours.mode_mask(X).sum()) == 0


@pytest.mark.parametrize(("ndim", "height"), GRIDS, ids=[f"{d}x{h}" for d, h in GRIDS])
def test_sparse_reward_and_true_distribution(ndim, height, dtype):
    ours, theirs = _envs(ndim, height, "sparse")
    X = ours.all_states()
    r_theirs = theirs.reward(theirs.States(X))
    torch.testing.assert_close(ours.reward(X), r_theirs.to(dtype), **TOL[dtype])
    assert torch.equal(ours.mode_mask(X), r_theirs > 0.5)  # the same 2^D - 1 targets
    torch.testing.assert_close(ours.true_distribution(), (r_theirs / r_theirs.sum()).double(), **TOL[dtype])


def test_true_dist_attribute_small_grid():
    """torchgfn's own `true_dist` (enumerates the grid through a process pool) on one small grid."""
    ours = HyperGrid(2, 8, "standard", R0=0.1)
    theirs = TgHyperGrid(2, 8, reward_fn_kwargs={"R0": 0.1, "R1": 0.5, "R2": 2.0}, store_all_states=True)
    assert torch.equal(theirs.all_states.tensor, ours.all_states())  # same (row-major) state order
    torch.testing.assert_close(ours.true_distribution(), theirs.true_dist().double(), rtol=1e-6, atol=1e-9)
    assert theirs.log_partition() == pytest.approx(ours.log_partition, abs=1e-6)


# --------------------------------------------------------------------------------------------- losses
class _Head(nn.Module):
    """One head of our PolicyNet as a torchgfn module: forward logits, backward logits or log F."""

    def __init__(self, policy: PolicyNet, which: int) -> None:
        super().__init__()
        self.policy, self.which = policy, which
        self.output_dim = (policy.n_actions, policy.n_actions - 1, 1)[which]

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = self.policy(x.to(torch.get_default_dtype()))[self.which]  # torchgfn's K-hot is an integer tensor
        return out.unsqueeze(-1) if self.which == 2 else out


def _estimators(theirs, policy: PolicyNet, uniform_pb: bool):
    pre = KHotPreprocessor(height=theirs.height, ndim=theirs.ndim)
    pf = DiscretePolicyEstimator(_Head(policy, 0), theirs.n_actions, preprocessor=pre, is_backward=False)
    pb_module = DiscreteUniform(theirs.n_actions - 1) if uniform_pb else _Head(policy, 1)
    pb = DiscretePolicyEstimator(pb_module, theirs.n_actions, preprocessor=pre, is_backward=True)
    logF = ScalarEstimator(_Head(policy, 2), preprocessor=pre)
    return pre, pf, pb, logF


def _to_ours(env: HyperGrid, trajectories) -> TrajectoryBatch:
    """torchgfn Trajectories (time-major, sink-padded) -> our padded batch (batch-major, terminal-padded)."""
    states = trajectories.states.tensor.transpose(0, 1)  # (B, T + 1, D), s_f = -1 after the terminal state
    actions = trajectories.actions.tensor.squeeze(-1).transpose(0, 1)  # (B, T), exit = D, dummy = -1
    lengths = trajectories.terminating_idx.long()  # number of actions, exit included
    B, T = actions.shape
    L = env.max_len
    t = torch.arange(L)
    idx = torch.minimum(t.unsqueeze(0), (lengths - 1).unsqueeze(1))  # repeat the terminal state as padding
    ours_states = states.gather(1, idx.unsqueeze(-1).expand(-1, -1, env.ndim))  # (B, L, D)
    ours_actions = torch.full((B, L), -1, dtype=torch.long)
    ours_actions[:, :T] = actions
    return TrajectoryBatch(ours_states, ours_actions, lengths)


def _policy(env: HyperGrid, uniform_pb: bool, seed: int) -> PolicyNet:
    torch.manual_seed(seed)
    policy = PolicyNet(env.input_dim, env.n_actions, hidden=32, n_layers=2, uniform_pb=uniform_pb)
    with torch.no_grad():
        policy.head.weight.mul_(2.0)  # far from uniform
        policy.head.bias[-1] = 0.5  # non-trivial log-flows
    return policy


def _grads(loss: torch.Tensor, params: list[torch.Tensor]) -> list[torch.Tensor]:
    grads = torch.autograd.grad(loss, params, allow_unused=True)
    return [torch.zeros_like(p) if g is None else g for p, g in zip(params, grads, strict=True)]


CASES = [(2, 8, "standard"), (2, 16, "sparse"), (3, 5, "standard")]


@pytest.mark.parametrize("uniform_pb", [True, False], ids=["uniform_pb", "learned_pb"])
@pytest.mark.parametrize(("ndim", "height", "reward"), CASES, ids=[f"{d}x{h}-{r}" for d, h, r in CASES])
def test_tb_db_subtb_losses_match(ndim, height, reward, uniform_pb, dtype):
    ours, theirs = _envs(ndim, height, reward)
    policy = _policy(ours, uniform_pb, seed=ndim * 100 + height)
    pre, pf, pb, logF = _estimators(theirs, policy, uniform_pb)
    X = ours.all_states()
    assert torch.equal(pre(theirs.States(X)).to(dtype), ours.encode(X))  # same K-hot encoding

    torch.manual_seed(1)
    trajectories = Sampler(estimator=pf).sample_trajectories(theirs, n=32, save_logprobs=True)
    batch = _to_ours(ours, trajectories)
    assert torch.equal(batch.terminal, trajectories.terminating_states.tensor)
    log_r = ours.log_reward(batch.terminal)
    torch.testing.assert_close(log_r, trajectories.log_rewards.to(dtype), **TOL[dtype])
    T = trajectories.actions.batch_shape[0]
    with torch.no_grad():  # the sampler's stored log P_F = ours recomputed on its trajectories
        torch.testing.assert_close(
            recompute_logprobs(ours, policy, batch)[0][:, :T].T, trajectories.log_probs, **TOL[dtype]
        )
    params = list(policy.parameters())

    # TB: the same log Z, with the environment's rewards and with a detached override (SA-GFN's Sibling rewards)
    for override in (None, torch.randn(len(batch)) - 3.0):
        log_Z_ours = torch.tensor(0.7, requires_grad=True)
        tb = TBGFlowNet(pf=pf, pb=pb, logZ=nn.Parameter(torch.tensor(0.7)))
        l_theirs = tb.loss(theirs, trajectories, recalculate_all_logprobs=True, log_rewards=override)
        lpf, lpb, _, _ = recompute_logprobs(ours, policy, batch)
        l_ours = trajectory_balance(lpf, lpb, log_Z_ours, log_r if override is None else override)
        torch.testing.assert_close(l_ours, l_theirs, **TOL[dtype])
        for a, b in zip(_grads(l_ours, [*params, log_Z_ours]), _grads(l_theirs, [*params, tb.logZ]), strict=True):
            torch.testing.assert_close(a, b, **TOL[dtype])

    # DB over every transition (the terminal edge included)
    db = DBGFlowNet(pf=pf, pb=pb, logF=logF)
    l_theirs = db.loss(theirs, trajectories.to_transitions(), recalculate_all_logprobs=True)
    lpf, lpb, lflow, _ = recompute_logprobs(ours, policy, batch)
    l_ours = detailed_balance(lpf, lpb, lflow, batch.lengths, log_r)
    torch.testing.assert_close(l_ours, l_theirs, **TOL[dtype])
    for a, b in zip(_grads(l_ours, params), _grads(l_theirs, params), strict=True):
        torch.testing.assert_close(a, b, **TOL[dtype])

    # SubTB(0.9), torchgfn's default "geometric_within" weighting (lambda^(j-i), normalised per trajectory)
    subtb = SubTBGFlowNet(pf=pf, pb=pb, logF=logF, weighting="geometric_within", lamda=0.9)
    l_theirs = subtb.loss(theirs, trajectories, recalculate_all_logprobs=True)
    lpf, lpb, lflow, _ = recompute_logprobs(ours, policy, batch)
    l_ours = subtrajectory_balance(lpf, lpb, lflow, batch.lengths, log_r, lam=0.9)
    torch.testing.assert_close(l_ours, l_theirs, **TOL[dtype])
    for a, b in zip(_grads(l_ours, params), _grads(l_theirs, params), strict=True):
        torch.testing.assert_close(a, b, **TOL[dtype])
