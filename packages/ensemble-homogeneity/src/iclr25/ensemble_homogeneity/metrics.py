"""Losses on ensemble outputs (spec §3.1 of "Agree to Disagree", Wang & Wang, ICLR 2025).

Every function takes probabilities of shape (..., N, C) and labels (N,) and returns one value per leading
index (a member, or a subset), so the same call scores one model (N, C) or a whole pool (M, N, C).
The ensemble of a pool is the mean of its members' *probabilities* (spec §3.1), never of logits or votes.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

NLL_FLOOR = 1e-12  # -log of a probability is evaluated at max(p, 1e-12) so one confident miss stays finite


def true_class_scores(probs: np.ndarray, y: np.ndarray) -> np.ndarray:
    """f̂(x) = f(x)_{y(x)}: the probability of the true class, shape (..., N) (spec §3.1)."""
    probs = np.asarray(probs)
    y = np.asarray(y)
    if probs.shape[-2] != y.shape[0]:
        raise ValueError(f"probs has {probs.shape[-2]} points but y has {y.shape[0]}")
    idx = np.broadcast_to(y[:, None], (*probs.shape[:-1], 1))
    return np.take_along_axis(probs, idx, axis=-1)[..., 0]


def ensemble_probs(probs: np.ndarray) -> np.ndarray:
    """F̄_M(x) = (1/M) Σ_m F_m(x): the mean of member probabilities, (M, N, C) -> (N, C)."""
    return np.asarray(probs).mean(axis=0)


def brier_true(probs: np.ndarray, y: np.ndarray) -> np.ndarray:
    """True-class Brier E_x (1 - f̂(x))², φ_B of spec §3.1, per leading index."""
    return np.mean((1.0 - true_class_scores(probs, y)) ** 2, axis=-1)


def brier_multiclass(probs: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Multiclass Brier E_x Σ_c (p_c(x) - 1[c = y])², per leading index."""
    probs = np.asarray(probs, dtype=np.float64)
    onehot = np.eye(probs.shape[-1])[np.asarray(y)]  # (N, C)
    return np.mean(np.sum((probs - onehot) ** 2, axis=-1), axis=-1)


def nll(probs: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Negative log-likelihood E_x -log f̂(x) (φ_N), per leading index; probabilities floored at 1e-12."""
    return np.mean(-np.log(np.maximum(true_class_scores(probs, y), NLL_FLOOR)), axis=-1)


def error(probs: np.ndarray, y: np.ndarray) -> np.ndarray:
    """0-1 error of argmax predictions, per leading index."""
    return np.mean(np.argmax(probs, axis=-1) != np.asarray(y), axis=-1)


LOSSES: dict[str, Callable[[np.ndarray, np.ndarray], np.ndarray]] = {
    "brier_true": brier_true,
    "brier_multiclass": brier_multiclass,
    "nll": nll,
    "error": error,
}


def get_loss(name: str) -> Callable[[np.ndarray, np.ndarray], np.ndarray]:
    """The loss called `name` (one of LOSSES)."""
    if name not in LOSSES:
        raise ValueError(f"unknown loss {name!r}: loss must be one of {', '.join(LOSSES)}")
    return LOSSES[name]


def check_probs(probs: np.ndarray, y: np.ndarray, atol: float = 1e-4) -> tuple[np.ndarray, np.ndarray]:
    """Validate a pool of probabilities (M, N, C) and labels (N,); returns them as float64 / int64."""
    probs = np.asarray(probs, dtype=np.float64)
    y = np.asarray(y)
    if probs.ndim != 3:
        raise ValueError(f"probs must have shape (members, points, classes), got {probs.shape}")
    if y.ndim != 1 or y.shape[0] != probs.shape[1]:
        raise ValueError(f"labels must have shape ({probs.shape[1]},), got {y.shape}")
    if not np.issubdtype(y.dtype, np.integer):
        raise ValueError(f"labels must be integers, got dtype {y.dtype}")
    if y.size and (y.min() < 0 or y.max() >= probs.shape[2]):
        raise ValueError(f"labels must lie in [0, {probs.shape[2]}), got [{y.min()}, {y.max()}]")
    if not np.all(np.isfinite(probs)) or probs.min() < -atol:
        raise ValueError("probs must be finite and non-negative")
    if not np.allclose(probs.sum(-1), 1.0, atol=atol):
        raise ValueError("probs must sum to 1 over classes (pass logits as `logits` in the .npz instead)")
    return probs, y.astype(np.int64)
