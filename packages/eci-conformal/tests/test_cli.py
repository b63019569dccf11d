"""The `iclr25-eci-conformal` CLI: help, the run verb, the reproduce verb, bad input."""

from __future__ import annotations

import json

import numpy as np
import pytest

from iclr25.eci_conformal.cli import main
from iclr25.shared.results import Report


@pytest.fixture
def series_csv(tmp_path):
    y = np.cumsum(np.random.default_rng(0).standard_normal(400))
    path = tmp_path / "series.csv"
    path.write_text("date,value,fc\n" + "\n".join(f"d{i},{v},{v + 0.1}" for i, v in enumerate(y)) + "\n")
    return path


def test_run_writes_metrics_and_plot(series_csv, tmp_path, capsys):
    out = tmp_path / "run"
    assert main(["run", "--data", str(series_csv), "--column", "value", "--lr", "0.1", "--out", str(out)]) == 0
    info = json.loads((out / "metrics.json").read_text())
    assert info["method"] == "eci" and 0.8 < info["coverage"] <= 1.0
    assert (out / "intervals.png").stat().st_size > 0
    assert len((out / "intervals.csv").read_text().splitlines()) == 401
    assert "coverage" in capsys.readouterr().out
    assert json.loads((out / ".iclr25-run.json").read_text())["status"] == "complete"
    # the run folder is not overwritten silently; --overwrite replaces it
    assert main(["run", "--data", str(series_csv), "--column", "value", "--lr", "0.1", "--out", str(out)]) == 2
    assert "already holds a complete run" in capsys.readouterr().err
    argv = ["run", "--data", str(series_csv), "--column", "value", "--lr", "0.5", "--out", str(out), "--overwrite"]
    assert main([*argv, "--quiet"]) == 0
    assert json.loads((out / "metrics.json").read_text())["lr"] == 0.5
    args = ["run", "--data", str(series_csv), "--column", "value", "--yhat-column", "fc", "--method", "aci"]
    assert main([*args, "--lr", "0.01", "--out", str(tmp_path / "r2")]) == 0


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--column", "nope", "--lr", "0.1"], "column 'nope'"),
        (["--column", "value"], "--lr is required"),
        (["--column", "value", "--lr", "0.1", "--alpha", "1.5"], "--alpha"),
        (["--column", "value", "--lr", "-1"], "lr must be"),
        (["--column", "value", "--lr", "0.1", "--burn-in", "1000"], "need more"),
    ],
)
def test_run_bad_input_is_one_line(series_csv, tmp_path, capsys, extra, message):
    code = main(["run", "--data", str(series_csv), *extra, "--out", str(tmp_path / "o")])
    err = capsys.readouterr().err.strip()
    assert code == 2
    assert len(err.splitlines()) == 1 and message in err


def test_missing_file_and_unknown_method(tmp_path, capsys):
    assert main(["run", "--data", str(tmp_path / "none.csv"), "--column", "y", "--lr", "0.1"]) == 2
    assert "no such file" in capsys.readouterr().err
    with pytest.raises(SystemExit) as e:
        main(["run", "--data", "x.csv", "--column", "y", "--method", "magic"])
    assert e.value.code == 2


def test_reproduce_small_override(tmp_path, capsys):
    out = tmp_path / "rep"
    overrides = ["seeds=1", "settings=changepoint", "extras=false", "mix1_seeds=0", "validity_n=4000"]
    code = main(["reproduce", "--scale", "quick", "--seed", "3", "--out", str(out), *overrides])
    report = Report.read(out)
    assert report.figures and all((out / f).stat().st_size > 0 for f in report.figures)
    assert code == (1 if report.failed_gated else 0)
    assert report.config["seeds"] == 1
    # the recorded command reruns this run: the seed and every override
    assert report.command.startswith("iclr25-eci-conformal reproduce --scale quick --seed 3 ")
    assert {"seeds=1", "settings=changepoint", "extras=False", "validity_n=4000"} <= set(report.command.split())
    assert {c.name for c in report.claims} >= {"coverage_changepoint", "width_noninferior_changepoint"}
    assert "results written to" in capsys.readouterr().out
    assert main(["reproduce", "--out", str(out), *overrides]) == 2  # a finished run is never replaced silently
    assert "already holds a complete run" in capsys.readouterr().err
    assert main(["reproduce", "--out", str(tmp_path / "x"), "settings=mars"]) == 2
    assert main(["reproduce", "--out", str(tmp_path / "y"), "seeds=abc"]) == 2


def test_run_djia_ticker(tmp_path):
    rows = ["Date,Open,High,Low,Close,Volume,Name"]
    prices = 100 + np.cumsum(np.random.default_rng(1).standard_normal(300))
    rows += [
        f"{np.datetime64('2006-01-03') + i},{p:.3f},1,1,1,10,{n}"
        for n in ("AMZN", "MSFT")
        for i, p in enumerate(prices)
    ]
    path = tmp_path / "all_stocks.csv"
    path.write_text("\n".join(rows) + "\n")
    out = tmp_path / "djia"
    args = ["run", "--data", str(path), "--ticker", "AMZN", "--column", "Open", "--lr", "0.1", "--out", str(out)]
    assert main(args) == 0
    info = json.loads((out / "metrics.json").read_text())
    assert info["n"] == 300 and info["ticker"] == "AMZN"
    assert main([*args[:-2], "--ticker", "IBM", "--out", str(tmp_path / "x")]) == 2


def test_tables_verb_on_user_files_and_bad_input(tmp_path, capsys):
    from iclr25.eci_conformal.cli import TABLE_DATASETS, TABLE_FORECASTERS
    from iclr25.eci_conformal.forecast import FORECASTERS, forecast_file, save_forecasts_npz
    from iclr25.eci_conformal.tables import DATASETS

    assert TABLE_FORECASTERS == FORECASTERS and tuple(DATASETS) == TABLE_DATASETS
    n = 560
    temp = 25 + 7 * np.sin(2 * np.pi * np.arange(n) / 365) + np.random.default_rng(0).standard_normal(n)
    rows = [",date,meantemp,humidity,wind_speed,meanpressure"]
    rows += [f"{i},{np.datetime64('2013-01-01') + i},{v:.4f},60,5,1010" for i, v in enumerate(temp)]
    (tmp_path / "DailyDelhiClimateTrain.csv").write_text("\n".join(rows) + "\n")
    save_forecasts_npz(forecast_file(tmp_path, "daily-climate", "prophet"), np.concatenate([[0.0], temp[:-1]]))
    out = tmp_path / "t"
    argv = ["tables", "--data-dir", str(tmp_path), "--forecasters", "ar,prophet", "--no-scorecaster"]
    assert main([*argv, "--sf-ogd-normaliser", "official", "--out", str(out), "--quiet"]) == 0
    info = json.loads((out / "tables.json").read_text())
    assert info["sf_ogd_normaliser"] == "official"
    assert info["tables"]["daily-climate"]["prophet"]["forecast"] == "cached prophet.npz"
    assert "daily-climate" in capsys.readouterr().out
    for extra, message in (
        (["--forecasters", "arima"], "--forecasters takes a comma list"),
        (["--datasets", "mars"], "--datasets takes a comma list"),
        (["--scorecaster-refit", "0"], "--scorecaster-refit"),
        (["--data-dir", str(tmp_path / "none")], "is not a folder"),
    ):
        assert main(["tables", *extra, "--out", str(tmp_path / "bad")]) == 2
        err = capsys.readouterr().err.strip()
        assert len(err.splitlines()) == 1 and message in err
    assert not (tmp_path / "bad").exists()
