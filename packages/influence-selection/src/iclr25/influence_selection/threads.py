"""Thread-count-independent numerics: single-threaded BLAS and torch, and scores rounded before ranking.

OpenBLAS (and MKL) split matrix products and factorisations differently with 1 and 2 threads, so the last bits
of H, the Newton fit and every score depend on the thread count. Most arms of the reproduction are immune, but
the IV active-learning arm regresses IV on integer-valued pixels with a decision tree, whose split choice turns
on exact ties: a 1-ulp change in IV changed its AUC by 0.003 on the ci preset (1 vs 2 threads). `one_thread`
removes the thread dependence (the matrices are small); `quantize` removes last-bit noise (a different BLAS
build or CPU) before anything is ranked or regressed.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import numpy as np

SCORE_DIGITS = 9  # significant digits (relative to the largest |score|) kept before ranking


@contextmanager
def one_thread() -> Iterator[None]:
    """Run the block with one BLAS thread (threadpoolctl) and one torch thread; restores both afterwards."""
    import torch
    from threadpoolctl import threadpool_limits

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        with threadpool_limits(limits=1):
            yield
    finally:
        torch.set_num_threads(threads)


def quantize(scores: np.ndarray, digits: int = SCORE_DIGITS) -> np.ndarray:
    """Scores rounded to `digits` significant digits of the largest |score| (a power-of-ten grid).

    Values that agree to that precision become exact ties, which every ranking here breaks by index.
    """
    s = np.asarray(scores, float)
    finite = np.abs(s[np.isfinite(s)])
    top = float(finite.max()) if finite.size else 0.0
    if top == 0.0:
        return s.copy()
    step = 10.0 ** (np.floor(np.log10(top)) - digits + 1)
    return np.round(s / step) * step
