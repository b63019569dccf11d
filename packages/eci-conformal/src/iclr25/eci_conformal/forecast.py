"""The paper's base forecasters and Conformal PID's Theta scorecaster (statsmodels, the `[forecast]` extra).

Paper: "Error-quantified Conformal Inference for Time Series" (ICLR 2025, arXiv 2502.00818), Sec. 5: every
real series is forecast one step ahead by AR(3), Theta and Prophet, refit at every step on all the data so far
(the official code calls darts' `historical_forecasts(retrain=1)`; stocks are forecast on the log scale and
exponentiated). Conformal PID's scorecaster is statsmodels' `ThetaModel(scores[:t], period=seasonal_period)`
refit at every t > T_burnin on s_0..s_{t-1}; its one-step forecast is added to q_{t+1} (official
`quantile_integrator_log_scorecaster`).

- `ar_forecasts`: AR(3) with intercept by conditional least squares on the whole past (what statsmodels'
  `AutoReg(y, 3)` fits; darts' ARIMA(3, 0, 0) fits the same model by maximum likelihood, so the numbers
  differ slightly). numpy only. First forecast at t = 30 (darts' minimum training length, as in the
  official cached `ar.npz` files); zeros before (ones on the log scale: exp(0)).
- `theta_forecasts`: statsmodels' ThetaModel refit at every step from t = 3 (the cached `theta.npz` files
  start there). darts' `Theta()` is the same method (theta = 2, SES + half the linear trend) with its own
  seasonality test, so numbers differ slightly from the cached files.
- Prophet is not offered (it needs cmdstan); cached `prophet.npz` files are accepted instead
  (`load_forecasts_npz`, `forecast_file`).
- `ThetaModelScorecaster`: the streaming scorecaster of Conformal PID / ECI + scorecaster; `theta_scorecasts`
  computes a stream's scorecasts once so that every lr of a grid reuses them (`ReplayScorecaster`), which
  is what the official code's cache does.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from pathlib import Path
from types import ModuleType

import numpy as np

EXTRA = "iclr25-eci-conformal[forecast]"
FORECASTERS: tuple[str, ...] = ("ar", "theta", "prophet")  # the paper's three; prophet only from a cached file
AR_START = 30  # first AR forecast (darts' minimum training length for ARIMA; the official ar.npz files)
THETA_START = 3  # first Theta forecast (the official theta.npz files)


class MissingExtraError(ImportError, ValueError):
    """An optional dependency is not installed; the message names the extra that installs it (an ImportError
    for Python callers, a ValueError so that the CLI prints that message as its one error line)."""


def statsmodels_theta() -> ModuleType:
    """statsmodels' Theta module, or a one-line error naming the extra that installs it."""
    try:
        from statsmodels.tsa.forecasting import theta
    except ImportError:
        raise MissingExtraError(
            f"the Theta forecaster and scorecaster need statsmodels: pip install '{EXTRA}'", name="statsmodels"
        ) from None
    return theta


def theta_one_step(history: np.ndarray, period: int, steps: int = 1) -> float:
    """The `steps`-ahead forecast of statsmodels' ThetaModel fitted on `history` (official settings)."""
    theta = statsmodels_theta()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # convergence chatter of the SES fit on short histories
        res = theta.ThetaModel(np.asarray(history, dtype=float), period=period).fit()
        return float(np.asarray(res.forecast(steps))[-1])


def _check_series(y: np.ndarray) -> np.ndarray:
    y = np.asarray(y, dtype=float)
    if y.ndim != 1 or not np.isfinite(y).all():
        raise ValueError(f"the series must be a finite 1-D array, got shape {y.shape}")
    return y


def ar_forecasts(y: np.ndarray, order: int = 3, *, log: bool = False, start: int = AR_START) -> np.ndarray:
    """One-step AR(order) forecasts with intercept, refit at every t on y_0..y_{t-1} (expanding window).

    Conditional least squares, computed from running sums (O(T order^2)); zeros before `start` (ones when
    `log`, where y is modelled on the log scale and the forecast exponentiated, as the official stocks configs).
    """
    y = _check_series(y)
    if order < 1 or start < 2 * (order + 1):
        raise ValueError(f"need order >= 1 and start >= 2 (order + 1), got order {order}, start {start}")
    if log:
        if (y <= 0).any():
            raise ValueError("log forecasting needs a positive series")
        y = np.log(y)
    n = len(y)
    feats = np.ones((n, order + 1))
    for k in range(1, order + 1):
        feats[k:, k] = y[:-k]
    feats, target = feats[order:], y[order:]  # rows with complete lags: row i predicts y_{i + order}
    outer = np.einsum("ni,nj->nij", feats, feats)
    cxx = np.concatenate([np.zeros((1, order + 1, order + 1)), np.cumsum(outer, axis=0)])
    cxy = np.concatenate([np.zeros((1, order + 1)), np.cumsum(feats * target[:, None], axis=0)])
    out = np.zeros(n)
    t = np.arange(start, n)  # forecast y_t from rows predicting y_order .. y_{t-1}
    rows = t - order
    A = cxx[rows] + 1e-10 * np.eye(order + 1)
    b = cxy[rows]
    coef = np.linalg.solve(A, b[..., None])[..., 0]
    out[start:] = np.einsum("nd,nd->n", feats[rows], coef)
    return np.exp(out) if log else out


def theta_forecasts(
    y: np.ndarray, period: int = 1, *, log: bool = False, start: int = THETA_START, progress_desc: str | None = None
) -> np.ndarray:
    """One-step Theta forecasts (statsmodels ThetaModel, seasonal `period`) refit at every t >= start on
    y_0..y_{t-1}; zeros before `start` (ones when `log`)."""
    from iclr25.shared.progress import progress

    y = _check_series(y)
    statsmodels_theta()
    if log:
        if (y <= 0).any():
            raise ValueError("log forecasting needs a positive series")
        y = np.log(y)
    out = np.zeros(len(y))
    steps = range(start, len(y))
    for t in progress(steps, desc=progress_desc or "theta forecasts", unit="fit") if progress_desc else steps:
        out[t] = theta_one_step(y[:t], period)
    return np.exp(out) if log else out


class ThetaModelScorecaster:
    """Conformal PID's scorecaster: statsmodels' ThetaModel refit on every score pushed so far (official lag and
    settings: `np.nan_to_num(scores[:t])`, seasonal `period`). `refit_every` > 1 refits only every k-th call and
    forecasts further ahead from the last fit in between (a cheaper approximation; 1 is the paper's)."""

    def __init__(self, period: int = 1, refit_every: int = 1) -> None:
        statsmodels_theta()
        if int(period) != period or period < 1 or int(refit_every) != refit_every or refit_every < 1:
            raise ValueError(f"period and refit_every must be integers >= 1, got {period}, {refit_every}")
        self.period, self.refit_every = int(period), int(refit_every)
        self.history: list[float] = []
        self._fit_n = -1
        self._fit: object | None = None

    def push(self, value: float) -> None:
        """Observe one more score."""
        self.history.append(float(value))

    def forecast(self) -> float:
        """Forecast of the next score (0 before any score)."""
        n = len(self.history)
        if n == 0:
            return 0.0
        if self._fit is None or n - self._fit_n >= self.refit_every:
            theta = statsmodels_theta()
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                self._fit = theta.ThetaModel(np.nan_to_num(np.asarray(self.history)), period=self.period).fit()
            self._fit_n = n
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return float(np.asarray(self._fit.forecast(n - self._fit_n + 1))[-1])  # type: ignore[attr-defined]


class ReplayScorecaster:
    """Replays precomputed scorecasts: `forecast()` after n pushes returns `values[n]` (the forecast of s_n)."""

    def __init__(self, values: Sequence[float]) -> None:
        self.values = np.asarray(values, dtype=float)
        self.n = 0

    def push(self, value: float) -> None:
        """Observe one more score (only counted)."""
        self.n += 1

    def forecast(self) -> float:
        """The precomputed forecast of the next score."""
        return float(self.values[self.n]) if self.n < len(self.values) else 0.0


def theta_scorecasts(
    scores: np.ndarray, period: int = 1, burn_in: int = 100, *, refit_every: int = 1, progress_desc: str | None = None
) -> np.ndarray:
    """g with g[n] = the scorecaster's forecast of s_n from s_0..s_{n-1}, for the n a PID/ECI run uses
    (burn_in < n < T - 1, where the official code scorecasts); 0 elsewhere. Replay with `ReplayScorecaster`."""
    from iclr25.shared.progress import progress

    scores = _check_series(scores)
    caster = ThetaModelScorecaster(period, refit_every)
    out = np.zeros(len(scores))
    steps = list(enumerate(scores.tolist()))
    for n, s in progress(steps, desc=progress_desc, unit="step") if progress_desc else steps:
        if burn_in < n < len(scores) - 1:
            out[n] = caster.forecast()
        caster.push(s)
    return out


def forecast_file(data_dir: str | Path, dataset: str, model: str) -> Path:
    """Where the official repository caches a forecast: `<data_dir>/proc/<dataset>_test/<model>.npz`."""
    return Path(data_dir) / "proc" / f"{dataset}_test" / f"{model}.npz"


def save_forecasts_npz(path: str | Path, forecasts: np.ndarray, *, overwrite: bool = False) -> Path:
    """Write forecasts in the official cache layout (`.npz` with the one key `forecasts`), as a new file (or, with
    `overwrite`, over one this project wrote)."""
    from iclr25.shared.files import save_arrays

    return save_arrays(path, {"forecasts": np.asarray(forecasts, dtype=float)}, overwrite=overwrite)
