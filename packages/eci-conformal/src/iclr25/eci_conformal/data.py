"""Data for the ECI reproduction: the synthetic settings, the PID paper's score streams, real-format loaders
and simple numpy forecasters.

Paper: "Error-quantified Conformal Inference for Time Series" (ICLR 2025, arXiv 2502.00818), Sec. 5:
the synthetic changepoint regression (n = 2000, X ~ N(0, I_4), beta switches at t = 500 and 1500) and the
real series (AMZN/GOOGL daily Open from the Kaggle DJIA-30 CSV, Elec2 `nswdemand`, Delhi daily climate
`meantemp`). Our extra synthetic settings ("drift": beta moves linearly; "hetero": noise std 1/3 in
alternating blocks of 250) and "mix1" (the Conformal-PID paper's synthetic score stream) stress the same
method under other shifts. Loaders read the formats with the standard library's csv module (no pandas);
gaps are linearly interpolated. No file is downloaded: users supply the CSVs.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Sequence
from datetime import datetime
from pathlib import Path

import numpy as np

from iclr25.eci_conformal.deterministic import dot_rows, solve_batched

BETAS = (np.array([2.0, 1.0, 0.0, 0.0]), np.array([0.0, -2.0, -1.0, 0.0]), np.array([0.0, 0.0, 2.0, 1.0]))
CHANGEPOINTS = (500, 1500)
SETTINGS: tuple[str, ...] = ("changepoint", "drift", "hetero")


def _rng(seed: int | np.random.Generator) -> np.random.Generator:
    return seed if isinstance(seed, np.random.Generator) else np.random.default_rng(seed)


def make_regression(setting: str, n: int = 2000, seed: int | np.random.Generator = 0) -> tuple[np.ndarray, np.ndarray]:
    """One synthetic regression series: X (n, 4) ~ N(0, I), y (n,) for "changepoint", "drift" or "hetero"."""
    if setting not in SETTINGS:
        raise ValueError(f"setting must be one of {', '.join(SETTINGS)}; got {setting!r}")
    if n < 2:
        raise ValueError(f"n must be >= 2, got {n}")
    rng = _rng(seed)
    X = rng.standard_normal((n, 4))  # (n, 4)
    t = np.arange(n)
    noise = rng.standard_normal(n)
    if setting == "changepoint":  # paper Sec. 5: beta_0 / beta_1 / beta_2 switching at 500 and 1500
        seg = np.searchsorted(np.array(CHANGEPOINTS), t, side="right")
        beta = np.stack(BETAS)[seg]  # (n, 4)
    elif setting == "drift":  # beta_t moves linearly from beta_0 to beta_1
        w = (t / (n - 1))[:, None]
        beta = (1 - w) * BETAS[0] + w * BETAS[1]
    else:  # hetero: fixed beta_0, noise std 1 in even blocks of 250, 3 in odd ones
        beta = np.broadcast_to(BETAS[0], (n, 4))
        noise = noise * np.where((t // 250) % 2 == 0, 1.0, 3.0)
    y = dot_rows(X, beta) + noise  # x_t . beta_t in a fixed order (bitwise the same on every machine)
    return X, y


def make_mix1(seed: int | np.random.Generator = 0, block: int = 1000) -> np.ndarray:
    """The Conformal-PID paper's "mix1" score stream: ramp up, ramp down, noisy sine, near-unit-root AR(3)."""
    rng = _rng(seed)
    up = np.linspace(0, 1, block) + 0.1 * rng.standard_normal(block)
    down = np.linspace(1, 0, block) + 0.1 * rng.standard_normal(block)
    sine = np.sin(2 * np.pi * np.arange(block) / 500) + 0.5 + rng.standard_normal(block)
    ar = np.zeros(block + 3)
    eps = 0.1 * rng.standard_normal(block)
    for i in range(block):
        ar[i + 3] = 0.9999 * ar[i] + eps[i]  # AR(3), beta = (0, 0, 0.9999), zero initial state
    return np.concatenate([up, down, sine, 0.5 + ar[3:]])


SCORE_STREAMS: dict[str, int] = {"mix1": 1000, "stationary": 100, "increasing_lownoise": 100}  # name -> T_burnin


def make_score_stream(name: str, seed: int | np.random.Generator = 0) -> np.ndarray:
    """A Conformal-PID paper score stream by config name: "mix1", "stationary" (0.5 + N(0, 0.1^2), 1000
    steps) or "increasing_lownoise" (linspace(0, 1) + N(0, 0.01^2), 1000 steps)."""
    if name == "mix1":
        return make_mix1(seed)
    rng = _rng(seed)
    if name == "stationary":
        return np.full(1000, 0.5) + 0.1 * rng.standard_normal(1000)
    if name == "increasing_lownoise":
        return np.linspace(0, 1, 1000) + 0.01 * rng.standard_normal(1000)
    raise ValueError(f"score stream must be one of {', '.join(SCORE_STREAMS)}; got {name!r}")


def make_bounded_stream(n: int = 20000, seed: int | np.random.Generator = 0) -> np.ndarray:
    """A bounded, strongly dependent score stream in [0, 1.2]: clip((0.05 * random walk mod 1) + 0.1 U, 0, 1.2)."""
    rng = _rng(seed)
    walk = np.cumsum(0.05 * rng.standard_normal(n)) % 1.0
    return np.clip(walk + 0.1 * rng.uniform(size=n), 0.0, 1.2)


# ---------------------------------------------------------------------------------------------------
# Forecasters (numpy, causal: the forecast of y_t uses data before t only).


def _rolling_ls(features: np.ndarray, y: np.ndarray, window: int, min_points: int, ridge: float) -> np.ndarray:
    """yhat_t = features_t . beta_t, beta_t = least squares on rows [max(0, t - window), t); 0 if < min_points.

    Bitwise the same on every machine: the normal equations come from sequential running sums (`np.cumsum`)
    of elementwise products and are solved by `deterministic.solve_batched` (no BLAS/LAPACK, no SIMD
    reduction), so the forecasts, and every threshold recursion fed with them, do not depend on the CPU.
    """
    n, d = features.shape
    outer = features[:, :, None] * features[:, None, :]  # (n, d, d), one product per entry
    cxx = np.concatenate([np.zeros((1, d, d)), np.cumsum(outer, axis=0)])  # (n+1, d, d)
    cxy = np.concatenate([np.zeros((1, d)), np.cumsum(features * y[:, None], axis=0)])  # (n+1, d)
    t = np.arange(n)
    start = np.maximum(t - window, 0)
    A = cxx[t] - cxx[start] + ridge * np.eye(d)  # (n, d, d)
    b = cxy[t] - cxy[start]  # (n, d)
    ok = (t - start) >= min_points
    yhat = np.zeros(n)
    if ok.any():
        beta = solve_batched(A[ok], b[ok])  # (m, d)
        yhat[ok] = dot_rows(features[ok], beta)
    return yhat


def rolling_ols(X: np.ndarray, y: np.ndarray, window: int = 100, min_points: int = 10) -> np.ndarray:
    """Rolling OLS with intercept on covariates X, refit at every t on the last `window` points (0 if < min)."""
    X, y = np.asarray(X, dtype=float), np.asarray(y, dtype=float)
    if X.ndim != 2 or y.ndim != 1 or len(X) != len(y):
        raise ValueError(f"need X of shape (n, d) and y of shape (n,), got {X.shape} and {y.shape}")
    if min_points < X.shape[1] + 1:
        raise ValueError(f"min_points must be >= number of coefficients ({X.shape[1] + 1}), got {min_points}")
    feats = np.concatenate([np.ones((len(y), 1)), X], axis=1)
    return _rolling_ls(feats, y, window, min_points, ridge=1e-10)


def rolling_ar(y: np.ndarray, order: int = 3, window: int = 100, min_points: int | None = None) -> np.ndarray:
    """Rolling AR(order) with intercept, refit at every t on the last `window` points; y_{t-1} before that."""
    y = np.asarray(y, dtype=float)
    if y.ndim != 1:
        raise ValueError(f"y must be 1-D, got shape {y.shape}")
    if order < 1:
        raise ValueError(f"order must be >= 1, got {order}")
    n = len(y)
    lags = np.zeros((n, order))
    for k in range(1, order + 1):
        lags[k:, k - 1] = y[:-k]
    feats = np.concatenate([np.ones((n, 1)), lags], axis=1)
    min_points = min_points or max(10, 2 * (order + 1))
    # rows with incomplete lags (t < order) are excluded by fitting only on rows >= order
    yhat_fit = _rolling_ls(feats[order:], y[order:], window, min_points, ridge=1e-8)
    yhat = np.zeros(n)
    yhat[1:] = y[:-1]  # naive last-value forecast until the AR fit has enough rows
    fitted = np.arange(n - order) >= min_points
    yhat[order:][fitted] = yhat_fit[fitted]
    return yhat


def naive_forecast(y: np.ndarray) -> np.ndarray:
    """Last-value forecast: yhat_t = y_{t-1} (yhat_0 = y_0)."""
    y = np.asarray(y, dtype=float)
    return np.concatenate([y[:1], y[:-1]])


# ---------------------------------------------------------------------------------------------------
# Loaders for the paper's real formats (users supply the files).


def interpolate_gaps(values: Sequence[float]) -> np.ndarray:
    """Linearly interpolate NaNs (ends held at the nearest value); error if nothing is finite."""
    v = np.asarray(values, dtype=float)
    ok = np.isfinite(v)
    if not ok.any():
        raise ValueError("the series has no finite values")
    if ok.all():
        return v
    idx = np.arange(len(v))
    return np.interp(idx, idx[ok], v[ok])


def _to_float(text: str) -> float:
    text = text.strip()
    if text == "" or text.lower() in ("nan", "na", "null", "none"):
        return float("nan")
    try:
        return float(text)
    except ValueError:
        raise ValueError(f"not a number: {text!r}") from None


def _read_rows(path: str | Path) -> tuple[list[str], list[dict[str, str]]]:
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"no such file: {path}")
    try:
        with path.open(newline="") as f:
            reader = csv.DictReader(f)
            if reader.fieldnames is None:
                raise ValueError(f"{path} is empty")
            rows = list(reader)
    except (UnicodeDecodeError, csv.Error) as e:  # a binary file (a pickle, an archive) is no CSV
        raise ValueError(f"{path} is not a CSV text file ({type(e).__name__})") from None
    width = len(reader.fieldnames)
    for line, row in enumerate(rows, start=2):  # a short row holds None, a long one a None key
        if None in row or None in row.values():
            raise ValueError(f"{path} line {line} does not have the header's {width} fields")
    return list(reader.fieldnames), rows


def load_column(path: str | Path, column: str) -> np.ndarray:
    """One numeric column of any CSV with a header, gaps interpolated."""
    fields, rows = _read_rows(path)
    if column not in fields:
        raise ValueError(f"column {column!r} not in {Path(path).name}; columns: {', '.join(f for f in fields if f)}")
    if not rows:
        raise ValueError(f"{path} has a header but no rows")
    return interpolate_gaps([_to_float(r[column]) for r in rows])


def load_djia(path: str | Path, name: str = "AMZN", column: str = "Open") -> np.ndarray:
    """Kaggle DJIA-30 CSV (`Date,Open,High,Low,Close,Volume,Name`): one ticker's column, sorted by date."""
    fields, rows = _read_rows(path)
    for needed in ("Date", "Name", column):
        if needed not in fields:
            raise ValueError(f"{Path(path).name} lacks column {needed!r}; columns: {', '.join(fields)}")
    picked = [r for r in rows if r["Name"] == name]
    if not picked:
        names = sorted({r["Name"] for r in rows})
        raise ValueError(f"ticker {name!r} not in {Path(path).name}; has {', '.join(names[:10])}")
    picked.sort(key=lambda r: datetime.strptime(r["Date"].strip(), "%Y-%m-%d"))
    return interpolate_gaps([_to_float(r[column]) for r in picked])


def load_elec2(path: str | Path, column: str = "nswdemand", n: int | None = 2000) -> np.ndarray:
    """Elec2 CSV (`date,day,period,nswprice,nswdemand,vicprice,vicdemand,transfer,class`): first n rows."""
    y = load_column(path, column)
    return y[:n] if n is not None else y


def load_climate(path: str | Path, column: str = "meantemp") -> np.ndarray:
    """Delhi daily-climate CSV (`,date,meantemp,humidity,wind_speed,meanpressure`), sorted by date."""
    fields, rows = _read_rows(path)
    if column not in fields or "date" not in fields:
        raise ValueError(f"{Path(path).name} needs columns 'date' and {column!r}; columns: {', '.join(fields)}")
    rows.sort(key=lambda r: datetime.strptime(r["date"].strip()[:10], "%Y-%m-%d"))
    return interpolate_gaps([_to_float(r[column]) for r in rows])


def load_changepoint_csv(path: str | Path) -> tuple[np.ndarray, np.ndarray]:
    """Changepoint CSV (`timestamp,X1,X2,X3,X4,y`): X (n, 4) and y (n,)."""
    fields, rows = _read_rows(path)
    cols = ["X1", "X2", "X3", "X4", "y"]
    missing = [c for c in cols if c not in fields]
    if missing:
        raise ValueError(f"{Path(path).name} lacks columns {missing}; expected timestamp,X1,X2,X3,X4,y")
    X = np.stack([interpolate_gaps([_to_float(r[c]) for r in rows]) for c in cols[:4]], axis=1)
    return X, interpolate_gaps([_to_float(r["y"]) for r in rows])


def save_changepoint_csv(path: str | Path, X: np.ndarray, y: np.ndarray, *, overwrite: bool = False) -> Path:
    """Write X, y in the changepoint CSV format (daily timestamps from 2018-01-01), as a new file (or, with
    `overwrite`, over one this project wrote)."""
    from iclr25.shared.files import write_text

    days = np.datetime64("2018-01-01") + np.arange(len(y))
    text = io.StringIO(newline="")
    w = csv.writer(text)
    w.writerow(["timestamp", "X1", "X2", "X3", "X4", "y"])
    for d, x, v in zip(days, X, y, strict=True):
        w.writerow([str(d), *(f"{a:.10g}" for a in x), f"{v:.10g}"])
    return write_text(path, text.getvalue(), overwrite=overwrite)


def load_forecasts_npz(path: str | Path) -> np.ndarray:
    """Cached forecasts (`.npz` with key `forecasts`), as the official repository stores them."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"no such file: {path}")
    from iclr25.shared.safeload import load_npz

    z = load_npz(path)  # allow_pickle=False: nothing in the file runs
    if "forecasts" not in z:
        raise ValueError(f"{path.name} has no 'forecasts' array; keys: {', '.join(z)}")
    return np.asarray(z["forecasts"], dtype=float).ravel()
