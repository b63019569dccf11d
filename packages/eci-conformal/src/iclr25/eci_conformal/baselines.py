"""Online conformal baselines ECI is compared against, streaming and functional, O(1) or O(log n) per step.

Paper: "Error-quantified Conformal Inference for Time Series" (ICLR 2025, arXiv 2502.00818), Sec. 5 and
its appendix: ACI (Gibbs & Candes 2021), OGD, SF-OGD (Bhatnagar et al. 2023), decay-OGD (Angelopoulos,
Barber & Bates 2024), Conformal P / PI / PID (Angelopoulos, Candes & Tibshirani 2023), the trailing
window, and, as an extra the paper does not use, DtACI (Gibbs & Candes 2024).

Semantics follow the official ECI repository's `core/methods.py` (ahead = 1, q_0 = 0 for OGD-type
methods), with these deliberate differences:
- SF-OGD normalises by the true squared gradients (alpha^2 covered, (1-alpha)^2 missed); the official
  code squares (1+alpha) for a miss. ``official_quirk=True`` restores it.
- ACI, the trailing window and DtACI keep the past scores in a blocked sorted list (bisect insertion,
  O(sqrt n)-type cost per step) instead of re-sorting the past at every step.
- The PID scorecaster is a pluggable factory; the registry's `conformal_pid` uses statsmodels' ThetaModel as
  the official code does (`forecast.ThetaModelScorecaster`, the `[forecast]` extra); `ThetaScorecaster` here
  is a light numpy Theta method (fixed smoothing, no statsmodels) whose numbers differ.
"""

from __future__ import annotations

import bisect
import math
from collections import deque
from collections.abc import Callable, Iterable, Sequence

import numpy as np

from iclr25.eci_conformal.deterministic import dot_rows, exp_array
from iclr25.eci_conformal.methods import RunningRange, Scorecaster, check_alpha, check_lr, check_window, run_online

INF = math.inf


class OGD:
    """Online gradient descent on the pinball loss: q_{t+1} = q_t + lr (err_t - alpha)."""

    def __init__(self, alpha: float = 0.1, lr: float = 1.0) -> None:
        self.alpha, self.lr = check_alpha(alpha), check_lr(lr)
        self.reset()

    def reset(self) -> None:
        """Back to q_0 = 0."""
        self.q, self.t = 0.0, 0

    @property
    def threshold(self) -> float:
        """q_t."""
        return self.q

    def update(self, score: float) -> float:
        """Record s_t; return q_{t+1}."""
        self.q += self.lr * ((1.0 if score > self.q else 0.0) - self.alpha)
        self.t += 1
        return self.q


class SFOGD:
    """Scale-free OGD: step lr / sqrt(sum of squared gradients so far, current included)."""

    def __init__(self, alpha: float = 0.1, lr: float = 1.0, *, official_quirk: bool = False) -> None:
        self.alpha, self.lr = check_alpha(alpha), check_lr(lr)
        self.official_quirk = bool(official_quirk)
        self.reset()

    def reset(self) -> None:
        """Back to q_0 = 0."""
        self.q, self.t, self.sq = 0.0, 0, 0.0

    @property
    def threshold(self) -> float:
        """q_t."""
        return self.q

    def update(self, score: float) -> float:
        """Record s_t; return q_{t+1}."""
        err = 1.0 if score > self.q else 0.0
        grad = err - self.alpha
        self.sq += (self.alpha + err) ** 2 if self.official_quirk else grad * grad
        self.q += self.lr / math.sqrt(self.sq) * grad
        self.t += 1
        return self.q


class DecayOGD:
    """OGD with decaying step lr * t^{-(1/2 + eps)} (lr at t = 0), eps = 0.1 as in the official code."""

    def __init__(self, alpha: float = 0.1, lr: float = 1.0, *, eps: float = 0.1) -> None:
        self.alpha, self.lr, self.eps = check_alpha(alpha), check_lr(lr), float(eps)
        self.reset()

    def reset(self) -> None:
        """Back to q_0 = 0."""
        self.q, self.t = 0.0, 0

    @property
    def threshold(self) -> float:
        """q_t."""
        return self.q

    def update(self, score: float) -> float:
        """Record s_t; return q_{t+1}."""
        t = self.t
        lr_t = self.lr * t ** (-0.5 - self.eps) if t else self.lr
        self.q += lr_t * ((1.0 if score > self.q else 0.0) - self.alpha)
        self.t = t + 1
        return self.q


class ThetaScorecaster:
    """A light Theta-method one-step forecaster of the score: SES level + half the OLS trend slope.

    Streaming O(1) per step (fixed smoothing `ses_alpha`; statsmodels estimates it, so values differ).
    """

    def __init__(self, ses_alpha: float = 0.5) -> None:
        if not 0.0 < ses_alpha <= 1.0:
            raise ValueError(f"ses_alpha must lie in (0, 1], got {ses_alpha}")
        self.ses_alpha = ses_alpha
        self.n, self.level = 0, 0.0
        self.sx = self.sy = self.sxx = self.sxy = 0.0

    def push(self, value: float) -> None:
        """Observe one more score."""
        x = float(self.n)
        self.level = value if self.n == 0 else self.level + self.ses_alpha * (value - self.level)
        self.sx += x
        self.sy += value
        self.sxx += x * x
        self.sxy += x * value
        self.n += 1

    def forecast(self) -> float:
        """One-step-ahead forecast (0 before any score)."""
        if self.n == 0:
            return 0.0
        denom = self.n * self.sxx - self.sx * self.sx
        slope = (self.n * self.sxy - self.sx * self.sy) / denom if denom > 0 else 0.0
        return self.level + 0.5 * slope * (1.0 / self.ses_alpha)


class ConformalPID:
    """Conformal PID control: q_{t+1} = qbar_{t+1} + r_t (+ scorecast), qbar by OGD with adaptive step.

    ``KI = 0`` and no scorecaster gives "Conformal P" (= ECI without the EQ term); with KI > 0 it is
    "PI". The integrator r_t = KI tan(x_t log(t+1) / (Csat (t+1))), x_t = sum_{i<t} err_i - t alpha
    (errors up to t-1, as in the official code); tan is +-inf outside (-pi/2, pi/2).
    The scorecaster, when given, is refit on s_0..s_{t-1} for t > burn_in (the official lag).
    """

    def __init__(
        self,
        alpha: float = 0.1,
        lr: float = 0.1,
        *,
        window: int = 100,
        proportional_lr: bool = True,
        KI: float = 0.0,
        Csat: float = 1.0,
        scorecaster: Callable[[], Scorecaster] | None = None,
        burn_in: int = 100,
    ) -> None:
        self.alpha, self.lr = check_alpha(alpha), check_lr(lr)
        self.window = check_window(window)
        self.proportional_lr = bool(proportional_lr)
        if Csat <= 0:
            raise ValueError(f"Csat must be > 0, got {Csat}")
        self.KI, self.Csat = float(KI), float(Csat)
        self.scorecaster_factory = scorecaster
        self.burn_in = int(burn_in)
        self.reset()

    def reset(self) -> None:
        """Back to q_0 = 0."""
        self.t, self.qbar, self.q, self.n_err = 0, 0.0, 0.0, 0
        self._range = RunningRange(self.window)
        self._caster = self.scorecaster_factory() if self.scorecaster_factory else None

    @property
    def threshold(self) -> float:
        """q_t."""
        return self.q

    def update(self, score: float) -> float:
        """Record s_t; return q_{t+1}."""
        t, s = self.t, float(score)
        eta = self.lr * self._range.value if (self.proportional_lr and t > 0) else self.lr
        self._range.push(s)
        err = 1.0 if s > self.q else 0.0
        integ = 0.0
        if self.KI != 0.0:
            x = self.n_err - t * self.alpha
            arg = x * math.log(t + 1) / (self.Csat * (t + 1))
            integ = self.KI * (INF if arg >= math.pi / 2 else -INF if arg <= -math.pi / 2 else math.tan(arg))
        cast = 0.0
        if self._caster is not None:
            if t > self.burn_in:
                cast = self._caster.forecast()  # fitted on s_0 .. s_{t-1}
            self._caster.push(s)
        self.qbar += eta * (err - self.alpha)
        self.q = self.qbar + integ + cast
        self.n_err += int(err)
        self.t = t + 1
        return self.q


class _SortedWindow:
    """The last `window` values, kept sorted in blocks (a list of sorted lists of <= 2 * LOAD values).

    Insert and remove cost O(log n + LOAD) (plus O(n / LOAD) when a block splits or empties, every ~LOAD
    steps), rank and positional access O(log n) through a Fenwick tree over the block sizes, so a stream
    stays near-linear in its length (a flat sorted list memmoves O(n) values per insertion).
    """

    LOAD = 1000

    def __init__(self, window: int) -> None:
        self.window = window
        self._blocks: list[list[float]] = []
        self._maxes: list[float] = []  # the last (largest) value of each block
        self._tree: list[int] = [0]  # Fenwick tree over the block sizes (positional access in O(log n))
        self._n = 0
        self.fifo: deque[float] = deque()

    def _rebuild(self) -> None:
        tree = [0, *map(len, self._blocks)]
        nb = len(tree) - 1
        for i in range(1, nb + 1):
            parent = i + (i & -i)
            if parent <= nb:
                tree[parent] += tree[i]
        self._tree = tree

    def _add(self, j: int, delta: int) -> None:
        tree, i = self._tree, j + 1
        while i < len(tree):
            tree[i] += delta
            i += i & -i

    def push(self, value: float) -> None:
        """Insert a value; the oldest one drops out beyond `window` values."""
        self._insert(value)
        self.fifo.append(value)
        if len(self.fifo) > self.window:
            self._remove(self.fifo.popleft())

    def _insert(self, value: float) -> None:
        blocks, maxes = self._blocks, self._maxes
        self._n += 1
        if not blocks:
            blocks.append([value])
            maxes.append(value)
            self._rebuild()
            return
        j = bisect.bisect_left(maxes, value)
        if j == len(blocks):  # larger than everything: append to the last block
            j -= 1
            blocks[j].append(value)
            maxes[j] = value
        else:
            bisect.insort(blocks[j], value)
        block = blocks[j]
        if len(block) > 2 * self.LOAD:
            half = len(block) // 2
            blocks[j : j + 1] = [block[:half], block[half:]]
            maxes[j : j + 1] = [block[half - 1], block[-1]]
            self._rebuild()
        else:
            self._add(j, 1)

    def _remove(self, value: float) -> None:
        j = bisect.bisect_left(self._maxes, value)  # the first block whose max >= value holds it
        block = self._blocks[j]
        del block[bisect.bisect_left(block, value)]
        self._n -= 1
        if block:
            self._maxes[j] = block[-1]
            self._add(j, -1)
        else:
            del self._blocks[j], self._maxes[j]
            self._rebuild()

    def __len__(self) -> int:
        return self._n

    def __getitem__(self, i: int) -> float:
        """The i-th smallest value (0-based), by a Fenwick-tree descent over the block sizes."""
        tree, pos, rest = self._tree, 0, i
        step = 1 << (len(tree) - 1).bit_length()
        while step:
            nxt = pos + step
            if nxt < len(tree) and tree[nxt] <= rest:
                pos, rest = nxt, rest - tree[nxt]
            step >>= 1
        return self._blocks[pos][rest]

    def count_less(self, value: float) -> int:
        """How many stored values are < `value`."""
        j = bisect.bisect_left(self._maxes, value)
        tree, i, before = self._tree, j, 0
        while i > 0:  # Fenwick prefix sum of the sizes of blocks 0 .. j-1
            before += tree[i]
            i -= i & -i
        return before + (bisect.bisect_left(self._blocks[j], value) if j < len(self._blocks) else 0)

    def higher(self, p: float) -> float:
        """numpy's method="higher" quantile: sorted[ceil(p (n - 1))]."""
        n = self._n
        return self[min(max(math.ceil((n - 1) * p), 0), n - 1)]

    def linear(self, p: float) -> float:
        """numpy's default ("linear") quantile."""
        n = self._n
        v = (n - 1) * p
        lo = min(max(math.floor(v), 0), n - 1)
        hi = min(lo + 1, n - 1)
        g = v - lo
        a, b = self[lo], self[hi]
        return a + (b - a) * g if g < 0.5 else b - (b - a) * (1.0 - g)

    def max(self) -> float:
        """The largest stored value."""
        return self._maxes[-1]


class ACI:
    """Adaptive conformal inference: quantile of past scores at level 1 - alpha_t,
    alpha_{t+1} = alpha_t + lr (alpha - err_t) for t > burn_in (official protocol).

    For t <= burn_in: the linear (1 - alpha) quantile of all past scores, +inf while t <= ceil(1/alpha).
    After: +inf when alpha_t <= 1/(t+1), else the "higher" quantile of the last `window_length` scores.
    ``clip=True`` ("ACI (clipped)") replaces +inf by the largest score in the window (+inf at t = 0).
    """

    def __init__(
        self,
        alpha: float = 0.1,
        lr: float = 0.005,
        *,
        window_length: int = 10**7,
        burn_in: int = 100,
        clip: bool = False,
    ) -> None:
        self.alpha, self.lr = check_alpha(alpha), check_lr(lr)
        self.window_length = check_window(window_length, "window_length")
        if burn_in < 0:
            raise ValueError(f"burn_in must be >= 0, got {burn_in}")
        self.burn_in, self.clip = int(burn_in), bool(clip)
        self.reset()

    def reset(self) -> None:
        """Forget all scores."""
        self.t, self.alpha_t = 0, self.alpha
        self._win = _SortedWindow(self.window_length)
        self._all = self._win if self.window_length >= 10**7 else _SortedWindow(10**12)
        self.q = self._compute()

    def _compute(self) -> float:
        """Set the raw threshold (used for coverage feedback) and return the one to use (clipped or not)."""
        t = self.t
        if t > self.burn_in:
            q = INF if self.alpha_t <= 1.0 / (t + 1) else self._win.higher(1.0 - min(max(self.alpha_t, 0.0), 1.0))
        else:
            q = self._all.linear(1.0 - self.alpha) if t > math.ceil(1.0 / self.alpha) else INF
        self._raw_q = q  # the official code checks coverage against the unclipped threshold
        if self.clip and q == INF:
            q = self._win.max() if t > 0 else INF
        return q

    @property
    def threshold(self) -> float:
        """q_t."""
        return self.q

    def update(self, score: float) -> float:
        """Record s_t; return q_{t+1}."""
        s = float(score)
        if self.t > self.burn_in:
            self.alpha_t += self.lr * (self.alpha - (1.0 if s > self._raw_q else 0.0))
        self._win.push(s)
        if self._all is not self._win and self.t < self.burn_in:  # all past scores: burn-in quantile only
            self._all.push(s)
        self.t += 1
        self.q = self._compute()
        return self.q


class TrailingWindow:
    """The "higher" (1 - alpha) quantile of the last `window` scores (+inf while fewer than ceil(1/alpha))."""

    def __init__(self, alpha: float = 0.1, lr: float | None = None, *, window: int = 100) -> None:
        self.alpha = check_alpha(alpha)
        self.window = check_window(window)
        self.reset()

    def reset(self) -> None:
        """Forget all scores."""
        self.t = 0
        self._win = _SortedWindow(self.window)

    @property
    def threshold(self) -> float:
        """q_t."""
        if min(self.window, self.t) < math.ceil(1.0 / self.alpha):
            return INF
        return self._win.higher(1.0 - self.alpha)

    def update(self, score: float) -> float:
        """Record s_t; return q_{t+1}."""
        self._win.push(float(score))
        self.t += 1
        return self.threshold


DTACI_GAMMAS: tuple[float, ...] = (0.001, 0.002, 0.004, 0.008, 0.016, 0.032, 0.064, 0.128)


class DtACI:
    """Dynamically-tuned ACI (Gibbs & Candes 2024): experts running ACI with different step sizes,
    exponentially reweighted by the pinball loss of their alpha against beta_t (the largest level whose
    set still covers s_t), mixed with the uniform distribution; output level = weighted mean of experts.

    Quantiles are over all past scores (``window_length`` most recent). ``eta``/``sigma`` default to the
    paper's theory choice with local interval I; ``eta=2.72, sigma=1e-3`` are its R code's defaults.
    """

    def __init__(
        self,
        alpha: float = 0.1,
        lr: float | None = None,
        *,
        gammas: Sequence[float] = DTACI_GAMMAS,
        interval: int = 100,
        eta: float | None = None,
        sigma: float | None = None,
        window_length: int = 10**7,
    ) -> None:
        self.alpha = check_alpha(alpha)
        self.gammas = np.asarray(gammas, dtype=float)
        if self.gammas.ndim != 1 or len(self.gammas) == 0 or (self.gammas <= 0).any():
            raise ValueError("gammas must be a non-empty list of positive step sizes")
        k, a = len(self.gammas), self.alpha
        self.sigma = 1.0 / (2 * interval) if sigma is None else float(sigma)
        if eta is None:
            eta = math.sqrt(3.0 / interval) * math.sqrt(
                (math.log(k * interval) + 2) / ((1 - a) ** 2 * a**3 + a**2 * (1 - a) ** 3)
            )
        self.eta = float(eta)
        self.window_length = check_window(window_length, "window_length")
        self.reset()

    def reset(self) -> None:
        """Forget all scores."""
        k = len(self.gammas)
        self.experts = np.full(k, self.alpha)
        self.weights = np.full(k, 1.0 / k)
        self.alpha_bar = self.alpha
        self._win = _SortedWindow(self.window_length)
        self._q = INF  # no past scores yet

    def _quantile(self, level: float) -> float:
        if len(self._win) == 0 or level <= 0:
            return INF
        return self._win.higher(1.0 - min(level, 1.0))

    @property
    def threshold(self) -> float:
        """q_t."""
        return self._q

    def update(self, score: float) -> float:
        """Record s_t; return q_{t+1}."""
        s, a = float(score), self.alpha
        n = len(self._win)
        # beta_t: fraction of past scores >= s_t (largest level whose set covers s_t); 1 before any score
        beta = (n - self._win.count_less(s)) / n if n else 1.0
        diff = beta - self.experts
        loss = a * diff - np.minimum(0.0, diff)  # pinball loss at level alpha
        w = self.weights * exp_array(-self.eta * (loss - loss.min()))  # exp and dot fixed by IEEE arithmetic
        w /= w.sum()
        self.weights = (1 - self.sigma) * w + self.sigma / len(w)
        err = (beta < self.experts).astype(float)  # expert's set misses s_t
        self.experts = self.experts + self.gammas * (a - err)
        self.alpha_bar = float(dot_rows(self.weights, self.experts))
        self._win.push(s)
        self._q = self._quantile(self.alpha_bar)  # computed once per step
        return self._q


# ---------------------------------------------------------------------------------------------------
# Functional forms (official argument order: scores, alpha, lr, ...) -> thresholds q_0..q_{T-1}.


def ogd(scores: Iterable[float], alpha: float, lr: float) -> np.ndarray:
    """Functional OGD."""
    return run_online(OGD(alpha, lr), scores)


def sf_ogd(scores: Iterable[float], alpha: float, lr: float, *, official_quirk: bool = False) -> np.ndarray:
    """Functional SF-OGD."""
    return run_online(SFOGD(alpha, lr, official_quirk=official_quirk), scores)


def decay_ogd(scores: Iterable[float], alpha: float, lr: float) -> np.ndarray:
    """Functional decay-OGD."""
    return run_online(DecayOGD(alpha, lr), scores)


def conformal_pid(
    scores: Iterable[float], alpha: float, lr: float, *, window: int = 100, KI: float = 0.0, Csat: float = 1.0, **kw
) -> np.ndarray:
    """Functional Conformal P (KI = 0) / PI / PID."""
    return run_online(ConformalPID(alpha, lr, window=window, KI=KI, Csat=Csat, **kw), scores)


def aci(
    scores: Iterable[float],
    alpha: float,
    lr: float,
    *,
    window_length: int = 10**7,
    burn_in: int = 100,
    clip: bool = False,
) -> np.ndarray:
    """Functional ACI (``clip=True``: ACI clipped)."""
    return run_online(ACI(alpha, lr, window_length=window_length, burn_in=burn_in, clip=clip), scores)


def trailing_window(scores: Iterable[float], alpha: float, *, window: int = 100) -> np.ndarray:
    """Functional trailing-window quantile."""
    return run_online(TrailingWindow(alpha, window=window), scores)


def dtaci(scores: Iterable[float], alpha: float, **kw) -> np.ndarray:
    """Functional DtACI."""
    return run_online(DtACI(alpha, **kw), scores)
