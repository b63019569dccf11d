"""Simulated decision-maker (spec §9.6)."""

from __future__ import annotations

import numpy as np
import pytest

from iclr25.fair_conformal_sets import calibrate, data, scores
from iclr25.fair_conformal_sets.decision import SimulatedDecisionMaker, simulate_study
from iclr25.fair_conformal_sets.reference import expected_accuracy_ref


@pytest.fixture
def filled_sets():
    cal, test, _ = data.synthetic_split(0, 2000, 100_000)
    St = scores.lac(test.probs())
    C = calibrate.marginal(scores.true_label(scores.lac(cal.probs()), cal.labels), St, 0.1)
    return calibrate.fill_empty_with_top1(C, St), test.labels, test.groups


def test_closed_form_matches_monte_carlo(filled_sets):
    C, y, g = filled_sets
    dm = SimulatedDecisionMaker(K=10, skill={0: 0.6, 1: 0.45})
    rng = np.random.default_rng(0)
    for shown in (C, None):
        closed = dm.expected_accuracy(shown, y, g)
        sampled = dm.sample(shown, y, g, rng) == y
        assert abs(closed.mean() - sampled.mean()) < 0.005
        for grp in (0, 1):
            assert abs(closed[g == grp].mean() - sampled[g == grp].mean()) < 0.01
    adopt = dm.expected_adoption(C, y, g).mean()
    decisions = dm.sample(C, y, g, rng)
    assert abs(adopt - C[np.arange(len(y)), decisions].mean()) < 0.005


def test_closed_form_matches_reference(filled_sets):
    C, y, g = filled_sets
    C, y, g = C[:300], y[:300], g[:300]
    skill = {0: 0.7, 1: 0.5}
    dm = SimulatedDecisionMaker(K=10, skill=skill, override=0.3, adopt_slope=0.2)
    np.testing.assert_allclose(dm.expected_accuracy(C, y, g), expected_accuracy_ref(C, y, g, skill, 0.3, 0.2, 10))
    np.testing.assert_allclose(dm.expected_accuracy(None, y, g), expected_accuracy_ref(None, y, g, skill, 0.3, 0.2, 10))


def test_special_cases():
    y = np.array([0, 3, 7])
    g = np.zeros(3, int)
    dm = SimulatedDecisionMaker(K=10, skill=0.56, adopt_slope=0.0)
    control = 0.56 + 0.44 / 10
    assert np.allclose(dm.expected_accuracy(np.ones((3, 10), bool), y, g), control)  # all labels, beta = 0
    single = np.zeros((3, 10), bool)
    single[np.arange(3), y] = True
    assert np.allclose(dm.expected_accuracy(single, y, g), 1.0)  # singletons holding y, beta = 0
    assert np.allclose(dm.expected_accuracy(None, y, g), control)


def test_accuracy_is_per_item_not_a_plug_in():
    """E[c/|C|] differs from coverage / mean size: two items, sets {y} and {y, a, b}."""
    y = np.array([0, 0])
    C = np.zeros((2, 10), bool)
    C[0, 0] = True
    C[1, :3] = True
    dm = SimulatedDecisionMaker(K=10, skill=0.0, adopt_slope=0.0)
    assert np.isclose(dm.expected_accuracy(C, y, np.zeros(2, int)).mean(), (1 + 1 / 3) / 2)
    assert not np.isclose((1 + 1 / 3) / 2, 1.0 / 2.0)


def test_bad_input():
    with pytest.raises(ValueError, match="skill"):
        SimulatedDecisionMaker(K=10, skill=1.5)
    dm = SimulatedDecisionMaker(K=3)
    with pytest.raises(ValueError, match="non-empty"):
        dm.expected_accuracy(np.zeros((1, 3), bool), np.array([0]), np.array([0]))
    with pytest.raises(ValueError, match="no skill"):
        SimulatedDecisionMaker(K=3, skill={0: 0.5}).kappa(np.array([1]))


def test_simulated_study_tallies(filled_sets):
    C, y, g = filled_sets
    dm = SimulatedDecisionMaker(K=10, skill={0: 0.6, 1: 0.45})
    shown = {"control": None, "marginal": C}
    hits, counts, treatment = simulate_study(
        dm, shown, y, g, participants=40, trials=50, n_groups=2, rng=np.random.default_rng(0)
    )
    assert hits.shape == counts.shape == (80, 2) and treatment.tolist() == ["control"] * 40 + ["marginal"] * 40
    assert (counts.sum(axis=1) == 50).all() and (hits <= counts).all()
    for t, shown_t in shown.items():
        rows = treatment == t
        closed = dm.expected_accuracy(shown_t, y, g).mean()
        assert abs(hits[rows].sum() / counts[rows].sum() - closed) < 0.03
