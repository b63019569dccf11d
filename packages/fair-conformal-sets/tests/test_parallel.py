"""Seeds and validity repetitions in worker processes give exactly the values of the sequential run."""

from __future__ import annotations

from dataclasses import replace

import pytest

from iclr25.fair_conformal_sets import experiments
from iclr25.fair_conformal_sets.config import PRESETS, Config

TINY = replace(
    PRESETS["quick"], seeds=3, n_cal=200, n_test=300, validity_reps=5, validity_n_cal=40, validity_n_test=60,
    mc_trials=100, participants=2, trials=3, n_boot=10, digits=False, hpo_trials=0,
)  # fmt: skip


def test_two_workers_give_the_sequential_results():
    one = experiments.measure(TINY)
    two = experiments.measure(replace(TINY, workers=2))
    one.pop("timing"), two.pop("timing")
    assert two == one
    # every repetition and seed counts: a shorter loop would change the values
    assert one["ess_validity"]["reps"] == 5 and len(one["synthetic"]["lac"]["marginal"]["Delta_per_seed"]) == 3


def test_validity_repetitions_do_not_share_a_generator():
    """Repetition r is the same number whichever repetitions run before it (in any process)."""
    full = experiments.ess_validity(TINY, 0)
    first = experiments.ess_validity(replace(TINY, validity_reps=1), 0)
    assert full["mean_coverage"] != first["mean_coverage"]  # the repetitions differ ...
    from iclr25.fair_conformal_sets.validity import ess_coverage

    kw = {"n_cal": 40, "n_test": 60, "K": TINY.K, "strengths": TINY.strengths, "alpha": TINY.alpha}
    kw |= {"split": TINY.ess_split, "grid_size": TINY.ess_grid, "variant": TINY.ess_variant}
    assert ess_coverage(0, base_seed=0, **kw) == first["mean_coverage"]  # ... and each is its own draw


@pytest.mark.parametrize("bad", [0, -1, 1025, 1.5, True])
def test_workers_bounds(bad):
    with pytest.raises(ValueError, match="workers"):
        Config(workers=bad)
