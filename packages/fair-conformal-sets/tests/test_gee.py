"""Logistic GEE (independence working correlation, sandwich covariance)."""

from __future__ import annotations

import numpy as np
import pytest

from iclr25.fair_conformal_sets.gee import gee_logistic, treatment_group_odds_ratios


def test_intercept_model_matches_closed_form():
    rng = np.random.default_rng(0)
    y = (rng.random(2000) < 0.3).astype(float)
    p = y.mean()
    beta, cov, ok = gee_logistic(np.ones((2000, 1)), y, np.arange(2000))
    assert ok and beta[0] == pytest.approx(np.log(p / (1 - p)))
    assert cov[0, 0] == pytest.approx(1 / (2000 * p * (1 - p)))  # one item per cluster: the model-based variance
    # every observation twice in its own cluster: twice the data but no extra information
    _, cov2, _ = gee_logistic(np.ones((4000, 1)), np.repeat(y, 2), np.repeat(np.arange(2000), 2))
    assert cov2[0, 0] == pytest.approx(cov[0, 0])


def test_odds_ratios_equal_empirical_and_maxror():
    rng = np.random.default_rng(1)
    n = 8000
    treatment = rng.choice(["control", "marginal"], size=n)
    group = rng.integers(2, size=n)
    rate = np.where(treatment == "control", 0.6, np.where(group == 0, 0.85, 0.7))
    correct = rng.random(n) < rate
    out = treatment_group_odds_ratios(correct, treatment, group, rng.integers(200, size=n))

    def odds(mask):
        p = correct[mask].mean()
        return p / (1 - p)

    for g in (0, 1):
        expected = odds((treatment == "marginal") & (group == g)) / odds((treatment == "control") & (group == g))
        assert out["marginal"]["odds_ratio"][g] == pytest.approx(expected, rel=1e-6)
        assert out["marginal"]["odds_ratio_low"][g] < expected < out["marginal"]["odds_ratio_high"][g]
    ors = out["marginal"]["odds_ratio"]
    assert out["marginal"]["maxROR"] == pytest.approx(max(ors.values()) / min(ors.values()))
    assert out["marginal"]["maxROR_low"] > 1  # true ratio (0.85/0.15)/(0.7/0.3) = 2.4
    assert out["converged"]
