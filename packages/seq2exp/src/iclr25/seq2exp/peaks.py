"""MACS3-style peak caller (spec §4, numpy/scipy): documented and deterministic, not bit-identical to MACS3.

On a per-base coverage track s with no control: lambda_bg = mean(s); lambda_local(x) = max(lambda_bg, mean of s in
1/5/10 kb windows centred at x); pileup(x) = mean of s over a d-bp window; k = pileup * count_scale,
Lambda = lambda_local * count_scale with count_scale = d (window sums); one-sided Poisson p = P(X >= k | Lambda)
= P(k, Lambda) (regularised lower incomplete gamma, continuous k); Benjamini-Hochberg q-values; bases with q < 0.05
called; runs closer than max_gap merged; peaks shorter than min_len dropped.
"""

from __future__ import annotations

import itertools

import numpy as np
from scipy.special import gammainc

from iclr25.shared.files import write_text


def _window_mean(s: np.ndarray, w: int) -> np.ndarray:
    """Mean of s over a centred window of w bases along the last axis, truncated at the ends."""
    c = np.concatenate([np.zeros((*s.shape[:-1], 1)), np.cumsum(s, axis=-1, dtype=np.float64)], axis=-1)
    n = s.shape[-1]
    lo = np.clip(np.arange(n) - w // 2, 0, n)
    hi = np.clip(np.arange(n) - w // 2 + w, 0, n)
    return (c[..., hi] - c[..., lo]) / np.maximum(hi - lo, 1)


def bh_qvalues(p: np.ndarray) -> np.ndarray:
    """Benjamini-Hochberg q-values along the last axis (each row its own family)."""
    p = np.asarray(p, dtype=np.float64)
    n = p.shape[-1]
    order = np.argsort(p, axis=-1)
    ranked = np.take_along_axis(p, order, -1) * n / np.arange(1, n + 1)
    q_sorted = np.minimum.accumulate(ranked[..., ::-1], axis=-1)[..., ::-1]
    q = np.empty_like(p)
    np.put_along_axis(q, order, np.minimum(q_sorted, 1.0), -1)
    return q


def runs(mask: np.ndarray) -> list[tuple[int, int]]:
    """[start, end) of each run of True in a 1-D bool array."""
    padded = np.concatenate([[False], np.asarray(mask, bool), [False]])
    edges = np.flatnonzero(padded[1:] != padded[:-1])
    return list(zip(edges[::2].tolist(), edges[1::2].tolist(), strict=True))


def call_peaks_macs_style(
    track: np.ndarray,
    d: int = 200,
    qvalue: float = 0.05,
    windows: tuple[int, ...] = (1000, 5000, 10000),
    count_scale: float | None = None,
    max_gap: int | None = None,
    min_len: int | None = None,
    lambda_bg: float | None = None,
) -> tuple[np.ndarray, list[tuple[int, int, float]]]:
    """(0/1 mask of called bases, peaks [(start, end, max -log10 q)]) of one 1-D coverage track (spec §4).

    count_scale defaults to d (window sums; with 1 the caller finds none of the planted boxes of spec §9.5),
    max_gap and min_len to d. lambda_bg defaults to the track's mean (pass a genome-wide value for real data).
    A 2-D array is called row by row (each row its own region and BH family); peaks are then (row, start, end, score).
    """
    s = np.nan_to_num(np.asarray(track, dtype=np.float64), nan=0.0, posinf=0.0, neginf=0.0)
    if s.ndim not in (1, 2) or s.size == 0:
        raise ValueError(f"track must be a non-empty 1-D (or 2-D, one region a row) array, got shape {s.shape}")
    if d < 1 or not 0 < qvalue <= 1:
        raise ValueError(f"need d >= 1 and 0 < qvalue <= 1, got d={d}, qvalue={qvalue}")
    scale = float(d if count_scale is None else count_scale)
    max_gap = d if max_gap is None else max_gap
    min_len = d if min_len is None else min_len
    bg = s.mean(-1, keepdims=True) if lambda_bg is None else np.full((*s.shape[:-1], 1), float(lambda_bg))
    local = np.broadcast_to(bg, s.shape)
    for w in windows:
        local = np.maximum(local, _window_mean(s, w))
    pileup = _window_mean(s, d)
    k, lam = pileup * scale, np.maximum(local * scale, 1e-12)
    p = np.where(k > 0, gammainc(np.maximum(k, 1e-12), lam), 1.0)  # P(X >= k | Lambda), continuous k
    q = bh_qvalues(p)
    called = q < qvalue
    neglog = -np.log10(np.maximum(q, 1e-300))
    if s.ndim == 2:
        masks, all_peaks = [], []
        for i in range(s.shape[0]):
            m, pk = _merge(called[i], neglog[i], max_gap, min_len)
            masks.append(m)
            all_peaks += [(i, *p) for p in pk]
        return np.stack(masks), all_peaks  # type: ignore[return-value]
    return _merge(called, neglog, max_gap, min_len)


def _merge(
    called: np.ndarray, neglog: np.ndarray, max_gap: int, min_len: int
) -> tuple[np.ndarray, list[tuple[int, int, float]]]:
    """Merge runs of called bases closer than max_gap, drop those shorter than min_len."""
    merged = called.copy()
    spans = runs(called)
    for (_, e0), (s1, _) in itertools.pairwise(spans):
        if s1 - e0 <= max_gap:
            merged[e0:s1] = True
    mask = np.zeros(called.shape, dtype=np.uint8)
    peaks = []
    for a, b in runs(merged):
        if b - a >= min_len:
            mask[a:b] = 1
            peaks.append((a, b, float(neglog[a:b].max())))
    return mask, peaks


def peaks_to_mask(peaks: list[tuple[int, int]], length: int, offset: int = 0) -> np.ndarray:
    """A 0/1 mask of `length` bases from [start, end) intervals (shifted by -offset, clipped to the window)."""
    mask = np.zeros(length, dtype=np.uint8)
    for start, end in peaks:
        a, b = max(start - offset, 0), min(end - offset, length)
        if b > a:
            mask[a:b] = 1
    return mask


def read_bed(path: str, chrom: str | None = None) -> list[tuple[str, int, int]]:
    """(chrom, start, end) of every interval of a BED / MACS3 narrowPeak file (extra columns ignored)."""
    out = []
    with open(path, encoding="utf-8") as f:
        for number, line in enumerate(f, 1):
            if not line.strip() or line.startswith(("#", "track", "browser")):
                continue
            fields = line.rstrip("\n").split("\t")
            try:
                name, start, end = fields[0], int(fields[1]), int(fields[2])
            except (IndexError, ValueError):
                raise ValueError(
                    f"{path}: line {number} is not BED (chrom, start, end): {line.strip()[:60]!r}"
                ) from None
            if end < start or start < 0:
                raise ValueError(f"{path}: line {number} has end < start or a negative start")
            if chrom is None or name == chrom:
                out.append((name, start, end))
    return out


def write_bed(path: str, chrom: str, mask: np.ndarray, offset: int = 0) -> int:
    """Write the runs of a 0/1 mask as BED intervals (chrom, start + offset, end + offset); returns their count."""
    spans = runs(np.asarray(mask) > 0.5)
    write_text(path, "".join(f"{chrom}\t{a + offset}\t{b + offset}\n" for a, b in spans))
    return len(spans)
