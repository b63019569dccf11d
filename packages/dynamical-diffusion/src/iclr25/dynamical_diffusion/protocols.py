"""The paper's evaluation protocols for Dynamical Diffusion (arXiv 2503.00951) on real data files.

- Turbulence (official test config and evaluation script): the first 20 test sequences of `test.npz.npy`
  (`n_subsample: 20`), 15 frames divided by 4, 8 forecasts per case from the 4 context frames (DDIM 50, eta = 0),
  frames 4-14 scored with the official metrics module's aggregation: every (frame, channel) pair is a field; CRPS
  (PWM) and pooled CRPS average each case's field over the pixels whose truth is >= 0 (windows whose truth minimum
  is >= 0), cases with an empty field are dropped, then cases and fields are averaged (NaN when every case is
  dropped, where the official code reports 0); "MSE" is the RMSE over members and pixels per case and field; CSI
  counts hits over all members and cases per field (level 0.0). Matches the official metrics module to 1e-8.
- Time series (CRPS_sum, GluonTS convention): a multivariate series from a GluonTS-style folder or a wide CSV,
  standardised with the training split's mean and sd; DPM and DyDiff forecast the last windows of the test split
  (context + prediction length); CRPS_sum of the forecasts summed over the series, in the data's units.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import Tensor

from iclr25.dynamical_diffusion.metrics import _pool, crps_pwm_map, crps_sum

TURBULENCE_PROTOCOL = {  # official test config and evaluation script
    "n_cases": 20,  # n_subsample
    "n_samples": 8,
    "ddim_steps": 50,
    "n_context": 4,
    "total_length": 15,
    "first_scored_frame": 4,  # gt[:, 4:], pred[:, 4:]
    "levels": (0.0,),  # CSI threshold list for Turbulence
}
POOLED = ((2, "avg"), (8, "avg"), (2, "max"), (8, "max"))  # the official pooled CRPS variants


def _case_field_mean(values: Tensor, mask: Tensor) -> Tensor:
    """Masked mean over pixels per (case, field), cases with an empty field dropped, mean over cases: (fields,)."""
    per = (values * mask).flatten(2).sum(-1) / mask.flatten(2).sum(-1)  # (cases, fields); nan where mask is empty
    keep = ~per.isnan().any(dim=1)
    return per[keep].mean(0)


def official_field_metrics(
    ens: Tensor | np.ndarray, y: Tensor | np.ndarray, levels: tuple[float, ...] = (0.0,)
) -> dict:
    """The official metrics of forecasts `ens` (M, B, T, C, H, W) against `y` (B, T, C, H, W), each averaged over
    the T*C fields (per-field values under `per_field`)."""
    ens, y = torch.as_tensor(np.asarray(ens)).double(), torch.as_tensor(np.asarray(y)).double()
    if ens.ndim != 6 or ens.shape[1:] != y.shape:
        raise ValueError(f"need ens (M, B, T, C, H, W) and y (B, T, C, H, W), got {tuple(ens.shape)}, {tuple(y.shape)}")
    M, B, T, C, H, W = ens.shape
    ens, y = ens.reshape(M, B, T * C, H, W), y.reshape(B, T * C, H, W)
    nonneg = (y >= 0).double()
    fields: dict[str, Tensor] = {
        "crps_pwm": _case_field_mean(crps_pwm_map(ens, y), nonneg),
        "crps_pwm_all_pixels": crps_pwm_map(ens, y).flatten(2).mean(-1).mean(0),
        "l1": _case_field_mean((ens - y).abs().reshape(M * B, T * C, H, W), nonneg.repeat(M, 1, 1, 1)),
        "rmse": ((ens - y) ** 2).permute(1, 2, 0, 3, 4).flatten(2).mean(-1).sqrt().mean(0),
    }
    for k, mode in POOLED:
        pe, py = _pool(ens, k, mode, 2), _pool(y, k, mode, 2)
        window_nonneg = (-_pool(-y, k, "max", 2) >= 0).double()
        fields[f"pooled_crps_w{k}{mode}"] = _case_field_mean(crps_pwm_map(pe, py), window_nonneg)
    for i, level in enumerate(levels):
        p, o = ens >= level, (y >= level).expand_as(ens)
        hits = (p & o).sum((0, 1, 3, 4)).double()
        fields[f"csi_{i}"] = hits / (hits + (~p & o).sum((0, 1, 3, 4)) + (p & ~o).sum((0, 1, 3, 4)))
    out: dict[str, Any] = {name: float(v.mean()) for name, v in fields.items()}
    out["per_field"] = {name: [float(x) for x in v] for name, v in fields.items()}
    return out


def evaluate_turbulence(
    model: Any,
    test_file: str | Path,
    *,
    n_cases: int = TURBULENCE_PROTOCOL["n_cases"],
    n_samples: int = TURBULENCE_PROTOCOL["n_samples"],
    ddim_steps: int = TURBULENCE_PROTOCOL["ddim_steps"],
    seed: int = 0,
    device: str | torch.device = "cpu",
) -> dict[str, Any]:
    """The official Turbulence test protocol on `test_file` (official layout (N, L, 2, H, W)) for a trained
    DynamicalDiffusion with 4 context frames of 15; returns the metrics of frames 4-14 and the run's sizes."""
    from iclr25.dynamical_diffusion.data import load_turbulence_npy
    from iclr25.dynamical_diffusion.training import sample_batched

    proto = TURBULENCE_PROTOCOL
    if model.n_context != proto["n_context"]:
        raise ValueError(f"the Turbulence protocol forecasts from 4 context frames; the model takes {model.n_context}")
    if n_cases < 1 or n_samples < 2:
        raise ValueError(f"need n_cases >= 1 and n_samples >= 2, got {n_cases} and {n_samples}")
    data = load_turbulence_npy(test_file, total_length=proto["total_length"])[:n_cases]  # first n_subsample cases
    truth = torch.from_numpy(data).to(device)
    samples, seconds = sample_batched(
        model, truth[:, : proto["n_context"]], proto["total_length"], n_samples, ddim_steps, seed=seed
    )
    first = proto["first_scored_frame"]
    metrics = official_field_metrics(samples[:, :, first:].cpu(), truth[:, first:].cpu(), proto["levels"])
    metrics.update(n_cases=int(truth.shape[0]), n_samples=n_samples, ddim_steps=ddim_steps, sample_seconds=seconds)
    return metrics


# -- time series: CRPS_sum ------------------------------------------------------------------------------------


def load_series(path: str | Path) -> tuple[np.ndarray, np.ndarray, int | None]:
    """(train (L1, D), test (L2, D), prediction length or None) from a GluonTS-style folder, or from a wide CSV
    (its last 10% of rows, at least 2, as the test split)."""
    from iclr25.dynamical_diffusion.data import load_gluonts_dataset, load_wide_csv

    path = Path(path)
    if path.is_dir():
        train, meta = load_gluonts_dataset(path, "train"), load_gluonts_dataset(path, "test")
        test = _latest_test_records(path / "test", train["target"].shape[1])
        return train["target"], test, meta["prediction_length"]
    _, values = load_wide_csv(path)
    split = len(values) - max(2, len(values) // 10)
    return values[:split], values, None


def _latest_test_records(folder: Path, n_series: int) -> np.ndarray:
    """The test split's longest records (GluonTS test files repeat every series once per rolling evaluation date,
    each one prediction length longer), aligned at their ends: (L, n_series)."""
    from iclr25.dynamical_diffusion.data import _read_jsonl

    files = sorted(folder.glob("*.json")) + sorted(folder.glob("*.json.gz"))
    records = [r["target"] for p in files for r in _read_jsonl(p)]
    longest = max(len(r) for r in records)
    latest = [r for r in records if len(r) == longest]
    if len(records) % n_series or len(latest) != n_series:
        raise ValueError(f"{folder}: {len(records)} test records do not repeat the {n_series} training series")
    return np.stack([np.asarray(r, dtype=np.float32) for r in latest], axis=1)


def ts_windows(test: np.ndarray, context: int, horizon: int, n_windows: int) -> np.ndarray:
    """The last `n_windows` windows of context + horizon steps of `test`, each ending `horizon` after the previous."""
    length = context + horizon
    ends = [len(test) - i * horizon for i in range(n_windows)][::-1]
    if ends[0] - length < 0:
        raise ValueError(f"the test split ({len(test)} steps) is too short for {n_windows} windows of {length} steps")
    return np.stack([test[e - length : e] for e in ends])


def ts_crps_sum_benchmark(
    path: str | Path,
    *,
    context: int = 48,
    horizon: int | None = None,
    n_windows: int = 7,
    gamma_ratios: tuple[float, ...] = (0.0, 0.5),
    steps: int = 2000,
    batch_size: int = 64,
    lr: float = 1e-3,
    width: int = 64,
    n_samples: int = 100,
    ddim_steps: int = 20,
    seed: int = 0,
    device: str | torch.device = "cpu",
) -> dict[str, Any]:
    """Train one TSDenoiser per gamma ratio (0: DPM) on training windows and score CRPS_sum on the test windows.

    `horizon` defaults to the data set's prediction length (24 when it has none); the series are standardised
    with the training split's mean and sd and the forecasts scored after undoing it.
    """
    from iclr25.dynamical_diffusion.data import sliding_windows
    from iclr25.dynamical_diffusion.dydiff import DynamicalDiffusion
    from iclr25.dynamical_diffusion.models import TSDenoiser
    from iclr25.dynamical_diffusion.training import sample_batched, train

    train_np, test_np, pred_len = load_series(path)
    horizon = horizon or pred_len or 24
    mean, sd = train_np.mean(0), train_np.std(0) + 1e-8
    windows = sliding_windows((train_np - mean) / sd, context + horizon).astype(np.float32)
    test_w = ts_windows(test_np, context, horizon, n_windows).astype(np.float32)
    train_x = torch.from_numpy(windows).to(device)
    test_x = torch.from_numpy((test_w - mean) / sd).float().to(device)
    results: dict[str, Any] = {"context": context, "horizon": horizon, "n_windows": len(test_w), "models": {}}
    for r in gamma_ratios:
        torch.manual_seed(seed)  # same initial weights for every model
        model = DynamicalDiffusion(TSDenoiser(train_np.shape[1], width=width), gamma_ratio=r, n_context=context)
        model = model.to(device)
        stats = train(model, train_x, steps, batch_size, lr, seed=seed, tag=f"r{r:g}/")
        samples, _ = sample_batched(model, test_x[:, :context], context + horizon, n_samples, ddim_steps, seed=seed)
        forecast = samples[:, :, context:].cpu().double() * torch.from_numpy(sd).double() + torch.from_numpy(mean)
        truth = torch.from_numpy(test_w[:, context:]).double()
        results["models"][f"r{r:g}"] = {
            "gamma_ratio": r,
            "crps_sum": float(crps_sum(forecast, truth)),
            "final_loss": stats.final_loss,
            "train_seconds": stats.seconds,
        }
    return results
