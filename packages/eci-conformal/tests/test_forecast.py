"""The paper's forecasters and the Theta scorecaster (forecast.py), Conformal PID and ECI + scorecaster."""

from __future__ import annotations

import sys

import numpy as np
import pytest

from iclr25.eci_conformal import forecast
from iclr25.eci_conformal.baselines import ConformalPID
from iclr25.eci_conformal.intervals import make_method
from iclr25.eci_conformal.methods import ECI, run_online
from iclr25.eci_conformal.reference import eci_reference, eci_scorecaster_reference, pid_reference


@pytest.fixture
def short_scores() -> np.ndarray:
    """A short signed score stream with a trend and a level shift (few Theta fits after burn-in 100)."""
    rng = np.random.default_rng(3)
    s = rng.standard_normal(130) + np.linspace(0, 2, 130)
    s[110:] += 3
    return s


def test_ar_forecasts_match_autoreg_and_are_causal():
    pytest.importorskip("statsmodels")
    from statsmodels.tsa.ar_model import AutoReg

    rng = np.random.default_rng(0)
    y = np.zeros(120)
    for t in range(3, 120):
        y[t] = 0.5 + 0.6 * y[t - 1] - 0.2 * y[t - 2] + 0.1 * y[t - 3] + rng.standard_normal()
    yhat = forecast.ar_forecasts(y)
    assert (yhat[: forecast.AR_START] == 0).all()
    for t in (30, 31, 77, 119):  # refit on y_0..y_{t-1}, forecast y_t
        expected = AutoReg(y[:t], 3, trend="c").fit().forecast(1)[0]
        assert yhat[t] == pytest.approx(expected, rel=1e-7, abs=1e-9)
    changed = y.copy()
    changed[60:] += 100.0
    np.testing.assert_array_equal(forecast.ar_forecasts(changed)[:61], yhat[:61])  # y_60 unseen by forecast 60
    log_fc = forecast.ar_forecasts(np.exp(y / 10), log=True)
    assert (log_fc[:30] == 1).all() and log_fc[50] == pytest.approx(np.exp(forecast.ar_forecasts(y / 10)[50]))


def test_theta_forecasts_and_scorecaster_equal_statsmodels(short_scores):
    pytest.importorskip("statsmodels")
    from statsmodels.tsa.forecasting.theta import ThetaModel

    y = 20 + short_scores
    fc = forecast.theta_forecasts(y[:40], period=5)
    assert (fc[:3] == 0).all()
    assert fc[25] == pytest.approx(ThetaModel(y[:25], period=5).fit().forecast(1).iloc[0])
    caster = forecast.ThetaModelScorecaster(period=5)
    assert caster.forecast() == 0.0
    for v in short_scores[:50]:
        caster.push(v)
    assert caster.forecast() == pytest.approx(
        float(np.asarray(ThetaModel(short_scores[:50], period=5).fit().forecast(1))[0])
    )
    g = forecast.theta_scorecasts(short_scores, period=5, burn_in=100)
    assert (g[:101] == 0).all() and g[-1] == 0 and (g[101:-1] != 0).all()


def test_pid_with_theta_scorecaster_matches_official_loop(short_scores):
    pytest.importorskip("statsmodels")
    expected = pid_reference(short_scores, 0.05, 0.1, window=100, KI=10.0, Csat=5.0, scorecast_period=5)
    streaming = make_method("conformal_pid", 0.05, 0.1, window=100, KI=10.0, Csat=5.0, seasonal_period=5)
    np.testing.assert_allclose(run_online(streaming, short_scores), expected, rtol=0, atol=1e-8)
    g = forecast.theta_scorecasts(short_scores, period=5, burn_in=100)  # computed once, replayed per lr
    replay = ConformalPID(0.05, 0.1, window=100, KI=10.0, Csat=5.0, scorecaster=lambda: forecast.ReplayScorecaster(g))
    np.testing.assert_allclose(run_online(replay, short_scores), expected, rtol=0, atol=1e-8)
    assert np.abs(expected - pid_reference(short_scores, 0.05, 0.1, window=100, KI=10.0, Csat=5.0)).max() > 0.01


def test_eci_with_scorecaster_matches_reference(short_scores):
    g = np.sin(np.arange(len(short_scores)))  # any scorecast stream
    m = ECI(0.05, 0.5, window=100, scorecaster=lambda: forecast.ReplayScorecaster(g), burn_in=100)
    expected = eci_scorecaster_reference(short_scores, 0.05, 0.5, g, window=100, burn_in=100)
    np.testing.assert_allclose(run_online(m, short_scores), expected, rtol=0, atol=1e-10)
    # zero scorecasts: plain ECI; the scorecast only enters after burn-in
    zero = ECI(0.05, 0.5, window=100, scorecaster=lambda: forecast.ReplayScorecaster(np.zeros(130)))
    np.testing.assert_allclose(run_online(zero, short_scores), eci_reference(short_scores, 0.05, 0.5), atol=1e-10)
    np.testing.assert_array_equal(expected[:102], eci_reference(short_scores, 0.05, 0.5)[:102])


def test_missing_statsmodels_is_one_line_naming_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "statsmodels.tsa.forecasting", None)  # import fails as if not installed
    monkeypatch.setitem(sys.modules, "statsmodels.tsa.forecasting.theta", None)
    for call in (
        lambda: forecast.ThetaModelScorecaster(5),
        lambda: forecast.theta_forecasts(np.arange(10.0)),
        lambda: make_method("conformal_pid", 0.1, 0.1),
    ):
        with pytest.raises(ImportError, match=r"pip install 'iclr25-eci-conformal\[forecast\]'") as err:
            call()
        assert "\n" not in str(err.value) and err.value.name == "statsmodels"


def test_cli_run_pid_without_statsmodels_is_one_line(monkeypatch, tmp_path, capsys):
    from iclr25.eci_conformal.cli import main

    monkeypatch.setitem(sys.modules, "statsmodels.tsa.forecasting", None)
    monkeypatch.setitem(sys.modules, "statsmodels.tsa.forecasting.theta", None)
    csv = tmp_path / "s.csv"
    csv.write_text("y\n" + "\n".join(str(v) for v in np.random.default_rng(0).standard_normal(150)) + "\n")
    code = main(
        [
            "run",
            "--data",
            str(csv),
            "--column",
            "y",
            "--method",
            "conformal_pid",
            "--lr",
            "0.1",
            "--out",
            str(tmp_path / "o"),
        ]
    )
    err = capsys.readouterr().err.strip()
    assert code == 2 and "iclr25-eci-conformal[forecast]" in err and len(err.splitlines()) == 1


def test_bad_forecast_arguments():
    with pytest.raises(ValueError, match="finite 1-D"):
        forecast.ar_forecasts(np.array([1.0, np.nan] * 20))
    with pytest.raises(ValueError, match="positive series"):
        forecast.ar_forecasts(-np.ones(50), log=True)
    with pytest.raises(ValueError, match="start"):
        forecast.ar_forecasts(np.ones(50), start=4)
    pytest.importorskip("statsmodels")
    with pytest.raises(ValueError, match="integers >= 1"):
        forecast.ThetaModelScorecaster(0)


def test_forecast_cache_layout(tmp_path):
    from iclr25.eci_conformal.data import load_forecasts_npz

    path = forecast.save_forecasts_npz(forecast.forecast_file(tmp_path, "elec2", "ar"), np.arange(5.0))
    assert path == tmp_path / "proc" / "elec2_test" / "ar.npz"
    assert list(np.load(path).keys()) == ["forecasts"]
    np.testing.assert_array_equal(load_forecasts_npz(path), np.arange(5.0))
