"""Constant velocity, CV-K20 and the geodesic-exits reference."""

from __future__ import annotations

import numpy as np

from iclr25.tsc_net import ConstantVelocity, geodesic_exits


def test_constant_velocity_is_exact_on_straight_lines():
    obs = np.stack([np.arange(8.0) * 3, np.arange(8.0) * -1], -1)[None]
    pred = ConstantVelocity().predict(obs)
    assert pred.shape == (1, 1, 12, 2)
    assert np.allclose(pred[0, 0, -1], [19 * 3, -19])


def test_cv_k20_spreads_heading_and_speed():
    obs = np.stack([np.arange(8.0), np.zeros(8)], -1)[None]
    pred = ConstantVelocity(20).predict(obs, np.random.default_rng(0))
    assert pred.shape == (20, 1, 12, 2)
    speeds = np.linalg.norm(pred[:, 0, 0] - obs[0, -1], axis=-1)
    assert speeds.min() >= 0.8 - 1e-9 and speeds.max() <= 1.2 + 1e-9 and speeds.std() > 0


def test_geodesic_exits_walks_to_the_exits_around_obstacles():
    mask = np.zeros((40, 40), np.uint8)
    mask[10:30, 20] = 3  # a wall between the agent and the exit
    exits = np.array([[38.5, 20.5], [20.5, 1.5]])
    obs = np.stack([np.linspace(2, 9, 8), np.full(8, 20.5)], -1)[None]
    pred = geodesic_exits(obs, np.array([0]), [mask], [exits], k=20)
    assert pred.shape == (20, 1, 12, 2)
    px = np.floor(pred).astype(int)
    assert mask[px[..., 1], px[..., 0]].max() == 0  # never on the wall
    assert np.allclose(pred[0], pred[6])  # 2 exits x 3 speeds = 6 samples, repeated
