"""Generators (physics sanity) and loaders on tiny generated files (acceptance check 6)."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import numpy as np
import pytest

from iclr25.dynamical_diffusion.data import (
    load_gluonts_dataset,
    load_sevir_h5,
    load_turbulence_npy,
    load_video_npy,
    load_wide_csv,
    simulate_advection_diffusion,
    simulate_advection_diffusion_1d,
    simulate_heat,
    sliding_windows,
    synthetic_multivariate_ts,
)


def test_pde1d_shapes_and_determinism() -> None:
    a = simulate_advection_diffusion_1d(16, n_frames=8, n_context=3, size=32, seed=0)
    b = simulate_advection_diffusion_1d(16, n_frames=8, n_context=3, size=32, seed=0)
    assert a.shape == (16, 8, 1, 32)
    assert a.dtype == np.float32
    assert np.array_equal(a, b)
    assert not np.array_equal(a, simulate_advection_diffusion_1d(16, seed=1))


def test_pde1d_context_is_deterministic_and_future_stochastic() -> None:
    """Without forcing, the mean is conserved and the dynamics are exactly a Fourier multiplier."""
    x = simulate_advection_diffusion_1d(8, n_frames=6, n_context=5, size=32, seed=3)[:, :5]  # unforced frames
    np.testing.assert_allclose(x.mean(-1)[:, 1:], x.mean(-1)[:, :1].repeat(4, 1), atol=1e-5)
    energy = (x**2).sum(-1)[..., 0]
    assert np.all(np.diff(energy, axis=1) <= 1e-5)  # diffusion never creates energy
    forced = simulate_advection_diffusion_1d(8, n_frames=6, n_context=2, size=32, seed=3)
    np.testing.assert_allclose(forced[:, :2], x[:, :2], atol=1e-6)
    assert np.abs(forced[:, 2:5] - x[:, 2:]).max() > 1e-3


def test_pde2d_and_heat_shapes() -> None:
    a = simulate_advection_diffusion(3, n_frames=5, n_context=2, size=16, seed=0)
    h = simulate_heat(3, n_frames=5, n_context=2, size=16, seed=0)
    assert a.shape == h.shape == (3, 5, 1, 16, 16)
    assert np.isfinite(a).all()


@pytest.mark.parametrize("kwargs", [{"n": 0}, {"n": 2, "n_context": 8, "n_frames": 8}, {"n": 2, "size": 2}])
def test_simulator_bad_input(kwargs: dict[str, int]) -> None:
    with pytest.raises(ValueError, match="need"):
        simulate_advection_diffusion_1d(**kwargs)


def test_synthetic_ts_and_windows() -> None:
    ts = synthetic_multivariate_ts(200, dim=4, seed=0)
    assert ts.shape == (200, 4)
    w = sliding_windows(ts, 72, stride=24)
    assert w.shape == (6, 72, 4)
    np.testing.assert_array_equal(w[1], ts[24:96])
    with pytest.raises(ValueError, match="exceeds"):
        sliding_windows(ts, 500)


def test_turbulence_loader(tmp_path: Path) -> None:
    arr = np.random.default_rng(0).normal(size=(3, 15, 2, 16, 16)).astype(np.float32)
    np.save(tmp_path / "test.npz.npy", arr)
    out = load_turbulence_npy(tmp_path / "test.npz.npy", total_length=12)
    assert out.shape == (3, 12, 2, 16, 16)
    assert out.dtype == np.float32
    np.testing.assert_allclose(out, arr[:, :12] / 4)
    with pytest.raises(ValueError, match="total_length"):
        load_turbulence_npy(tmp_path / "test.npz.npy", total_length=20)


def test_sevir_loader(tmp_path: Path) -> None:
    h5py = pytest.importorskip("h5py")
    vil = np.random.default_rng(0).integers(0, 256, size=(2, 8, 8, 10), dtype=np.uint8)
    with h5py.File(tmp_path / "sevir.h5", "w") as f:
        f.create_dataset("vil", data=vil)
        f.create_dataset("id", data=np.array([b"a", b"b"]))
    out = load_sevir_h5(tmp_path / "sevir.h5", n_frames=5)
    assert out.shape == (4, 5, 1, 8, 8)
    np.testing.assert_allclose(out[0, :, 0], np.moveaxis(vil[0, :, :, :5], -1, 0) / 255, rtol=1e-6)


def test_video_loader(tmp_path: Path) -> None:
    vid = np.random.default_rng(0).integers(0, 256, size=(2, 4, 6, 6, 3), dtype=np.uint8)
    np.savez(tmp_path / "v.npz", frames=vid)
    out = load_video_npy(tmp_path / "v.npz")
    assert out.shape == (2, 4, 3, 6, 6)
    assert out.min() >= -1 and out.max() <= 1
    np.testing.assert_allclose(out[1, 2, 0], vid[1, 2, :, :, 0] / 127.5 - 1, atol=1e-6)


def test_gluonts_loader(tmp_path: Path) -> None:
    (tmp_path / "train").mkdir()
    (tmp_path / "test").mkdir()
    (tmp_path / "metadata.json").write_text(json.dumps({"freq": "H", "prediction_length": 4}))
    series = [list(range(10)), list(range(100, 112)), list(range(200, 210))]
    lines = "".join(
        json.dumps({"start": "2014-01-01 00:00:00", "target": s, "feat_static_cat": [i]}) + "\n"
        for i, s in enumerate(series)
    )
    (tmp_path / "train" / "data.json").write_text(lines)
    with gzip.open(tmp_path / "test" / "data.json.gz", "wt") as f:
        f.write(lines)
    for split in ("train", "test"):
        ds = load_gluonts_dataset(tmp_path, split)
        assert ds["target"].shape == (10, 3)
        assert ds["freq"] == "H"
        assert ds["prediction_length"] == 4
        np.testing.assert_array_equal(ds["target"][:, 1], np.arange(102, 112))  # aligned at the end
    with pytest.raises(ValueError, match="split"):
        load_gluonts_dataset(tmp_path, "valid")


def test_wide_csv_loader(tmp_path: Path) -> None:
    (tmp_path / "x.csv").write_text("date,a,b,c\n2020-01-01,1,2,3\n2020-01-02,4,5,6\n")
    stamps, values = load_wide_csv(tmp_path / "x.csv")
    assert stamps == ["2020-01-01", "2020-01-02"]
    np.testing.assert_array_equal(values, [[1, 2, 3], [4, 5, 6]])
    (tmp_path / "bad.csv").write_text("date\n")
    with pytest.raises(ValueError, match="header"):
        load_wide_csv(tmp_path / "bad.csv")
