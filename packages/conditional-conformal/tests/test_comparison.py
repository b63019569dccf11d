"""Every method on one split (shared Π draws), its metrics, and the pieces it is made of."""

from __future__ import annotations

import numpy as np
import pytest

from iclr25.conditional_conformal.baselines import shared_quantile_levels
from iclr25.conditional_conformal.comparison import evaluate_methods, oracle_validity
from iclr25.conditional_conformal.cp2 import CP2PCP, cp2_pcp_pair, draw
from iclr25.conditional_conformal.data import bimodal_hetero, bimodal_hetero_law, split_indices
from iclr25.conditional_conformal.sets import Box, LevelSet, UnionOfBalls, head


def test_evaluate_methods_with_the_oracle_density():
    rng = np.random.default_rng(0)
    split = (*bimodal_hetero(400, rng), *bimodal_hetero(600, rng))
    rows = evaluate_methods(bimodal_hetero_law(), split, 0.1, 20, 20, rng, length_points=50, grid=(-4.0, 8.0, 0.05))
    assert set(rows) == {"cp2_l", "cp2_d", "pcp", "hd_pcp", "pi", "cp", "cp2_hpd"}
    for name, row in rows.items():
        assert 0.75 < row["coverage"] <= 1 and row["hits"].shape == (600,) and len(row["bins"]) == 8
        assert row["length"] > 0 and (("qhat" in row) == (name != "pi"))
    assert rows["cp2_l"]["coverage"] == pytest.approx(0.9, abs=0.05)


def test_evaluate_methods_without_bins_or_lengths():
    rng = np.random.default_rng(1)
    split = (*bimodal_hetero(100, rng), *bimodal_hetero(100, rng))
    rows = evaluate_methods(bimodal_hetero_law(), split, 0.1, 5, 5, rng, bins=None)
    assert all(set(row) <= {"coverage", "hits", "qhat"} for row in rows.values())


def test_cp2_pcp_pair_is_the_two_adjustments_on_the_same_draws():
    rng = np.random.default_rng(2)
    law = bimodal_hetero_law()
    X, Y = bimodal_hetero(300, rng)
    d = draw(law, X, 10, 10, rng)
    pair = cp2_pcp_pair(law, X, Y, 0.1, 10, 10, d)
    assert list(pair) == ["linear", "difference"]
    for adjust, method in pair.items():
        assert method.qhat_ == CP2PCP(law, 0.1, 10, 10, adjust).calibrate(X, Y, draws=d).qhat_


def test_oracle_validity_gives_both_coverages():
    out = oracle_validity(bimodal_hetero_law(), bimodal_hetero, 200, 300, 0.1, 10, 10, np.random.default_rng(3))
    assert set(out) == {"linear", "difference"} and all(0.7 < v <= 1 for v in out.values())


def test_head_keeps_the_first_sets_of_each_kind():
    c, r = np.arange(12.0).reshape(4, 3, 1), np.ones(4)
    assert np.array_equal(head(UnionOfBalls(c, r), 2).centres, c[:2])
    assert np.array_equal(head(Box(np.zeros((4, 1)), np.ones((4, 1))), 3).hi, np.ones((3, 1)))
    lv = head(LevelSet(bimodal_hetero_law(), np.zeros((4, 1)), np.zeros(4)), 1)
    assert len(lv.x) == 1 and len(lv.log_level) == 1
    with pytest.raises(TypeError):
        head(object(), 1)


def test_shared_quantile_levels_serve_cqr_and_cqr2():
    levels = shared_quantile_levels(0.1)
    assert list(levels) == sorted(set(levels)) and {0.05, 0.5, 0.95} <= set(levels)
    assert len(levels) == 2 * 19 + 1 + 2  # CQR2's (1 ± t)/2 and median, then α/2 and 1 − α/2


def test_split_indices_partition_the_order():
    perm = np.random.default_rng(4).permutation(20)
    cal, test, train = split_indices(perm, 5, 6)
    assert (len(cal), len(test), len(train)) == (5, 6, 9)
    assert np.array_equal(np.concatenate([cal, test, train]), perm)
