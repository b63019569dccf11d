"""Slow, obviously-correct loop-over-time forms of ECI and its baselines (the official semantics).

Paper: "Error-quantified Conformal Inference for Time Series" (ICLR 2025, arXiv 2502.00818).
Each function re-computes everything from the score array at every step, exactly as the official
`core/methods.py` does (window range re-scanned, ECI-integral's weighted sum recomputed over all past
steps, ACI's quantile by `np.quantile` on the past window, SF-OGD's normaliser re-summed). The fast
streaming forms in `methods.py` / `baselines.py` are tested against these to 1e-8.
Only difference kept on purpose: f' switches to its symmetric form where the official expression overflows.
exp is `deterministic.exp` (within 1 ulp of the C library's, tested separately) in the scalar recursions, as in
the fast forms: the smoothed, accumulating ablation amplifies a one-ulp difference of exp to ~1e-8 over 800
steps, which would hide a real difference in the recursion behind libm noise.
"""

from __future__ import annotations

import numpy as np

from iclr25.eci_conformal.deterministic import exp


def _fprime(x: float, c: float) -> float:
    if c * x < -350.0:  # the official expression overflows to NaN below about -709; use the symmetric form
        x = -x
    return c * exp(-c * x) / (1.0 + exp(-c * x)) ** 2


def _lr_t(scores: np.ndarray, t: int, lr: float, window: int, proportional: bool) -> float:
    if proportional and t > 0:
        past = scores[max(t - window, 0) : t]
        return lr * (past.max() - past.min())  # eq. (4)
    return lr


def eci_reference(
    scores: np.ndarray,
    alpha: float,
    lr: float,
    window: int = 100,
    variant: str = "basic",
    eq_mode: str = "official",
    proportional_lr: bool = True,
    c: float = 1.0,
) -> np.ndarray:
    """ECI and its variants, literally as the official loops (ahead = 1)."""
    scores = np.asarray(scores, dtype=float)
    T = len(scores)
    if variant == "cutoff":
        window = 100  # forced in the official ECI_cutoff
    q = np.zeros(T)
    qbar = np.zeros(T)
    for t in range(T):
        lr_t = _lr_t(scores, t, lr, window, proportional_lr)
        s = scores[t]
        if variant in ("cutoff", "smoothed") and t == 0:
            continue
        if variant in ("smoothed", "smoothed_ogd"):
            grad = 1.0 / (1.0 + exp(-c * (s - q[t]))) - alpha
        else:
            grad = float(s > q[t]) - alpha
        if variant == "smoothed_ogd":
            eq = 0.0
        elif variant == "integral":
            w = 0.95 ** (t - np.arange(1, t + 1))
            d = scores[:t] - q[:t]
            z = np.where(c * d < -350.0, -d, d)  # symmetric form where the official expression overflows
            terms = d * c * np.exp(-c * z) / (1.0 + np.exp(-c * z)) ** 2
            eq = float(np.sum(w / w.sum() * terms)) if t > 0 else 0.0
        else:
            eq = (s - q[t]) * _fprime(s - q[t], c)
            if variant == "cutoff":
                past = scores[max(t - window, 0) : t]
                if abs(s - q[t]) < 1.0 * (past.max() - past.min()):
                    eq = 0.0
        if t < T - 1:
            if eq_mode == "official":
                qbar[t + 1] = qbar[t] + lr_t * grad
                q[t + 1] = qbar[t + 1] + lr_t * eq
            else:
                q[t + 1] = q[t] + lr_t * (grad + eq)
                qbar[t + 1] = q[t + 1]
    return q


def ogd_reference(scores: np.ndarray, alpha: float, lr: float, kind: str = "fixed") -> np.ndarray:
    """OGD ("fixed"), SF-OGD with the official normaliser ("sf_quirk") or the correct one ("sf"), decay-OGD."""
    scores = np.asarray(scores, dtype=float)
    T = len(scores)
    q = np.zeros(T)
    cov = np.zeros(T)
    for t in range(T):
        cov[t] = q[t] >= scores[t]
        grad = alpha if cov[t] else -(1 - alpha)
        if kind == "fixed":
            step = lr
        elif kind == "decay":
            step = lr * t ** (-0.6) if t else lr
        elif kind == "sf_quirk":
            step = lr / np.sqrt(np.sum((alpha - (cov[: t + 1] - 1)) ** 2))
        else:
            step = lr / np.sqrt(np.sum(np.where(cov[: t + 1] > 0, alpha, 1 - alpha) ** 2))
        if t < T - 1:
            q[t + 1] = q[t] - step * grad
    return q


def pid_reference(
    scores: np.ndarray,
    alpha: float,
    lr: float,
    window: int = 100,
    KI: float = 0.0,
    Csat: float = 1.0,
    scorecast_period: int | None = None,
) -> np.ndarray:
    """Conformal P / PI, and PID when `scorecast_period` is given, as the official
    quantile_integrator_log_scorecaster: statsmodels ThetaModel refit on scores[:t] for t > T_burnin (= window)
    and its one-step forecast added to q_{t+1}."""
    scores = np.asarray(scores, dtype=float)
    T = len(scores)
    q = np.zeros(T)
    qts = np.zeros(T)
    cov = np.zeros(T)
    casts = np.zeros(T)
    for t in range(T):
        if scorecast_period is not None and t > window and t + 1 < T:
            from statsmodels.tsa.forecasting.theta import ThetaModel

            fit = ThetaModel(np.nan_to_num(scores[:t]).astype(float), period=scorecast_period).fit()
            casts[t + 1] = np.asarray(fit.forecast(1))[0]
        lr_t = _lr_t(scores, t, lr, window, True)
        cov[t] = q[t] >= scores[t]
        grad = alpha if cov[t] else -(1 - alpha)
        x = (1 - cov)[:t].sum() - t * alpha
        if KI == 0:
            integ = 0.0
        else:
            arg = x * np.log(t + 1) / (Csat * (t + 1))
            integ = KI * (np.inf if arg >= np.pi / 2 else -np.inf if arg <= -np.pi / 2 else np.tan(arg))
        if t < T - 1:
            qts[t + 1] = qts[t] - lr_t * grad
            q[t + 1] = qts[t + 1] + integ + casts[t + 1]
    return q


def eci_scorecaster_reference(
    scores: np.ndarray, alpha: float, lr: float, casts: np.ndarray, window: int = 100, burn_in: int = 100
) -> np.ndarray:
    """ECI + scorecaster (not in the official code): the official ECI loop with `casts[t]` (the forecast of
    s_{t+1} made from scores[:t], as PID's) added to q_{t+1} for t > burn_in."""
    scores = np.asarray(scores, dtype=float)
    T = len(scores)
    q = np.zeros(T)
    qbar = np.zeros(T)
    for t in range(T - 1):
        lr_t = _lr_t(scores, t, lr, window, True)
        s = scores[t]
        grad = float(s > q[t]) - alpha
        eq = (s - q[t]) * _fprime(s - q[t], 1.0)
        qbar[t + 1] = qbar[t] + lr_t * grad
        q[t + 1] = qbar[t + 1] + lr_t * eq + (casts[t] if t > burn_in else 0.0)
    return q


def aci_reference(
    scores: np.ndarray, alpha: float, lr: float, window_length: int = 10**7, burn_in: int = 100, clip: bool = False
) -> np.ndarray:
    """ACI / ACI (clipped) with np.quantile on the past window at every step."""
    scores = np.asarray(scores, dtype=float)
    T = len(scores)
    q = np.zeros(T)
    alphat = alpha
    for t in range(T):
        clip_value = scores[max(t - window_length, 0) : t].max() if t > 0 else np.inf
        if t > burn_in:
            if alphat <= 1 / (t + 1):
                q[t] = np.inf
            else:
                q[t] = np.quantile(scores[max(t - window_length, 0) : t], 1 - np.clip(alphat, 0, 1), method="higher")
            covered = q[t] >= scores[t]
            alphat = alphat - lr * (-alpha if covered else 1 - alpha)
        else:
            q[t] = np.quantile(scores[:t], 1 - alpha) if t > np.ceil(1 / alpha) else np.inf
        if clip and q[t] == np.inf:
            q[t] = clip_value
    return q


def trailing_reference(scores: np.ndarray, alpha: float, window: int = 100) -> np.ndarray:
    """Trailing-window "higher" quantile."""
    scores = np.asarray(scores, dtype=float)
    q = np.zeros(len(scores))
    for t in range(len(scores)):
        if min(window, t) < np.ceil(1 / alpha):
            q[t] = np.inf
        else:
            q[t] = np.quantile(scores[max(t - window, 0) : t], 1 - alpha, method="higher")
    return q


def solve_reference(A: list[list[float]], b: list[float]) -> list[float]:
    """Gaussian elimination with partial pivoting on Python floats, in the operation order of
    `deterministic.solve_batched` (first row of largest |entry| as pivot; back substitution adding j = i+1, ...)."""
    d = len(b)
    U = [list(map(float, row)) for row in A]
    v = list(map(float, b))
    for k in range(d):
        p = max(range(k, d), key=lambda i: (abs(U[i][k]), -i))  # the first of the largest
        U[k], U[p] = U[p], U[k]
        v[k], v[p] = v[p], v[k]
        for i in range(k + 1, d):
            lower = U[i][k] / U[k][k]
            for j in range(k, d):
                U[i][j] = U[i][j] - lower * U[k][j]
            v[i] = v[i] - lower * v[k]
    x = [0.0] * d
    for i in range(d - 1, -1, -1):
        acc = v[i]
        for j in range(i + 1, d):
            acc = acc - U[i][j] * x[j]
        x[i] = acc / U[i][i]
    return x


def rolling_ls_reference(
    features: np.ndarray, y: np.ndarray, window: int, min_points: int, ridge: float
) -> list[float]:
    """The rolling least-squares forecast of `data._rolling_ls`, one time step at a time on Python floats:
    running sums of the normal equations added in time order, differenced over the window, solved by
    `solve_reference`, the forecast's dot product added left to right."""
    F = [[float(v) for v in row] for row in np.asarray(features, dtype=float)]
    ys = [float(v) for v in np.asarray(y, dtype=float)]
    n, d = len(F), len(F[0])
    cxx = [[[0.0] * d for _ in range(d)]]  # cxx[t] = sum over rows < t, added in time order
    cxy = [[0.0] * d]
    for t in range(n):
        f = F[t]
        if t == 0:  # np.cumsum starts from the first row itself
            cxx.append([[f[i] * f[j] for j in range(d)] for i in range(d)])
            cxy.append([f[i] * ys[t] for i in range(d)])
        else:
            cxx.append([[cxx[t][i][j] + f[i] * f[j] for j in range(d)] for i in range(d)])
            cxy.append([cxy[t][i] + f[i] * ys[t] for i in range(d)])
    out = []
    for t in range(n):
        s = max(t - window, 0)
        if t - s < min_points:
            out.append(0.0)
            continue
        A = [[(cxx[t][i][j] - cxx[s][i][j]) + ridge * (1.0 if i == j else 0.0) for j in range(d)] for i in range(d)]
        b = [cxy[t][i] - cxy[s][i] for i in range(d)]
        beta = solve_reference(A, b)
        acc = F[t][0] * beta[0]
        for j in range(1, d):
            acc = acc + F[t][j] * beta[j]
        out.append(acc)
    return out
