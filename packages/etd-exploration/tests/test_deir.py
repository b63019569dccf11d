"""DEIR (Wan et al. 2023, arXiv 2304.10770) as an ETD baseline: its reward (Eq. 4), discriminator loss and plumbing."""

import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from iclr25.etd_exploration.deir import DEIRModel, DEIRReward, deir_rewards, discriminator_loss
from iclr25.etd_exploration.reference import deir_rewards_ref

SHAPE = (3, 7, 7)


def test_reward_is_the_min_of_scaled_squared_distances_hand_computed():
    # memory slots (e_k, h_{k-1}): ([0, 0], [0, 0]), ([1, 0], [1, 1]) and a stale third slot that must be ignored
    obs_mem = torch.tensor([[[0.0, 0.0], [1.0, 0.0], [1.0, 1.0]]])
    trj_mem = torch.tensor([[[0.0, 0.0], [1.0, 1.0], [2.0, 1.0]]])
    valid = torch.tensor([[True, True, False]])
    e_new, h_now = torch.tensor([[1.0, 1.0]]), torch.tensor([[2.0, 1.0]])
    # k = 0: ||e0 - e'||^2 = 2, ||h_-1 - h_t|| = sqrt(5); k = 1: 1 / 1; the masked slot would give 0
    expected = min(2.0 / (math.sqrt(5.0) + 1e-6), 1.0 / (1.0 + 1e-6))
    got = deir_rewards(obs_mem, trj_mem, valid, e_new, h_now)
    assert got.shape == (1,) and got.item() == pytest.approx(expected, rel=1e-6)


def test_discriminator_loss_hand_computed_and_matches_the_official_sigmoid_form():
    real = torch.tensor([0.0, math.log(3.0)], dtype=torch.float64, requires_grad=True)
    fake = torch.tensor([0.0, -math.log(3.0)], dtype=torch.float64, requires_grad=True)
    valid_real, valid_fake = torch.tensor([True, True]), torch.tensor([True, False])
    loss, stats = discriminator_loss(real, fake, valid_real, valid_fake)
    # real: (ln 2 + ln 4/3) / 2; fake: ln 2 over its one valid sample, up-weighted by 2 / 1; then halved
    expected = 0.5 * ((math.log(2) + math.log(4 / 3)) / 2 + 2 * math.log(2))
    assert loss.item() == pytest.approx(expected, rel=1e-12)
    assert stats["dsc_valid_fake"] == 1.0 and stats["dsc_acc"] == pytest.approx(0.5 * 0.5 + 0.5 * 1.0)
    # the official form: sigmoid, then binary cross-entropy, masked sums, balancing
    p_real, p_fake = torch.sigmoid(real), torch.sigmoid(fake)
    ref_real = F.binary_cross_entropy(p_real, torch.ones(2, dtype=torch.float64), reduction="none").sum() / 2
    ref_fake = F.binary_cross_entropy(p_fake, torch.zeros(2, dtype=torch.float64), reduction="none")[0] * 2.0
    ref = 0.5 * (ref_real + ref_fake)
    g = torch.autograd.grad(loss, (real, fake))
    g_ref = torch.autograd.grad(ref, (real, fake))
    for a, b in zip(g, g_ref, strict=True):
        torch.testing.assert_close(a, b)
    assert g[1][1].item() == 0.0  # the invalid fake gets no gradient


def test_discriminator_loss_without_valid_fakes_is_the_real_half():
    real, fake = torch.zeros(3), torch.zeros(3)
    loss, _ = discriminator_loss(real, fake, torch.ones(3, dtype=torch.bool), torch.zeros(3, dtype=torch.bool))
    assert loss.item() == pytest.approx(0.5 * math.log(2))


def _stream(T, n_envs, seed):
    rng = np.random.default_rng(seed)
    obs = rng.integers(0, 6, (T + 1, n_envs, *SHAPE)).astype(np.uint8)
    dones = rng.random((T, n_envs)) < 0.15
    return obs, dones


@pytest.mark.parametrize("recurrent", [True, False], ids=["gru", "cnn-trajectory"])
def test_rewards_match_the_official_list_algorithm_over_a_stream(recurrent):
    torch.manual_seed(0)
    T, N = 30, 3
    obs, dones = _stream(T, N, seed=1)
    deir = DEIRReward(SHAPE, N, feature_dim=16, latent_dim=16, capacity=2, recurrent=recurrent)  # capacity grows
    got = np.stack([deir.compute(obs[t], np.zeros(N), obs[t + 1], dones[t]) for t in range(T)])  # (T, N)
    with torch.no_grad():
        for n in range(N):
            ref = deir_rewards_ref(deir.model, torch.as_tensor(obs[:-1, n]), torch.as_tensor(obs[1:, n]), dones[:, n])
            np.testing.assert_allclose(got[:, n], ref, rtol=2e-4, atol=1e-4)
    assert deir.obs_mem.shape[1] > 2


def test_memory_and_trajectory_state_clear_at_episode_ends():
    torch.manual_seed(0)
    deir = DEIRReward(SHAPE, 2, feature_dim=8, latent_dim=8)
    obs, _ = _stream(3, 2, seed=2)
    deir.compute(obs[0], np.zeros(2), obs[1], np.array([False, False]))
    assert deir.lengths.tolist() == [2, 2]  # e_0 and e_1
    deir.compute(obs[1], np.zeros(2), obs[2], np.array([True, False]))
    assert deir.lengths.tolist() == [0, 3]
    assert deir.state[0].abs().sum() == 0 and deir.state[1].abs().sum() > 0
    # revisiting the episode's first observation on the same trajectory step pays ~0
    fresh = DEIRReward(SHAPE, 1, feature_dim=8, latent_dim=8)
    o = obs[0, :1]
    assert fresh.compute(o, np.zeros(1), o, np.array([False]))[0] <= 1e-3


def test_queue_rule_fakes_and_rollout_states():
    torch.manual_seed(0)
    N = 4
    deir = DEIRReward(SHAPE, N, feature_dim=8, latent_dim=8, queue_len=10)
    obs, dones = _stream(6, N, seed=3)
    for t in range(3):
        deir.compute(obs[t], np.zeros(N), obs[t + 1], dones[t])
    assert deir.queue_filled == N + 3 * N  # the first observations, then every next one in the first rollout
    states = deir.rollout_inputs()["deir_state"]
    assert states.shape == (3 * N, 8) and deir._rollout_states == []
    deir.refresh()
    mean = deir.reward_stats.mean
    before = deir.queue_filled
    r = deir.compute(obs[3], np.zeros(N), obs[4], dones[3])
    assert deir.queue_filled - before == int((r >= mean).sum())  # after the first rollout: rewards >= running mean
    # fakes come from the queue; a queue that only holds the real observation yields no valid fake
    real = torch.as_tensor(obs[5])
    fake, differs = deir.fake_observations(real)
    assert fake.shape == real.shape and fake.dtype == real.dtype
    assert torch.equal(differs, (fake != real).flatten(1).any(1))
    deir.queue[:] = real[0]
    deir.queue_filled = deir.queue_len
    _, differs = deir.fake_observations(real[:1].repeat(3, 1, 1, 1))
    assert not differs.any()


def test_update_trains_every_part_and_learns_to_discriminate():
    torch.manual_seed(0)
    rng = np.random.default_rng(4)
    N = 8
    deir = DEIRReward(SHAPE, N, feature_dim=16, latent_dim=32, lr=3e-3, seed=0)
    obs = rng.integers(0, 6, (N, *SHAPE)).astype(np.uint8)
    nxt = obs.copy()
    nxt[:, 0, 3, 3] += 1  # the real next observation: a small, action-independent change
    for _ in range(4):
        deir.compute(rng.integers(0, 6, (N, *SHAPE)).astype(np.uint8), np.zeros(N), obs, np.zeros(N, bool))
    batch = {
        "obs": torch.as_tensor(obs),
        "next_obs": torch.as_tensor(nxt),
        "actions": torch.as_tensor(rng.integers(0, 7, N)),
        "deir_state": torch.zeros(N, 16),
    }
    params = {k: v.detach().clone() for k, v in deir.model.named_parameters()}
    first = deir.update(batch)
    moved = {k.split(".")[0] for k, v in deir.model.named_parameters() if not torch.equal(v, params[k])}
    assert moved == {"g", "gru", "head"}
    for _ in range(80):
        last = deir.update(batch)
    assert last["dsc_loss"] < 0.2 * first["dsc_loss"] and last["dsc_acc"] > 0.95


def test_model_shapes():
    model = DEIRModel(SHAPE, 7, feature_dim=12, latent_dim=20)
    e = model.embed(torch.zeros(5, *SHAPE, dtype=torch.uint8))
    h = model.trajectory(e, torch.zeros(5, 12))
    assert e.shape == h.shape == (5, 12)
    assert model.logits(h, h, torch.arange(5)).shape == (5,)
    with pytest.raises(ValueError, match="queue_len"):
        DEIRReward(SHAPE, 1, queue_len=0)


def test_tiny_ppo_run_with_deir():
    from iclr25.etd_exploration.ppo import CPU_PARTS, PPOConfig, train

    cfg = PPOConfig(
        env_id="MiniGrid-Empty-5x5-v0", intrinsic="deir", total_frames=128, n_envs=2, n_steps=32, batch_size=32
    )
    res = train(cfg)
    assert res["frames"] == 128 and "dsc_loss" in res["curve"][-1]
    assert res["intrinsic"].rollouts == 2 and res["intrinsic"]._rollout_states == []
    cpu = res["cpu_seconds"]  # CPU time by part of the loop: the parts add up to at most the total
    assert set(cpu) == set(CPU_PARTS) and cpu["intrinsic_train"] > 0 and cpu["env"] > 0
    assert sum(v for k, v in cpu.items() if k != "total") <= cpu["total"] + 1e-6
