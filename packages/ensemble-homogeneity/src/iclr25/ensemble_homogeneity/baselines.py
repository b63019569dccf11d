"""Baselines the claims are measured against (spec §4).

- a heterogeneous ensemble (members of different widths and training lengths): breaks distributional
  equivalence, so the ensemble can lose to its best member although Jensen's inequality still holds;
- one wider model with the ensemble's parameter count (capacity instead of ensembling, R8).
The Jensen-gap "explanation" itself is `analysis.jensen_gap`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from iclr25.ensemble_homogeneity.models import mlp_param_count
from iclr25.ensemble_homogeneity.training import TrainSettings, train_homogeneous


def heterogeneous_ensemble(
    data,
    parts: Sequence[tuple[int, int, int | None]],
    seed: int = 0,
    settings: TrainSettings | None = None,
    device: str = "cpu",
    options: Callable[[int], dict[str, Any]] | None = None,
) -> tuple[np.ndarray, list[dict]]:
    """Concatenate MLP members of different recipes: `parts` = [(width, n_members, epochs or None), ...].

    `epochs=None` trains to interpolation (or `settings.max_epochs`); an integer stops after that many epochs.
    Spec §6a: [(256, 1, None), (4, 3, 5)] on digits. `options(i)`: more keyword arguments of `train_homogeneous`
    for part i (workers, fabric, checkpointer, logger).
    """
    settings = settings or TrainSettings()
    probs, infos = [], []
    for i, (width, members, epochs) in enumerate(parts):
        s = settings
        if epochs is not None:
            s = TrainSettings(settings.lr, settings.batch_size, epochs, False, settings.lr_schedule)
        more = options(i) if options is not None else {}
        p, info = train_homogeneous(
            data, "mlp", width, members, seed=seed + 100 * (i + 1), settings=s, device=device, **more
        )
        probs.append(p)
        infos.append({"width": width, "members": members, "epochs": info["epochs"], "train_acc": info["train_acc"]})
    return np.concatenate(probs), infos


def matched_width(in_dim: int, width: int, n_classes: int, n_members: int, depth: int = 2) -> int:
    """Width of one MLP whose parameter count is closest to that of `n_members` MLPs of width `width`."""
    target = n_members * mlp_param_count(in_dim, width, n_classes, depth)
    k = width
    while mlp_param_count(in_dim, k + 1, n_classes, depth) <= target:
        k += 1
    above = mlp_param_count(in_dim, k + 1, n_classes, depth)
    return k + 1 if above - target < target - mlp_param_count(in_dim, k, n_classes, depth) else k


def wider_single_model(
    data,
    width: int,
    n_members: int,
    seed: int = 0,
    settings: TrainSettings | None = None,
    device: str = "cpu",
    **options: Any,
) -> tuple[np.ndarray, dict]:
    """Train one MLP with the parameter count of an `n_members` x width-`width` ensemble; probs (1, N, C).
    `options`: more keyword arguments of `train_homogeneous` (fabric, checkpointer, logger)."""
    k = matched_width(data.input_shape[0], width, data.n_classes, n_members)
    probs, info = train_homogeneous(data, "mlp", k, 1, seed=seed + 7, settings=settings, device=device, **options)
    info["width"] = k
    return probs, info
