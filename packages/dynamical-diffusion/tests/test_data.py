"""Generators (physics sanity) and loaders on tiny generated files (acceptance check 6)."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import numpy as np
import pytest
import torch

from iclr25.dynamical_diffusion import data
from iclr25.dynamical_diffusion.config import DATASETS
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


def test_every_config_data_set_has_a_grid_simulator() -> None:
    assert set(data.GRID_SIMULATORS) == set(DATASETS)
    for name, sim in data.GRID_SIMULATORS.items():
        x = sim(2, n_frames=3, n_context=1, size=8, seed=0)
        assert x.shape[:2] == (2, 3) and x.ndim == (4 if name == "pde1d" else 5), name


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


def _band_limited_vorticity(n: int, size: int, seed: int = 0) -> torch.Tensor:
    kx, ky, k2 = data._wavenumbers(size, torch.zeros(1))
    white = torch.from_numpy(np.random.default_rng(seed).standard_normal((n, size, size)))
    keep = (kx.abs() < size / 3) & (ky.abs() < size / 3) & (k2 > 0)
    return torch.fft.rfft2(white) * (k2 + 49.0) ** -1.25 * 7**1.5 * size * keep


def _energy_and_enstrophy(w_hat: torch.Tensor) -> tuple[float, float]:
    size = w_hat.shape[-2]
    energy = float((data.vorticity_to_velocity(w_hat) ** 2).sum(-3).mean())
    return energy, float((torch.fft.irfft2(w_hat, s=(size, size)) ** 2).mean())


def test_navier_stokes_velocity_is_divergence_free_and_has_the_vorticity() -> None:
    w_hat = _band_limited_vorticity(2, 16)
    u, v = data.vorticity_to_velocity(w_hat).unbind(-3)
    kx, ky, _ = data._wavenumbers(16, w_hat)
    u_hat, v_hat = torch.fft.rfft2(u), torch.fft.rfft2(v)
    assert float((1j * kx * u_hat + 1j * ky * v_hat).abs().max()) < 1e-9  # div u = 0
    assert torch.allclose(1j * kx * v_hat - 1j * ky * u_hat, w_hat, atol=1e-9)  # curl u = w


def test_navier_stokes_inviscid_conserves_energy_and_enstrophy() -> None:
    w_hat = _band_limited_vorticity(2, 32)
    e0, z0 = _energy_and_enstrophy(w_hat)
    for _ in range(100):
        w_hat = data.navier_stokes_step_2d(w_hat, 0.025, viscosity=0.0)
    e1, z1 = _energy_and_enstrophy(w_hat)
    assert abs(e1 / e0 - 1) < 1e-4 and abs(z1 / z0 - 1) < 2e-3


def test_navier_stokes_single_mode_decays_at_the_viscous_rate() -> None:
    # w = cos(3x) is a steady Euler flow (its advection term vanishes): only viscosity acts, w(t) = exp(-9 nu t) w(0)
    size, nu, dt, steps = 16, 0.01, 0.01, 200
    x = torch.arange(size, dtype=torch.float64) * 2 * np.pi / size
    w_hat = torch.fft.rfft2(torch.cos(3 * x)[:, None].expand(size, size))
    for _ in range(steps):
        w_hat = data.navier_stokes_step_2d(w_hat, dt, viscosity=nu)
    decay = float(torch.fft.irfft2(w_hat, s=(size, size))[0, 0])
    assert abs(decay - np.exp(-9 * nu * dt * steps)) < 1e-5


def test_simulate_navier_stokes_2d() -> None:
    a = data.simulate_navier_stokes_2d(3, n_frames=4, n_context=2, size=16, seed=1, frame_dt=0.2, substeps=8)
    assert a.shape == (3, 4, 2, 16, 16) and a.dtype == np.float32 and np.isfinite(a).all()
    np.testing.assert_array_equal(a, data.simulate_navier_stokes_2d(3, 4, 2, 16, seed=1, frame_dt=0.2, substeps=8))
    energy = (a.astype(np.float64) ** 2).sum(2).mean((0, 2, 3))
    assert np.all(np.diff(energy) < 0)  # decaying turbulence loses energy every frame
    assert np.abs(a[:, 1] - a[:, 0]).mean() > 1e-3  # and moves
    forced = data.simulate_navier_stokes_2d(2, 4, 2, 16, seed=1, forcing=1.0, drag=0.1, warmup=1.0, substeps=40)
    assert np.isfinite(forced).all() and not np.allclose(forced, a[:2])
    with pytest.raises(ValueError, match="viscosity"):
        data.simulate_navier_stokes_2d(2, 4, 2, 16, viscosity=-1.0)
