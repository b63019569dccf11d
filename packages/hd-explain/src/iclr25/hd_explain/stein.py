"""Stein kernels of HD-Explain (Sarvmaili, Sajjad & Wu, ICLR 2025, arXiv 2403.15576).

For augmented points d = [x, onehot(y)] with scores s = [grad_x log f_y(x), f(x)] the Langevin Stein
kernel of a base kernel k is (Liu, Lee & Jordan 2016; the paper's model-dependent kernel)

    kappa(d, d') = s.s' k + s.grad_{d'} k + s'.grad_d k + tr(grad_d grad_{d'} k).

All three base kernels of the paper have closed forms, computed here pairwise with matrix products only
(no (n1, n2, D) tensor), so a 100 x 5000 x 3082 block costs three matmuls. Shapes: D1 (n1, D),
D2 (n2, D), S1 (n1, D), S2 (n2, D) -> (n1, n2). `reference.py` holds the autograd form they are tested
against.

Differences from the official code (explainers/ksd.py): the linear kernel uses the correct Stein form
s.d + s'.d' (the official code swaps the arguments: s.d' + s'.d, available as `official_quirk=True`);
the optional weights p(x)p(x') of the official code are always 1 there and are omitted here.
"""

from __future__ import annotations

from typing import Literal

import torch

Kernel = Literal["rbf", "imq", "linear"]
KERNELS: tuple[str, ...] = ("rbf", "imq", "linear")
RBF_PARTS: tuple[str, ...] = ("score", "cross", "trace")


def _pair_terms(D1: torch.Tensor, D2: torch.Tensor, S1: torch.Tensor, S2: torch.Tensor):
    """r^2 = |d - d'|^2, delta.(s - s') and s.s' for every pair, by matrix products."""
    dd = D1 @ D2.T  # (n1, n2)
    r2 = ((D1 * D1).sum(1)[:, None] + (D2 * D2).sum(1)[None, :] - 2.0 * dd).clamp_min(0.0)
    # delta.(s - s') = d.s - d.s' - d'.s + d'.s'
    cross = (D1 * S1).sum(1)[:, None] - D1 @ S2.T - S1 @ D2.T + (D2 * S2).sum(1)[None, :]
    return r2, cross, S1 @ S2.T


def _check(D1: torch.Tensor, D2: torch.Tensor, S1: torch.Tensor, S2: torch.Tensor) -> None:
    if D1.ndim != 2 or D2.ndim != 2 or D1.shape != S1.shape or D2.shape != S2.shape or D1.shape[1] != D2.shape[1]:
        raise ValueError(
            f"need D1, S1 of shape (n1, D) and D2, S2 of shape (n2, D); got {tuple(D1.shape)}, {tuple(S1.shape)}, "
            f"{tuple(D2.shape)}, {tuple(S2.shape)}"
        )


def stein_kernel_rbf(
    D1: torch.Tensor,
    D2: torch.Tensor,
    S1: torch.Tensor,
    S2: torch.Tensor,
    h: float,
    parts: tuple[str, ...] = RBF_PARTS,
) -> torch.Tensor:
    """RBF Stein kernel, k = exp(-r^2 / (2h)): kappa = k [s.s' + delta.(s - s')/h + (D - r^2/h)/h]  (n1, n2).

    `parts` keeps a subset of the three terms (the method uses all; ("score",) is the
    "term 1 only" ablation k s.s').
    """
    _check(D1, D2, S1, S2)
    if not h > 0:
        raise ValueError(f"bandwidth h must be > 0, got {h}")
    bad = set(parts) - set(RBF_PARTS)
    if bad:
        raise ValueError(f"parts must be a subset of {RBF_PARTS}, got {parts}")
    dim = D1.shape[1]
    r2, cross, ss = _pair_terms(D1, D2, S1, S2)
    k = torch.exp(-r2 / (2.0 * h))  # base kernel
    inner = torch.zeros_like(r2)
    if "score" in parts:
        inner = inner + ss  # s.s' k
    if "cross" in parts:
        inner = inner + cross / h  # s.grad_{d'}k + s'.grad_d k = k delta.(s - s') / h
    if "trace" in parts:
        inner = inner + (dim - r2 / h) / h  # tr(grad_d grad_{d'} k) = k (D/h - r^2/h^2)
    return k * inner


def stein_kernel_imq(
    D1: torch.Tensor,
    D2: torch.Tensor,
    S1: torch.Tensor,
    S2: torch.Tensor,
    g: float = 1.0,
    beta: float = 0.5,
) -> torch.Tensor:
    """IMQ Stein kernel, k = (1 + g r^2)^(-beta) (official defaults g = 1, beta = 0.5)  (n1, n2)."""
    _check(D1, D2, S1, S2)
    if not (g > 0 and beta > 0):
        raise ValueError(f"IMQ needs g > 0 and beta > 0, got g={g}, beta={beta}")
    dim = D1.shape[1]
    r2, cross, ss = _pair_terms(D1, D2, S1, S2)
    res = 1.0 + g * r2
    k = res.pow(-beta)
    first = ss * k
    second = 2.0 * beta * g * res.pow(-beta - 1.0) * cross  # s.grad_{d'}k + s'.grad_d k
    trace = 2.0 * beta * g * dim * res.pow(-beta - 1.0) - 4.0 * beta * (beta + 1.0) * g**2 * r2 * res.pow(-beta - 2.0)
    return first + second + trace


def stein_kernel_linear(
    D1: torch.Tensor,
    D2: torch.Tensor,
    S1: torch.Tensor,
    S2: torch.Tensor,
    official_quirk: bool = False,
) -> torch.Tensor:
    """Linear Stein kernel, k = d.d': kappa = (s.s')(d.d') + s.d + s'.d' + D  (n1, n2).

    `official_quirk=True` reproduces the official code's swapped middle terms s.d' + s'.d (parity only).
    """
    _check(D1, D2, S1, S2)
    dim = D1.shape[1]
    base = (S1 @ S2.T) * (D1 @ D2.T)
    # s.grad_{d'}k + s'.grad_d k = s.d + s'.d'; the official quirk computes s.d' + s'.d
    correct = (S1 * D1).sum(1)[:, None] + (S2 * D2).sum(1)[None, :]
    middle = S1 @ D2.T + D1 @ S2.T if official_quirk else correct
    return base + middle + dim


def stein_kernel(
    D1: torch.Tensor,
    D2: torch.Tensor,
    S1: torch.Tensor,
    S2: torch.Tensor,
    kernel: str = "rbf",
    h: float = 1.0,
    **params: object,
) -> torch.Tensor:
    """Dispatch to the RBF (`h`), IMQ (`g`, `beta`) or linear (`official_quirk`) Stein kernel."""
    if kernel == "rbf":
        return stein_kernel_rbf(D1, D2, S1, S2, h, **params)  # type: ignore[arg-type]
    if kernel == "imq":
        return stein_kernel_imq(D1, D2, S1, S2, **params)  # type: ignore[arg-type]
    if kernel == "linear":
        return stein_kernel_linear(D1, D2, S1, S2, **params)  # type: ignore[arg-type]
    raise ValueError(f"kernel must be one of {', '.join(KERNELS)}, got {kernel!r}")


def stein_self_scores(
    D: torch.Tensor,
    S: torch.Tensor,
    kernel: str = "rbf",
    h: float = 1.0,
    g: float = 1.0,
    beta: float = 0.5,
    official_quirk: bool = False,
) -> torch.Tensor:
    """kappa(d_i, d_i) for every row (n,): the data-debugging score (large = suspicious).

    RBF: |s|^2 + D/h; IMQ: |s|^2 + 2 beta g D; linear: |s|^2 |d|^2 + 2 s.d + D (the quirk gives the same).
    """
    if D.ndim != 2 or D.shape != S.shape:
        raise ValueError(f"need D and S of the same shape (n, D), got {tuple(D.shape)} and {tuple(S.shape)}")
    dim = D.shape[1]
    ss = (S * S).sum(1)
    if kernel == "rbf":
        if not h > 0:
            raise ValueError(f"bandwidth h must be > 0, got {h}")
        return ss + dim / h
    if kernel == "imq":
        return ss + 2.0 * beta * g * dim
    if kernel == "linear":
        return ss * (D * D).sum(1) + 2.0 * (S * D).sum(1) + dim
    raise ValueError(f"kernel must be one of {', '.join(KERNELS)}, got {kernel!r}")


def resolve_bandwidth(bandwidth: float | str, temperature: float, dim_x: int, dim_d: int) -> float:
    """RBF bandwidth h: a float as given; "dim_d" = temperature * (dim x + C) (official); "dim_x" = temperature * dim x."""
    if isinstance(bandwidth, str):
        if bandwidth == "dim_d":
            return float(temperature * dim_d)
        if bandwidth == "dim_x":
            return float(temperature * dim_x)
        try:
            bandwidth = float(bandwidth)
        except ValueError:
            raise ValueError(f'bandwidth must be a positive float, "dim_x" or "dim_d", got {bandwidth!r}') from None
    if not (isinstance(bandwidth, int | float) and bandwidth > 0):
        raise ValueError(f'bandwidth must be a positive float, "dim_x" or "dim_d", got {bandwidth!r}')
    return float(bandwidth)
