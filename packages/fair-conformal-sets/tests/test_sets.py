"""Top-k and Average-k treatments."""

from __future__ import annotations

import math

import numpy as np
import pytest

from iclr25.fair_conformal_sets import data, sets


def test_top_k(probs):
    C = sets.top_k(probs, 3)
    assert (C.sum(axis=1) == 3).all()
    assert C[np.arange(len(probs)), probs.argmax(axis=1)].all()
    with pytest.raises(ValueError, match="k must be"):
        sets.top_k(probs, 7)


@pytest.mark.parametrize("k", [0.5, 1.0, 1.37, 2.0])
def test_average_k_assigns_exact_count(k):
    rng = np.random.default_rng(0)
    cal = data.synthetic(500, rng).probs()
    test = data.synthetic(300, rng).probs()
    t = sets.average_k_threshold(cal, k)
    assert t == sorted(cal.ravel())[math.floor((1 - k / 10) * (cal.size - 1))]  # numpy "lower"
    C = sets.average_k(cal, test, k, rng)
    assert ((test > t) <= C).all()
    # ties are rare with continuous scores: the count is at least ceil(k n) unless too few labels pass t
    assert C.sum() == (test > t).sum() or C.sum() == math.ceil(k * len(test))


def test_average_k_fills_ties_to_the_target():
    cal = np.full((4, 4), 0.25)
    test = np.full((10, 4), 0.25)
    C = sets.average_k(cal, test, 1.5, np.random.default_rng(0))
    assert C.sum() == 15


def test_search_average_k_reaches_target_coverage():
    rng = np.random.default_rng(1)
    cal, val = data.synthetic(2000, rng), data.synthetic(2000, rng)
    k = sets.search_average_k(cal.probs(), val.probs(), val.labels, 0.1, 1.4, rng=rng)
    C = sets.average_k(cal.probs(), val.probs(), k, rng)
    assert abs(C[np.arange(len(val)), val.labels].mean() - 0.9) < 0.01
