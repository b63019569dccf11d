"""GFlowNet core: batched sampler, log-probs, TB/DB/SubTB against the loop references, exact DP (spec §9.2-9.3)."""

from __future__ import annotations

import pytest
import torch

from iclr25.sa_gfn import reference
from iclr25.sa_gfn.envs import BitSequence, HyperGrid
from iclr25.sa_gfn.gflownet import (
    TrajectoryBatch,
    detailed_balance,
    exact_terminal_distribution,
    l1_mean,
    modes_captured,
    recompute_logprobs,
    sample_trajectories,
    subtrajectory_balance,
    total_variation,
    trajectory_balance,
)


def _grads(params, loss):
    grads = torch.autograd.grad(loss, params, retain_graph=True, allow_unused=True)
    return [torch.zeros_like(p) if g is None else g for p, g in zip(params, grads, strict=True)]


@pytest.mark.parametrize("uniform_pb", [True, False], ids=["uniform_pb", "learned_pb"])
@pytest.mark.parametrize(("ndim", "height"), [(2, 5), (3, 3)], ids=["2d_h5", "3d_h3"])
def test_losses_match_reference(ndim, height, uniform_pb, random_policy):
    env = HyperGrid(ndim, height, "standard", R0=0.1)
    policy = random_policy(env, uniform_pb=uniform_pb, scale=1.0)
    with torch.no_grad():
        policy.head.bias[-1] = 0.5  # non-trivial flows
    gen = torch.Generator().manual_seed(1)
    batch = sample_trajectories(env, policy, 6, epsilon=0.3, generator=gen)
    log_r = env.log_reward(batch.terminal)
    log_Z = torch.tensor(0.7, requires_grad=True)
    params = [*policy.parameters(), log_Z]
    lpf, lpb, lflow, _ = recompute_logprobs(env, policy, batch)
    fast = {
        "tb": trajectory_balance(lpf, lpb, log_Z, log_r),
        "db": detailed_balance(lpf, lpb, lflow, batch.lengths, log_r),
        "subtb": subtrajectory_balance(lpf, lpb, lflow, batch.lengths, log_r, lam=0.9),
    }
    slow = {
        "tb": reference.tb_loss(env, policy, log_Z, batch, log_r),
        "db": reference.db_loss(env, policy, batch, log_r),
        "subtb": reference.subtb_loss(env, policy, batch, log_r, lam=0.9),
    }
    for k in fast:
        assert fast[k].item() == pytest.approx(slow[k].item(), rel=1e-5, abs=1e-6), k
        gf = _grads(params, fast[k])
        gs = _grads(params, slow[k])
        for a, b in zip(gf, gs, strict=True):
            torch.testing.assert_close(a, b, rtol=1e-4, atol=1e-6)


def test_tb_hand_built_trajectory(grid5, random_policy):
    """A 3-step trajectory s0 -> (1,0) -> (1,1) -> stop: TB equals the formula; the override is used."""
    env = grid5
    policy = random_policy(env)
    s = torch.tensor([[0, 0], [1, 0], [1, 1]] + [[1, 1]] * (env.max_len - 3)).unsqueeze(0)
    a = torch.tensor([[0, 1, 2] + [-1] * (env.max_len - 3)])
    batch = TrajectoryBatch(s, a, torch.tensor([3]))
    assert batch.terminal.tolist() == [[1, 1]]
    with torch.no_grad():
        pf = [
            torch.softmax(policy(env.encode(s[0, t : t + 1]))[0][0], -1)[int(a[0, t])].log() for t in range(3)
        ]  # every action valid in the interior of a 5x5 grid
    log_pb = [0.0, -torch.log(torch.tensor(2.0))]  # (1,0) has 1 parent, (1,1) has 2
    log_Z = torch.tensor(0.3)
    log_r = env.log_reward(batch.terminal)
    expected = (log_Z + sum(pf) - log_r[0] - sum(log_pb)) ** 2
    lpf, lpb, _, _ = recompute_logprobs(env, policy, batch)
    assert trajectory_balance(lpf, lpb, log_Z, log_r).item() == pytest.approx(expected.item(), abs=1e-6)
    override = torch.tensor([5.0])
    expected_o = (log_Z + sum(pf) - 5.0 - sum(log_pb)) ** 2
    assert trajectory_balance(lpf, lpb, log_Z, override).item() == pytest.approx(expected_o.item(), abs=1e-6)
    with pytest.raises(ValueError, match="detached"):
        trajectory_balance(lpf, lpb, log_Z, override.requires_grad_())


def test_sampler_valid_trajectories(random_policy):
    env = HyperGrid(3, 4)
    policy = random_policy(env)
    batch = sample_trajectories(env, policy, 64, generator=torch.Generator().manual_seed(0))
    for b in range(len(batch)):
        n = int(batch.lengths[b])
        assert batch.actions[b, n - 1] == env.n_actions - 1
        assert (batch.actions[b, n:] == -1).all()
        steps = batch.states[b, 1:n] - batch.states[b, : n - 1]
        assert (steps.sum(-1) == 1).all() and (steps >= 0).all()
        assert (batch.states[b, n - 1 :] == batch.terminal[b]).all()
    assert (batch.states < env.height).all()


def test_bitsequence_sampling_and_logprobs(random_policy):
    env = BitSequence(length=12, word_size=3, n_modes=5)
    policy = random_policy(env)
    batch = sample_trajectories(env, policy, 8, generator=torch.Generator().manual_seed(0))
    assert (batch.lengths == env.n_words + 1).all()
    assert (batch.terminal < env.vocab).all()
    lpf, lpb, _, _ = recompute_logprobs(env, policy, batch)
    assert torch.allclose(lpb, torch.zeros_like(lpb))  # a tree: P_B = 1
    assert torch.isfinite(lpf).all()


@pytest.mark.parametrize("kind", ["uniform", "random_mlp"])
def test_exact_dp(kind, random_policy):
    """Spec §9.2: sums to 1, matches the reference and Monte-Carlo (1e5 samples, TV < 0.02) on H = 5."""
    env = HyperGrid(2, 5, "standard", R0=0.1)
    policy = random_policy(env)
    if kind == "uniform":
        with torch.no_grad():
            policy.head.weight.zero_()
            policy.head.bias.zero_()
    p = exact_terminal_distribution(env, policy)
    assert float(p.sum()) == pytest.approx(1.0, abs=1e-6)
    ref = reference.terminal_distribution(env, policy)
    X = env.all_states().tolist()
    torch.testing.assert_close(p, torch.tensor([ref[tuple(x)] for x in X], dtype=torch.float64))
    batch = sample_trajectories(env, policy, 100_000, generator=torch.Generator().manual_seed(3))
    freq = torch.bincount(env.to_index(batch.terminal), minlength=env.n_states).double() / 100_000
    assert total_variation(freq, p) < 0.02
    if kind == "random_mlp":  # the check must be able to tell policies apart
        assert total_variation(p, exact_terminal_distribution(env, random_policy(env, seed=5))) > 0.05


def test_reference_sampler_agrees(grid5, random_policy):
    policy = random_policy(grid5)
    gen = torch.Generator().manual_seed(0)
    counts = torch.zeros(grid5.n_states, dtype=torch.float64)
    for _ in range(3000):
        counts[grid5.to_index(torch.tensor(reference.sample_one(grid5, policy, gen)))] += 1
    assert total_variation(counts / counts.sum(), exact_terminal_distribution(grid5, policy)) < 0.06


def test_metrics():
    p = torch.tensor([0.5, 0.5, 0.0, 0.0])
    q = torch.tensor([0.25, 0.25, 0.25, 0.25])
    assert l1_mean(p, q) == pytest.approx(0.25)
    assert total_variation(p, q) == pytest.approx(0.5)
    env = HyperGrid(2, 16, "sparse")
    X = env.all_states()
    target = env.true_distribution()
    assert modes_captured(env, target) == 3
    one = torch.zeros(env.n_states, dtype=torch.float64)
    one[env.to_index(torch.tensor([14, 14]))] = 1.0
    assert modes_captured(env, one) == 1
    assert X.shape == (256, 2)
