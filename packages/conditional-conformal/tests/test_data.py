"""Generators and the real-data loaders, on tiny generated files (no network)."""

from __future__ import annotations

import numpy as np
import pytest

from iclr25.conditional_conformal import data


def test_bimodal_hetero_law_and_sd():
    X, Y = data.bimodal_hetero(5000, 0)
    assert X.shape == Y.shape == (5000, 1) and X.min() >= -4 and X.max() <= 4
    np.testing.assert_allclose(data.bimodal_sd(np.array([-4.0, 0.0, 4.0])), [0.6, 0.1, 1.1])
    left = Y[(X[:, 0] > -1.05) & (X[:, 0] < -0.95), 0]  # modes sin(−1) ≈ −0.84 and ≈ 0.66, sd ≈ 0.16
    assert ((left > -1.4) & (left < 1.2)).mean() > 0.97


def test_ring2d_rosenbrock_and_slab_generators():
    X, Y = data.ring2d(200, 1)
    assert Y.shape == (200, 2) and np.abs(X).max() <= 2
    np.testing.assert_allclose(data.rosenbrock(np.ones((1, 10))), 0.0)
    Xr, Yr = data.rosenbrock10d(300, rng=2)
    assert Xr.shape == (300, 10) and Yr.shape == (300, 1) and np.isfinite(Yr).all()
    x, hit = data.gaussian_slab_hits(4000, "half_bad", 0)
    assert hit[x[:, 0] > 0].all() and 0.4 < hit[x[:, 0] <= 0].mean() < 0.6
    with pytest.raises(ValueError, match="case"):
        data.gaussian_slab_hits(10, "other")


def _write(path, header, rows):
    lines = ([",".join(header)] if header else []) + [",".join(map(str, r)) for r in rows]
    path.write_text("\n".join(lines) + "\n")


def test_bike_loader(tmp_path):
    header = "datetime,season,holiday,workingday,weather,temp,atemp,humidity,windspeed,casual,registered,count"
    rows = [
        f"2011-01-0{d} {h:02d}:00:00,{1 + d % 4},0,1,{1 + h % 4},9.8,14.4,81,0.0,3,13,{16 + h}"
        for d in range(1, 4)
        for h in range(5)
    ]
    (tmp_path / "bike_train.csv").write_text(header + "\n" + "\n".join(rows) + "\n")
    X, Y = data.load_real("bike", tmp_path)
    assert X.shape == (15, 6 + 4 + 4 + 4) and Y.shape == (15, 1)
    assert Y[1, 0] == 17 and X[1, -4] == 1  # hour of the second row
    assert (X[:, 6:10].sum(1) == 1).all() and (X[:, -1] == 0).all()  # one-hot season, year 2011 -> 0


def test_csv_loaders(tmp_path):
    rng = np.random.default_rng(0)
    a = rng.standard_normal((12, 10)).round(4)
    _write(tmp_path / "CASP.csv", ["RMSD"] + [f"F{i}" for i in range(1, 10)], a)
    X, Y = data.load_real("bio", tmp_path)
    np.testing.assert_allclose(Y[:, 0], a[:, 0])
    assert X.shape == (12, 9)
    blog = rng.standard_normal((6, 281)).round(3)
    _write(tmp_path / "blogData_train.csv", None, blog)
    X, Y = data.load_real("blog", tmp_path)
    assert X.shape == (6, 280) and np.allclose(Y[:, 0], blog[:, -1])
    fb = rng.standard_normal((5, 54)).round(3)
    _write(tmp_path / "facebook_1.csv", [f"c{i}" for i in range(54)], fb)
    X, Y = data.load_real("fb1", tmp_path)
    assert X.shape == (5, 53) and np.allclose(Y[:, 0], fb[:, 53])
    header = ["station", "Date", "Present_Tmax", "lat", "Next_Tmax", "Next_Tmin"]
    rows = [
        [1, "2013-06-30", 28.7, 37.6, 29.1, 21.2],
        [2, "2013-06-30", "", 37.6, 30.5, 22.5],
        [3, "d", 31.9, 37.5, 31, 23.9],
    ]
    _write(tmp_path / "Bias_correction_ucl.csv", header, rows)
    X, Y = data.load_real("temp", tmp_path)
    assert X.shape == (2, 2) and np.allclose(Y[:, 0], [21.2, 23.9])  # the NaN row is dropped


def test_meps_loader(tmp_path):
    cols = data.meps_columns(21)
    assert len(cols) == 139 and cols[4] == "PERWT16F" and data.meps_columns(19)[4] == "PERWT15F"
    header = ["Unnamed: 0", *reversed(cols), "UTILIZATION_reg", "extra"]
    rows = [[i, *range(139), 3.5 + i, 0] for i in range(4)]
    _write(tmp_path / "meps_21_reg.csv", header, rows)
    X, Y = data.load_real("meps21", tmp_path)
    assert X.shape == (4, 139) and X[0, 0] == 138 and np.allclose(Y[:, 0], [3.5, 4.5, 5.5, 6.5])
    _write(tmp_path / "meps_19_reg.csv", ["AGE", "UTILIZATION_reg"], [[1, 2]])
    with pytest.raises(ValueError, match="lacks columns"):
        data.load_real("meps19", tmp_path)


def test_arff_loader(tmp_path):
    rng = np.random.default_rng(1)
    lines = ["@relation rf1"] + [f"@attribute a{i} numeric" for i in range(12)] + ["@data"]
    vals = rng.standard_normal((7, 12)).round(3).astype(object)
    vals[2, 1] = "?"
    lines += [",".join(map(str, r)) for r in vals]
    (tmp_path / "rf1.arff").write_text("\n".join(lines) + "\n")
    X, Y = data.load_real("rf1", tmp_path)
    assert X.shape == (7, 4) and Y.shape == (7, 8) and np.isfinite(X).all()  # mean-imputed
    with pytest.raises(ValueError, match="unknown dataset"):
        data.load_real("nope", tmp_path)
    with pytest.raises(FileNotFoundError, match="no such file"):
        data.load_real("fb2", tmp_path)


def test_standardize_uses_train_statistics():
    a, b = np.array([[0.0, 1.0], [2.0, 1.0]]), np.array([[4.0, 3.0]])
    sa, sb = data.standardize(a, b)
    np.testing.assert_allclose(sa.mean(0), 0) and np.testing.assert_allclose(sb, [[3.0, 2.0]])
