"""The lr selection rule of the reproduction and of the real-data tables: per method, seed-averaged coverage at
least `min_cov`, then the smallest mean width (an oracle choice on the evaluation data, like the paper's); and the
matched-coverage width, interpolated at coverage exactly 1 - alpha over a method's lr grid.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np


@dataclass
class Grid:
    """Per (method, lr): per-seed metrics."""

    cov: dict[tuple[str, float], list[float]] = field(default_factory=dict)
    avg: dict[tuple[str, float], list[float]] = field(default_factory=dict)
    med: dict[tuple[str, float], list[float]] = field(default_factory=dict)
    run: dict[tuple[str, float], list[float]] = field(default_factory=dict)
    rec: dict[tuple[str, float], list[float]] = field(default_factory=dict)

    def add(self, key: tuple[str, float], m: dict[str, float], rec: float | None) -> None:
        for store, name in ((self.cov, "coverage"), (self.avg, "avg_width"), (self.med, "median_width")):
            store.setdefault(key, []).append(m[name])
        self.run.setdefault(key, []).append(m["longest_miss_run"])
        if rec is not None:
            self.rec.setdefault(key, []).append(rec)

    def extend(self, other: Grid) -> None:
        """Append `other`'s per-seed values after this grid's (seeds run apart, merged in seed order)."""
        for name in ("cov", "avg", "med", "run", "rec"):
            mine = getattr(self, name)
            for key, values in getattr(other, name).items():
                mine.setdefault(key, []).extend(values)


def select_lr(
    grid: Grid,
    method: str,
    lrs: tuple[float | None, ...],
    target: float,
    min_cov: float,
    exclude: int | None = None,
) -> float | None:
    """The selection rule of the module docstring (seed-averaged coverage, then smallest mean width);
    `exclude` leaves one seed out of the averages (held-out selection)."""

    def mean(values: list[float]) -> float:
        kept = [v for i, v in enumerate(values) if i != exclude]
        return float(np.mean(kept))

    means = {lr: (mean(grid.cov[(method, lr)]), mean(grid.avg[(method, lr)])) for lr in lrs}
    ok = [lr for lr in lrs if means[lr][0] >= min_cov]
    if ok:
        return min(ok, key=lambda lr: means[lr][1])
    return min(lrs, key=lambda lr: abs(means[lr][0] - target))


def width_at_coverage(points: list[tuple[float, float]], target: float) -> float | None:
    """Width at coverage exactly `target`, linearly interpolated between the grid points (coverage, width)
    nearest to it from below and from above; None when the grid's coverages do not bracket the target or a
    bracketing width is infinite."""
    below = [p for p in points if p[0] <= target]
    above = [p for p in points if p[0] >= target]
    if not below or not above:
        return None
    c1, w1 = max(below, key=lambda p: (p[0], -p[1]))  # nearest below (the narrower one on ties)
    c2, w2 = min(above, key=lambda p: (p[0], p[1]))
    if not (math.isfinite(w1) and math.isfinite(w2)):
        return None
    return w1 if c2 == c1 else w1 + (w2 - w1) * (target - c1) / (c2 - c1)
