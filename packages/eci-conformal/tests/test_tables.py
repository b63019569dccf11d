"""The real-data tables (tables.py) on tiny generated files in the paper's formats, cached forecasts included."""

from __future__ import annotations

import json

import numpy as np
import pytest

from iclr25.eci_conformal import forecast, tables
from iclr25.eci_conformal.config import Config
from iclr25.eci_conformal.intervals import interval_from_scores, make_method

FAST = Config(c_values=(0.5, 1.0))


def test_generated_files_round_trip_through_the_loaders(tmp_path):
    tables.write_generated_files(tmp_path, seed=1)
    series = tables.find_series(tmp_path)
    assert {k: len(v) for k, v in series.items()} == {"AMZN": 3020, "GOOGL": 3020, "elec2": 2000, "daily-climate": 1575}
    assert all(np.isfinite(v).all() for v in series.values())
    assert series["elec2"].min() >= 0 and series["elec2"].max() <= 1  # nswdemand is normalised
    other = tables.find_series(tables.write_generated_files(tmp_path / "b", seed=2))
    assert not np.array_equal(series["AMZN"], other["AMZN"])  # the seed changes the series


def test_two_sided_equals_interval_from_scores():
    rng = np.random.default_rng(0)
    y = np.cumsum(rng.standard_normal(400))
    yhat = np.concatenate([[0.0], y[:-1]])
    lo, hi = tables.two_sided(lambda side: make_method("eci_cutoff", 0.05, 0.1, window=100), y, yhat)
    lo2, hi2 = interval_from_scores("eci_cutoff", y, yhat, 0.1, lr=0.1, window=100)
    np.testing.assert_array_equal(lo, lo2)
    np.testing.assert_array_equal(hi, hi2)


def test_table_uses_cached_forecasts_in_the_official_layout(tmp_path):
    rng = np.random.default_rng(0)
    n = 420
    demand = np.clip(0.4 + 0.1 * np.sin(2 * np.pi * np.arange(n) / 48) + 0.02 * rng.standard_normal(n), 0, 1)
    rows = ["date,day,period,nswprice,nswdemand,vicprice,vicdemand,transfer,class"]
    rows += [f"0,1,0.0,0.05,{v:.6f},0.003,0.42,0.41,UP" for v in demand]
    (tmp_path / "elec2.csv").write_text("\n".join(rows) + "\n")
    cached = np.concatenate([np.zeros(30), demand[29:-1]])  # last-value forecasts, zeros before t = 30
    forecast.save_forecasts_npz(forecast.forecast_file(tmp_path, "elec2", "ar"), cached)
    res = tables.benchmark(tmp_path, FAST, forecasters=("ar", "prophet"), scorecaster=False)
    t = res["elec2"]["ar"]
    assert t["forecast"] == "cached ar.npz" and t["n"] == n
    assert "skipped" in res["elec2"]["prophet"]
    assert set(t["selected"]) == {"eci", "eci_cutoff", "eci_integral", "aci", "ogd", "sf_ogd", "decay_ogd"}
    assert set(t["per_lr"]["ogd"]) == {"0.1", "0.05", "0.01", "0.005"}  # the elec2 config's OGD grid
    assert set(t["c_sweep"]) == {"0.5", "1"}
    # the selected ECI row is the grid row of its lr; coverage is measured on t > T_burnin = 300
    eci = t["selected"]["eci"]
    assert eci["coverage"] == t["per_lr"]["eci"][f"{eci['lr']:g}"]["coverage"]
    lo, hi = interval_from_scores("eci", demand, cached, 0.1, lr=eci["lr"], window=300)
    cov = np.mean(((lo <= demand) & (demand <= hi))[301:])
    assert eci["coverage"] == pytest.approx(cov)
    md = tables.markdown(res)
    assert "**elec2**" in md and "ECI-cutoff" in md and "prophet: skipped" in md


def test_table_with_scorecaster_and_run_tables(tmp_path):
    pytest.importorskip("statsmodels")
    rng = np.random.default_rng(1)
    n = 130
    price = 50 * np.exp(np.cumsum(0.02 * rng.standard_normal(n)))
    rows = ["Date,Open,High,Low,Close,Volume,Name"]
    rows += [f"{np.datetime64('2006-01-03') + i},{p:.4f},1,1,1,100,AMZN" for i, p in enumerate(price)]
    (tmp_path / "djia.csv").write_text("\n".join(rows) + "\n")
    info = tables.run_tables(tmp_path / "out", data_dir=tmp_path, forecasters=("ar",), datasets=("AMZN",), config=FAST)
    t = info["tables"]["AMZN"]["ar"]
    assert t["forecast"] == "AR(3) on log y"
    assert {"conformal_pid", "eci_scorecaster"} <= set(t["selected"])
    assert t["width_ratio_eci_scorecaster_over_eci"] > 0
    assert (tmp_path / "out" / "proc" / "AMZN_test" / "ar.npz").is_file()  # computed forecasts cached, official layout
    assert json.loads((tmp_path / "out" / "tables.json").read_text())["tables"]["AMZN"]["ar"]["n"] == n
    assert "Conformal PID" in (tmp_path / "out" / "tables.md").read_text()


def test_benchmark_errors(tmp_path):
    with pytest.raises(ValueError, match="not a folder"):
        tables.benchmark(tmp_path / "nope", FAST)
    with pytest.raises(ValueError, match="holds none"):
        tables.benchmark(tmp_path, FAST)
    tables.write_generated_files(tmp_path, names=("elec2",))
    with pytest.raises(ValueError, match="forecaster must be one of"):
        tables.benchmark(tmp_path, FAST, forecasters=("arima",))
