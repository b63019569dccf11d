"""The official PPO harness: recurrent policy, its state reset, minibatches, the advantage normaliser."""

import math

import numpy as np
import pytest
import torch

from iclr25.etd_exploration.config import PPOConfig
from iclr25.etd_exploration.ppo import ActorCritic, AdvantageNormalizer, _minibatches, gae, make_policy, train


def test_advantage_normaliser_matches_hand_computed_values():
    norm = AdvantageNormalizer()  # starts at mean 0, variance 1
    adv = np.array([[1.0, 3.0], [3.0, 5.0]])  # (T=2, N=2)
    out = norm(adv)
    # mu = 0.1 * [2, 4] = [0.2, 0.4]; deviations [[0.8, 2.6], [2.8, 4.6]], mean square 36.4 / 4 = 9.1
    # var = 0.9 * 1 + 0.1 * 9.1 = 1.81
    np.testing.assert_allclose(norm.mean, [0.2, 0.4])
    assert norm.var == pytest.approx(1.81)
    np.testing.assert_allclose(out, np.array([[0.8, 2.6], [2.8, 4.6]]) / (math.sqrt(1.81) + 1e-5))
    norm(adv)  # second rollout: mu = 0.9 * [0.2, 0.4] + 0.1 * [2, 4] = [0.38, 0.76]
    np.testing.assert_allclose(norm.mean, [0.38, 0.76])
    dev = adv - np.array([0.38, 0.76])
    assert norm.var == pytest.approx(0.9 * 1.81 + 0.1 * float(np.mean(dev**2)))


def test_gru_state_resets_at_episode_starts_hand_computed():
    policy = ActorCritic((3, 7, 7), 7)
    gru = policy.gru
    with torch.no_grad():  # zero weights: r = z = sigmoid(0) = 1/2, n = tanh(b_in) = c, h' = c/2 + h/2
        for p in gru.parameters():
            p.zero_()
        gru.bias_ih[2 * 64 :] = math.atanh(0.6)
    c = 0.6
    feats = torch.randn(5, 2, 64)
    starts = torch.tensor([[0, 1], [0, 0], [1, 0], [0, 1], [0, 0]])
    h0 = torch.full((2, 64), 0.4)
    h = policy.rnn_states(feats, h0, starts)
    # env 0: from 0.4: 0.5, 0.55, reset -> 0.3, 0.45, 0.525; env 1: reset -> 0.3, 0.45, 0.525, reset -> 0.3, 0.45
    expected = torch.tensor([[0.2 + c / 2, c / 2], [0.55, 0.45], [c / 2, 0.525], [0.45, c / 2], [0.525, 0.45]])
    torch.testing.assert_close(h[..., 0], expected)
    assert torch.all(h == h[..., :1])


def test_unroll_equals_stepping_with_resets():
    torch.manual_seed(0)
    policy = ActorCritic((3, 7, 7), 7)
    for p in policy.parameters():  # non-zero heads so that the comparison sees the state
        torch.nn.init.normal_(p, std=0.3)
    T, B = 6, 3
    obs = torch.randint(0, 10, (T, B, 3, 7, 7))
    starts = torch.zeros(T, B)
    starts[2, 0] = starts[4, 1] = 1
    h0 = torch.randn(B, 64)
    dist, values = policy.unroll(obs, h0, starts)
    state, logits, vals = h0, [], []
    for t in range(T):
        d, v, state = policy.step(obs[t], state * (1 - starts[t])[:, None])
        logits.append(d.logits)
        vals.append(v)
    torch.testing.assert_close(dist.logits, torch.cat(logits))
    torch.testing.assert_close(values, torch.cat(vals))


def test_official_initialisation_and_head_widths():
    policy = ActorCritic((3, 7, 7), 7)
    assert policy.gru.hidden_size == 64 and policy.pi[0][0].out_features == 256 and policy.v[0][0].out_features == 256
    dist, value = policy(torch.randint(0, 10, (4, 3, 7, 7)))
    torch.testing.assert_close(dist.probs, torch.full((4, 7), 1 / 7))  # zero action layer: uniform policy
    assert torch.all(value == 0)  # zero value layer
    ff = make_policy((3, 7, 7), 7, PPOConfig(policy="ff"))
    assert not ff.recurrent and ff.initial_state(3).shape == (3, 0)
    assert make_policy((3, 7, 7), 7, {"features_dim": 64}).recurrent  # older saved configs


def test_minibatches_cover_every_step_once():
    rng = np.random.default_rng(0)
    for mode in ("transitions", "sequences"):
        cfg = PPOConfig(n_envs=4, n_steps=8, batch_size=16, minibatch=mode)
        mbs = _minibatches(cfg, rng)
        assert len(mbs) == 2 and sorted(np.concatenate(mbs)) == list(range(32))
    seq = _minibatches(PPOConfig(n_envs=4, n_steps=8, batch_size=16, minibatch="sequences"), rng)[0]
    cols = seq.reshape(8, 2) % 4  # time-major whole sequences of two env columns
    assert (cols == cols[0]).all() and (seq.reshape(8, 2) // 4 == np.arange(8)[:, None]).all()


def test_gae_does_not_bootstrap_across_episode_ends():
    r = np.array([[1.0], [0.0]])
    adv, ret = gae(r, np.zeros((2, 1)), np.array([[1.0], [0.0]]), np.array([5.0]), 0.5, 1.0)
    np.testing.assert_allclose(ret[:, 0], adv[:, 0])  # zero values: returns = advantages
    np.testing.assert_allclose(adv[:, 0], [1.0, 2.5])


@pytest.mark.parametrize("mode", ["transitions", "sequences"])
@pytest.mark.parametrize("policy", ["gru", "ff"])
def test_tiny_runs_of_every_policy_and_minibatch_mode(mode, policy):
    cfg = PPOConfig(
        env_id="MiniGrid-Empty-5x5-v0",
        intrinsic="none",
        total_frames=128,
        n_envs=2,
        n_steps=32,
        batch_size=32,
        n_epochs=1,
        policy=policy,
        minibatch=mode,
        max_episode_steps=10,
    )
    res = train(cfg)
    assert res["frames"] == 128 and all(e["length"] <= 10 for e in res["episodes"])
    assert len(res["episodes"]) >= 128 // 10 - 2  # the time limit ends episodes
