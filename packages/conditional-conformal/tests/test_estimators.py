"""Estimators: oracle mixture sampling/density, the MDN (numpy density == torch likelihood, training lowers the NLL)."""

from __future__ import annotations

import numpy as np
import pytest

from iclr25.conditional_conformal.data import bimodal_hetero, bimodal_sd
from iclr25.conditional_conformal.estimators import MDN, Density, Sampler


def test_oracle_sample_moments_and_density(law):
    rng = np.random.default_rng(0)
    x = np.array([[-3.0], [0.5], [3.5]])
    y = law.sample(x, 40_000, rng)  # [3, m, 1]
    assert y.shape == (3, 40_000, 1)
    mean = np.sin(x[:, 0]) + 0.5 * (2 + 0.5 * x[:, 0])
    np.testing.assert_allclose(y[..., 0].mean(1), mean, atol=0.03)
    np.testing.assert_allclose(law.mean(x)[:, 0], mean)
    grid = np.linspace(-8, 12, 8001)
    dens = np.exp(law.log_prob(x, np.broadcast_to(grid[None, :, None], (3, len(grid), 1))))
    np.testing.assert_allclose(dens.sum(1) * (grid[1] - grid[0]), 1.0, atol=1e-4)
    assert isinstance(law, Density) and isinstance(law, Sampler)


def test_scaled_sampler_keeps_means(law):
    x = np.array([[1.0], [-2.0]])
    wide = law.scaled(1.5)
    np.testing.assert_allclose(wide.params(x)[1], law.params(x)[1])
    np.testing.assert_allclose(wide.params(x)[2][:, 0, 0], 1.5 * bimodal_sd(x[:, 0]))
    with pytest.raises(ValueError, match="sd_scale"):
        law.scaled(0.0)


def test_mdn_density_matches_torch_likelihood_and_training_helps():
    import torch

    X, Y = bimodal_hetero(2000, 0)
    mdn = MDN(1, 1, n_components=3, hidden=(16, 16), seed=0)
    mdn.fit(X, Y, epochs=1, seed=0)
    before = mdn.history[0]
    mdn.fit(X, Y, epochs=15, lr=3e-3, seed=0)
    assert mdn.history[-1] < before - 0.3
    # numpy log-density (original units) == torch NLL (standardised units) minus the Jacobian log|sd(Y)|
    xs = torch.as_tensor((X - mdn.x_mean) / mdn.x_std, dtype=torch.float32)
    ys = torch.as_tensor((Y - mdn.y_mean) / mdn.y_std, dtype=torch.float32)
    with torch.no_grad():
        nll = float(mdn._nll(xs, ys))
    ours = -mdn.log_prob(X, Y).mean() - np.log(mdn.y_std).sum()
    assert abs(ours - nll) < 1e-4
    s = mdn.sample(X[:5], 7, np.random.default_rng(0))
    assert s.shape == (5, 7, 1) and np.isfinite(s).all()


def test_mdn_multi_output_shapes():
    rng = np.random.default_rng(0)
    X, Y = rng.standard_normal((300, 3)), rng.standard_normal((300, 2))
    mdn = MDN(3, 2, 4, (8,), seed=1).fit(X, Y, epochs=2)
    assert mdn.sample(X[:4], 6, rng).shape == (4, 6, 2)
    assert mdn.log_prob(X[:4], Y[:4]).shape == (4,)
    assert mdn.log_prob(X[:4], rng.standard_normal((4, 5, 2))).shape == (4, 5)
    with pytest.raises(ValueError, match="X must be"):
        mdn.fit(X, Y[:, :1])
