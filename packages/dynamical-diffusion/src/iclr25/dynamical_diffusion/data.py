"""Data for Dynamical Diffusion (arXiv 2503.00951): synthetic generators and loaders for the paper's formats.

Generators (numpy, exact spectral steps, vectorised over sequences):
- `simulate_advection_diffusion_1d`: advection-diffusion on a periodic ring, the CPU quick setting; forcing noise
  is added only after the context frames, so only the future is stochastic.
- `simulate_advection_diffusion` (2-D grid) and `simulate_heat` (2-D, no advection): GPU settings.
- `simulate_navier_stokes_2d`: forced 2-D turbulence, velocity (u, v) on a 64x64 grid like the paper's Turbulence
  data (pseudo-spectral vorticity solver, `navier_stokes_step_2d`): the full (GPU) setting.
- `GRID_SIMULATORS`: the grid generator of each data set name a config takes.
- `synthetic_multivariate_ts`: sinusoids with two periods + AR(1) noise + cross-dimension mixing.

Loaders (the official data formats; tested on tiny generated files):
- `load_turbulence_npy`: (N, L, C, H, W) float32 arrays as the official Turbulence files, divided by 4.
- `load_sevir_h5`: SEVIR VIL HDF5 (N, H, W, T) uint8 -> windows (n, S, 1, H, W) in [0, 1] (needs h5py).
- `load_video_npy`: (N, T, H, W, C) uint8 video arrays -> (N, T, C, H, W) in [-1, 1].
- `load_gluonts_dataset`: GluonTS-style folder (metadata.json, train/ and test/ JSON lines, optionally gzipped).
- `load_wide_csv`: first column timestamps, one column per series.
"""

from __future__ import annotations

import csv
import gzip
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np


def _bumps(rng: np.random.Generator, n: int, coords: list[np.ndarray], size: int) -> np.ndarray:
    """Sum of 2-4 periodic Gaussian bumps per sequence on a grid of `len(coords)` axes of `size` cells."""
    field = np.zeros((n, *coords[0].shape))
    n_bumps = rng.integers(2, 5, size=n)
    for j in range(4):
        active = (j < n_bumps).astype(float)
        width = rng.uniform(1.5, 4.0, size=n)
        amp = rng.uniform(-1.0, 1.0, size=n) * active
        d2 = np.zeros((n, *coords[0].shape))
        for c in coords:
            centre = rng.uniform(0, size, size=n).reshape(-1, *([1] * c.ndim))
            d = (c[None] - centre + size / 2) % size - size / 2  # periodic distance
            d2 = d2 + d**2
        field += amp.reshape(-1, *([1] * coords[0].ndim)) * np.exp(
            -d2 / (2 * width.reshape(-1, *([1] * coords[0].ndim)) ** 2)
        )
    return field


def _simulate(
    n: int,
    n_frames: int,
    n_context: int,
    size: int,
    dims: int,
    seed: int,
    velocity: float,
    kappa: tuple[float, float],
    forcing: float,
    forcing_scale: float,
) -> np.ndarray:
    rng = np.random.default_rng(seed)
    axes = [np.arange(size, dtype=float)] * dims
    coords = list(np.meshgrid(*axes, indexing="ij"))
    field = _bumps(rng, n, coords, size)  # (n, *grid)
    k1 = 2 * np.pi * np.fft.fftfreq(size)
    ks = list(np.meshgrid(*([k1] * dims), indexing="ij"))
    k2 = sum(k**2 for k in ks)
    v = rng.uniform(-velocity, velocity, size=(n, dims)) if velocity > 0 else np.zeros((n, dims))
    kap = rng.uniform(*kappa, size=n)
    expand = (-1, *([1] * dims))
    phase = sum(v[:, i].reshape(expand) * ks[i][None] for i in range(dims))
    prop = np.exp(-1j * phase - kap.reshape(expand) * k2[None])  # exact step of u_t + v.grad u = kappa lap u
    smooth = np.exp(-k2 / (2 * forcing_scale**2))
    frames = [field]
    spec = np.fft.fftn(field, axes=tuple(range(1, dims + 1)))
    for s in range(1, n_frames):
        spec = spec * prop
        if s >= n_context and forcing > 0:  # forcing only after the context: the future is stochastic
            noise = np.fft.fftn(forcing * rng.standard_normal(field.shape), axes=tuple(range(1, dims + 1)))
            spec = spec + noise * smooth[None]
        frames.append(np.fft.ifftn(spec, axes=tuple(range(1, dims + 1))).real)
    return np.stack(frames, axis=1)[:, :, None].astype(np.float32)  # (n, S, 1, *grid)


def _check_counts(n: int, n_frames: int, n_context: int, size: int) -> None:
    if n < 1 or size < 4:
        raise ValueError(f"need n >= 1 sequences and size >= 4 cells, got n={n}, size={size}")
    if not 1 <= n_context < n_frames:
        raise ValueError(f"need 1 <= n_context < n_frames, got n_context={n_context}, n_frames={n_frames}")


def simulate_advection_diffusion_1d(
    n: int,
    n_frames: int = 8,
    n_context: int = 3,
    size: int = 32,
    seed: int = 0,
    velocity: float = 1.5,
    kappa: tuple[float, float] = (0.02, 0.1),
    forcing: float = 0.02,
    forcing_scale: float = 0.5,
) -> np.ndarray:
    """Advection-diffusion on a periodic ring: (n, n_frames, 1, size) float32, forcing after the context."""
    _check_counts(n, n_frames, n_context, size)
    return _simulate(n, n_frames, n_context, size, 1, seed, velocity, kappa, forcing, forcing_scale)


def simulate_advection_diffusion(
    n: int,
    n_frames: int = 15,
    n_context: int = 4,
    size: int = 32,
    seed: int = 0,
    velocity: float = 1.5,
    kappa: tuple[float, float] = (0.02, 0.1),
    forcing: float = 0.02,
    forcing_scale: float = 0.5,
) -> np.ndarray:
    """Advection-diffusion on a periodic 2-D grid: (n, n_frames, 1, size, size) float32."""
    _check_counts(n, n_frames, n_context, size)
    return _simulate(n, n_frames, n_context, size, 2, seed, velocity, kappa, forcing, forcing_scale)


def simulate_heat(
    n: int, n_frames: int = 15, n_context: int = 4, size: int = 32, seed: int = 0, forcing: float = 0.02
) -> np.ndarray:
    """Heat equation (no advection) on a periodic 2-D grid: (n, n_frames, 1, size, size) float32."""
    _check_counts(n, n_frames, n_context, size)
    return _simulate(n, n_frames, n_context, size, 2, seed, 0.0, (0.02, 0.1), forcing, 0.5)


def _wavenumbers(size: int, like: Any) -> tuple[Any, Any, Any]:
    """Integer wavenumbers kx (axis -2), ky (axis -1, rfft half) and k^2 on [0, 2pi)^2, as tensors like `like`."""
    import torch

    kx = torch.fft.fftfreq(size, 1.0 / size, dtype=torch.float64, device=like.device)[:, None]
    ky = torch.fft.rfftfreq(size, 1.0 / size, dtype=torch.float64, device=like.device)[None, :]
    return kx, ky, kx**2 + ky**2


def vorticity_to_velocity(w_hat: Any) -> Any:
    """Velocity (u, v) = (d psi/dy, -d psi/dx) with -lap psi = w, from rfft2 vorticity (..., N, N//2+1) -> (..., 2, N, N)."""
    import torch

    size = w_hat.shape[-2]
    kx, ky, k2 = _wavenumbers(size, w_hat)
    psi = w_hat * torch.where(k2 > 0, 1.0 / k2.clamp(min=1.0), 0.0)
    u = torch.fft.irfft2(1j * ky * psi, s=(size, size))
    v = torch.fft.irfft2(-1j * kx * psi, s=(size, size))
    return torch.stack([u, v], dim=-3)


def navier_stokes_step_2d(w_hat: Any, dt: float, viscosity: float, forcing_hat: Any = None, drag: float = 0.0) -> Any:
    """One step of 2-D incompressible Navier-Stokes in vorticity form on [0, 2pi)^2, in rfft2 space (torch).

    w_t + u . grad w = nu lap w - drag w + f: Heun's method for advection and forcing, Crank-Nicolson for the
    linear terms, 2/3-rule dealiasing of the advection product. `w_hat` is rfft2 of vorticity (..., N, N).
    """
    import torch

    size = w_hat.shape[-2]
    kx, ky, k2 = _wavenumbers(size, w_hat)
    dealias = (kx.abs() < size / 3) & (ky.abs() < size / 3)
    forcing = 0.0 if forcing_hat is None else forcing_hat

    def tendency(wh: Any) -> Any:
        u, v = vorticity_to_velocity(wh).unbind(-3)
        wx = torch.fft.irfft2(1j * kx * wh, s=(size, size))
        wy = torch.fft.irfft2(1j * ky * wh, s=(size, size))
        return forcing - torch.fft.rfft2(u * wx + v * wy) * dealias

    linear = 0.5 * dt * (viscosity * k2 + drag)
    r0 = tendency(w_hat)
    predicted = ((1 - linear) * w_hat + dt * r0) / (1 + linear)
    return ((1 - linear) * w_hat + 0.5 * dt * (r0 + tendency(predicted))) / (1 + linear)


def simulate_navier_stokes_2d(
    n: int,
    n_frames: int = 15,
    n_context: int = 4,
    size: int = 64,
    seed: int = 0,
    viscosity: float = 1e-3,
    frame_dt: float = 0.5,
    substeps: int = 40,
    warmup: float = 2.0,
    forcing: float = 0.0,
    forcing_wavenumber: int = 4,
    drag: float = 0.0,
    device: str = "cpu",
) -> np.ndarray:
    """2-D turbulence, a Turbulence-like setting: velocity (u, v) as (n, n_frames, 2, size, size) float32.

    Vorticity starts from the Gaussian random field N(0, 7^1.5 (-lap + 49)^-2.5) (the FNO Navier-Stokes data's
    initial law), runs `warmup` time units, then one frame every `frame_dt` (`substeps` solver steps each).
    Defaults: decaying turbulence (no forcing, nu = 1e-3). `forcing=1, drag=0.1, substeps=80` gives Kolmogorov
    flow (f = curl of forcing * sin(k_f y) x-hat, linear drag), a statistically stationary chaotic setting; its
    faster velocities need the smaller solver step.
    Vectorised over sequences with torch FFTs (float64; `device="cuda"` for large sets).
    """
    import torch

    _check_counts(n, n_frames, n_context, size)
    if viscosity < 0 or drag < 0 or frame_dt <= 0 or substeps < 1 or warmup < 0:
        raise ValueError(
            "need viscosity >= 0, drag >= 0, frame_dt > 0, substeps >= 1, warmup >= 0; got "
            f"viscosity={viscosity}, drag={drag}, frame_dt={frame_dt}, substeps={substeps}, warmup={warmup}"
        )
    rng = np.random.default_rng(seed)
    dev = torch.device(device)
    white = torch.from_numpy(rng.standard_normal((n, size, size))).to(dev)
    kx, ky, k2 = _wavenumbers(size, white)
    spectrum = 7**1.5 * (k2 + 49.0) ** -1.25
    spectrum[0, 0] = 0.0  # zero-mean vorticity
    # Band-limited to the 2/3-rule modes, so the solver's dealiasing keeps the advection product alias-free.
    w_hat = torch.fft.rfft2(white) * spectrum * size * ((kx.abs() < size / 3) & (ky.abs() < size / 3))
    y = torch.arange(size, dtype=torch.float64, device=dev) * 2 * np.pi / size
    k_f = forcing_wavenumber
    forcing_hat = torch.fft.rfft2((-forcing * k_f * torch.cos(k_f * y)).expand(size, size))  # curl of sin(k_f y) x
    dt = frame_dt / substeps
    for _ in range(round(warmup / dt)):
        w_hat = navier_stokes_step_2d(w_hat, dt, viscosity, forcing_hat, drag)
    frames = [vorticity_to_velocity(w_hat)]
    for _ in range(n_frames - 1):
        for _ in range(substeps):
            w_hat = navier_stokes_step_2d(w_hat, dt, viscosity, forcing_hat, drag)
        frames.append(vorticity_to_velocity(w_hat))
    return torch.stack(frames, dim=1).float().cpu().numpy()


# The generator of each grid data set a config names: f(n, n_frames=, n_context=, size=, seed=) -> (n, S, C, *grid).
GRID_SIMULATORS: dict[str, Callable[..., np.ndarray]] = {
    "pde1d": simulate_advection_diffusion_1d,
    "pde2d": simulate_advection_diffusion,
    "heat": simulate_heat,
    "ns2d": simulate_navier_stokes_2d,  # also takes device=
}


def synthetic_multivariate_ts(n_steps: int, dim: int = 8, seed: int = 0, ar: float = 0.8) -> np.ndarray:
    """(n_steps, dim) float32: per dim two random-phase sinusoids + AR(1) noise, then a random cross-dim mix."""
    if n_steps < 2 or dim < 1:
        raise ValueError(f"need n_steps >= 2 and dim >= 1, got {n_steps}, {dim}")
    rng = np.random.default_rng(seed)
    t = np.arange(n_steps)[:, None]
    periods = rng.choice([12, 24, 48, 168], size=(2, dim))
    phases = rng.uniform(0, 2 * np.pi, size=(2, dim))
    amps = rng.uniform(0.5, 1.5, size=(2, dim))
    base = sum(amps[i] * np.sin(2 * np.pi * t / periods[i] + phases[i]) for i in range(2))
    noise = np.zeros((n_steps, dim))
    eps = rng.normal(0, 0.3, size=(n_steps, dim))
    for s in range(1, n_steps):
        noise[s] = ar * noise[s - 1] + eps[s]
    mix = np.eye(dim) + 0.2 * rng.normal(size=(dim, dim))
    return ((base + noise) @ mix).astype(np.float32)


def sliding_windows(series: np.ndarray, length: int, stride: int = 1) -> np.ndarray:
    """Windows of `length` consecutive steps along axis 0: (n_windows, length, ...)."""
    if length > series.shape[0]:
        raise ValueError(f"window length {length} exceeds series length {series.shape[0]}")
    starts = range(0, series.shape[0] - length + 1, stride)
    return np.stack([series[s : s + length] for s in starts])


# -- loaders for the paper's real formats -----------------------------------------------------------------------


def load_turbulence_npy(path: str | Path, total_length: int = 15, scale: float = 4.0) -> np.ndarray:
    """Official Turbulence array (N, L, C, H, W): first `total_length` frames, divided by `scale` (4 officially)."""
    from iclr25.shared.safeload import load_npy

    arr = load_npy(Path(path))  # allow_pickle=False: nothing in the file runs
    if arr.ndim != 5:
        raise ValueError(f"Turbulence array must be (N, L, C, H, W), got shape {arr.shape}")
    if arr.shape[1] < total_length:
        raise ValueError(f"sequences hold {arr.shape[1]} frames, fewer than total_length={total_length}")
    return (arr[:, :total_length] / scale).astype(np.float32)


def load_sevir_h5(path: str | Path, n_frames: int = 25, stride: int | None = None, key: str = "vil") -> np.ndarray:
    """SEVIR VIL HDF5 (N, H, W, T) uint8 -> windows (n, n_frames, 1, H, W) float32 in [0, 1]."""
    try:
        import h5py
    except ImportError as e:  # optional dependency
        raise ImportError("load_sevir_h5 needs h5py: pip install h5py") from e
    with h5py.File(Path(path), "r") as f:
        if key not in f:
            raise ValueError(f"{path} has no dataset {key!r}; has {list(f.keys())}")
        vil = np.asarray(f[key])
    if vil.ndim != 4:
        raise ValueError(f"SEVIR {key} must be (N, H, W, T), got shape {vil.shape}")
    seq = np.moveaxis(vil, -1, 1)[:, :, None]  # (N, T, 1, H, W)
    stride = stride or n_frames
    if seq.shape[1] < n_frames:
        raise ValueError(f"sequences hold {seq.shape[1]} frames, fewer than n_frames={n_frames}")
    windows = [seq[:, s : s + n_frames] for s in range(0, seq.shape[1] - n_frames + 1, stride)]
    return (np.concatenate(windows, axis=0) / 255.0).astype(np.float32)


SEVIR_CSI_THRESHOLDS = (16, 74, 133, 160, 181, 219)  # VIL pixel units (0-255)


def load_video_npy(path: str | Path, key: str | None = None) -> np.ndarray:
    """Video array (N, T, H, W, C) uint8 from .npy/.npz -> (N, T, C, H, W) float32 in [-1, 1]."""
    from iclr25.shared.safeload import load_npy, load_npz

    path = Path(path)  # allow_pickle=False either way: nothing in the file runs
    if path.suffix == ".npz":
        data = load_npz(path, keys=[key] if key else None)
        arr = data[key] if key else next(iter(data.values()), None)
        if arr is None:
            raise ValueError(f"{path} holds no arrays")
    else:
        arr = load_npy(path)
    if arr.ndim != 5:
        raise ValueError(f"video array must be (N, T, H, W, C), got shape {arr.shape}")
    return (np.moveaxis(arr, -1, 2).astype(np.float32) / 127.5 - 1.0).astype(np.float32)


def _read_jsonl(path: Path) -> list[dict[str, Any]]:
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt") as f:
        return [json.loads(line) for line in f if line.strip()]


def load_gluonts_dataset(root: str | Path, split: str = "train") -> dict[str, Any]:
    """GluonTS-style folder -> {"target": (L, D) float32, "start", "freq", "prediction_length"}.

    Series of unequal length are aligned at their ends (the common trailing window), as multivariate grouping does.
    """
    root = Path(root)
    if split not in ("train", "test"):
        raise ValueError(f"split must be 'train' or 'test', got {split!r}")
    meta = json.loads((root / "metadata.json").read_text()) if (root / "metadata.json").is_file() else {}
    folder = root / split
    files = sorted(folder.glob("*.json")) + sorted(folder.glob("*.json.gz"))
    if not files:
        raise FileNotFoundError(f"no data.json(.gz) in {folder}")
    records = [r for p in files for r in _read_jsonl(p)]
    length = min(len(r["target"]) for r in records)
    target = np.stack([np.asarray(r["target"][-length:], dtype=np.float32) for r in records], axis=1)
    return {
        "target": target,
        "start": records[0].get("start"),
        "freq": meta.get("freq"),
        "prediction_length": meta.get("prediction_length"),
    }


def load_wide_csv(path: str | Path) -> tuple[list[str], np.ndarray]:
    """Wide CSV (timestamp, series_1, ..., series_D) -> (timestamps, (L, D) float32)."""
    with open(Path(path), newline="") as f:
        rows = list(csv.reader(f))
    if len(rows) < 2 or len(rows[0]) < 2:
        raise ValueError(f"{path} must have a header and at least one data row with a timestamp and one series")
    stamps = [r[0] for r in rows[1:]]
    values = np.asarray([[float(v) for v in r[1:]] for r in rows[1:]], dtype=np.float32)
    return stamps, values
