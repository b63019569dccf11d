"""MiniGrid adapters (spec §9.9), the vectorised loop, the baselines and a tiny PPO run."""

import numpy as np
import pytest
import torch

from iclr25.etd_exploration.baselines import E3B, RND, EpisodicCount, NovelD, make_intrinsic
from iclr25.etd_exploration.envs import VecEnv, make_env, normalize_env_id
from iclr25.etd_exploration.etd import ETDReward


@pytest.mark.parametrize(
    ("env_id", "max_steps"),
    [
        ("MiniGrid-DoorKey-8x8-v0", 640),
        ("MiniGrid-KeyCorridorS6R3-v0", 1080),
        ("MiniGrid-ObstructedMaze-1Q-v0", 720),
        ("MiniGrid-DoorKey-32x32-v0", 10240),
        ("MiniGrid-KeyCorridorS8R4-v0", 1920),
    ],
)
def test_make_env_shapes_and_limits(env_id, max_steps):
    env = make_env(env_id)
    obs, _ = env.reset(seed=0)
    assert obs.shape == (3, 7, 7) and obs.dtype == np.uint8
    assert env.unwrapped.max_steps == max_steps


def test_env_ids_and_noise():
    assert normalize_env_id("minigrid:DoorKey-8x8") == "MiniGrid-DoorKey-8x8-v0"
    with pytest.raises(ValueError, match="unknown MiniGrid"):
        make_env("NoSuchTask-3x3")
    obs, _ = make_env("DoorKey-5x5", noise_scale=0.5, seed=0).reset(seed=0)
    assert obs.dtype == np.float32 and not np.allclose(obs, np.round(obs))


def test_truncation_ends_the_episode_and_clears_memory():
    envs = VecEnv("MiniGrid-Empty-5x5-v0", 2, seed=0)
    obs = envs.reset()
    etd = ETDReward(envs.obs_shape, 2, feature_dim=16, latent_dim=16)
    limit = envs.envs[0].unwrapped.max_steps
    done_seen = np.zeros(2, bool)
    for _ in range(limit):
        nxt, _, done, final, infos = envs.step(np.full(2, 0))  # turning left never ends the episode early
        etd.compute(obs, np.zeros(2), final, done)
        done_seen |= done
        obs = nxt
    assert done_seen.all()  # truncated at max_steps = done
    assert (etd.lengths == 0).all()
    assert infos and infos[0]["length"] == limit


@pytest.mark.parametrize("name", ["none", "count", "rnd", "noveld", "e3b", "etd", "deir"])
def test_intrinsic_rewards_interface(name):
    torch.manual_seed(0)
    rng = np.random.default_rng(0)
    shape, n = (3, 7, 7), 4
    intr = make_intrinsic(name, shape, n, n_actions=7)
    obs = rng.integers(0, 10, (n, *shape)).astype(np.uint8)
    nxt = rng.integers(0, 10, (n, *shape)).astype(np.uint8)
    r = intr.compute(obs, np.zeros(n, int), nxt, np.array([False, True, False, False]))
    assert r.shape == (n,) and np.isfinite(r).all()
    batch = {
        "obs": torch.as_tensor(obs),
        "next_obs": torch.as_tensor(nxt),
        "actions": torch.zeros(n, dtype=torch.long),
        "pos_obs": torch.as_tensor(nxt),
    }
    assert isinstance(intr.update(batch), dict)
    with pytest.raises(ValueError, match="intrinsic reward must be"):
        make_intrinsic("ngu", shape, n)


def test_count_and_noveld_pay_first_visits_only():
    shape = (3, 7, 7)
    a, b = np.zeros((1, *shape), np.uint8), np.ones((1, *shape), np.uint8)
    count = EpisodicCount(shape, 1)
    assert count.compute(a, None, b, np.array([False]))[0] == 1.0
    assert count.compute(b, None, a, np.array([False]))[0] == 0.0  # a was the episode's first observation
    nd = NovelD(shape, 1)
    nd.compute(a, None, b, np.array([False]))
    assert nd.compute(b, None, a, np.array([False]))[0] == 0.0


def test_rnd_error_drops_on_trained_state():
    torch.manual_seed(0)
    rnd = RND((3, 7, 7), 1, lr=1e-3)
    o = torch.randint(0, 10, (8, 3, 7, 7), dtype=torch.uint8)
    before = rnd.errors(o).mean()
    for _ in range(50):
        rnd.update({"next_obs": o})
    assert rnd.errors(o).mean() < 0.5 * before


def test_e3b_bonus_shrinks_on_repeats():
    torch.manual_seed(0)
    e3b = E3B((3, 7, 7), 1)
    o = np.random.default_rng(0).integers(0, 10, (1, 3, 7, 7)).astype(np.uint8)
    first = e3b.compute(o, None, o, np.array([False]))[0]
    second = e3b.compute(o, None, o, np.array([False]))[0]
    assert second < first
    e3b.compute(o, None, o, np.array([True]))  # episode ends: C^-1 is reset
    assert e3b.compute(o, None, o, np.array([False]))[0] == pytest.approx(first, rel=1e-4)


def test_tiny_ppo_run_learns_nothing_broken():
    from iclr25.etd_exploration.ppo import PPOConfig, evaluate_policy, train

    cfg = PPOConfig(env_id="MiniGrid-Empty-5x5-v0", total_frames=256, n_envs=2, n_steps=64, batch_size=64, n_epochs=1)
    res = train(cfg)
    assert res["frames"] == 256 and res["fps"] > 0 and 0 <= res["intrinsic_fraction"] < 1
    assert res["visits"].sum() == 256
    assert {"frames", "return", "unique_cells", "loss"} <= set(res["curve"][-1])
    stats = evaluate_policy(res["policy"], cfg.env_id, episodes=1)
    assert stats["length"] >= 1
