"""Error-quantified Conformal Inference (ECI), streaming and functional forms.

Paper: Wu, Hu, Bao, Xia, Zou, "Error-quantified Conformal Inference for Time Series", ICLR 2025,
arXiv 2502.00818. Official code: creator-xi/Error-quantified-Conformal-Inference (`core/methods.py`).

Implemented (equation names follow the paper's method section; numbers are ours, see the README):

- (1) miss indicator  err_t = 1{s_t > q_t}  (ties count as covered)
- (2) smooth surrogate f(x) = 1 / (1 + exp(-c x)),  f'(x) = c e^{-cx} / (1 + e^{-cx})^2
- (3) error-quantification term  EQ_t = (s_t - q_t) f'(s_t - q_t)
- (4) adaptive step  eta_t = eta * (max - min of the w scores before t),  eta_0 = eta
- (5) ECI update, as the official code runs it:
      qbar_{t+1} = qbar_t + eta_t (err_t - alpha),   q_{t+1} = qbar_{t+1} + eta_t EQ_t
  (the EQ term is a one-step correction on top of the OGD state; ``eq_mode="accumulate"`` is the
  ablation q_{t+1} = q_t + eta_t (err_t - alpha + EQ_t), which loses long-run validity)
- (6) ECI-cutoff: EQ_t := 0 when |s_t - q_t| < h * (range of the last 100 scores); no update at t = 0
- (7) ECI-integral: EQ_t := sum_{i<t} 0.95^{t-1-i} EQ_i / sum_{i<t} 0.95^{t-1-i} (current step excluded,
  as in the official code), computed by an O(1) recursion instead of the official O(t) re-sum
- (8) smoothed ablations: gradient f(s_t - q_t) - alpha instead of err_t - alpha, with EQ
  ("smoothed", the official ``full_smoothed_eci``; no update at t = 0) or without ("smoothed_ogd")

Every update is O(1) amortised per step: the running window range uses monotone deques (the official
code re-scans the window each step). f' is evaluated in an overflow-free form (the official form
returns NaN once |c (s - q)| > ~709; ours returns 0 there, its limit).

Convention of the streaming API: ``threshold`` is q_t, the threshold to use for the next score;
``update(s_t)`` records s_t against it and returns q_{t+1}. ``run_online`` returns q_0 .. q_{T-1}.
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Callable, Iterable
from typing import Literal, Protocol

import numpy as np

from iclr25.eci_conformal.deterministic import exp as _exp

Variant = Literal["basic", "cutoff", "integral", "smoothed", "smoothed_ogd"]
VARIANTS: tuple[str, ...] = ("basic", "cutoff", "integral", "smoothed", "smoothed_ogd")
EQ_MODES: tuple[str, ...] = ("official", "accumulate")


class Scorecaster(Protocol):
    """A one-step forecaster of the score stream (Conformal PID's D-part): observe scores, forecast the next."""

    def push(self, value: float) -> None:
        """Observe one more score."""
        ...

    def forecast(self) -> float:
        """Forecast of the next score from the scores pushed so far."""
        ...


class OnlineMethod(Protocol):
    """What every online threshold method offers: the current threshold and a one-score update."""

    @property
    def threshold(self) -> float:
        """q_t: the threshold for the next score."""
        ...

    def update(self, score: float) -> float:
        """Record s_t against q_t and return q_{t+1}."""
        ...


def check_alpha(alpha: float) -> float:
    """Validate a miscoverage level: 0 < alpha < 1."""
    alpha = float(alpha)
    if not 0.0 < alpha < 1.0:
        raise ValueError(f"alpha must lie in (0, 1), got {alpha}")
    return alpha


def check_lr(lr: float, name: str = "lr") -> float:
    """Validate a learning rate: finite and >= 0."""
    lr = float(lr)
    if not math.isfinite(lr) or lr < 0:
        raise ValueError(f"{name} must be a finite number >= 0, got {lr}")
    return lr


def check_window(window: int, name: str = "window") -> int:
    """Validate a window length: an integer >= 1."""
    if int(window) != window or window < 1:
        raise ValueError(f"{name} must be an integer >= 1, got {window!r}")
    return int(window)


def sigmoid(x: float, c: float = 1.0) -> float:
    """f(x) = 1 / (1 + exp(-c x)), eq. (2); the official expression wherever it does not overflow. exp is
    `deterministic.exp` (bitwise the same on every machine; the C library's differs by CPU in the last bit)."""
    z = c * x
    if z > -700.0:
        return 1.0 / (1.0 + _exp(-z))
    e = _exp(z)
    return e / (1.0 + e)


def sigmoid_prime(x: float, c: float = 1.0) -> float:
    """f'(x) = c e^{-cx} / (1 + e^{-cx})^2, eq. (2); the official expression where it is finite, else the
    equal symmetric form c e^{-c|x|} / (1 + e^{-c|x|})^2 (the official one gives NaN for c x < -709).
    exp is `deterministic.exp` and the square a product, so the value is the same on every machine."""
    z = c * x
    e = _exp(-z) if z > -350.0 else _exp(-abs(z))
    d = 1.0 + e
    return c * e / (d * d)


def eq_term(score: float, q: float, c: float = 1.0) -> float:
    """EQ = (s - q) f'(s - q), eq. (3)."""
    d = score - q
    return d * sigmoid_prime(d, c)


class RunningRange:
    """max - min of the last `window` pushed values, O(1) amortised (monotone deques)."""

    __slots__ = ("_max", "_min", "_n", "window")

    def __init__(self, window: int) -> None:
        self.window = check_window(window)
        self._max: deque[tuple[int, float]] = deque()
        self._min: deque[tuple[int, float]] = deque()
        self._n = 0

    def push(self, value: float) -> None:
        """Append a value; values older than `window` pushes drop out."""
        i = self._n
        while self._max and self._max[-1][1] <= value:
            self._max.pop()
        self._max.append((i, value))
        while self._min and self._min[-1][1] >= value:
            self._min.pop()
        self._min.append((i, value))
        self._n += 1
        start = self._n - self.window
        while self._max[0][0] < start:
            self._max.popleft()
        while self._min[0][0] < start:
            self._min.popleft()

    @property
    def value(self) -> float:
        """max - min of the window (0 when empty or one value)."""
        if not self._max:
            return 0.0
        return self._max[0][1] - self._min[0][1]


class ECI:
    """Streaming ECI (eqs. 1-8): ``q_next = m.update(score)``; ``m.threshold`` is the current q_t.

    Args:
        alpha: target miscoverage (one side; the interval wrapper passes alpha/2 per side).
        lr: base learning rate eta.
        c: sigmoid steepness (the official code hard-codes 1).
        window: w, scores used for the adaptive step (official: T_burnin of the dataset config).
        variant: "basic" (ECI), "cutoff", "integral", "smoothed" (full_smoothed_eci) or "smoothed_ogd".
        eq_mode: "official" (one-step EQ correction, default) or "accumulate" (ablation, biased).
        proportional_lr: scale eta by the window's score range, eq. (4) (official default True).
        cutoff_h: h of ECI-cutoff, eq. (6) (official 1).
        cutoff_window: window of the cutoff range and of ECI-cutoff's step (official forces 100).
        decay: weight decay of ECI-integral, eq. (7) (official 0.95).
        include_current: ECI-integral also weights the current EQ_t (official False).
        scorecaster: factory of a `Scorecaster` ("ECI + scorecaster", paper Sec. 5 discussion; not in the
            official code): q_{t+1} gains the forecast of s_{t+1} made from s_0..s_{t-1} once t > burn_in,
            exactly as Conformal PID adds its scorecast (same lag); err_t and EQ_t use the q_t actually used.
        burn_in: no scorecast while t <= burn_in (official T_burnin).
    """

    def __init__(
        self,
        alpha: float = 0.1,
        lr: float = 0.1,
        *,
        c: float = 1.0,
        window: int = 100,
        variant: Variant = "basic",
        eq_mode: Literal["official", "accumulate"] = "official",
        proportional_lr: bool = True,
        cutoff_h: float = 1.0,
        cutoff_window: int | None = 100,
        decay: float = 0.95,
        include_current: bool = False,
        scorecaster: Callable[[], Scorecaster] | None = None,
        burn_in: int = 100,
    ) -> None:
        self.alpha = check_alpha(alpha)
        self.lr = check_lr(lr)
        if variant not in VARIANTS:
            raise ValueError(f"variant must be one of {', '.join(VARIANTS)}; got {variant!r}")
        if eq_mode not in EQ_MODES:
            raise ValueError(f"eq_mode must be one of {', '.join(EQ_MODES)}; got {eq_mode!r}")
        if not math.isfinite(c) or c < 0:
            raise ValueError(f"c must be a finite number >= 0, got {c}")
        if not 0.0 < decay <= 1.0:
            raise ValueError(f"decay must lie in (0, 1], got {decay}")
        self.c = float(c)
        self.variant = variant
        self.eq_mode = eq_mode
        self.proportional_lr = bool(proportional_lr)
        self.cutoff_h = float(cutoff_h)
        self.decay = float(decay)
        self.include_current = bool(include_current)
        self.scorecaster_factory = scorecaster
        self.burn_in = int(burn_in)
        if variant == "cutoff" and cutoff_window is not None:
            window = cutoff_window  # the official ECI_cutoff overrides the window with 100
        self.window = check_window(window)
        self.reset()

    def reset(self) -> None:
        """Forget all scores: back to q_0 = 0."""
        self.t = 0
        self.qbar = 0.0
        self.q = 0.0
        self._range = RunningRange(self.window)
        self._int_sum = 0.0  # ECI-integral: S_t = sum_{i<t} decay^{t-1-i} EQ_i
        self._int_norm = 0.0  # Z_t = sum_{i<t} decay^{t-1-i}
        self._caster = self.scorecaster_factory() if self.scorecaster_factory else None

    @property
    def threshold(self) -> float:
        """q_t: the threshold for the next score."""
        return self.q

    def update(self, score: float) -> float:
        """Record s_t against q_t and return q_{t+1}."""
        s, q, t = float(score), self.q, self.t
        rng = self._range.value
        eta = self.lr * rng if (self.proportional_lr and t > 0) else self.lr  # eq. (4)
        self._range.push(s)
        self.t = t + 1
        cast = 0.0
        if self._caster is not None:  # ECI + scorecaster: the forecast of s_{t+1} from s_0..s_{t-1} (PID's lag)
            if t > self.burn_in:
                cast = self._caster.forecast()
            self._caster.push(s)
        variant = self.variant
        if t == 0 and variant in ("cutoff", "smoothed"):  # the official code skips the first update
            return self.q
        if variant in ("smoothed", "smoothed_ogd"):
            grad = sigmoid(s - q, self.c) - self.alpha  # eq. (8)
        else:
            grad = (1.0 if s > q else 0.0) - self.alpha  # eq. (1): err_t - alpha
        if variant == "smoothed_ogd":
            eq = 0.0
        else:
            eq = eq_term(s, q, self.c)  # eq. (3)
            if variant == "cutoff" and abs(s - q) < self.cutoff_h * rng:  # eq. (6)
                eq = 0.0
            elif variant == "integral":  # eq. (7), O(1) recursion
                if self.include_current:
                    self._int_sum = self.decay * self._int_sum + eq
                    self._int_norm = self.decay * self._int_norm + 1.0
                    eq = self._int_sum / self._int_norm
                else:
                    current = eq
                    eq = self._int_sum / self._int_norm if self._int_norm > 0 else 0.0
                    self._int_sum = self.decay * self._int_sum + current
                    self._int_norm = self.decay * self._int_norm + 1.0
        if self.eq_mode == "official":  # eq. (5)
            self.qbar += eta * grad
            self.q = self.qbar + eta * eq + cast
        else:  # ablation: EQ accumulated into the state
            self.qbar += eta * (grad + eq)
            self.q = self.qbar + cast
        return self.q


def run_online(method: OnlineMethod, scores: Iterable[float]) -> np.ndarray:
    """Feed `scores` to a streaming method; return the thresholds q_0 .. q_{T-1} (q_t used at time t)."""
    scores = np.asarray(scores, dtype=float)
    if scores.ndim != 1:
        raise ValueError(f"scores must be a 1-D array, got shape {scores.shape}")
    bad = np.flatnonzero(~np.isfinite(scores))
    if bad.size:
        raise ValueError(f"scores must be finite; got {scores[bad[0]]} at index {bad[0]} ({bad.size} non-finite)")
    out = np.empty(scores.shape[0])
    update = method.update
    for t, s in enumerate(scores.tolist()):
        out[t] = method.threshold
        update(s)
    return out


def eci(
    scores: Iterable[float],
    alpha: float,
    lr: float,
    *,
    window: int = 100,
    variant: Variant = "basic",
    eq_mode: Literal["official", "accumulate"] = "official",
    proportional_lr: bool = True,
    c: float = 1.0,
    cutoff_h: float = 1.0,
    cutoff_window: int | None = 100,
    decay: float = 0.95,
    include_current: bool = False,
) -> np.ndarray:
    """Functional ECI: the thresholds q_0 .. q_{T-1} for a score array (official semantics, ahead = 1).

    ``window`` plays the role of the official ``T_burnin`` argument.
    """
    m = ECI(
        alpha,
        lr,
        c=c,
        window=window,
        variant=variant,
        eq_mode=eq_mode,
        proportional_lr=proportional_lr,
        cutoff_h=cutoff_h,
        cutoff_window=cutoff_window,
        decay=decay,
        include_current=include_current,
    )
    return run_online(m, scores)


def eci_cutoff(scores: Iterable[float], alpha: float, lr: float, **kwargs: object) -> np.ndarray:
    """Functional ECI-cutoff, eq. (6)."""
    return eci(scores, alpha, lr, variant="cutoff", **kwargs)  # type: ignore[arg-type]


def eci_integral(scores: Iterable[float], alpha: float, lr: float, **kwargs: object) -> np.ndarray:
    """Functional ECI-integral, eq. (7)."""
    return eci(scores, alpha, lr, variant="integral", **kwargs)  # type: ignore[arg-type]


MethodFactory = Callable[[float], OnlineMethod]
