"""The scikit-learn style front end equals the functional forms."""

from __future__ import annotations

import numpy as np
import pytest

from iclr25.fair_conformal_sets import ConformalSets, calibrate, data, scores


@pytest.fixture
def split():
    cal, test, _ = data.synthetic_split(3, 1000, 2000)
    return cal, test


@pytest.mark.parametrize("mode", ["marginal", "mondrian", "ess"])
def test_lac_predictor_equals_functions(split, mode):
    cal, test = split
    pred = ConformalSets("lac", mode, 0.1, seed=0).fit(cal.probs(), cal.labels, cal.groups)
    C = pred.predict_set(test.probs(), test.groups)
    Sc, St = scores.lac(cal.probs()), scores.lac(test.probs())
    s = scores.true_label(Sc, cal.labels)
    if mode == "marginal":
        expected = calibrate.marginal(s, St, 0.1)
    elif mode == "mondrian":
        expected = calibrate.mondrian(s, cal.groups, St, test.groups, 0.1)
    else:
        expected = calibrate.equalized_set_size(
            Sc, cal.labels, cal.groups, St, test.groups, 0.1, rng=np.random.default_rng(0)
        )
    assert C.shape == (len(test), 10) and C.dtype == bool
    assert (expected == C).all()


@pytest.mark.parametrize("score", ["aps", "raps", "saps"])
def test_randomised_scores_cover(split, score):
    cal, test = split
    C = (
        ConformalSets(score, "mondrian", 0.1, seed=1)
        .fit(cal.probs(), cal.labels, cal.groups)
        .predict_set(test.probs(), test.groups)
    )
    assert 0.87 < C[np.arange(len(test)), test.labels].mean() < 0.93


def test_fill_and_temperature(split):
    cal, test = split
    pred = ConformalSets("lac", "mondrian", fill_empty=True, temperature=0.5, seed=0)
    C = pred.fit(cal.probs(), cal.labels, cal.groups).predict_set(test.probs(), test.groups)
    assert C.any(axis=1).all()


def test_errors(split):
    cal, test = split
    with pytest.raises(ValueError, match="mode must be one of"):
        ConformalSets("lac", "classwise")
    with pytest.raises(ValueError, match="needs the protected group"):
        ConformalSets("lac", "mondrian").fit(cal.probs(), cal.labels)
    with pytest.raises(ValueError, match="before predict_set"):
        ConformalSets().predict_set(test.probs())
    with pytest.raises(ValueError, match="smoothing"):
        ConformalSets("lac", "ess", smoothing=True)
