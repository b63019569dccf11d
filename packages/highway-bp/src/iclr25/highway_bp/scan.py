"""The reverse "cumsumprod" scan of Highway backpropagation (Fagnou et al., ICLR 2025, arXiv 2501.17086, §4.3).

`CumSumProd(a, M)_i = Σ_{j ≥ i} a_j M_{j−1} ⋯ M_i` (row vectors), i.e. the reverse linear recurrence
`u_i = a_i + u_{i+1} M_i` (Eq. 10 with the transfer `M_i := K_{i+1}` from position i+1 to position i).

Two forms: a sequential loop (L steps) and the Hillis–Steele parallel prefix scan of Algorithm 1 (⌈log₂ L⌉
rounds, each round a batch of elementwise or batched-matmul ops over all positions at once).
Deviation from the paper as printed: Algorithm 1 initialises `P ← K`; with the recurrence above the correct
initialisation is `P⁽⁰⁾_i = M_i = K_{i+1}` (the paper's own output formula implies it; our tests check it).
"""

from __future__ import annotations

import torch
from torch import Tensor

MODES = ("identity", "zero", "scalar", "diag", "matrix")


def _check(a: Tensor, M: Tensor | float | None, mode: str) -> None:
    if mode not in MODES:
        raise ValueError(f"mode must be one of {', '.join(MODES)}; got {mode!r}")
    if a.dim() < 1:
        raise ValueError("a must have a leading position axis of length L >= 1")
    if mode in ("scalar", "diag", "matrix") and M is None:
        raise ValueError(f"mode {mode!r} needs the transfer M")
    if mode == "diag" and isinstance(M, Tensor) and M.shape != a.shape:
        raise ValueError(f"diag mode needs M of the same shape as a {tuple(a.shape)}, got {tuple(M.shape)}")
    if mode == "matrix":
        if not isinstance(M, Tensor) or M.dim() != 3 or M.shape[0] != a.shape[0] or M.shape[1] != M.shape[2]:
            raise ValueError("matrix mode needs M of shape (L, D, D)")
        if a.shape[-1] != M.shape[1]:
            raise ValueError(f"matrix mode: a's last dim {a.shape[-1]} must equal M's size {M.shape[1]}")


def _scalar_transfer(M: Tensor | float, a: Tensor) -> Tensor:
    """Scalar transfers as a (L, 1, ..., 1) tensor broadcasting against a."""
    m = torch.as_tensor(M, dtype=a.dtype, device=a.device)
    if m.dim() == 0:
        m = m.expand(a.shape[0])
    if m.shape != (a.shape[0],):
        raise ValueError(f"scalar mode needs M to be a number or a tensor of shape ({a.shape[0]},)")
    return m.reshape(a.shape[0], *([1] * (a.dim() - 1)))


def cumsumprod(a: Tensor, M: Tensor | float | None = None, mode: str = "identity", parallel: bool = False) -> Tensor:
    """Reverse scan `u_i = a_i + u_{i+1} · M_i` over the leading axis (u_{L−1} = a_{L−1}); M_{L−1} is unused.

    a: (L, ...). M: None (identity/zero), a number or (L,) tensor (scalar), a tensor shaped like a (diag),
    or (L, D, D) (matrix, row-vector convention u·M). `parallel` selects Hillis–Steele (Algorithm 1).
    """
    _check(a, M, mode)
    if mode == "scalar":
        M = _scalar_transfer(M, a)  # (L, 1, ..., 1)
    if parallel:
        return _hillis_steele(a, M, mode)
    return _sequential(a, M, mode)


def _sequential(a: Tensor, M: Tensor | None, mode: str) -> Tensor:
    L = a.shape[0]
    out = [a[L - 1]]
    for i in range(L - 2, -1, -1):
        m = None if M is None else M[i]
        prev = out[-1]
        if mode == "matrix":
            step = prev @ m
        elif mode == "identity":
            step = prev
        elif mode == "zero":
            step = torch.zeros_like(prev)
        else:
            step = prev * m
        out.append(a[i] + step)  # Eq. 10: u_i = a_i + u_{i+1} K_{i+1}
    return torch.stack(out[::-1])


def _hillis_steele(a: Tensor, M: Tensor | None, mode: str) -> Tensor:
    L = a.shape[0]
    if mode == "identity":  # a reversed cumulative sum
        return a.flip(0).cumsum(0).flip(0)
    if mode == "zero":
        return a.clone()
    u = a.clone()
    P = M.clone()  # P⁽⁰⁾_i = M_i = K_{i+1}  (Algorithm 1, corrected index)
    s = 1
    while s < L:
        n = L - s
        if mode == "matrix":
            u_shift = torch.einsum("l...d,lde->l...e", u[s:], P[:n])  # u_{i+s} · P_i
            P_new = P[s:] @ P[:n]  # P_{i+s} · P_i (row-vector order)
        else:
            u_shift = u[s:] * P[:n]
            P_new = P[s:] * P[:n]
        u = torch.cat([u[:n] + u_shift, u[n:]])  # all updates of a round use the old values
        P = torch.cat([P_new, P[n:]])
        s *= 2
    return u
