"""The claim gate: the quick preset, asserting every gated claim with its margin."""

from __future__ import annotations

import math
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from iclr25.eci_conformal.claims import declared
from iclr25.eci_conformal.config import Config
from iclr25.eci_conformal.experiments import ECI_FAMILY, method_kwargs, stream_seed
from iclr25.eci_conformal.reproduce import PRESETS, load_grid, run
from iclr25.eci_conformal.selection import Grid, select_lr, width_at_coverage
from iclr25.shared.claims import config_of, differences, evaluate
from iclr25.shared.results import Report

RESULTS = Path(__file__).resolve().parents[1] / "results" / "quick"


def test_select_lr_rule():
    g = Grid()
    rows = {1.0: ([0.90, 0.90], 5.0), 0.5: ([0.885, 0.9], 4.0), 0.1: ([0.89, 0.89], 4.5)}
    for lr, (covs, width) in rows.items():
        for c in covs:
            g.add(("m", lr), {"coverage": c, "avg_width": width, "median_width": width, "longest_miss_run": 1}, None)
    # 0.5 has mean coverage 0.8925 >= 0.89 and the smallest width
    assert select_lr(g, "m", (1.0, 0.5, 0.1), 0.9, 0.89) == 0.5
    assert select_lr(g, "m", (1.0, 0.5, 0.1), 0.9, 0.895) == 1.0
    assert select_lr(g, "m", (1.0, 0.5, 0.1), 0.9, 0.99) == 1.0  # none qualifies: closest coverage


def test_committed_claims_are_the_declared_claims():
    report = Report.read(RESULTS)
    cfg = config_of(PRESETS, report.scale, report.config)
    assert differences(report.claims, evaluate(declared(cfg), report.metrics, cfg)) == []


def _with_grid_coverage(metrics: dict, grid: dict, config: Config) -> dict:
    """`metrics` with each setting's ECI coverage at every grid lr taken from `grid` (as `measure` records it)."""
    out = dict(metrics)
    for s in config.settings:
        per = grid[f"{s}/signed"]
        covs = {f"{m}@{lr:g}": per[m][str(lr)]["coverage"] for m in ECI_FAMILY for lr in config.eci_lrs}
        out[f"{s}/signed"] = {**metrics[f"{s}/signed"], "eci_grid_coverage": covs}
    return out


def test_claims_fail_on_a_broken_measurement():
    report = Report.read(RESULTS)
    cfg = PRESETS["quick"]
    grid = load_grid(RESULTS)
    grid["drift/signed"]["eci"]["0.5"]["coverage"] = 0.8  # an ECI variant that lost coverage
    metrics = _with_grid_coverage(report.metrics, grid, cfg)
    metrics["validity_bounded_stream"] = {"official_lr0.05": 0.95, "official_lr0.2": 0.9, "accumulate_lr0.05": 0.8,
                                          "accumulate_lr0.2": 0.8}  # fmt: skip
    failed = {c.name for c in evaluate(declared(cfg), metrics, cfg) if c.gated and not c.holds}
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
    from iclr25.eci_conformal.experiments import real_data_benchmark

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
    assert res["changepoint"]["ar"]["forecast"] == "cached ar.npz"
    assert res["AMZN"]["ar"]["forecast"] == "AR(3) on log y"
    assert "skipped" in res["AMZN"]["prophet"]
    for per in res.values():
        r = per["ar"]
        assert 0.7 < r["selected"]["eci"]["coverage"] <= 1.0
        assert r["width_ratio_best_eci_over_best_baseline"] > 0
    cfg = replace(PRESETS["quick"], data_dir=str(tmp_path))
    claims = {c.name: c for c in evaluate(declared(cfg), {**Report.read(RESULTS).metrics, "real_data": res}, cfg)}
    assert all(claims[f"width_noninferior_real_{n}_ar"].measured for n in ("AMZN", "GOOGL", "changepoint"))
    # a series the folder lacks, and a forecaster it skipped, are declared and reported as not measured
    assert not claims["width_noninferior_real_elec2_ar"].measured
    assert not claims["width_noninferior_real_AMZN_prophet"].measured
    with pytest.raises(ValueError, match="not a folder"):
        real_data_benchmark(tmp_path / "nope", PRESETS["quick"])


def test_width_at_coverage_interpolates_the_nearest_bracket():
    pts = [(0.95, 6.0), (0.91, 5.0), (0.88, 4.0), (0.80, 3.0)]
    assert width_at_coverage(pts, 0.90) == pytest.approx(4.0 + (5.0 - 4.0) * (0.02 / 0.03))
    assert width_at_coverage(pts, 0.97) is None  # nothing covers that much
    assert width_at_coverage([(0.85, 2.0), (0.95, math.inf)], 0.9) is None
    assert width_at_coverage([(0.9, 2.0), (0.9, 1.5)], 0.9) == 1.5


def test_seed_changes_every_random_stream(tmp_path):
    """`--seed` shifts the settings' series, the validity stream and the score streams; 0 keeps the base seeds."""
    assert stream_seed(7, 0) == 7 and stream_seed(7, 1) != stream_seed(8, 0)
    bases = {10_000 * (i + 1) + k for i in range(3) for k in range(5_000)} | set(range(5_000))
    assert not bases & {stream_seed(b, 1) for b in bases}  # a different --seed never reuses a stream
    cfg = Config(settings=("changepoint",), seeds=1, n=600, extras=False, mix1_seeds=1, validity_n=500,
                 figures=False, c_values=())  # fmt: skip
    reports = [run("quick", tmp_path / f"s{s}", seed=s, config=cfg) for s in (0, 1)]
    m0, m1 = (r.metrics for r in reports)
    assert m0["validity_bounded_stream"] != m1["validity_bounded_stream"]
    for name in m0["score_streams"]:
        assert m0["score_streams"][name] != m1["score_streams"][name]
    g0, g1 = (load_grid(tmp_path / f"s{s}") for s in (0, 1))
    assert g0["changepoint/signed"]["eci"] != g1["changepoint/signed"]["eci"]
    again = run("quick", tmp_path / "again", seed=1, config=cfg).metrics
    assert again["validity_bounded_stream"] == m1["validity_bounded_stream"]  # and is reproducible


def test_sf_ogd_normaliser_is_selectable():
    from iclr25.eci_conformal.baselines import sf_ogd
    from iclr25.eci_conformal.intervals import make_method
    from iclr25.eci_conformal.methods import run_online

    s = np.abs(np.random.default_rng(0).standard_normal(300))
    official = run_online(make_method("sf_ogd", 0.1, 1.0, normaliser="official"), s)
    np.testing.assert_array_equal(official, sf_ogd(s, 0.1, 1.0, official_quirk=True))
    true = run_online(make_method("sf_ogd", 0.1, 1.0), s)
    np.testing.assert_array_equal(true, sf_ogd(s, 0.1, 1.0))
    assert np.abs(true - official).max() > 1e-3
    assert method_kwargs("sf_ogd", Config(sf_ogd_normaliser="official")) == ("sf_ogd", {"normaliser": "official"})
    assert method_kwargs("eci@c=0.5", Config()) == ("eci", {"c": 0.5})
    with pytest.raises(ValueError, match="normaliser must be one of"):
        make_method("sf_ogd", 0.1, 1.0, normaliser="quirk")
