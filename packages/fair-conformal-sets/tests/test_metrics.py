"""Procedural and substantive metrics."""

from __future__ import annotations

import numpy as np
import pytest

from iclr25.fair_conformal_sets import metrics


def test_group_report_by_hand():
    sets = np.array([[1, 0, 0], [1, 1, 0], [0, 0, 0], [0, 1, 1]], bool)
    y, g = np.array([0, 2, 1, 2]), np.array([0, 0, 1, 1])
    r = metrics.group_report(sets, y, g)
    assert r["groups"][0] == {"n": 2, "coverage": 0.5, "size": 1.5, "singleton": 0.5, "empty": 0.0}
    assert r["groups"][1] == {"n": 2, "coverage": 0.5, "size": 1.0, "singleton": 0.0, "empty": 0.5}
    assert r["gaps"]["size"] == 0.5 and r["gaps"]["empty"] == 0.5 and r["overall"]["coverage"] == 0.5
    with pytest.raises(ValueError, match="differ in length"):
        metrics.group_report(sets, y[:2], g)


def test_disparate_impact():
    acc = {"control": {0: 0.6, 1: 0.6}, "marginal": {0: 0.8, 1: 0.65}, "ess": {0: 0.7, 1: 0.68}}
    out = metrics.disparate_impact(acc)
    assert out["delta"]["marginal"] == pytest.approx({0: 0.2, 1: 0.05})
    assert out["Delta"]["marginal"] == pytest.approx(0.15) and out["Delta"]["ess"] == pytest.approx(0.02)
    with pytest.raises(ValueError, match="control"):
        metrics.disparate_impact({"marginal": {0: 1.0}})


def test_bootstrap_ci_brackets_estimate():
    rng = np.random.default_rng(0)
    P = 40
    counts = rng.integers(20, 30, size=(2 * P, 2)).astype(float)
    rate = np.where(np.arange(2 * P)[:, None] < P, [0.6, 0.6], [0.9, 0.7])
    hits = rng.binomial(counts.astype(int), rate).astype(float)
    treatment = np.array(["control"] * P + ["marginal"] * P)
    out = metrics.bootstrap_disparate_impact(hits, counts, treatment, [0, 1], n_boot=500, rng=rng)["marginal"]
    assert out["Delta_low"] <= out["Delta"] <= out["Delta_high"]
    assert out["Delta_low"] > 0.05  # true Delta = 0.2
    assert out["delta_low"][0] <= out["delta"][0] <= out["delta_high"][0]


def test_evaluate_sets_before_and_after_filling():
    from iclr25.fair_conformal_sets.decision import SimulatedDecisionMaker

    sets = np.array([[1, 0, 0], [0, 0, 0], [0, 1, 1], [1, 1, 0]], bool)
    S = np.array([[0.1, 0.5, 0.9], [0.8, 0.2, 0.6], [0.9, 0.1, 0.2], [0.3, 0.4, 0.9]])
    y, g = np.array([0, 1, 2, 2]), np.array([0, 0, 1, 1])
    dm = SimulatedDecisionMaker(K=3, skill=0.5, override=0.5, adopt_slope=0.0)
    e = metrics.evaluate_sets(sets, S, y, g, dm, control=[0.5, 0.5])
    assert e["coverage"] == 0.5 and e["size"] == 1.25
    assert e["empty_g"] == [0.5, 0.0] and e["empty_filled_g"] == [0.0, 0.0]
    assert e["coverage_g"] == [0.5, 0.5] and e["coverage_filled_g"] == [1.0, 0.5]
    # filled sets {0}, {1} (group 0, both covered: A = 1), {1, 2} (covered, A = 0.5 + 0.5 / 2) and {0, 1} (missed,
    # A = kappa o = 0.25): A = kappa (c + (1 - c) o) + (1 - kappa) c / s with kappa = o = 0.5 and every set adopted
    assert e["accuracy_g"] == pytest.approx([1.0, 0.5])
    assert e["accuracy_g"] == metrics.group_accuracy(dm, metrics.fill_empty_with_top1(sets, S), y, g)
    assert e["delta_g"] == pytest.approx([0.5, 0.0]) and e["Delta"] == pytest.approx(0.5)
    assert "Delta" not in metrics.evaluate_sets(sets, S, y, g, dm)
