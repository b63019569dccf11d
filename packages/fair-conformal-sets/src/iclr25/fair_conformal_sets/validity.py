"""Exact validity of Equalized Set Size at small n (spec §9.3): one repetition of the check, on its own data.

Each repetition draws its data and its randomisation from `default_rng([base_seed, 17, rep])`, so repetitions are
independent of each other and of the order (or the processes) they run in.
"""

from __future__ import annotations

import numpy as np

from iclr25.fair_conformal_sets import calibrate, data, metrics, scores


def ess_coverage(
    rep: int,
    *,
    base_seed: int,
    n_cal: int,
    n_test: int,
    K: int,
    strengths: tuple[float, ...],
    alpha: float,
    split: float,
    grid_size: int,
    variant: str,
) -> float:
    """Test coverage of LAC sets calibrated with ESS (`variant`) on n_cal synthetic points, on n_test more."""
    rng = np.random.default_rng([base_seed, 17, rep])
    d = data.synthetic(n_cal + n_test, rng, K=K, strengths=strengths)
    S = scores.lac(d.probs())
    c, t = slice(0, n_cal), slice(n_cal, None)
    C = calibrate.equalized_set_size(
        S[c], d.labels[c], d.groups[c], S[t], d.groups[t], alpha,
        split=split, grid_size=grid_size, variant=variant, rng=rng,
    )  # fmt: skip
    return float(metrics.covered(C, d.labels[t]).mean())
