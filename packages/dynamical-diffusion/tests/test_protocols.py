"""The paper's evaluation protocols on tiny generated files, and the paired seed statistics."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
import torch

from iclr25.dynamical_diffusion.dydiff import DynamicalDiffusion
from iclr25.dynamical_diffusion.metrics import crps_pwm_map
from iclr25.dynamical_diffusion.models import FrameStackUNet
from iclr25.dynamical_diffusion.protocols import (
    evaluate_turbulence,
    load_series,
    official_field_metrics,
    ts_crps_sum_benchmark,
    ts_windows,
)
from iclr25.dynamical_diffusion.stats import (
    holm,
    merge_seed_rows,
    paired_comparison,
    paired_report,
    sign_flip_pvalue,
    write_paired,
)


def _loop_masked_crps(ens: torch.Tensor, y: torch.Tensor) -> float:
    """Official CRPS_PWM aggregation by loops: per case and field, mean over pixels with y >= 0; drop a case with an
    empty field; mean over cases, then over fields."""
    B, T, C = ens.shape[1:4]
    per_case = []
    for b in range(B):
        row = []
        for s in range(T):
            for c in range(C):
                mask = y[b, s, c] >= 0
                row.append(float(crps_pwm_map(ens[:, b, s, c], y[b, s, c])[mask].mean()) if mask.any() else math.nan)
        per_case.append(row)
    kept = np.array([r for r in per_case if not any(math.isnan(v) for v in r)])
    return float(kept.mean(0).mean())


def test_official_field_metrics_match_loops_and_drop_empty_cases() -> None:
    g = torch.Generator().manual_seed(0)
    y = torch.randn(4, 3, 2, 8, 8, generator=g, dtype=torch.float64)
    y[2, 1, 0] = -1.0  # case 2 has a field without a non-negative pixel: the official code drops the case
    ens = y + 0.3 * torch.randn(5, 4, 3, 2, 8, 8, generator=g, dtype=torch.float64)
    m = official_field_metrics(ens, y)
    assert m["crps_pwm"] == pytest.approx(_loop_masked_crps(ens, y), rel=1e-12)
    assert m["crps_pwm"] == pytest.approx(_loop_masked_crps(ens[:, [0, 1, 3]], y[[0, 1, 3]]), rel=1e-12)
    rmse = np.mean(
        [
            [float(((ens[:, b, s, c] - y[b, s, c]) ** 2).mean().sqrt()) for b in range(4)]
            for s in range(3)
            for c in range(2)
        ]
    )
    assert m["rmse"] == pytest.approx(rmse, rel=1e-12)
    assert len(m["per_field"]["crps_pwm"]) == 6  # T * C fields
    # CSI at level 0 counts over every member and case per field; a perfect ensemble scores 1 and CRPS 0.
    perfect = official_field_metrics(y.expand(3, *y.shape), y)
    assert perfect["csi_0"] == 1.0 and perfect["crps_pwm"] == 0.0 and perfect["pooled_crps_w2max"] == 0.0
    with pytest.raises(ValueError, match="need ens"):
        official_field_metrics(ens[0], y)


def _tiny_turbulence(path: Path, n: int = 25) -> np.ndarray:
    arr = np.random.default_rng(1).standard_normal((n, 16, 2, 16, 16)).astype(np.float32)
    np.save(path, arr)
    return arr


def test_turbulence_protocol_on_a_tiny_file(tmp_path: Path) -> None:
    arr = _tiny_turbulence(tmp_path / "test.npz.npy")
    net = FrameStackUNet(15, 2, 2, width=8, ch_mult=(1,)).eval()
    model = DynamicalDiffusion(net, gamma_ratio=0.5, n_context=4)
    m = evaluate_turbulence(model, tmp_path / "test.npz.npy", n_samples=2, ddim_steps=2, seed=3)
    assert (m["n_cases"], m["n_samples"]) == (20, 2)  # the first 20 of 25 sequences
    assert len(m["per_field"]["crps_pwm"]) == 11 * 2  # frames 4-14, both velocity channels
    # Same numbers by hand: the first 20 sequences' 15 frames / 4, frames 4-14 scored.
    from iclr25.dynamical_diffusion.training import sample_batched

    truth = torch.from_numpy(arr[:20, :15] / 4)
    samples, _ = sample_batched(model, truth[:, :4], 15, 2, 2, seed=3)
    assert m["crps_pwm"] == pytest.approx(official_field_metrics(samples[:, :, 4:], truth[:, 4:])["crps_pwm"])
    few = evaluate_turbulence(model, _tiny_path(tmp_path), n_samples=2, ddim_steps=2)
    assert few["n_cases"] == 3  # fewer sequences than 20: all of them, as the official loader
    with pytest.raises(ValueError, match="4 context frames"):
        evaluate_turbulence(DynamicalDiffusion(net, n_context=3), tmp_path / "test.npz.npy")


def _tiny_path(tmp_path: Path) -> Path:
    _tiny_turbulence(tmp_path / "few.npy", n=3)
    return tmp_path / "few.npy"


def _gluonts_folder(root: Path, length: int = 80, dim: int = 3) -> np.ndarray:
    rng = np.random.default_rng(0)
    series = np.sin(np.arange(length)[:, None] / 4 + np.arange(dim)) + 0.1 * rng.standard_normal((length, dim)) + 2
    (root / "train").mkdir(parents=True)
    (root / "test").mkdir()
    (root / "metadata.json").write_text(json.dumps({"freq": "H", "prediction_length": 4}))
    for split, stops in (("train", [length - 12]), ("test", [length - 8, length - 4, length])):  # 3 rolling dates
        lines = "".join(
            json.dumps({"start": "2014-01-01 00:00:00", "target": series[:stop, d].tolist()}) + "\n"
            for stop in stops
            for d in range(dim)
        )
        (root / split / "data.json").write_text(lines)
    return series


def test_ts_loader_windows_and_crps_sum_benchmark(tmp_path: Path) -> None:
    series = _gluonts_folder(tmp_path / "ds")
    train, test, pred_len = load_series(tmp_path / "ds")
    assert train.shape == (68, 3) and test.shape == (80, 3) and pred_len == 4
    bad = tmp_path / "bad"
    _gluonts_folder(bad)
    (bad / "test" / "data.json").write_text(json.dumps({"target": [1.0, 2.0]}) + "\n")
    with pytest.raises(ValueError, match="do not repeat the 3 training series"):
        load_series(bad)
    w = ts_windows(test, context=8, horizon=4, n_windows=3)
    assert w.shape == (3, 12, 3)
    np.testing.assert_allclose(w[-1], series[-12:], rtol=1e-6)  # the last window ends with the series
    np.testing.assert_allclose(w[0], series[-20:-8], rtol=1e-6)  # each window one horizon earlier
    with pytest.raises(ValueError, match="too short"):
        ts_windows(test, context=70, horizon=4, n_windows=3)
    out = ts_crps_sum_benchmark(
        tmp_path / "ds", context=8, n_windows=3, steps=3, batch_size=8, width=8, n_samples=4, ddim_steps=2
    )
    assert out["horizon"] == 4 and set(out["models"]) == {"r0", "r0.5"}
    assert all(0 < m["crps_sum"] < 10 for m in out["models"].values())
    # A wide CSV: its last 10% of rows (at least 2) are the test split's tail.
    rows = "".join(f"2020-01-{i % 28 + 1:02d},{a:.4f},{b:.4f}\n" for i, (a, b) in enumerate(series[:, :2]))
    (tmp_path / "x.csv").write_text("date,a,b\n" + rows)
    train, test, pred_len = load_series(tmp_path / "x.csv")
    assert (train.shape, test.shape, pred_len) == ((72, 2), (80, 2), None)


def test_sign_flip_test_exact_values_and_scipy() -> None:
    assert sign_flip_pvalue([1.0] * 5) == 2 / 32  # only all-positive and all-negative are as extreme
    assert sign_flip_pvalue([1.0] * 10) == 2 / 1024
    assert sign_flip_pvalue([1.0, -1.0]) == 1.0
    d = np.random.default_rng(0).normal(0.3, 1.0, 20)  # above 16 seeds: random sign patterns
    assert 0.0 < sign_flip_pvalue(d) <= 1.0
    stats = pytest.importorskip("scipy.stats")
    a, b = np.random.default_rng(1).normal(size=(2, 10))
    p = paired_comparison(a, b)
    assert p["t"] == pytest.approx(stats.ttest_rel(a, b).statistic)
    assert p["wins"] == int((b < a).sum()) and p["n"] == 10


def test_holm() -> None:
    assert holm([0.01, 0.04, 0.03]) == pytest.approx([0.03, 0.06, 0.06])
    assert holm([0.5, 0.9]) == pytest.approx([1.0, 1.0])


def _doc(seeds: list[int], models: dict[str, float], **config: object) -> dict:
    base = {"width": 32, "steps": 2000, "seeds": len(seeds), "ablation_ratios": [], "workers": 1}
    rows = [{"seed": s, **{m: {"crps": v + 0.01 * s} for m, v in models.items()}} for s in seeds]
    return {"config": {**base, **config}, "metrics": {"per_seed": rows}, "command": f"run {seeds}"}


def test_merge_seed_rows_and_paired_report(tmp_path: Path) -> None:
    a = _doc([0, 1], {"dpm": 1.0, "dydiff": 0.9, "extra": 2.0}, ablation_ratios=[0.9])
    b = _doc([1, 2, 3], {"dpm": 1.0, "dydiff": 0.9}, workers=5)
    rows, models = merge_seed_rows([a, b])
    assert [r["seed"] for r in rows] == [0, 1, 2, 3] and models == ["dpm", "dydiff", "extra"]
    report = paired_report(rows, models)
    assert report["vs_dpm"]["dydiff"]["wins"] == 4
    assert report["vs_dpm"]["dydiff"]["p_sign_flip"] == 2 / 16
    assert report["vs_dpm"]["extra"]["seeds"] == [0, 1] and report["per_seed"]["extra"][2] is None
    assert report["vs_dpm"]["dydiff"]["p_holm"] == pytest.approx(min(1.0, 2 * 2 / 16))
    assert list(report["vs_dydiff"]) == ["extra"]  # the ablations against the default DyDiff, on shared seeds
    assert report["vs_dydiff"]["extra"]["seeds"] == [0, 1] and report["vs_dydiff"]["extra"]["p_holm"] == 0.5
    assert report["vs_dydiff"]["extra"]["mean_diff"] == pytest.approx(0.9 - 2.0)
    with pytest.raises(ValueError, match=r"differ in \['steps'\]"):
        merge_seed_rows([a, _doc([5], {"dpm": 1.0}, steps=1000)])
    clash = _doc([1], {"dpm": 1.5, "dydiff": 0.9})
    with pytest.raises(ValueError, match="seed 1 gives different CRPS"):
        merge_seed_rows([a, clash])
    for name, doc in (("a", a), ("b", b)):
        (tmp_path / name).mkdir()
        (tmp_path / name / "results.json").write_text(json.dumps(doc))
    result = write_paired([tmp_path / "a", tmp_path / "b"], tmp_path / "out")
    assert result["seeds"] == [0, 1, 2, 3]
    assert "| dydiff | 4 | 0.9" in (tmp_path / "out" / "paired.md").read_text()
    assert "| vs DyDiff |" in (tmp_path / "out" / "paired.md").read_text()
    assert math.isnan(result["vs_dpm"]["extra"]["t"])  # a constant difference has no t
    only = write_paired([tmp_path / "a", tmp_path / "b"], tmp_path / "out2", models=["dydiff"])
    assert list(only["vs_dpm"]) == ["dydiff"] and only["vs_dpm"]["dydiff"]["p_holm"] == 2 / 16
    assert "vs_dydiff" not in only  # no ablation left to compare with DyDiff
    with pytest.raises(ValueError, match="no run has"):
        write_paired([tmp_path / "a"], tmp_path / "out3", models=["dydiff_r0.5"])
    with pytest.raises(ValueError, match="does not exist"):
        write_paired([tmp_path / "missing"], tmp_path / "out")
