"""Arithmetic whose result is fixed by IEEE-754 double precision alone, the same on every machine.

BLAS/LAPACK kernels (`np.linalg.solve`, `@`, `np.dot`), SIMD reductions (`np.einsum`, `np.dot`) and the C
library's `exp` pick their operation order, vector width or polynomial by CPU (OpenBLAS chooses a kernel per
CPU model; glibc's `exp` has an FMA and a non-FMA variant that differ by one unit in the last place on about
0.07% of inputs). Their last bits therefore depend on the machine, and a recursion that takes decisions on
near-ties (the accumulating ECI ablation) turns those last bits into visibly different results. Everything
here is built from elementwise +, -, *, /, comparisons and exact power-of-two scaling in a fixed order, each
of which IEEE-754 rounds exactly one way, so the result is bitwise fixed (vectorised over the batch, Python
loops only over the small dimension d).
"""

from __future__ import annotations

import math

import numpy as np

# exp by the classic argument reduction x = k ln2 + r, |r| <= ln2 / 2, and a minimax rational form of e^r
# (the coefficients of FreeBSD's msun/fdlibm e_exp.c; error < 1 ulp). ln2 is split so that k * _LN2_HI is exact.
_LN2_HI = 6.93147180369123816490e-01
_LN2_LO = 1.90821492927058770002e-10
_INV_LN2 = 1.44269504088896338700e00
_P1 = 1.66666666666666019037e-01
_P2 = -2.77777777770155933842e-03
_P3 = 6.61375632143793436117e-05
_P4 = -1.65339022054652515390e-06
_P5 = 4.13813679705723846039e-08
_EXP_MAX = 709.782712893383973096  # above: overflow to inf
_EXP_MIN = -745.13321910194110842  # below: underflow to 0


def exp(x: float) -> float:
    """e^x, bitwise the same on every machine (within 1 ulp of the true value)."""
    x = float(x)
    if x != x:
        return x
    if x > _EXP_MAX:
        return math.inf
    if x < _EXP_MIN:
        return 0.0
    k = round(x * _INV_LN2)
    hi = x - k * _LN2_HI  # exact: k * _LN2_HI has at most 43 significant bits
    lo = k * _LN2_LO
    r = hi - lo
    t = r * r
    c = r - t * (_P1 + t * (_P2 + t * (_P3 + t * (_P4 + t * _P5))))
    y = 1.0 - ((lo - (r * c) / (2.0 - c)) - hi)
    return math.ldexp(y, k)  # exact scaling by 2^k (one IEEE rounding if the result is subnormal)


def exp_array(x: np.ndarray) -> np.ndarray:
    """Elementwise `exp` of an array: the same operations as the scalar form, vectorised (bitwise equal to it)."""
    x = np.asarray(x, dtype=float)
    inside = np.where((x >= _EXP_MIN) & (x <= _EXP_MAX), x, 0.0)  # the rest is set below
    k = np.rint(inside * _INV_LN2)
    hi = inside - k * _LN2_HI
    lo = k * _LN2_LO
    r = hi - lo
    t = r * r
    c = r - t * (_P1 + t * (_P2 + t * (_P3 + t * (_P4 + t * _P5))))
    y = 1.0 - ((lo - (r * c) / (2.0 - c)) - hi)
    out = np.ldexp(y, k.astype(np.int64))
    out = np.where(x > _EXP_MAX, np.inf, out)
    out = np.where(x < _EXP_MIN, 0.0, out)
    return np.where(np.isnan(x), x, out)


def dot_rows(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """sum_j a[..., j] * b[..., j], added left to right (j = 0, 1, ...): no SIMD reduction, no BLAS."""
    a, b = np.broadcast_arrays(np.asarray(a, dtype=float), np.asarray(b, dtype=float))
    if a.shape[-1] == 0:
        return np.zeros(a.shape[:-1])
    acc = a[..., 0] * b[..., 0]
    for j in range(1, a.shape[-1]):
        acc = acc + a[..., j] * b[..., j]
    return acc


def solve_batched(A: np.ndarray, b: np.ndarray) -> np.ndarray:
    """x with A[i] x[i] = b[i] for a batch A (m, d, d), b (m, d): Gaussian elimination with partial pivoting
    (the algorithm of LAPACK's gesv) written as elementwise operations over the batch in a fixed order.

    Pivot: the first row of largest |entry| in the column. Raises `np.linalg.LinAlgError` when a pivot is 0
    (an exactly singular matrix), as `np.linalg.solve` does.
    """
    U = np.array(A, dtype=float)  # copies
    v = np.array(b, dtype=float)
    if U.ndim != 3 or U.shape[1] != U.shape[2] or v.shape != U.shape[:2]:
        raise ValueError(f"need A of shape (m, d, d) and b of shape (m, d), got {U.shape} and {v.shape}")
    m, d = v.shape
    rows = np.arange(m)
    for k in range(d):
        p = k + np.argmax(np.abs(U[:, k:, k]), axis=1)  # (m,) pivot row per matrix
        Uk, Up = U[rows, k].copy(), U[rows, p].copy()
        U[rows, p], U[rows, k] = Uk, Up  # swap rows k and p (no-op where p == k)
        vk, vp = v[rows, k].copy(), v[rows, p].copy()
        v[rows, p], v[rows, k] = vk, vp
        piv = U[:, k, k]
        if np.any(piv == 0.0):
            raise np.linalg.LinAlgError("Singular matrix")
        lower = U[:, k + 1 :, k] / piv[:, None]  # (m, d-k-1) multipliers
        U[:, k + 1 :, k:] = U[:, k + 1 :, k:] - lower[:, :, None] * U[:, k, None, k:]
        v[:, k + 1 :] = v[:, k + 1 :] - lower * v[:, k, None]
    x = np.empty((m, d))
    for i in range(d - 1, -1, -1):  # back substitution, the sum over j > i added in increasing j
        acc = v[:, i]
        for j in range(i + 1, d):
            acc = acc - U[:, i, j] * x[:, j]
        x[:, i] = acc / U[:, i, i]
    return x
