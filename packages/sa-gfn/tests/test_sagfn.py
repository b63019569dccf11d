"""SA-GFN decoupling invariants, sibling rewards, RND, baselines (spec §9.4-9.6)."""

from __future__ import annotations

import copy

import pytest
import torch

from iclr25.sa_gfn.baselines import gafn, tb_rnd
from iclr25.sa_gfn.envs import HyperGrid
from iclr25.sa_gfn.gflownet import sample_trajectories
from iclr25.sa_gfn.intrinsic import RND
from iclr25.sa_gfn.sagfn import SAGFN, SiblingReward, gfn_loss, intrinsic_targets


@pytest.fixture
def grid():
    return HyperGrid(2, 6, "sparse", eps=1e-6)


def _batches(sa: SAGFN, seed: int = 0):
    gen = torch.Generator().manual_seed(seed)
    tS = sample_trajectories(sa.env, sa.sibling.policy, 16, generator=gen)
    tB = sample_trajectories(sa.env, sa.behavior.policy, 8, generator=gen)
    return tS, tB


@pytest.mark.parametrize("objective", ["tb", "db", "subtb"])
def test_behavior_loss_ignores_intrinsic_module(grid, objective):
    """Spec §9.4: L_B unchanged when the RND module or the betas change; no gradient into the Sibling."""
    sa = SAGFN(grid, objective=objective, hidden=32, seed=0)
    tS, tB = _batches(sa)
    base = sa.behavior_loss(tS, tB)
    sa.rnd = RND(grid.input_dim, 16, 3, scale=50.0)
    sa.sibling_reward = SiblingReward(beta_e=0.3, beta_i=2.0, beta_sn=0.5)
    again = sa.behavior_loss(tS, tB)
    assert again.item() == pytest.approx(base.item(), rel=1e-6)
    again.backward()
    assert all(p.grad is None for p in sa.sibling.model.parameters())
    assert all(p.grad is None for p in sa.rnd.parameters())
    assert any(p.grad is not None and p.grad.abs().sum() > 0 for p in sa.behavior.model.parameters())


def test_behavior_recomputes_logprobs_under_its_own_net(grid):
    """The Behavior loss on sibling trajectories uses B's log-probs: changing S's weights leaves it unchanged."""
    sa = SAGFN(grid, hidden=32, seed=0)
    tS, tB = _batches(sa)
    before = sa.behavior_loss(tS, tB).item()
    with torch.no_grad():
        for p in sa.sibling.model.parameters():
            p.add_(1.0)
    assert sa.behavior_loss(tS, tB).item() == pytest.approx(before, rel=1e-6)
    # and it equals the Behavior net's own loss on the mixed batch with R_e
    mix_loss = gfn_loss(grid, sa.behavior.model, tS[:8], grid.log_reward(tS[:8].terminal))
    own_loss = gfn_loss(grid, sa.behavior.model, tB, grid.log_reward(tB.terminal))
    assert before == pytest.approx((mix_loss.item() + own_loss.item()) / 2, rel=1e-5)


def test_train_step_updates_all_three_and_rewards_are_pre_step(grid):
    sa = SAGFN(grid, hidden=32, seed=0, rnd_normalize="std")  # the normalised path: statistics updated, then read
    snap = {
        k: [p.detach().clone() for p in m.parameters()]
        for k, m in (("b", sa.behavior.model), ("s", sa.sibling.model), ("r", sa.rnd.predictor))
    }
    target = [p.detach().clone() for p in sa.rnd.target.parameters()]
    rnd_before = copy.deepcopy(sa.rnd)
    seen = {}
    sibling_loss = sa.sibling.loss

    def spy(batch, log_rewards, edge=None):
        seen["batch"], seen["log_rs"] = batch, log_rewards
        return sibling_loss(batch, log_rewards, edge)

    sa.sibling.loss = spy
    out = sa.train_step()
    # the Sibling's reward came from the predictor as it was before this iteration's RND step (spec §3.3), read
    # after the step's single update of the normalisation statistics on the Sibling's terminal states
    rnd_before.observe(grid.encode(seen["batch"].terminal))
    expected, _ = intrinsic_targets(grid, rnd_before, seen["batch"], sa.sibling_reward)
    torch.testing.assert_close(seen["log_rs"], expected)
    for name in ("_count", "_mean", "_m2"):  # same normalisation state, stepped predictor: a different reward
        assert torch.equal(getattr(sa.rnd, name), getattr(rnd_before, name)), name
    post, _ = intrinsic_targets(grid, sa.rnd, seen["batch"], sa.sibling_reward)
    assert not torch.allclose(post, expected)
    for k, m in (("b", sa.behavior.model), ("s", sa.sibling.model), ("r", sa.rnd.predictor)):
        assert any(not torch.equal(a, b) for a, b in zip(snap[k], m.parameters(), strict=True)), k
    assert all(torch.equal(a, b) for a, b in zip(target, sa.rnd.target.parameters(), strict=True))
    assert out["train_terminal"].shape[0] == 16 and out["sampled"].shape[0] == 8


def test_sibling_reward_forms():
    log_re = torch.tensor([0.0, -13.8])
    r_i = torch.tensor([0.5, 0.0])
    t = SiblingReward("terminal_logsumexp", beta_e=1.0, beta_i=1.0, beta_sn=1.0).terminal(log_re, r_i)
    assert t[0].item() == pytest.approx(torch.log(torch.tensor(1.5)).item())
    assert t[1].item() == pytest.approx(torch.logaddexp(torch.tensor(-13.8), torch.tensor(1e-12).log()).item())
    t2 = SiblingReward("terminal_logsumexp", beta_e=2.0, beta_i=0.5, beta_sn=0.5).terminal(log_re, r_i)
    assert t2[0].item() == pytest.approx(0.5 * torch.log(1 + torch.tensor(0.5) ** 0.5).item())
    g = SiblingReward("gafn_terminal").terminal(log_re, r_i)
    assert g[0].item() == pytest.approx(torch.log(torch.tensor(1.5)).item())
    with pytest.raises(ValueError, match="sibling_reward"):
        SiblingReward("edge")


def test_gafn_edge_sibling_runs_and_needs_tb(grid):
    sa = SAGFN(grid, hidden=32, sibling_reward="gafn_edge", seed=1)
    out = sa.train_step()
    assert torch.isfinite(torch.tensor(out["loss_sibling"]))
    with pytest.raises(ValueError, match="gafn_edge"):
        SAGFN(grid, objective="db", sibling_reward="gafn_edge")


def test_rnd_novelty_drops_on_visited_states():
    """Spec §9.6: after 500 predictor steps on 20 fixed states of the 16x16 grid, their error drops >= 5x and the
    other 236 states keep >= 10x the visited error."""
    env = HyperGrid(2, 16)
    torch.manual_seed(0)
    rnd = RND(env.input_dim, hidden=256, out_dim=1)
    X = env.encode(env.all_states())
    idx = torch.randperm(256, generator=torch.Generator().manual_seed(0))
    seen, unseen = X[idx[:20]], X[idx[20:]]
    before = rnd.novelty(seen).mean()
    opt = rnd.optimizer(1e-3)
    for _ in range(500):
        opt.zero_grad()
        rnd.loss(seen).backward()
        opt.step()
    after = rnd.novelty(seen).mean()
    assert after <= before / 5
    assert rnd.novelty(unseen).mean() >= 10 * after


@pytest.mark.parametrize("style", ["std", "mean"])
def test_rnd_normalisation_and_errors(style):
    rnd = RND(4, hidden=8, out_dim=3, error="l2norm", normalize=style)
    x = torch.randn(32, 4)
    raw = rnd.error(x).detach()
    torch.testing.assert_close(rnd.novelty(x), raw)  # nothing observed yet: normaliser 1
    rnd.observe(x)
    expected = raw.double().std(unbiased=False) if style == "std" else raw.double().mean()
    norm = rnd.running_std if style == "std" else rnd.running_mean
    assert norm == pytest.approx(float(expected), rel=1e-4)
    torch.testing.assert_close(rnd.novelty(x), raw / norm)
    assert rnd.weight == pytest.approx(1 / norm)
    with pytest.raises(ValueError, match="error"):
        RND(4, error="l1")
    with pytest.raises(ValueError, match="normalize"):
        RND(4, normalize=True)


def test_rnd_running_moments_match_concatenation():
    """Two `observe` calls give the moments of the concatenated errors (parallel update)."""
    rnd = RND(3, hidden=8, normalize="std")
    a, b = torch.randn(7, 3), torch.randn(12, 3)
    rnd.observe(a)
    rnd.observe(b)
    e = rnd.error(torch.cat([a, b])).detach().double()
    assert rnd.running_mean == pytest.approx(float(e.mean()), rel=1e-6)
    assert rnd.running_std == pytest.approx(float(e.std(unbiased=False)), rel=1e-6)


@pytest.mark.parametrize("style", ["none", "std", "mean"])
def test_novelty_reads_without_side_effects(style):
    """`novelty` is a pure read: repeated calls agree and leave every parameter and buffer unchanged."""
    rnd = RND(4, hidden=8, normalize=style)
    rnd.observe(torch.randn(16, 4))
    state = {k: v.clone() for k, v in rnd.state_dict().items()}
    x = torch.randn(8, 4)
    first = rnd.novelty(x)
    for _ in range(3):
        torch.testing.assert_close(rnd.novelty(x), first)
    for k, v in rnd.state_dict().items():
        assert torch.equal(v, state[k]), k


def test_sagfn_step_observes_once_then_reads(grid):
    """One SA-GFN iteration adds the Sibling's terminal errors to the statistics exactly once (edge form: the
    visited states once), and the sibling reward is read with the statistics after that update."""
    for kind, count in (("terminal_logsumexp", 16), ("gafn_edge", None)):
        sa = SAGFN(grid, hidden=16, rnd_hidden=16, sibling_reward=kind, rnd_normalize="std", seed=3)
        sa.train_step()
        n = float(sa.rnd._count)
        assert n == count if count is not None else n > 16
        assert sa.rnd.weight == pytest.approx(sa.rnd.scale / sa.rnd.running_std)


@pytest.mark.parametrize("make", [tb_rnd, gafn], ids=["tb_rnd", "gafn"])
def test_coupled_baselines_step(grid, make):
    trainer = make(grid, hidden=32, seed=0)
    before = [p.detach().clone() for p in trainer.model.parameters()]
    out = trainer.train_step()
    assert torch.isfinite(torch.tensor(out["loss"]))
    assert any(not torch.equal(a, b) for a, b in zip(before, trainer.model.parameters(), strict=True))


def test_bad_arguments(grid):
    with pytest.raises(ValueError, match="n_mix"):
        SAGFN(grid, n_sibling=4, n_mix=8)
    with pytest.raises(ValueError, match="objective"):
        SAGFN(grid, objective="fm")


def test_noveld_terminal_hand_computed(grid):
    """NovelD: max(n(x) - 0.5 n(parent), 0) on the terminal transition; x = s_0 has itself as parent."""
    from iclr25.sa_gfn.gflownet import TrajectoryBatch
    from iclr25.sa_gfn.sagfn import noveld_terminal, parents_of_terminal

    states = torch.tensor([[[0, 0], [1, 0], [1, 1]], [[0, 0], [0, 0], [0, 0]]])
    batch = TrajectoryBatch(states, torch.tensor([[0, 1, 2], [2, -1, -1]]), torch.tensor([3, 1]))
    assert parents_of_terminal(batch).tolist() == [[1, 0], [0, 0]]
    rnd = RND(grid.input_dim, hidden=8)
    n = rnd.novelty(grid.encode(torch.tensor([[1, 1], [1, 0], [0, 0]])))
    expected = torch.stack([(n[0] - 0.5 * n[1]).clamp(min=0), 0.5 * n[2]])
    torch.testing.assert_close(noveld_terminal(grid, rnd, batch, 0.5), expected)
    sa = SAGFN(grid, hidden=16, rnd_hidden=16, intrinsic="noveld", seed=0)
    assert torch.isfinite(torch.tensor(sa.train_step()["loss_sibling"]))
    with pytest.raises(ValueError, match="intrinsic"):
        SAGFN(grid, intrinsic="icm")
