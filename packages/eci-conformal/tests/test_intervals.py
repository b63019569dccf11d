"""The interval wrapper and method registry (intervals.py)."""

from __future__ import annotations

import numpy as np
import pytest

from iclr25.eci_conformal.cli import METHOD_NAMES
from iclr25.eci_conformal.intervals import METHODS, OnlineIntervals, interval_from_scores, make_method
from iclr25.eci_conformal.methods import eci


@pytest.fixture
def series():
    rng = np.random.default_rng(0)
    y = np.cumsum(rng.standard_normal(600))
    yhat = np.r_[0.0, y[:-1]]
    return y, yhat


def test_signed_runs_two_sides_at_half_alpha(series):
    y, yhat = series
    lo, hi = interval_from_scores("eci", y, yhat, 0.1, lr=0.1)
    q_lo, q_hi = eci(yhat - y, 0.05, 0.1), eci(y - yhat, 0.05, 0.1)
    np.testing.assert_allclose(np.minimum(yhat - q_lo, yhat + q_hi), lo)
    np.testing.assert_allclose(np.maximum(yhat - q_lo, yhat + q_hi), hi)
    assert np.all(hi >= lo)  # the official repair swaps crossed ends
    cov = np.mean((lo <= y) & (y <= hi))
    assert abs(cov - 0.9) < 0.03


def test_abs_score_and_factory(series):
    y, yhat = series
    lo, hi = interval_from_scores(lambda a: make_method("ogd", a, 0.5), y, yhat, 0.2, score="abs")
    np.testing.assert_allclose(hi - yhat, yhat - lo)
    with pytest.raises(ValueError, match="score"):
        interval_from_scores("eci", y, yhat, 0.1, lr=0.1, score="cqr")  # type: ignore[arg-type]
    bad = y.copy()
    bad[7] = np.nan
    with pytest.raises(ValueError, match="y must be finite; got nan at index 7"):
        interval_from_scores("eci", bad, yhat, 0.1, lr=0.1)
    with pytest.raises(ValueError, match="yhat must be finite"):
        OnlineIntervals("eci", 0.1, lr=0.1).fit_predict(y, np.full_like(y, np.inf))


def test_streaming_wrapper_equals_batch(series):
    y, yhat = series
    for method, lr in (("eci_integral", 0.5), ("aci", 0.01), ("dtaci", None)):
        model = OnlineIntervals(method, 0.1, lr=lr)
        lo, hi = model.fit_predict(y, yhat)
        lo2, hi2 = interval_from_scores(method, y, yhat, 0.1, lr=lr)
        np.testing.assert_array_equal(lo, lo2)
        np.testing.assert_array_equal(hi, hi2)


@pytest.mark.parametrize("name", METHODS)
def test_every_registered_method_runs(series, name):
    y, yhat = series
    lo, hi = interval_from_scores(name, y[:300], yhat[:300], 0.1, lr=0.05 if "aci" in name else 0.5)
    assert lo.shape == (300,) and np.all(hi >= lo)


def test_registry_errors_and_cli_names():
    assert tuple(METHODS) == METHOD_NAMES
    with pytest.raises(ValueError, match="unknown method"):
        make_method("foo", 0.1, 0.1)
    with pytest.raises(ValueError, match="learning rate"):
        make_method("eci", 0.1)
