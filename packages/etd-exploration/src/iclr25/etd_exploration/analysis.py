"""Analysis tools for ETD (arXiv 2501.15418): the analytic successor distance and rank agreement with BFS.

``M = (1 - gamma) (I - gamma P)^-1`` is the discounted occupancy of a tabular chain and
``d_SD(x, y) = log M[y, y] - log M[x, y]`` its successor distance (Eq. SD, Myers et al. 2024), a quasimetric.
"""

from __future__ import annotations

import numpy as np
from scipy.stats import spearmanr


def successor_distance_matrix(P: np.ndarray, gamma: float) -> np.ndarray:
    """Successor distances d_SD[x, y] of a Markov chain with transition matrix P (S, S) and discount gamma."""
    P = np.asarray(P, dtype=np.float64)
    if P.ndim != 2 or P.shape[0] != P.shape[1]:
        raise ValueError(f"P must be square, got shape {P.shape}")
    if not np.allclose(P.sum(1), 1.0, atol=1e-8) or (P < 0).any():
        raise ValueError("P must be row-stochastic (non-negative rows summing to 1)")
    if not 0.0 < gamma < 1.0:
        raise ValueError(f"gamma must lie in (0, 1), got {gamma}")
    M = (1 - gamma) * np.linalg.inv(np.eye(len(P)) - gamma * P)  # p_gamma(s_f = y | s_0 = x)
    with np.errstate(divide="ignore"):
        logM = np.log(np.clip(M, 0.0, None))
    return np.diag(logM)[None, :] - logM  # d(x, y) = log M[y, y] - log M[x, y]  (Eq. SD)


def triangle_violations(D: np.ndarray, tol: float = 1e-9) -> int:
    """Number of (x, y, z) with D[x, z] > D[x, y] + D[y, z] + tol."""
    D = np.asarray(D, dtype=np.float64)
    return int((D[:, None, :] > D[:, :, None] + D[None, :, :] + tol).sum())


def spearman(a: np.ndarray, b: np.ndarray) -> float:
    """Spearman rank correlation; 0.0 when either side is constant (rho undefined)."""
    a, b = np.ravel(a), np.ravel(b)
    if a.size < 2 or np.ptp(a) == 0 or np.ptp(b) == 0:
        return 0.0
    rho = spearmanr(a, b).statistic
    return 0.0 if not np.isfinite(rho) else float(rho)


def pairwise_spearman(d_learned: np.ndarray, d_bfs: np.ndarray, max_bfs: int = 15, min_bfs: int = 1) -> float:
    """Spearman over ordered cell pairs with min_bfs <= BFS <= max_bfs (the range random walks connect)."""
    mask = (d_bfs >= min_bfs) & (d_bfs <= max_bfs)
    return spearman(np.asarray(d_learned)[mask], np.asarray(d_bfs)[mask])


def goal_spearman(d_to_goal: np.ndarray, bfs_to_goal: np.ndarray, max_bfs: int | None = 20) -> float:
    """Spearman of d(s, goal) vs BFS(s, goal) over cells 1..max_bfs steps from the goal (all others if None)."""
    d_to_goal, bfs_to_goal = np.asarray(d_to_goal), np.asarray(bfs_to_goal)
    mask = bfs_to_goal >= 1 if max_bfs is None else (bfs_to_goal >= 1) & (bfs_to_goal <= max_bfs)
    return spearman(d_to_goal[mask], bfs_to_goal[mask])
