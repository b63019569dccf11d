"""The claim gate: the quick preset, asserting every gated claim with its margin."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from iclr25.eci_conformal.reproduce import ECI_FAMILY, PRESETS, _Grid, claims, load_grid, run, select_lr
from iclr25.shared.results import Report

RESULTS = Path(__file__).resolve().parents[1] / "results" / "quick"


def test_select_lr_rule():
    g = _Grid()
    rows = {1.0: ([0.90, 0.90], 5.0), 0.5: ([0.885, 0.9], 4.0), 0.1: ([0.89, 0.89], 4.5)}
    for lr, (covs, width) in rows.items():
        for c in covs:
            g.add(("m", lr), {"coverage": c, "avg_width": width, "median_width": width, "longest_miss_run": 1}, None)
    # 0.5 has mean coverage 0.8925 >= 0.89 and the smallest width
    assert select_lr(g, "m", (1.0, 0.5, 0.1), 0.9, 0.89) == 0.5
    assert select_lr(g, "m", (1.0, 0.5, 0.1), 0.9, 0.895) == 1.0
    assert select_lr(g, "m", (1.0, 0.5, 0.1), 0.9, 0.99) == 1.0  # none qualifies: closest coverage


def test_claims_judge_the_committed_measurements_as_committed():
    """`claims` holds every threshold: on the committed quick metrics it gives the committed claims exactly."""
    report = Report.read(RESULTS)
    assert claims(report.metrics, PRESETS["quick"], load_grid(RESULTS)) == report.claims


def test_claims_fail_on_a_broken_measurement():
    report = Report.read(RESULTS)
    grid = load_grid(RESULTS)
    grid["drift/signed"]["eci"]["0.5"]["coverage"] = 0.8  # an ECI variant that lost coverage
    metrics = dict(report.metrics, validity_bounded_stream={"official_lr0.05": 0.95, "accumulate_lr0.05": 0.8})
    failed = {c.name for c in claims(metrics, PRESETS["quick"], grid) if c.gated and not c.holds}
    assert failed == {"coverage_drift", "validity_official_update"}


@pytest.mark.claims
def test_quick_claims(tmp_path):
    config = PRESETS["quick"]
    report = run("quick", tmp_path / "quick", config=config)
    assert not report.failed_gated, [c.name for c in report.failed_gated]
    grid = load_grid(tmp_path / "quick")
    target = 1 - config.alpha
    for setting in config.settings:
        # every ECI variant, every grid lr: |coverage - 0.9| <= 0.015 (the gated claim, re-checked from the grid)
        for m in ECI_FAMILY:
            for lr in config.eci_lrs:
                cov = grid[f"{setting}/signed"][m][str(lr)]["coverage"]
                assert abs(cov - target) <= config.coverage_margin, (setting, m, lr, cov)
        ratio = report.claim(f"width_noninferior_{setting}").ours
        assert ratio <= config.width_margin
        # the accumulating ablation is what the official update avoids: it loses coverage here too
        acc = [grid[f"{setting}/signed"]["eci_accumulate"][str(lr)]["coverage"] for lr in config.eci_lrs]
        assert max(acc) < 0.88
    val = report.metrics["validity_bounded_stream"]
    assert all(abs(v - target) <= 0.005 for k, v in val.items() if k.startswith("official"))
    # throughput is reported, not gated: wall clock on a shared machine; the CPU-time speed tests are unit tests
    assert all(math.isfinite(v) for v in report.throughput.values())
    assert np.isfinite(report.claim("coverage_mix1").ours)


def test_real_data_benchmark_on_generated_files(tmp_path):
    from iclr25.eci_conformal import data
    from iclr25.eci_conformal.reproduce import real_data_benchmark

    rng = np.random.default_rng(0)
    n = 260
    lines = ["Date,Open,High,Low,Close,Volume,Name"]
    for name in ("AMZN", "GOOGL"):
        price = 100 * np.exp(np.cumsum(0.01 * rng.standard_normal(n)))
        lines += [f"{np.datetime64('2006-01-03') + i},{p:.4f},1,1,1,100,{name}" for i, p in enumerate(price)]
    (tmp_path / "all_stocks_2006-01-01_to_2018-01-01.csv").write_text("\n".join(lines) + "\n")
    X, y = data.make_regression("changepoint", n, seed=0)
    data.save_changepoint_csv(tmp_path / "changepoint.csv", X, y)
    (tmp_path / "proc" / "changepoint_test").mkdir(parents=True)
    np.savez(tmp_path / "proc" / "changepoint_test" / "ar.npz", forecasts=np.zeros(n))
    res = real_data_benchmark(tmp_path, PRESETS["quick"])
    assert set(res) == {"AMZN", "GOOGL", "changepoint"}
    assert res["changepoint"]["forecast"] == "cached ar.npz"
    assert res["AMZN"]["forecast"] == "AR(3) on log y"
    for r in res.values():
        assert 0.7 < r["eci"]["coverage"] <= 1.0
        assert r["width_ratio_best_eci_over_best_baseline"] > 0
    with pytest.raises(ValueError, match="not a folder"):
        real_data_benchmark(tmp_path / "nope", PRESETS["quick"])
