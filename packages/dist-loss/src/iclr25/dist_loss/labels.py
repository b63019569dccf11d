"""Pseudo-labels of Dist Loss: the expected sorted labels of a batch, from a KDE of the training labels.

Dist Loss (Nie, Tang, Hong, ICLR 2025, arXiv 2411.15216), Sec. 3 "label distribution" and Fig. 2:
(1) estimate the label density with a Gaussian KDE on a grid g_k = min_label + k*step, normalised to
sum 1; (2) turn it into integer counts n_k for a batch of size B (the tails lumped into the first and
last represented bins, the rounding residual spread around the mode); (3) repeat each g_k n_k times.
Computed once before training, for the fixed batch size.

Two bugs of the official residual adjustment are fixed by default and kept behind `official_bugs=True`
for parity: (i) a window that starts left of bin 0 is a numpy slice with a negative start, silently
empty (the counts then do not sum to B); (ii) for a large negative residual the official floor division
and modulo with the sign of r *add* counts instead of removing them.
"""

from __future__ import annotations

import numpy as np

__all__ = ["batch_label_counts", "kde_label_density", "label_grid", "pseudo_labels"]


def label_grid(min_label: float, max_label: float, step: float) -> np.ndarray:
    """The grid g_k = min_label + k*step, k = 0..K-1, K = (max-min)/step + 1 (no float-arange drift)."""
    if not step > 0:
        raise ValueError(f"step must be > 0, got {step!r}")
    if not max_label > min_label:
        raise ValueError(f"max_label must exceed min_label, got min {min_label!r}, max {max_label!r}")
    k = round((max_label - min_label) / step) + 1
    return min_label + step * np.arange(k)


def kde_label_density(
    labels: np.ndarray,
    bw: float | str = 0.5,
    min_label: float = 0.0,
    max_label: float = 120.0,
    step: float = 1.0,
) -> np.ndarray:
    """KDE of the training labels on the label grid, normalised to sum 1 (official `get_label_distribution`).

    A scalar `bw` is scipy's KDE factor: kernel std = bw * sample std of the labels (default 0.5, the
    official trainer's); "scott" / "silverman" are accepted too.
    """
    from scipy.stats import gaussian_kde

    labels = np.asarray(labels, dtype=np.float64).reshape(-1)
    if not np.all(np.isfinite(labels)):
        raise ValueError("labels must be finite")
    grid = label_grid(min_label, max_label, step)
    kept = labels[(labels >= min_label) & (labels <= max_label)]
    if kept.size < 2 or np.ptp(kept) == 0:
        raise ValueError(
            f"need at least two distinct labels inside [{min_label}, {max_label}] to fit a KDE, got {kept.size}"
        )
    if isinstance(bw, str):
        if bw not in ("scott", "silverman"):
            raise ValueError(f"bw must be a positive number, 'scott' or 'silverman', got {bw!r}")
    elif not bw > 0:
        raise ValueError(f"bw must be > 0, got {bw!r}")
    density = gaussian_kde(kept, bw_method=bw)(grid)  # (K,)
    return density / density.sum()


def _spread_fixed(counts: np.ndarray, mode: int, amount: int, sign: int) -> None:
    """Add (sign=+1) or remove (sign=-1) one count from `amount` bins around `mode`, inside [0, K).

    The window of |r| consecutive bins starting at mode - |r|//2 is shifted into the grid; when removing,
    bins that are already empty are skipped and the window widens outward from the mode instead.
    """
    k = counts.shape[0]
    if sign > 0:
        amount_left = amount
        while amount_left > 0:  # more than K bins to fill: add whole rounds
            width = min(amount_left, k)
            start = min(max(mode - width // 2, 0), k - width)
            counts[start : start + width] += 1
            amount_left -= width
        return
    # Removing: visit bins by distance from the mode (left first on ties, like the official window).
    order = sorted(range(k), key=lambda j: (abs(j - mode), j))
    amount_left = amount
    while amount_left > 0:
        progressed = False
        for j in order:
            if amount_left == 0:
                break
            if counts[j] > 0:
                counts[j] -= 1
                amount_left -= 1
                progressed = True
        if not progressed:
            raise ValueError("cannot remove counts from an empty distribution")


def batch_label_counts(
    density: np.ndarray,
    batch_size: int,
    region_adjustment: float = 0.5,
    official_bugs: bool = False,
) -> np.ndarray:
    """Integer label counts n_k of a batch of `batch_size` drawn from `density` (sum B unless official_bugs)."""
    p = np.asarray(density, dtype=np.float64).reshape(-1)
    if p.size < 2 or not np.all(np.isfinite(p)) or np.any(p < 0) or p.sum() <= 0:
        raise ValueError("density must be a finite, non-negative vector of length >= 2 with positive sum")
    if not isinstance(batch_size, int | np.integer) or batch_size < 1:
        raise ValueError(f"batch_size must be a positive integer, got {batch_size!r}")
    if not 0 < region_adjustment <= 1:
        raise ValueError(f"region_adjustment must be in (0, 1], got {region_adjustment!r}")
    p = p / p.sum()
    k = p.size
    c = batch_size * p  # expected count per bin
    fwd = np.cumsum(c)  # F_k
    bwd = np.cumsum(c[::-1])[::-1]  # R_k = sum_{j >= k} c_j
    k_lo = int(np.searchsorted(fwd, 1.0))  # first k with F_k >= 1
    k_hi = k - int(np.searchsorted(bwd[::-1], 1.0)) - 1  # last k with R_k >= 1
    counts = np.zeros(k, dtype=np.int64)
    if k_lo >= k_hi:  # (a near-point mass) everything in one bin
        counts[min(k_lo, k - 1)] = batch_size
        return counts
    counts[k_lo + 1 : k_hi] = np.round(c[k_lo + 1 : k_hi]).astype(np.int64)  # round half to even
    counts[k_lo] = round(float(fwd[k_lo]))  # the whole left tail lumped into k_lo
    counts[k_hi] = round(float(bwd[k_hi]))  # the whole right tail lumped into k_hi
    r = batch_size - int(counts.sum())  # rounding residual
    mode = int(np.argmax(counts))
    width = int(region_adjustment * k)
    if official_bugs:
        if abs(r) <= width:
            start = mode - abs(r) // 2
            counts[start : start + abs(r)] += int(np.sign(r))  # bug (i): empty slice when start < 0
        else:
            start = mode - width // 2
            counts[start : start + width] += (r // width) * int(np.sign(r))  # bug (ii): adds for r < 0
            counts[mode] += r % width
        return counts
    if r == 0:
        return counts
    sign = 1 if r > 0 else -1
    if abs(r) <= width:
        _spread_fixed(counts, mode, abs(r), sign)
    else:
        per_bin, rest = divmod(abs(r), width)  # intended: |r|//W to each of W bins, |r| mod W to the mode
        for _ in range(per_bin):
            _spread_fixed(counts, mode, width, sign)
        if sign > 0:
            counts[mode] += rest
        else:
            _spread_fixed(counts, mode, rest, sign)  # never below zero
    return counts


def pseudo_labels(
    density: np.ndarray,
    batch_size: int,
    min_label: float = 0.0,
    step: float = 1.0,
    region_adjustment: float = 0.5,
    official_bugs: bool = False,
) -> np.ndarray:
    """The B ascending pseudo-labels: each grid value g_k repeated n_k times (paper Fig. 2)."""
    if not step > 0:
        raise ValueError(f"step must be > 0, got {step!r}")
    counts = batch_label_counts(density, batch_size, region_adjustment, official_bugs)
    grid = min_label + step * np.arange(counts.size)
    if not official_bugs:
        return np.repeat(grid, counts)  # (B,)
    # Official fill: positions cumsum[k-1]..cumsum[k] get g_k inside a zero vector of length B, so a
    # count sum above B truncates the top labels and one below B leaves trailing zeros.
    out = np.zeros(batch_size)
    ends = np.cumsum(counts)
    for i in range(counts.size):
        start = 0 if i == 0 else ends[i - 1]
        out[start : ends[i]] = grid[i]
    return out
