"""Maze generator, BFS, and the loaders for trajectory files and official logs (tiny generated files)."""

import numpy as np
import pytest

from iclr25.etd_exploration.analysis import pairwise_spearman, spearman
from iclr25.etd_exploration.data import (
    SpiralMaze,
    bfs_distances,
    load_trajectories,
    random_walk_dataset,
    read_logs,
    save_trajectories,
    spiral_layout,
)


def test_spiral_is_one_corridor(spiral):
    assert spiral.n_cells == 127
    d = bfs_distances(spiral.free, (1, 1))
    assert d.max() == 126 and (d[spiral.free] >= 0).all()
    assert sorted(d[spiral.free].tolist()) == list(range(127))  # a single path: one cell per distance
    with pytest.raises(ValueError, match="4k\\+1"):
        spiral_layout(16)


def test_render_and_pixel_distances_are_constant(spiral):
    obs = spiral.render(spiral.cells[:3])
    assert obs.shape == (3, 17, 17, 3)
    assert (obs[0, 1, 1] == (1, 0, 0)).all() and (obs[0, 0, 0] == 0).all()
    flat = obs.reshape(3, -1)
    assert np.linalg.norm(flat[0] - flat[1]) == pytest.approx(2.0)
    noisy = SpiralMaze(noise=True).render(spiral.cells[:2], np.random.default_rng(0))
    assert not np.array_equal(noisy[0][~spiral.free], noisy[1][~spiral.free])
    assert (noisy[:, spiral.free].max(-1) == 1).all()


def test_random_walk_moves_one_cell_at_most(spiral):
    data = random_walk_dataset(spiral, 1000, 50, np.random.default_rng(0))
    cells, dones = data["cells"], data["dones"]
    assert cells.shape == (20, 50, 2) and dones[:, -1].all() and not dones[:, :-1].any()
    steps = np.abs(np.diff(cells, axis=1)).sum(-1)
    assert steps.max() == 1 and spiral.free[cells[..., 0], cells[..., 1]].all()
    with pytest.raises(ValueError, match="episode_len"):
        random_walk_dataset(spiral, 10, 50, np.random.default_rng(0))


def test_spearman_helpers():
    assert spearman(np.ones(5), np.arange(5)) == 0.0
    bfs = np.array([[0, 1, 2], [1, 0, 1], [2, 1, 0]])
    assert pairwise_spearman(bfs * 2.0, bfs) == pytest.approx(1.0)


def test_trajectory_roundtrip(tmp_path):
    rng = np.random.default_rng(0)
    obs = rng.integers(0, 10, (3, 8, 3, 7, 7)).astype(np.uint8)
    dones = np.zeros((3, 8), bool)
    dones[:, -1] = True
    path = save_trajectories(tmp_path / "traj.npz", obs, dones, actions=rng.integers(0, 7, (3, 8)))
    data = load_trajectories(path)
    np.testing.assert_array_equal(data["obs"], obs)
    assert data["dones"].dtype == bool and data["actions"].shape == (3, 8)
    np.savez(tmp_path / "bad.npz", obs=obs)
    with pytest.raises(ValueError, match="dones"):
        load_trajectories(tmp_path / "bad.npz")
    np.savez(tmp_path / "bad2.npz", obs=obs, dones=dones[:, :5])
    with pytest.raises(ValueError, match="leading dims"):
        load_trajectories(tmp_path / "bad2.npz")
    with pytest.raises(FileNotFoundError):
        load_trajectories(tmp_path / "missing.npz")


def test_read_official_rollout_csv(tmp_path):
    text = (
        "iterations,time/total_timesteps,rollout/ep_info_rew_mean,rollout/ep_success,rollout/ep_unique_states,\n"
        "1,8192,0.0,0.0,12.5,\n"
        "2,16384,0.25,0.5,20.0,\n"
    )
    path = tmp_path / "rollout.csv"
    path.write_text(text)
    logs = read_logs(path)
    assert list(logs) == [
        "iterations",
        "time/total_timesteps",
        "rollout/ep_info_rew_mean",
        "rollout/ep_success",
        "rollout/ep_unique_states",
    ]
    np.testing.assert_allclose(logs["rollout/ep_unique_states"], [12.5, 20.0])
    path.write_text("iterations,\n1,\nx,\n")
    with pytest.raises(ValueError, match="non-number"):
        read_logs(path)
