"""Method registry and the interval wrapper: any point forecaster's residuals -> two-sided online intervals.

Paper: "Error-quantified Conformal Inference for Time Series" (ICLR 2025, arXiv 2502.00818), Sec. 5 and the
official driver `tests/base_test.py`: the default score is the signed residual, run as two one-sided streams
s_lo = yhat - y and s_hi = y - yhat, each at alpha/2, giving C_t = [yhat_t - q_lo, yhat_t + q_hi]; when
q_lo + q_hi < 0 the ends are swapped (lo' = min(lo, hi), hi' = max(hi, lo), the official repair with
minsize 0). The absolute residual |y - yhat| at alpha gives symmetric intervals.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Literal

import numpy as np

from iclr25.eci_conformal.baselines import ACI, OGD, SFOGD, ConformalPID, DecayOGD, DtACI, TrailingWindow
from iclr25.eci_conformal.methods import ECI, OnlineMethod, check_alpha, run_online

METHODS: tuple[str, ...] = (
    "eci",
    "eci_cutoff",
    "eci_integral",
    "eci_smoothed",
    "smoothed_ogd",
    "eci_accumulate",
    "conformal_p",
    "conformal_pi",
    "conformal_pid",
    "ogd",
    "sf_ogd",
    "decay_ogd",
    "aci",
    "aci_clipped",
    "trail",
    "dtaci",
)

Score = Literal["signed", "abs"]
SF_OGD_NORMALISERS: tuple[str, ...] = ("true", "official")  # true squared gradients / the official code's


def make_method(name: str, alpha: float, lr: float | None = None, *, window: int = 100, **kw: Any) -> OnlineMethod:
    """Build a streaming method by name (see METHODS). `window` is the official T_burnin: the adaptive-lr
    window of ECI/PID and ACI's burn-in. Extra keywords go to the class."""
    if name not in METHODS:
        raise ValueError(f"unknown method {name!r}; choose one of {', '.join(METHODS)}")
    if lr is None and name not in ("trail", "dtaci"):
        raise ValueError(f"method {name!r} needs a learning rate (lr)")
    eci_variants = {
        "eci": "basic",
        "eci_cutoff": "cutoff",
        "eci_integral": "integral",
        "eci_smoothed": "smoothed",
        "smoothed_ogd": "smoothed_ogd",
    }
    if name in eci_variants:
        return ECI(alpha, lr, window=window, variant=eci_variants[name], **kw)  # type: ignore[arg-type]
    if name == "eci_accumulate":
        return ECI(alpha, lr, window=window, eq_mode="accumulate", **kw)  # type: ignore[arg-type]
    if name == "conformal_p":
        return ConformalPID(alpha, lr, window=window, **kw)  # type: ignore[arg-type]
    if name == "conformal_pi":
        kw = {"KI": 200.0, "Csat": 1.0, **kw}  # changepoint-config defaults of the official repository
        return ConformalPID(alpha, lr, window=window, **kw)  # type: ignore[arg-type]
    if name == "conformal_pid":  # the paper's PID: statsmodels Theta scorecaster (the [forecast] extra)
        if "scorecaster" not in kw:
            from iclr25.eci_conformal.forecast import ThetaModelScorecaster

            period = kw.pop("seasonal_period", 1)
            ThetaModelScorecaster(period)  # a missing statsmodels fails here, before any step
            kw["scorecaster"] = lambda: ThetaModelScorecaster(period)
        kw = {"KI": 200.0, "Csat": 1.0, "burn_in": window, **kw}
        return ConformalPID(alpha, lr, window=window, **kw)  # type: ignore[arg-type]
    if name == "ogd":
        return OGD(alpha, lr, **kw)  # type: ignore[arg-type]
    if name == "sf_ogd":  # normaliser="official" (or official_quirk=True): the official (1 + alpha)^2 quirk
        normaliser = kw.pop("normaliser", "true")
        if normaliser not in SF_OGD_NORMALISERS:
            raise ValueError(f"normaliser must be one of {', '.join(SF_OGD_NORMALISERS)}; got {normaliser!r}")
        kw.setdefault("official_quirk", normaliser == "official")
        return SFOGD(alpha, lr, **kw)  # type: ignore[arg-type]
    if name == "decay_ogd":
        return DecayOGD(alpha, lr, **kw)  # type: ignore[arg-type]
    if name in ("aci", "aci_clipped"):
        return ACI(alpha, lr, burn_in=window, clip=name == "aci_clipped", **kw)  # type: ignore[arg-type]
    if name == "trail":
        return TrailingWindow(alpha, window=kw.pop("trail_window", window), **kw)
    return DtACI(alpha, **kw)


MethodSpec = str | Callable[[float], OnlineMethod]


def _series(y: np.ndarray, yhat: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Validate observations and forecasts: finite 1-D float arrays of one length."""
    y, yhat = np.asarray(y, dtype=float), np.asarray(yhat, dtype=float)
    if y.shape != yhat.shape or y.ndim != 1:
        raise ValueError(f"y and yhat must be 1-D of one length, got {y.shape} and {yhat.shape}")
    for name, arr in (("y", y), ("yhat", yhat)):
        bad = np.flatnonzero(~np.isfinite(arr))
        if bad.size:
            raise ValueError(f"{name} must be finite; got {arr[bad[0]]} at index {bad[0]} ({bad.size} non-finite)")
    return y, yhat


def _factory(method: MethodSpec, lr: float | None, window: int, kw: dict[str, Any]) -> Callable[[float], OnlineMethod]:
    if isinstance(method, str):
        return lambda a: make_method(method, a, lr, window=window, **kw)
    if not callable(method):
        raise ValueError("method must be a method name or a callable alpha -> online method")
    return method


def interval_from_scores(
    method: MethodSpec,
    y: np.ndarray,
    yhat: np.ndarray,
    alpha: float = 0.1,
    *,
    lr: float | None = None,
    score: Score = "signed",
    window: int = 100,
    **kw: Any,
) -> tuple[np.ndarray, np.ndarray]:
    """Online intervals [lo_t, hi_t] for y_t around yhat_t; `method` is a name or a factory alpha -> method."""
    alpha = check_alpha(alpha)
    y, yhat = _series(y, yhat)
    make = _factory(method, lr, window, kw)
    if score == "signed":
        q_lo = run_online(make(alpha / 2), yhat - y)
        q_hi = run_online(make(alpha / 2), y - yhat)
        lo, hi = yhat - q_lo, yhat + q_hi
        return np.minimum(lo, hi), np.maximum(hi, lo)  # official set repair with minsize 0
    if score == "abs":
        q = run_online(make(alpha), np.abs(y - yhat))
        return yhat - q, yhat + q
    raise ValueError(f"score must be 'signed' or 'abs', got {score!r}")


class OnlineIntervals:
    """Streaming two-sided intervals around any point forecast, scikit-learn style.

    ``lo, hi = m.predict_interval(yhat_t)`` before y_t is seen, then ``m.update(y_t, yhat_t)``;
    ``m.fit_predict(y, yhat)`` runs a whole series and returns the arrays (lo, hi).
    """

    def __init__(
        self,
        method: MethodSpec = "eci",
        alpha: float = 0.1,
        *,
        lr: float | None = 0.1,
        score: Score = "signed",
        window: int = 100,
        **kw: Any,
    ) -> None:
        self.alpha = check_alpha(alpha)
        if score not in ("signed", "abs"):
            raise ValueError(f"score must be 'signed' or 'abs', got {score!r}")
        self.method, self.lr, self.score, self.window, self.kw = method, lr, score, window, kw
        self.reset()

    def reset(self) -> OnlineIntervals:
        """Start a fresh stream."""
        make = _factory(self.method, self.lr, self.window, self.kw)
        if self.score == "signed":
            self._lo, self._hi = make(self.alpha / 2), make(self.alpha / 2)
        else:
            self._lo = self._hi = make(self.alpha)
        return self

    def predict_interval(self, yhat: float) -> tuple[float, float]:
        """The interval for the next observation given its point forecast."""
        lo, hi = yhat - self._lo.threshold, yhat + self._hi.threshold
        return min(lo, hi), max(lo, hi)

    def update(self, y: float, yhat: float) -> None:
        """Reveal y_t (with the forecast yhat_t it was predicted with)."""
        if self.score == "signed":
            self._lo.update(yhat - y)
            self._hi.update(y - yhat)
        else:
            self._lo.update(abs(y - yhat))

    def fit_predict(self, y: np.ndarray, yhat: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Run a whole series from a fresh state; return (lo, hi) arrays."""
        self.reset()
        y, yhat = _series(y, yhat)
        lo, hi = np.empty_like(y), np.empty_like(y)
        for t, (a, b) in enumerate(zip(y.tolist(), yhat.tolist(), strict=True)):
            lo[t], hi[t] = self.predict_interval(b)
            self.update(a, b)
        return lo, hi
