"""Prediction sets: unions of Euclidean balls (PCP, CP²-PCP, split CP), boxes (CQR), density level sets
(CP²-HPD). Each has `contains(y) -> bool[n]` and, for one output, `length() -> [n]`."""

from __future__ import annotations

import numpy as np

from .estimators import Density, as_2d


def nearest_distance(points: np.ndarray, centres: np.ndarray, chunk: int = 2000) -> np.ndarray:
    """min_i ‖p − c_i‖ for every point of every row: points [n, k, q], centres [n, M, q] -> [n, k].

    The [rows, k, M] distance array is built in chunks of at most `chunk` rows (fewer when k·M·q is large) to
    bound memory (spec §6a); one output uses a sort + binary search instead and builds no such array.
    """
    points, centres = np.asarray(points, dtype=float), np.asarray(centres, dtype=float)
    n, k, q = points.shape
    if q == 1 and n > 0 and centres.shape[1] > 1:
        return _nearest_distance_1d(points[..., 0], centres[..., 0])
    out = np.empty((n, k))
    step = max(1, min(chunk, int(2e7 // max(1, k * centres.shape[1] * q))))  # ≤ ~160 MB of differences
    for s in range(0, n, step):
        p, c = points[s : s + step, :, None, :], centres[s : s + step, None, :, :]
        if q == 1:
            out[s : s + step] = np.abs(p[..., 0] - c[..., 0]).min(-1)
        else:
            out[s : s + step] = np.sqrt(((p - c) ** 2).sum(-1).min(-1))
    return out


def _nearest_distance_1d(points: np.ndarray, centres: np.ndarray) -> np.ndarray:
    """One output: sort each row's centres and binary-search all rows at once (rows offset apart), then take
    the nearer of the two neighbours. O(n(k + M) log M) instead of O(nkM)."""
    n, m = centres.shape
    c = np.sort(centres, axis=1)  # [n, M]
    lo, hi = min(c[:, 0].min(), points.min()), max(c[:, -1].max(), points.max())
    width = (hi - lo) + 1.0
    offset = np.arange(n)[:, None] * width - lo  # rows live in disjoint ranges [r·width, r·width + span]
    pos = np.searchsorted((c + offset).ravel(), (points + offset).ravel()).reshape(points.shape)
    local = pos - np.arange(n)[:, None] * m  # [n, k] insertion index within the row
    rows = np.arange(n)[:, None]
    right = c[rows, np.clip(local, 0, m - 1)]
    left = c[rows, np.clip(local - 1, 0, m - 1)]
    return np.minimum(np.abs(points - right), np.abs(points - left))


def union_length_1d(centres: np.ndarray, radius: np.ndarray) -> np.ndarray:
    """Lebesgue measure of ∪_i [c_i − r, c_i + r] per row: centres [n, M] (or [n, M, 1]), radius [n] -> [n]."""
    c = np.sort(np.asarray(centres, dtype=float).reshape(len(centres), -1), axis=1)
    r = np.asarray(radius, dtype=float)
    two_r = 2 * np.maximum(r, 0)[:, None]
    gaps = np.diff(c, axis=1)
    with np.errstate(invalid="ignore"):
        length = two_r[:, 0] + np.minimum(gaps, two_r).sum(1)
    return np.where(np.isinf(r), np.inf, np.where(r < 0, 0.0, length))


def merge_intervals(lo: np.ndarray, hi: np.ndarray) -> list[tuple[float, float]]:
    """Merge overlapping intervals [lo_i, hi_i] into a sorted list of disjoint ones."""
    order = np.argsort(lo)
    merged: list[list[float]] = []
    for a, b in zip(np.asarray(lo)[order], np.asarray(hi)[order], strict=True):
        if merged and a <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], float(b))
        else:
            merged.append([float(a), float(b)])
    return [(a, b) for a, b in merged]


class UnionOfBalls:
    """C(x_j) = ∪_i B(centres[j, i], radius[j]) (Euclidean closed balls; empty when radius < 0)."""

    def __init__(self, centres: np.ndarray, radius: np.ndarray) -> None:
        centres = np.asarray(centres, dtype=float)
        if centres.ndim == 2:
            centres = centres[..., None]
        self.centres = centres  # [n, M, q]
        self.radius = np.broadcast_to(np.asarray(radius, dtype=float), (len(centres),)).copy()  # [n]

    def __len__(self) -> int:
        return len(self.centres)

    @property
    def dim(self) -> int:
        """Output dimension q."""
        return self.centres.shape[-1]

    def contains(self, y: np.ndarray) -> np.ndarray:
        """y [n, q] (or [n]) -> bool[n]: whether y_j ∈ C(x_j)."""
        d = nearest_distance(as_2d(y)[:, None, :], self.centres)[:, 0]
        return d <= self.radius

    def length(self) -> np.ndarray:
        """Length of each 1-D set (merged intervals) -> [n]."""
        if self.dim != 1:
            raise ValueError("length() is for one output; use volume() for q > 1")
        return union_length_1d(self.centres[..., 0], self.radius)

    def volume(self, n_mc: int = 4000, seed: int = 0) -> np.ndarray:
        """Monte Carlo volume of each set (uniform points in the bounding box) -> [n]; exact length for q = 1."""
        if self.dim == 1:
            return self.length()
        rng = np.random.default_rng(seed)
        out = np.empty(len(self))
        for j in range(len(self)):
            r = self.radius[j]
            if not np.isfinite(r):
                out[j] = np.inf
                continue
            if r < 0:
                out[j] = 0.0
                continue
            lo, hi = self.centres[j].min(0) - r, self.centres[j].max(0) + r
            u = lo + (hi - lo) * rng.random((n_mc, self.dim))
            inside = nearest_distance(u[None], self.centres[j][None])[0] <= r
            out[j] = inside.mean() * np.prod(hi - lo)
        return out

    def intervals(self, j: int) -> list[tuple[float, float]]:
        """The 1-D set of row j as merged disjoint intervals."""
        c, r = self.centres[j, :, 0], self.radius[j]
        if r < 0:
            return []
        return merge_intervals(c - r, c + r)


class Box:
    """C(x_j) = Π_d [lo[j, d], hi[j, d]] (CQR; for one output an interval)."""

    def __init__(self, lo: np.ndarray, hi: np.ndarray) -> None:
        self.lo, self.hi = as_2d(lo), as_2d(hi)

    def __len__(self) -> int:
        return len(self.lo)

    def contains(self, y: np.ndarray) -> np.ndarray:
        """y [n, q] -> bool[n]."""
        y = as_2d(y)
        return ((y >= self.lo) & (y <= self.hi)).all(1)

    def length(self) -> np.ndarray:
        """Length of each 1-D interval (0 when empty)."""
        return np.maximum(self.hi - self.lo, 0).prod(1) if self.lo.shape[1] == 1 else self.volume()

    def volume(self) -> np.ndarray:
        """Volume of each box."""
        return np.maximum(self.hi - self.lo, 0).prod(1)

    def intervals(self, j: int) -> list[tuple[float, float]]:
        """Row j (one output) as a list of one interval (or none)."""
        lo, hi = float(self.lo[j, 0]), float(self.hi[j, 0])
        return [(lo, hi)] if hi >= lo else []


class LevelSet:
    """C(x_j) = {y : log γ(y|x_j) ≥ log_level[j]} for an explicit density γ (CP²-HPD, Alg. 2)."""

    def __init__(self, density: Density, x: np.ndarray, log_level: np.ndarray) -> None:
        self.density, self.x, self.log_level = density, as_2d(x), np.asarray(log_level, dtype=float)

    def __len__(self) -> int:
        return len(self.x)

    def contains(self, y: np.ndarray) -> np.ndarray:
        """y [n, q] -> bool[n]."""
        return self.density.log_prob(self.x, as_2d(y)) >= self.log_level

    def length(self, lo: float = -4.0, hi: float = 8.0, step: float = 0.005, chunk: int = 500) -> np.ndarray:
        """1-D set length on a y-grid of the given step over [lo, hi] (spec §9.6) -> [n]."""
        grid = np.arange(lo, hi + step / 2, step)
        out = np.empty(len(self))
        for s in range(0, len(self), chunk):
            xs = self.x[s : s + chunk]
            y = np.broadcast_to(grid[None, :, None], (len(xs), len(grid), 1))
            lp = self.density.log_prob(xs, y)  # [c, G]
            out[s : s + chunk] = (lp >= self.log_level[s : s + chunk, None]).sum(1) * step
        return out

    def intervals(self, j: int, lo: float = -4.0, hi: float = 8.0, step: float = 0.005) -> list[tuple[float, float]]:
        """Row j as disjoint intervals read off a y-grid (each grid cell of width `step` centred on a point)."""
        grid = np.arange(lo, hi + step / 2, step)
        inside = self.density.log_prob(self.x[j : j + 1], grid[None, :, None])[0] >= self.log_level[j]
        return merge_intervals(grid[inside] - step / 2, grid[inside] + step / 2)


def head(s: UnionOfBalls | Box | LevelSet, k: int) -> UnionOfBalls | Box | LevelSet:
    """The sets of the first `k` points of `s` (a set of the same kind)."""
    if isinstance(s, UnionOfBalls):
        return UnionOfBalls(s.centres[:k], s.radius[:k])
    if isinstance(s, LevelSet):
        return LevelSet(s.density, s.x[:k], s.log_level[:k])
    if isinstance(s, Box):
        return Box(s.lo[:k], s.hi[:k])
    raise TypeError(type(s))
