"""Evaluation protocols of HD-Explain (arXiv 2403.15576; official experiments/*.py).

- Hit rate / coverage (`perturbation_explanation` in the official code): draw `size` pool indices with
  replacement (np.random.choice under the run seed), perturb them (uniform noise of half-width
  0.01 Var(selected), clipped to the batch's [min, max]; or a horizontal flip), explain with k = 3.
  Hit rate = fraction of probes whose original index is in their top-k; coverage = |union of top-k| / (k size).
  `probe_sets` draws them per seed; `evaluate_explainers` fits several methods once and measures each probe set.
- Mislabel detection: rank training points by a suspicion score, recall@k of the flipped labels
  (`mislabel_recall_curves`: the self-scores of each debugging method, for one or more trained models).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import torch


def probe_indices(n_pool: int, size: int = 100, seed: int = 0) -> np.ndarray:
    """`size` pool indices drawn with replacement, as np.random.seed(seed); np.random.choice(n_pool, size)."""
    if n_pool < 1 or size < 1:
        raise ValueError(f"need n_pool >= 1 and size >= 1, got {n_pool}, {size}")
    return np.random.RandomState(seed).choice(n_pool, size)


def perturb_noise(X: Any, seed: int = 0, scale: float = 0.01) -> np.ndarray:
    """x + U(-v, v) with v = scale * Var(all entries of X) (unbiased), clipped to [min X, max X] (float32)."""
    Xt = torch.as_tensor(np.asarray(X, dtype=np.float32))
    v = float(torch.var(Xt)) * scale
    gen = torch.Generator().manual_seed(int(seed))
    noise = (torch.rand(Xt.shape, generator=gen) * 2.0 - 1.0) * v
    return torch.clip(Xt + noise, float(Xt.min()), float(Xt.max())).numpy()


def perturb_flip(X: Any) -> np.ndarray:
    """Horizontal flip of images (..., H, W): the paper's second perturbation setting."""
    X = np.asarray(X, dtype=np.float32)
    if X.ndim < 3:
        raise ValueError(f"perturb_flip needs images (n, [C,] H, W), got shape {X.shape}")
    return np.ascontiguousarray(X[..., ::-1])


def hit_rate_coverage(explainer: Any, probe_idx: Any, perturbed: Any, k: int = 3) -> tuple[float, float]:
    """(hit rate, coverage) of `explainer` (fitted on the pool) on perturbed copies of pool points `probe_idx`."""
    probe_idx = np.asarray(probe_idx)
    if len(probe_idx) != len(perturbed):
        raise ValueError(f"{len(probe_idx)} probe indices but {len(perturbed)} perturbed points")
    idx, _ = explainer.explain(perturbed, k=k)
    hit = float((idx == probe_idx[:, None]).any(1).mean())
    coverage = len(np.unique(idx)) / (k * len(probe_idx))
    return hit, float(coverage)


def probe_sets(
    X: Any, size: int, seeds: Sequence[int], perturbation: str = "noise", scale: float = 0.01
) -> list[tuple[np.ndarray, np.ndarray]]:
    """One probe set per seed: `size` pool indices (`probe_indices`) and their perturbed copies (`perturb_noise` at
    `scale` under the same seed, or `perturb_flip`)."""
    if perturbation not in ("noise", "flip"):
        raise ValueError(f"perturbation must be noise or flip, got {perturbation!r}")
    sets = []
    for s in seeds:
        idx = probe_indices(len(X), size, s)
        sets.append((idx, perturb_noise(X[idx], s, scale) if perturbation == "noise" else perturb_flip(X[idx])))
    return sets


def evaluate_explainers(
    model: Any,
    X: Any,
    y: Any,
    n_classes: int,
    methods: dict[str, tuple[str, dict[str, Any]]],
    probes: Sequence[tuple[Any, Any]],
    k: int = 3,
    *,
    temperatures: Sequence[float] = (),
    times: dict[str, dict[str, float]] | None = None,
    progress: Callable[[Any], Any] | None = None,
) -> dict[str, list[list[float]]]:
    """Hit rate / coverage of several explainers: fit each of `methods` (name -> (`make_explainer` name, options))
    on the pool (X, y) once and measure [hit, coverage] on every (probe indices, perturbed points) set of `probes`.

    With `temperatures`, every RBF hd/hd* explainer is measured again at each temperature T (h = T x dim d, the
    paper's bandwidth sweep), named f"{name}_T{T:g}". Returns name -> one [hit, coverage] per probe set. `times`, if
    given, accumulates each method's fit and explain seconds and explained points (the sweep is not timed);
    `progress` wraps the list of methods (a progress bar).
    """
    from iclr25.hd_explain.baselines import make_explainer

    out: dict[str, list[list[float]]] = {}
    items = list(methods.items())
    for name, (method, options) in items if progress is None else progress(items):
        t0 = time.perf_counter()
        ex = make_explainer(method, model, n_classes, **options).fit(X, y)
        t1 = time.perf_counter()
        out[name] = [list(hit_rate_coverage(ex, idx, xp, k)) for idx, xp in probes]
        t2 = time.perf_counter()
        if method in ("hd", "hd*") and options.get("kernel", "rbf") == "rbf":
            for temp in temperatures:
                hot = ex.at_temperature(temp)
                out[f"{name}_T{temp:g}"] = [list(hit_rate_coverage(hot, idx, xp, k)) for idx, xp in probes]
        if times is not None:
            rec = times.setdefault(name, {"fit_s": 0.0, "explain_s": 0.0, "explained": 0})
            rec["fit_s"] += t1 - t0
            rec["explain_s"] += t2 - t1
            rec["explained"] += sum(len(idx) for idx, _ in probes)
    return out


def suspicion_scores(method: str, model: Any, n_classes: int, X: Any, y: Any, **options: Any) -> np.ndarray:
    """Every training point's mislabel suspicion under its given label (larger = more suspicious): the
    `debug_scores` of the `make_explainer` method fitted on (X, y)."""
    from iclr25.hd_explain.baselines import make_explainer

    return make_explainer(method, model, n_classes, **options).fit(X, y).debug_scores().numpy()


def mislabel_recall_curves(
    models: dict[str, Any],
    X: Any,
    y_given: Any,
    flipped: Any,
    n_classes: int,
    methods: dict[str, tuple[str, dict[str, Any]]],
) -> dict[str, dict[str, np.ndarray]]:
    """The mislabel-detection protocol: for each model (name -> classifier) and debugging method (name ->
    (`make_explainer` name, options)), rank the pool (X, given labels with the `flipped` ones) by
    `suspicion_scores`: model name -> method name -> recall@k of the flips, k = 1..2 x #flipped."""
    curves: dict[str, dict[str, np.ndarray]] = {}
    for variant, net in models.items():
        curves[variant] = {}
        for name, (method, options) in methods.items():
            scores = suspicion_scores(method, net, n_classes, X, y_given, **options)
            curves[variant][name] = mislabel_detection(scores, flipped)["recall"]
    return curves


def mislabel_detection(scores: Any, flipped: Any, ks: Sequence[int] | None = None) -> dict[str, np.ndarray]:
    """Rank by `scores` (descending; larger = more suspicious): recall@k, precision@k and nDCG@k of the flips.

    `flipped` is a boolean mask over the training points; `ks` defaults to 1..2 x #flipped.
    """
    s = np.asarray(scores, dtype=np.float64)
    flipped = np.asarray(flipped, dtype=bool)
    if s.shape != flipped.shape or s.ndim != 1:
        raise ValueError(f"scores and flipped must be 1-D of the same length, got {s.shape} and {flipped.shape}")
    n_flip = int(flipped.sum())
    if n_flip == 0:
        raise ValueError("no flipped labels to detect")
    ks = np.arange(1, min(2 * n_flip, len(s)) + 1) if ks is None else np.asarray(list(ks), dtype=int)
    if ks.size == 0 or ks.min() < 1 or ks.max() > len(s):
        raise ValueError(f"every k must lie in 1..{len(s)}")
    order = np.argsort(-s, kind="stable")
    hits = flipped[order].astype(np.float64)
    found = np.cumsum(hits)
    gains = np.cumsum(hits / np.log2(np.arange(2, len(s) + 2)))
    ideal = np.cumsum(1.0 / np.log2(np.arange(2, len(s) + 2)) * (np.arange(len(s)) < n_flip))
    return {
        "k": ks,
        "recall": found[ks - 1] / n_flip,
        "precision": found[ks - 1] / ks,
        "ndcg": gains[ks - 1] / ideal[ks - 1],
    }
