"""Generators, forecasters and real-format loaders (data.py), loaders on tiny generated files."""

from __future__ import annotations

import csv

import numpy as np
import pytest

from iclr25.eci_conformal import data


@pytest.mark.parametrize("setting", data.SETTINGS)
def test_generators_shapes_and_determinism(setting):
    X, y = data.make_regression(setting, 600, seed=3)
    assert X.shape == (600, 4) and y.shape == (600,)
    X2, y2 = data.make_regression(setting, 600, seed=3)
    np.testing.assert_array_equal(y, y2)
    np.testing.assert_array_equal(X, X2)
    assert not np.array_equal(y, data.make_regression(setting, 600, seed=4)[1])


def test_changepoint_betas_switch():
    X, y = data.make_regression("changepoint", 2000, seed=0)
    for (a, b), beta in zip([(0, 500), (500, 1500), (1500, 2000)], data.BETAS, strict=True):
        coef = np.linalg.lstsq(X[a:b], y[a:b], rcond=None)[0]
        np.testing.assert_allclose(coef, beta, atol=0.15)


def test_hetero_noise_blocks():
    X, y = data.make_regression("hetero", 2000, seed=0)
    resid = y - X @ data.BETAS[0]
    assert np.std(resid[:250]) == pytest.approx(1.0, abs=0.15)
    assert np.std(resid[250:500]) == pytest.approx(3.0, abs=0.4)


def test_mix1_and_bounded_stream():
    s = data.make_mix1(seed=0)
    assert s.shape == (4000,)
    assert s[:1000].mean() == pytest.approx(0.5, abs=0.05)
    b = data.make_bounded_stream(5000, seed=1)
    assert b.min() >= 0.0 and b.max() <= 1.2


def test_rolling_ols_matches_lstsq():
    X, y = data.make_regression("drift", 300, seed=1)
    yhat = data.rolling_ols(X, y, window=50, min_points=10)
    assert np.all(yhat[:10] == 0)
    for t in (10, 37, 120, 299):
        A = np.c_[np.ones(t - max(0, t - 50)), X[max(0, t - 50) : t]]
        coef = np.linalg.lstsq(A, y[max(0, t - 50) : t], rcond=None)[0]
        assert yhat[t] == pytest.approx(np.r_[1.0, X[t]] @ coef, abs=1e-6)


def test_rolling_ar_is_causal_and_fits_ar_process():
    rng = np.random.default_rng(0)
    y = np.zeros(800)
    for t in range(2, 800):
        y[t] = 0.6 * y[t - 1] - 0.3 * y[t - 2] + rng.standard_normal()
    yhat = data.rolling_ar(y, 3, window=200)
    assert np.mean((y[300:] - yhat[300:]) ** 2) < 1.2  # near the noise variance 1
    y2 = y.copy()
    y2[500:] += 100.0  # changing the future must not change earlier forecasts
    np.testing.assert_array_equal(data.rolling_ar(y2, 3, window=200)[:501], yhat[:501])
    np.testing.assert_array_equal(data.naive_forecast(y)[1:], y[:-1])


def _write(path, header, rows):
    with path.open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow(header)
        w.writerows(rows)
    return path


def test_load_djia(tmp_path):
    rng = np.random.default_rng(0)
    rows = []
    for name in ("AMZN", "GOOGL"):
        for i in range(25):
            price = "" if (name == "AMZN" and i == 7) else f"{100 + i + rng.random():.3f}"
            rows.append([f"2006-01-{i + 1:02d}", price, "1", "1", "1", "100", name])
    rows = rows[::-1]  # unsorted dates
    path = _write(tmp_path / "all_stocks.csv", ["Date", "Open", "High", "Low", "Close", "Volume", "Name"], rows)
    y = data.load_djia(path, "AMZN")
    assert y.shape == (25,) and np.isfinite(y).all() and np.all(np.diff(y) > 0)
    assert data.load_djia(path, "GOOGL").shape == (25,)
    with pytest.raises(ValueError, match="ticker"):
        data.load_djia(path, "MSFT")


def test_load_elec2(tmp_path):
    header = ["date", "day", "period", "nswprice", "nswdemand", "vicprice", "vicdemand", "transfer", "class"]
    rows = [[0, 2, i / 48, 0.05, (i % 48) / 48, 0.003, 0.4, 0.4, "UP" if i % 2 else "DOWN"] for i in range(50)]
    path = _write(tmp_path / "elec2.csv", header, rows)
    y = data.load_elec2(path)
    assert y.shape == (50,) and np.isfinite(y).all()
    assert data.load_elec2(path, n=20).shape == (20,)


def test_load_climate_with_unnamed_index(tmp_path):
    header = ["", "date", "meantemp", "humidity", "wind_speed", "meanpressure"]
    rows = [
        [i, f"2013-02-{(i % 28) + 1:02d}" if i < 28 else f"2013-03-{i - 27:02d}", 10 + i, 80, 2, 1015]
        for i in range(50)
    ]
    rows[5][2] = "nan"
    path = _write(tmp_path / "DailyDelhiClimate.csv", header, rows)
    y = data.load_climate(path)
    assert y.shape == (50,) and np.isfinite(y).all()
    assert y[5] == pytest.approx(15.0)  # interpolated


def test_changepoint_csv_round_trip(tmp_path):
    X, y = data.make_regression("changepoint", 50, seed=0)
    path = data.save_changepoint_csv(tmp_path / "changepoint.csv", X, y)
    assert path.read_text().splitlines()[0] == "timestamp,X1,X2,X3,X4,y"
    X2, y2 = data.load_changepoint_csv(path)
    np.testing.assert_allclose(X2, X, rtol=1e-9)
    np.testing.assert_allclose(y2, y, rtol=1e-9)


def test_forecasts_npz(tmp_path):
    f = np.r_[np.zeros(3), np.arange(47.0)]
    np.savez(tmp_path / "ar.npz", forecasts=f)
    np.testing.assert_array_equal(data.load_forecasts_npz(tmp_path / "ar.npz"), f)
    np.savez(tmp_path / "bad.npz", other=f)
    with pytest.raises(ValueError, match="forecasts"):
        data.load_forecasts_npz(tmp_path / "bad.npz")


def test_loader_errors(tmp_path):
    with pytest.raises(FileNotFoundError):
        data.load_column(tmp_path / "missing.csv", "y")
    path = _write(tmp_path / "x.csv", ["a", "b"], [[1, "x"]])
    with pytest.raises(ValueError, match="column 'y'"):
        data.load_column(path, "y")
    with pytest.raises(ValueError, match="not a number"):
        data.load_column(path, "b")
    with pytest.raises(ValueError, match="setting"):
        data.make_regression("nope")
    with pytest.raises(ValueError, match="no finite"):
        data.interpolate_gaps([np.nan, np.nan])
