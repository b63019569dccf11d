"""Non-conformity scores for classification sets (lower = more conforming).

Paper: Cresswell et al., "Conformal Prediction Sets Can Cause Disparate Impact", ICLR 2025 (arXiv 2410.01888);
scores as in the official code (`raps.py`, `saps.py`, crepes `hinge`). Every function returns the score of
*every* label, shape (n, K); the calibration score of an item is its true label's column (`true_label`).

Randomisation: one U ~ Unif(0, 1) per (item, label), injectable through `u` (shape (n, K), or (n,) for one U
per item). We use the form  sum_{j<r} p_(j) + U p_(r)  at calibration and test time; the official code uses U at
calibration and (1 - U) at test time, which has the same distribution. `randomized=False` sets U = 1 (as TorchCP
does), so APS becomes the inclusive cumulative sum.
"""

from __future__ import annotations

import numpy as np

SCORES = ("lac", "aps", "raps", "saps")


def softmax(logits: np.ndarray, temperature: float = 1.0) -> np.ndarray:
    """Temperature-scaled softmax p = softmax(z / T) over the last axis (spec §3.1)."""
    if not temperature > 0:
        raise ValueError(f"temperature must be > 0, got {temperature}")
    z = np.asarray(logits, dtype=np.float64) / temperature
    z = z - z.max(axis=-1, keepdims=True)
    e = np.exp(z)
    return e / e.sum(axis=-1, keepdims=True)


def ranks(probs: np.ndarray) -> np.ndarray:
    """Rank of each label, 0 for the most likely (ties broken by label index)."""
    order = np.argsort(-probs, axis=1, kind="stable")  # (n, K)
    r = np.empty_like(order)
    np.put_along_axis(r, order, np.broadcast_to(np.arange(probs.shape[1]), order.shape), axis=1)
    return r


def _check_probs(probs: np.ndarray) -> np.ndarray:
    p = np.asarray(probs, dtype=np.float64)
    if p.ndim != 2 or p.shape[1] < 2:
        raise ValueError(f"probabilities must have shape (n, K) with K >= 2, got {p.shape}")
    return p


def _uniforms(shape: tuple[int, int], u: np.ndarray | None, rng: np.random.Generator | None, randomized: bool):
    if not randomized:
        return np.ones(shape)
    if u is None:
        rng = np.random.default_rng() if rng is None else rng
        return rng.random(shape)
    u = np.asarray(u, dtype=np.float64)
    if u.shape == shape[:1]:
        u = u[:, None]
    if u.shape not in (shape, (shape[0], 1)):
        raise ValueError(f"u must have shape {shape} or ({shape[0]},), got {u.shape}")
    return np.broadcast_to(u, shape)


def _mass_before(probs: np.ndarray, r: np.ndarray) -> np.ndarray:
    """sum_{j < r(y)} p_(j) for every label y (exclusive cumulative sum in sorted order)."""
    order = np.argsort(r, axis=1)  # label at each rank
    ordered = np.take_along_axis(probs, order, axis=1)  # (n, K) descending
    before = np.concatenate([np.zeros((len(probs), 1)), np.cumsum(ordered, axis=1)[:, :-1]], axis=1)
    return np.take_along_axis(before, r, axis=1)  # back to label order


def lac(probs: np.ndarray) -> np.ndarray:
    """LAC / crepes `hinge`: S(x, y) = 1 - p_y."""
    return 1.0 - _check_probs(probs)


def aps(
    probs: np.ndarray,
    *,
    randomized: bool = True,
    u: np.ndarray | None = None,
    rng: np.random.Generator | None = None,
) -> np.ndarray:
    """APS: S(x, y) = sum_{j<r(y)} p_(j) + U p_(r(y)); `randomized=False` uses U = 1 (spec §3.2)."""
    p = _check_probs(probs)
    r = ranks(p)
    return _mass_before(p, r) + _uniforms(p.shape, u, rng, randomized) * p


def raps(
    probs: np.ndarray,
    *,
    k_reg: int = 3,
    lam: float = 0.5,
    randomized: bool = True,
    u: np.ndarray | None = None,
    rng: np.random.Generator | None = None,
) -> np.ndarray:
    """RAPS (official `raps.py`): APS + lam * max(r + 1 - k_reg, 0); FACET defaults k_reg = 3, lam = 0.5."""
    if lam < 0 or k_reg < 0:
        raise ValueError(f"RAPS needs lam >= 0 and k_reg >= 0, got lam={lam}, k_reg={k_reg}")
    p = _check_probs(probs)
    r = ranks(p)
    reg = lam * np.maximum(r + 1 - k_reg, 0)
    return _mass_before(p, r) + _uniforms(p.shape, u, rng, randomized) * p + reg


def saps(
    probs: np.ndarray,
    *,
    lam: float = 0.5,
    randomized: bool = True,
    u: np.ndarray | None = None,
    rng: np.random.Generator | None = None,
) -> np.ndarray:
    """SAPS (official `saps.py`): rank 0 -> U p_(0); rank r >= 1 -> p_(0) + lam (r - U)."""
    if lam < 0:
        raise ValueError(f"SAPS needs lam >= 0, got {lam}")
    p = _check_probs(probs)
    r = ranks(p)
    uu = _uniforms(p.shape, u, rng, randomized)
    p_max = p.max(axis=1, keepdims=True)
    return np.where(r == 0, uu * p_max, p_max + lam * (r - uu))


def score_matrix(
    probs: np.ndarray,
    score: str,
    *,
    k_reg: int = 3,
    lam: float = 0.5,
    randomized: bool = True,
    u: np.ndarray | None = None,
    rng: np.random.Generator | None = None,
) -> np.ndarray:
    """Dispatch by name: `score` in SCORES; returns S of shape (n, K)."""
    if score == "lac":
        return lac(probs)
    if score == "aps":
        return aps(probs, randomized=randomized, u=u, rng=rng)
    if score == "raps":
        return raps(probs, k_reg=k_reg, lam=lam, randomized=randomized, u=u, rng=rng)
    if score == "saps":
        return saps(probs, lam=lam, randomized=randomized, u=u, rng=rng)
    raise ValueError(f"unknown score {score!r}: score must be one of {', '.join(SCORES)}")


def true_label(scores: np.ndarray, labels: np.ndarray) -> np.ndarray:
    """The calibration score S(x_i, y_i) of each item: the true label's column."""
    labels = np.asarray(labels)
    return scores[np.arange(len(scores)), labels]
