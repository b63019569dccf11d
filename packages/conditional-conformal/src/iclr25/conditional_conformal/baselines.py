"""Baselines of the paper's tables (Sec. 4): split CP, PCP and HD-PCP (Wang et al. 2023), Π-only (the raw
estimate, no calibration), CQR (Romano et al. 2019) and CQR2 (nested quantile bands, an inverse-quantile score
in the style of Chernozhukov et al. 2021). All share `calibrate`/`fit`, `predict_set`, `conformity_scores`."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from .cp2 import Draws, adjusted_radius, check_alpha, conformal_quantile, draw, pcp_tau
from .estimators import Sampler, as_2d
from .sets import Box, UnionOfBalls, nearest_distance


class SplitCP:
    """Split conformal with a fixed-width ball around a point prediction ŷ(x) (the mixture mean by default)."""

    def __init__(self, predict: Callable[[np.ndarray], np.ndarray] | Sampler, alpha: float = 0.1) -> None:
        self.predict = predict.mean if hasattr(predict, "mean") else predict
        self.alpha = check_alpha(alpha)
        self.qhat_: float | None = None

    def conformity_scores(self, X: np.ndarray, Y: np.ndarray) -> np.ndarray:
        """‖y − ŷ(x)‖ -> [n]."""
        return np.linalg.norm(as_2d(Y) - as_2d(self.predict(as_2d(X))), axis=1)

    def calibrate(self, X: np.ndarray, Y: np.ndarray) -> SplitCP:
        """Q̂ = conformal quantile of the calibration residuals; returns self."""
        self.scores_ = self.conformity_scores(X, Y)
        self.qhat_ = conformal_quantile(self.scores_, self.alpha)
        return self

    fit = calibrate

    def predict_set(self, X: np.ndarray) -> UnionOfBalls:
        """Ball of radius Q̂ around ŷ(x)."""
        centre = as_2d(self.predict(as_2d(X)))[:, None, :]
        return UnionOfBalls(centre, np.full(len(centre), self.qhat_))


class PCP:
    """Probabilistic conformal prediction (Wang et al. 2023): ∪_i B(Ŷ_i, Q̂), the same radius at every x.

    `fr` > 0 gives HD-PCP: keep the ⌊(1 − fr)M⌋ highest-density samples (needs `log_prob`).
    """

    def __init__(
        self, estimator: Sampler, alpha: float = 0.1, n_samples: int = 50, fr: float = 0.0, seed: int | None = None
    ) -> None:
        if not 0 <= fr < 1:
            raise ValueError(f"fr must be in [0, 1), got {fr}")
        if fr > 0 and not hasattr(estimator, "log_prob"):
            raise ValueError("HD-PCP (fr > 0) needs an estimator with log_prob")
        self.estimator, self.alpha, self.n_samples, self.fr = estimator, check_alpha(alpha), int(n_samples), fr
        self.rng = np.random.default_rng(seed)
        self.qhat_: float | None = None

    def centres(self, X: np.ndarray, draws: Draws | None = None) -> np.ndarray:
        """Ball centres [n, M', q]: M draws, or the ⌊(1 − fr)M⌋ of highest density for HD-PCP."""
        X = as_2d(X)
        c = self.estimator.sample(X, self.n_samples, self.rng) if draws is None else draws.centres
        if self.fr > 0:
            keep = int(np.floor((1 - self.fr) * c.shape[1]))
            lp = self.estimator.log_prob(X, c)  # [n, M]
            idx = np.argsort(-lp, axis=1)[:, :keep]
            c = np.take_along_axis(c, idx[..., None], axis=1)
        return c

    def conformity_scores(self, X: np.ndarray, Y: np.ndarray, draws: Draws | None = None) -> np.ndarray:
        """min_i ‖y − Ŷ_i‖ -> [n]."""
        return nearest_distance(as_2d(Y)[:, None, :], self.centres(X, draws))[:, 0]

    def calibrate(self, X: np.ndarray, Y: np.ndarray, draws: Draws | None = None) -> PCP:
        """Q̂ = conformal quantile of the calibration scores; returns self."""
        self.scores_ = self.conformity_scores(X, Y, draws)
        self.qhat_ = conformal_quantile(self.scores_, self.alpha)
        return self

    fit = calibrate

    def predict_set(self, X: np.ndarray, draws: Draws | None = None) -> UnionOfBalls:
        """∪_i B(Ŷ_i, Q̂) with fresh draws."""
        c = self.centres(X, draws)
        return UnionOfBalls(c, np.full(len(c), self.qhat_))


class PiOnly:
    """The estimate alone, no calibration (f_τ(v) = τ): ∪_i B(Ŷ_i, τ_x), τ_x as in CP²-PCP."""

    def __init__(
        self, estimator: Sampler, alpha: float = 0.1, n_samples: int = 50, n_samples_tau: int = 100, seed=None
    ) -> None:
        self.estimator, self.alpha = estimator, check_alpha(alpha)
        self.n_samples, self.n_samples_tau = int(n_samples), int(n_samples_tau)
        self.rng = np.random.default_rng(seed)

    def calibrate(self, X: np.ndarray | None = None, Y: np.ndarray | None = None, draws=None) -> PiOnly:
        """No calibration (kept for a common interface); returns self."""
        return self

    fit = calibrate

    def predict_set(self, X: np.ndarray, draws: Draws | None = None) -> UnionOfBalls:
        """∪_i B(Ŷ_i, τ_x)."""
        draws = draw(self.estimator, X, self.n_samples, self.n_samples_tau, self.rng) if draws is None else draws
        return UnionOfBalls(draws.centres, adjusted_radius(pcp_tau(draws, self.alpha), 1.0, "linear"))


class QuantileNet:
    """An MLP predicting several conditional quantiles of each output (pinball loss, Adam); outputs sorted
    across levels per target (monotone rearrangement). CQR's regressor: 2 × 64 hidden, 200 epochs, batch 250."""

    def __init__(
        self,
        levels: tuple[float, ...],
        hidden: tuple[int, ...] = (64, 64),
        epochs: int = 200,
        batch_size: int = 250,
        lr: float = 5e-4,
        seed: int = 0,
        threads: int = 1,
    ) -> None:
        if not levels or not all(0 < a < 1 for a in levels):
            raise ValueError(f"quantile levels must be in (0, 1), got {levels}")
        self.levels = tuple(sorted(levels))
        self.hidden, self.epochs, self.batch_size, self.lr, self.seed = hidden, epochs, batch_size, lr, seed
        self.threads = threads

    def fit(self, X: np.ndarray, Y: np.ndarray) -> QuantileNet:
        """Train on (X, Y) (standardised internally); returns self."""
        import torch
        from torch import nn

        from iclr25.shared.device import torch_threads

        X, Y = as_2d(X), as_2d(Y)
        torch.manual_seed(self.seed)
        self.x_mean, self.x_std = X.mean(0), X.std(0) + 1e-12
        self.y_mean, self.y_std = Y.mean(0), Y.std(0) + 1e-12
        self.q, nl = Y.shape[1], len(self.levels)
        layers: list[nn.Module] = []
        width = X.shape[1]
        for h in self.hidden:
            layers += [nn.Linear(width, h), nn.ReLU()]
            width = h
        self.net = nn.Sequential(*layers, nn.Linear(width, self.q * nl))
        xs = torch.as_tensor((X - self.x_mean) / self.x_std, dtype=torch.float32)
        ys = torch.as_tensor((Y - self.y_mean) / self.y_std, dtype=torch.float32)
        tau = torch.as_tensor(self.levels, dtype=torch.float32)[None, None, :]
        opt = torch.optim.Adam(self.net.parameters(), lr=self.lr)
        gen = torch.Generator().manual_seed(self.seed)
        with torch_threads(self.threads):  # a net this small runs fastest on one CPU thread
            for _ in range(self.epochs):
                perm = torch.randperm(len(xs), generator=gen)
                for i in range(0, len(xs), self.batch_size):
                    idx = perm[i : i + self.batch_size]
                    pred = self.net(xs[idx]).reshape(-1, self.q, nl)
                    err = ys[idx][:, :, None] - pred
                    loss = torch.maximum(tau * err, (tau - 1) * err).mean()  # pinball loss
                    opt.zero_grad()
                    loss.backward()
                    opt.step()
        return self

    def predict(self, X: np.ndarray) -> np.ndarray:
        """Quantiles [n, q, n_levels] in the original units, sorted along levels."""
        import torch

        from iclr25.shared.device import torch_threads

        xs = torch.as_tensor((as_2d(X) - self.x_mean) / self.x_std, dtype=torch.float32)
        with torch.no_grad(), torch_threads(self.threads):
            out = self.net(xs).reshape(-1, self.q, len(self.levels)).double().numpy()
        return np.sort(out * self.y_std[None, :, None] + self.y_mean[None, :, None], axis=-1)

    def at(self, X: np.ndarray, level: float) -> np.ndarray:
        """Quantile at one of the trained levels: [n, q]."""
        idx = int(np.argmin(np.abs(np.asarray(self.levels) - level)))
        if abs(self.levels[idx] - level) > 1e-9:
            raise ValueError(f"level {level} was not trained; have {self.levels}")
        return self.predict(X)[..., idx]


class CQR:
    """Conformalized quantile regression: score max(q_lo − y, y − q_hi), set [q_lo − Q̂, q_hi + Q̂]; multi-output:
    product of per-target intervals at level α/q (Bonferroni) (Romano et al. 2019; spec §4)."""

    def __init__(self, quantiles: QuantileNet | None = None, alpha: float = 0.1, **net_kwargs) -> None:
        self.alpha = check_alpha(alpha)
        self.quantiles, self.net_kwargs = quantiles, net_kwargs
        self.qhat_: np.ndarray | None = None

    def train(self, X: np.ndarray, Y: np.ndarray) -> CQR:
        """Fit the quantile regressor at α'/2 and 1 − α'/2 (α' = α/q) on training data; returns self."""
        a = self.alpha / as_2d(Y).shape[1]
        self.quantiles = QuantileNet((a / 2, 1 - a / 2), **self.net_kwargs).fit(X, Y)
        return self

    def _band(self, X: np.ndarray, q: int) -> tuple[np.ndarray, np.ndarray]:
        a = self.alpha / q
        return self.quantiles.at(X, a / 2), self.quantiles.at(X, 1 - a / 2)

    def conformity_scores(self, X: np.ndarray, Y: np.ndarray) -> np.ndarray:
        """max(q_lo − y, y − q_hi) per target -> [n, q]."""
        Y = as_2d(Y)
        lo, hi = self._band(X, Y.shape[1])
        return np.maximum(lo - Y, Y - hi)

    def calibrate(self, X: np.ndarray, Y: np.ndarray) -> CQR:
        """Per-target Q̂ at level α/q; returns self."""
        if self.quantiles is None:
            raise RuntimeError("train(X_train, Y_train) or pass a fitted QuantileNet first")
        s = self.conformity_scores(X, Y)
        self.q_ = s.shape[1]
        self.qhat_ = np.array([conformal_quantile(s[:, j], self.alpha / self.q_) for j in range(self.q_)])
        return self

    fit = calibrate

    def predict_set(self, X: np.ndarray) -> Box:
        """[q_lo − Q̂, q_hi + Q̂] per target."""
        lo, hi = self._band(X, self.q_)
        return Box(lo - self.qhat_, hi + self.qhat_)


class CQR2:
    """Nested quantile bands R(x; t) = [q_{(1−t)/2}(x), q_{(1+t)/2}(x)] over a grid of levels; score = the
    smallest t whose band holds y, i.e. |2F̂(y|x) − 1| with F̂ the piecewise-linear inverse of the predicted
    quantile function (an inverse-quantile score, Chernozhukov et al. 2021). Beyond the widest trained band the
    score grows as t_max + distance / band width. One output."""

    def __init__(self, quantiles: QuantileNet | None = None, alpha: float = 0.1, n_levels: int = 19, **net_kwargs):
        self.alpha = check_alpha(alpha)
        self.quantiles, self.net_kwargs, self.n_levels = quantiles, net_kwargs, n_levels
        self.qhat_: float | None = None

    def train(self, X: np.ndarray, Y: np.ndarray) -> CQR2:
        """Fit quantiles at levels (1 ± t)/2 for t on a grid of (0, 0.98]; returns self."""
        t = np.linspace(0, 0.98, self.n_levels + 1)[1:]
        levels = tuple(np.round(np.concatenate([(1 - t) / 2, [0.5], (1 + t) / 2]), 6))
        self.quantiles = QuantileNet(levels, **self.net_kwargs).fit(X, as_2d(Y)[:, :1])
        return self

    def _grid(self, X: np.ndarray) -> tuple[np.ndarray, np.ndarray, float]:
        lv = np.asarray(self.quantiles.levels)
        return lv, self.quantiles.predict(X)[:, 0, :], float(lv[-1] - lv[0])  # levels [L], quantiles [n, L], t_max

    def conformity_scores(self, X: np.ndarray, Y: np.ndarray) -> np.ndarray:
        """|2F̂(y|x) − 1| inside the trained range, t_max + distance / width outside -> [n]."""
        y = as_2d(Y)[:, 0]
        lv, qs, t_max = self._grid(X)
        cdf = np.array([np.interp(y[j], qs[j], lv) for j in range(len(y))])
        width = np.maximum(qs[:, -1] - qs[:, 0], 1e-12)
        outside = np.maximum(qs[:, 0] - y, y - qs[:, -1]) / width
        return np.where(outside > 0, t_max + outside, np.minimum(np.abs(2 * cdf - 1), t_max))

    def calibrate(self, X: np.ndarray, Y: np.ndarray) -> CQR2:
        """Q̂ = conformal quantile of the band-level scores; returns self."""
        if self.quantiles is None:
            raise RuntimeError("train(X_train, Y_train) or pass a fitted QuantileNet first")
        self.scores_ = self.conformity_scores(X, Y)
        self.qhat_ = conformal_quantile(self.scores_, self.alpha)
        return self

    fit = calibrate

    def predict_set(self, X: np.ndarray) -> Box:
        """The band at level Q̂ (widened beyond the widest trained band)."""
        lv, qs, t_max = self._grid(X)
        q = self.qhat_
        if q <= t_max:
            lo = np.array([np.interp((1 - q) / 2, lv, row) for row in qs])
            hi = np.array([np.interp((1 + q) / 2, lv, row) for row in qs])
        else:
            extra = (q - t_max) * (qs[:, -1] - qs[:, 0])
            lo, hi = qs[:, 0] - extra, qs[:, -1] + extra
        return Box(lo, hi)


def shared_quantile_levels(alpha: float, n_levels: int = 19) -> tuple[float, ...]:
    """The levels of one quantile regressor serving both CQR (α/2, 1 − α/2) and CQR2 (the median and (1 ± t)/2
    for t on CQR2's grid of `n_levels` values in (0, 0.98]), sorted, rounded to 6 digits, without repeats."""
    t = np.linspace(0, 0.98, n_levels + 1)[1:]
    levels = np.concatenate([(1 - t) / 2, [0.5], (1 + t) / 2, [alpha / 2, 1 - alpha / 2]])
    return tuple(sorted(set(np.round(levels, 6).tolist())))
