"""Acceptance checks of the ETD method (spec §9.1-9.5, 9.7): fast forms against the reference forms."""

import numpy as np
import pytest
import torch
from scipy.stats import chisquare

from iclr25.etd_exploration.analysis import successor_distance_matrix, triangle_violations
from iclr25.etd_exploration.etd import (
    ETDReward,
    RewardNormalizer,
    TemporalDistanceCritic,
    contrastive_loss,
    mrn_distance,
    mrn_pairwise,
    remaining_steps,
    sample_future_indices,
    truncated_geometric_offsets,
)
from iclr25.etd_exploration.reference import (
    contrastive_loss_ref,
    episodic_rewards_ref,
    mrn_distance_ref,
    remaining_steps_ref,
    truncated_geometric_pmf,
)


def test_mrn_is_a_quasimetric():
    g = torch.Generator().manual_seed(0)
    x, y, z = (torch.randn(1000, 64, generator=g, dtype=torch.float64) for _ in range(3))
    assert mrn_distance(x, x).max() <= 1e-3
    assert (mrn_distance(x, y) >= 0).all()
    assert (mrn_distance(x, z) <= mrn_distance(x, y) + mrn_distance(y, z) + 1e-5).all()
    assert (mrn_distance(x, y) - mrn_distance(y, x)).abs().max() > 1e-2  # asymmetric


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64], ids=["f32", "f64"])
@pytest.mark.parametrize("shape", [(5, 8), (17, 64)], ids=["B5D8", "B17D64"])
def test_mrn_matches_reference_values_and_grads(shape, dtype):
    g = torch.Generator().manual_seed(1)
    x = torch.randn(*shape, generator=g, dtype=dtype, requires_grad=True)
    y = torch.randn(*shape, generator=g, dtype=dtype, requires_grad=True)
    fast, ref = mrn_distance(x, y), mrn_distance_ref(x, y)
    tol = 1e-5 if dtype == torch.float32 else 1e-10
    torch.testing.assert_close(fast, ref, atol=tol, rtol=tol)
    gf = torch.autograd.grad(fast.sum(), (x, y))
    gr = torch.autograd.grad(ref.sum(), (x, y))
    for a, b in zip(gf, gr, strict=True):
        torch.testing.assert_close(a, b, atol=tol, rtol=tol)


@pytest.mark.parametrize("max_elements", [1, 200, 1 << 20], ids=["row-by-row", "chunks", "one-chunk"])
def test_mrn_pairwise_matches_broadcast_form(max_elements):
    g = torch.Generator().manual_seed(2)
    x = torch.randn(9, 64, generator=g, dtype=torch.float64, requires_grad=True)
    y = torch.randn(11, 64, generator=g, dtype=torch.float64, requires_grad=True)
    fast, slow = mrn_pairwise(x, y, max_elements=max_elements), mrn_distance(x[:, None], y[None])
    torch.testing.assert_close(fast, slow, atol=1e-8, rtol=1e-8)
    w = torch.randn(9, 11, generator=g, dtype=torch.float64)
    gf = torch.autograd.grad((fast * w).sum(), (x, y))
    gs = torch.autograd.grad((slow * w).sum(), (x, y))
    for a, b in zip(gf, gs, strict=True):
        torch.testing.assert_close(a, b, atol=1e-7, rtol=1e-7)


def test_contrastive_loss_matches_hand_formula_and_grads():
    g = torch.Generator().manual_seed(3)
    logits = torch.randn(16, 16, generator=g, dtype=torch.float64, requires_grad=True)
    loss, stats = contrastive_loss(logits)
    ref = contrastive_loss_ref(logits)
    assert abs(loss.item() - ref.item()) <= 1e-6
    torch.testing.assert_close(torch.autograd.grad(loss, logits)[0], torch.autograd.grad(ref, logits)[0])
    assert 0.0 <= stats["acc"] <= 1.0
    assert contrastive_loss(50.0 * torch.eye(8))[0].item() < 1e-6


def test_contrastive_loss_rejects_bad_input():
    with pytest.raises(ValueError, match="square"):
        contrastive_loss(torch.zeros(3, 4))
    with pytest.raises(ValueError, match="loss kind"):
        contrastive_loss(torch.zeros(3, 3), kind="dpo")


def test_truncated_geometric_law_matches_pmf():
    rng = np.random.default_rng(0)
    n, R, gamma = 100_000, 10, 0.9
    delta = truncated_geometric_offsets(rng.random(n), np.full(n, R), gamma)
    counts = np.bincount(delta, minlength=R + 1)[1:]
    assert counts.sum() == n
    assert chisquare(counts, n * truncated_geometric_pmf(R, gamma)).pvalue > 0.01
    uniform = truncated_geometric_offsets(rng.random(n), np.full(n, R), 1.0)
    assert chisquare(np.bincount(uniform, minlength=R + 1)[1:]).pvalue > 0.01
    assert (truncated_geometric_offsets(rng.random(100), np.full(100, R), 0.0) == 1).all()
    assert (truncated_geometric_offsets(rng.random(100), np.zeros(100, int), 0.9) == 0).all()


def test_positives_stay_inside_the_episode():
    rng = np.random.default_rng(1)
    dones = rng.random((64, 8)) < 0.1
    np.testing.assert_array_equal(remaining_steps(dones), remaining_steps_ref(dones))
    idx, delta = sample_future_indices(dones, 0.99, rng)
    episode = np.vstack([np.zeros((1, 8), int), np.cumsum(dones, 0)[:-1]])  # episode id of each step
    assert (idx < 64).all() and (idx >= np.arange(64)[:, None]).all()
    assert (np.take_along_axis(episode, idx, 0) == episode).all()
    last = dones & (np.arange(64)[:, None] < 63)
    assert (delta[last] == 0).all()  # the last observation of an episode is its own positive


def test_official_boundary_is_off_by_one():
    dones = np.zeros((6, 1), bool)
    dones[2, 0] = True  # steps 0, 1, 2 form an episode; 3, 4, 5 the next
    np.testing.assert_array_equal(remaining_steps(dones)[:, 0], [2, 1, 0, 2, 1, 0])
    official = remaining_steps(dones, boundary="official")[:, 0]
    np.testing.assert_array_equal(official, [1, 0, 3, 2, 1, 0])  # step 2 looks into the next episode
    with pytest.raises(ValueError, match="boundary"):
        remaining_steps(dones, boundary="other")


def test_successor_distance_is_a_quasimetric_and_matches_bfs(spiral):
    rng = np.random.default_rng(0)
    P = rng.random((12, 12))
    P /= P.sum(1, keepdims=True)
    D = successor_distance_matrix(P, 0.9)
    assert triangle_violations(D, tol=1e-9) == 0
    assert np.allclose(np.diag(D), 0.0) and (D >= -1e-12).all()
    from iclr25.etd_exploration.analysis import goal_spearman

    Dm = successor_distance_matrix(spiral.transition_matrix(), 0.99)
    bfs = spiral.distance_matrix()
    goal = spiral.cell_index((1, 1))
    assert goal_spearman(Dm[:, goal], bfs[:, goal], None) == pytest.approx(1.0)


def test_reward_normalizer_recurrence():
    seq = [np.array([1.0, 2.0, 3.0]), np.array([0.5, -1.0]), np.array([10.0])]
    norm = RewardNormalizer()
    mu, var = 0.0, 1.0
    for b in seq:
        out = norm(b)
        mu = 0.9 * mu + 0.1 * b.mean()
        var = 0.9 * var + 0.1 * ((b - mu) ** 2).mean()
        np.testing.assert_allclose(out, (b - mu) / (np.sqrt(var) + 1e-5), atol=1e-9, rtol=0)


class _Identity(torch.nn.Module):
    def forward(self, x):
        return x.float()


def _identity_etd(n_envs, **kwargs):
    etd = ETDReward((4,), n_envs, feature_dim=8, emb_dim=4, encoder="mlp", **kwargs)
    etd.critic.g = _Identity()
    etd.critic.phi = _Identity()
    return etd


def test_episodic_reward_is_min_distance_and_memory_clears():
    etd = _identity_etd(1)
    s0, s1, s2 = np.array([[0, 0, 0, 0.0]]), np.array([[1, 0, 0, 0.0]]), np.array([[3, 0, 2, 0.0]])
    r1 = etd.compute(s0, np.zeros(1), s1, np.array([False]))
    assert r1[0] == pytest.approx(float(mrn_distance(torch.tensor(s0), torch.tensor(s1))[0]), abs=1e-6)
    r2 = etd.compute(s1, np.zeros(1), s2, np.array([False]))
    expected = min(float(mrn_distance(torch.tensor(m), torch.tensor(s2))[0]) for m in (s0, s1))
    assert r2[0] == pytest.approx(expected, abs=1e-6)
    revisit = etd.compute(s2, np.zeros(1), s0, np.array([True]))
    assert revisit[0] <= 1e-3
    assert int(etd.lengths[0]) == 0 and etd.memory(0)[0].numel() == 0


def test_episodic_reward_matches_reference_over_a_stream():
    rng = np.random.default_rng(4)
    T, N = 30, 3
    obs = rng.normal(size=(T + 1, N, 4))
    dones = rng.random((T, N)) < 0.15
    etd = _identity_etd(N, capacity=2, page=2)  # pages of 2 slots; the pool of 3 pages has to grow
    fast = np.stack([etd.compute(obs[t], np.zeros(N), obs[t + 1], dones[t]) for t in range(T)])
    assert etd.n_pages > 3 and int(etd.lengths.max()) > 2
    for n in range(N):
        # with same-step reset the next step starts from a fresh observation; reuse obs[t+1] for the stream
        z = torch.tensor(obs[:, n])
        ref = episodic_rewards_ref(z[:-1], z[1:], dones[:, n])
        np.testing.assert_allclose(fast[:, n], ref, atol=1e-5)  # float32


@pytest.mark.parametrize("aggregate", ["min", "mean", "knn", "quantile10"])
def test_paged_memory_matches_a_list_memory_for_every_aggregate(aggregate):
    """Pages of 3 slots, episodes of random lengths: each env's rewards, stored observations and the pool's reuse of
    freed pages against a plain list memory per env."""
    rng = np.random.default_rng(7)
    T, N = 60, 4
    obs = rng.normal(size=(T + 1, N, 4))
    dones = rng.random((T, N)) < 0.1
    etd = _identity_etd(N, capacity=3, page=3, aggregate=aggregate)
    agg = {
        "min": np.min,
        "mean": np.mean,
        "knn": lambda d: np.sort(d)[min(9, len(d) - 1)],
        "quantile10": lambda d: np.quantile(d, 0.1) if len(d) > 1 else d[0],
    }[aggregate]
    memory: list[list[np.ndarray]] = [[] for _ in range(N)]
    for t in range(T):
        got = etd.compute(obs[t], np.zeros(N), obs[t + 1], dones[t])
        for n in range(N):
            if not memory[n]:
                memory[n].append(obs[t, n])
            d = mrn_distance(torch.tensor(np.array(memory[n])), torch.tensor(obs[t + 1, n])[None]).numpy()
            assert got[n] == pytest.approx(float(agg(d)), abs=1e-5), (t, n)
            memory[n] = [] if dones[t, n] else [*memory[n], obs[t + 1, n]]
            held = etd.memory(n)[0].reshape(-1, 4)
            np.testing.assert_allclose(held.numpy(), np.array(memory[n]).reshape(-1, 4), atol=1e-6)
    longest = max(len(m) for m in memory)
    assert etd.lengths.tolist() == [len(m) for m in memory] and longest > 3  # episodes span several pages
    assert int((etd.owner >= 0).sum()) == sum(-(-len(m) // 3) for m in memory)  # ended episodes freed their pages


def test_critic_logits_use_the_potential():
    torch.manual_seed(0)
    critic = TemporalDistanceCritic((3, 7, 7), feature_dim=32, latent_dim=32)
    x, y = torch.randint(0, 10, (5, 3, 7, 7)), torch.randint(0, 10, (5, 3, 7, 7))
    logits = critic.logits(x, y)
    fy = critic.features(y)
    expected = critic.potential(fy)[None, :] - mrn_distance(
        critic.embed(critic.features(x))[:, None], critic.embed(fy)[None]
    )
    torch.testing.assert_close(logits, expected, atol=1e-5, rtol=1e-5)
    # the all-pairs form computes ||u - v||^2 through a matmul: on the diagonal float32 cancellation leaves ~1e-6,
    # i.e. up to ~1e-3 after the square root (the exact form gives sqrt(eps) = 1e-4), depending on the BLAS
    torch.testing.assert_close(
        torch.diagonal(-critic.logits(x, x) + critic.potential(critic.features(x))),
        critic.distance(x, x),
        atol=2e-3,
        rtol=1e-5,
    )
    with pytest.raises(ValueError, match="energy"):
        TemporalDistanceCritic((3, 7, 7), energy="bogus")


@pytest.mark.parametrize("energy", ["mrn", "l2", "cos", "dot"])
def test_other_energies_train(energy):
    torch.manual_seed(0)
    critic = TemporalDistanceCritic((6,), feature_dim=16, latent_dim=16, emb_dim=8, energy=energy, encoder="mlp")
    x = torch.randn(8, 6)
    loss, _ = contrastive_loss(critic.logits(x, x + 0.01))
    loss.backward()
    assert all(p.grad is not None for p in critic.phi.parameters())


def test_refresh_matches_recomputing_phi_on_the_whole_memory():
    torch.manual_seed(0)
    rng = np.random.default_rng(5)
    etd = ETDReward((3, 7, 7), 2, feature_dim=16, latent_dim=16)
    stream = rng.integers(0, 10, (6, 2, 3, 7, 7)).astype(np.uint8)
    for t in range(4):
        etd.compute(stream[t], np.zeros(2), stream[t + 1], np.zeros(2, bool))
    with torch.no_grad():
        for p in etd.critic.parameters():
            p.add_(0.1 * torch.randn_like(p))  # a model update
    etd.refresh()
    got = etd.compute(stream[4], np.zeros(2), stream[5], np.zeros(2, bool))
    with torch.no_grad():
        for n in range(2):
            mem = torch.as_tensor(stream[:5, n])
            new = torch.as_tensor(stream[5, n][None]).expand(5, -1, -1, -1)
            assert got[n] == pytest.approx(float(etd.critic.distance(mem, new).min()), abs=1e-5)


def test_memory_holds_the_episode_and_the_broken_mean_differs_from_the_min():
    etd, broken = _identity_etd(2), _identity_etd(2, aggregate="mean")
    rng = np.random.default_rng(1)
    obs = rng.normal(size=(6, 2, 4))
    done = np.array([False, False])
    for t in range(4):
        got, bad = etd.compute(obs[t], None, obs[t + 1], done), broken.compute(obs[t], None, obs[t + 1], done)
    mem = torch.tensor(obs[:4, 0], dtype=torch.float32)  # s_0 .. s_3 of env 0, before s_4
    new = torch.tensor(obs[4, 0], dtype=torch.float32).expand(4, -1)
    d = mrn_distance(mem, new)
    assert got[0] == pytest.approx(float(d.min()), abs=1e-6) and bad[0] == pytest.approx(float(d.mean()), abs=1e-6)
    torch.testing.assert_close(etd.memory(0)[0], torch.tensor(obs[:5, 0]))  # observations kept as given
    assert etd.lengths.tolist() == [5, 5]
    etd.reset([1])
    assert etd.lengths.tolist() == [5, 0]
    with pytest.raises(ValueError, match="aggregate must be one of"):
        ETDReward((4,), 1, aggregate="median")


def test_anchors_and_positives_share_one_critic_pass():
    torch.manual_seed(0)
    critic = TemporalDistanceCritic((3, 7, 7), feature_dim=32, latent_dim=32)
    calls = []
    critic.g.register_forward_hook(lambda m, i, o: calls.append(i[0].shape[0]))
    critic.logits(torch.randint(0, 10, (6, 3, 7, 7)), torch.randint(0, 10, (6, 3, 7, 7)))
    assert calls == [12]


def test_broken_variants_are_built_by_name_and_ignore_the_distance():
    from iclr25.etd_exploration.baselines import make_intrinsic

    assert make_intrinsic("etd-mean", (4,), 1, encoder="mlp").aggregate == "mean"
    broken = make_intrinsic("etd-random", (4,), 2, encoder="mlp", seed=3)
    obs = np.array([[1.0, 2.0, 3.0, 4.0]] * 2)
    far = np.array([[1.0, 2.0, 3.0, 4.0], [4.0, -3.0, 2.0, -1.0]])  # env 1 moves, env 0 stays: random cannot tell
    r = broken.compute(obs, None, far, np.zeros(2, bool))
    assert ((r >= 0) & (r < 1)).all()
    assert make_intrinsic("etd", (4,), 2, encoder="mlp").compute(obs, None, far, np.zeros(2, bool)).argmax() == 1


def test_maze_distances_are_float64_exact_and_device_independent(spiral):
    """The maze claims rank the learned distances of all cell pairs: they come from a float64 CPU copy of the critic
    with the direct difference form, equal to the pairwise reference to float64 precision and untouched by the
    float32 matmul cancellation (||x||^2 + ||y||^2 - 2 x.y) that TF32 on a GPU makes ~1e-3 large."""
    from iclr25.etd_exploration.maze import cell_distance_matrix, full_float32

    torch.manual_seed(0)
    critic = TemporalDistanceCritic((spiral.size, spiral.size, 3), feature_dim=32, latent_dim=32, encoder="mlp")
    got = cell_distance_matrix(critic, spiral, np.random.default_rng(0))
    assert got.dtype == np.float64 and next(critic.parameters()).dtype == torch.float32  # a copy was cast
    obs = torch.as_tensor(spiral.render(spiral.cells, np.random.default_rng(0)))
    with torch.no_grad():
        exact = critic.to(torch.float64)
        z = exact.embed(exact.features(obs)).numpy()
    idx = np.random.default_rng(1).integers(0, len(z), (40, 2))
    ref = [float(mrn_distance_ref(torch.tensor(z[i])[None], torch.tensor(z[j])[None], critic.eps)[0]) for i, j in idx]
    np.testing.assert_allclose(got[idx[:, 0], idx[:, 1]], ref, rtol=1e-12, atol=1e-12)
    flags = torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = True
    try:
        with full_float32():
            assert not torch.backends.cuda.matmul.allow_tf32 and not torch.backends.cudnn.allow_tf32
        assert torch.backends.cuda.matmul.allow_tf32  # restored
    finally:
        torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32 = flags
