"""Trimming and the active-learning loop (spec 9, check 6: the labelled set grows by `acquire`, no duplicates)."""

from __future__ import annotations

import numpy as np
import pytest

from iclr25.influence_selection.data import digits_split
from iclr25.influence_selection.models import LogisticModel
from iclr25.influence_selection.selection import (
    STRATEGIES,
    active_learning_loop,
    curve_auc,
    make_strategy,
    removed_indices,
    trim_dataset,
)


def test_trim_dataset_top_and_bottom() -> None:
    s = np.array([0.5, 3.0, -1.0, 2.0, 0.0])
    np.testing.assert_array_equal(trim_dataset(s, 2, "top"), [0, 2, 4])
    np.testing.assert_array_equal(trim_dataset(s, 2, "bottom"), [0, 1, 3])
    np.testing.assert_array_equal(removed_indices(s, 1, "top"), [1])
    with pytest.raises(ValueError, match="mode"):
        trim_dataset(s, 1, "middle")
    with pytest.raises(ValueError, match="b must"):
        trim_dataset(s, 6)


def test_curve_auc() -> None:
    assert curve_auc(np.array([0.5, 0.7, 0.9])) == pytest.approx((0.6 + 0.8) / 2)


@pytest.mark.parametrize("name", ["fi", "iv", "bald", "entropy", "random", "fi_subsample"])
def test_active_learning_loop_grows_without_duplicates(name: str) -> None:
    sp = digits_split(0, n_init=30, n_pool=120, n_val=100, n_test=200)
    res = active_learning_loop(
        make_strategy(name, X_val=sp.X_val, y_val=sp.y_val, sub=30),
        sp.X_init,
        sp.y_init,
        sp.X_pool,
        sp.y_pool,
        rounds=3,
        acquire=10,
        fit_fn=lambda X, y: LogisticModel(l2=1e-2, n_classes=10, tol=1e-6).fit(X, y),
        eval_fn=lambda m: float(np.mean(m.predict(sp.X_test) == sp.y_test)),
        rng=np.random.default_rng(0),
    )
    assert res.sizes == [30, 40, 50, 60]
    flat = [i for q in res.queried for i in q]
    assert len(flat) == len(set(flat)) == 30
    assert len(res.curve) == 4 and all(0 <= a <= 1 for a in res.curve)


def test_bad_strategy_and_sizes() -> None:
    with pytest.raises(ValueError, match="strategy must be one of"):
        make_strategy("coreset")
    with pytest.raises(ValueError, match="validation set"):
        make_strategy("iv")
    assert "fi" in STRATEGIES
    with pytest.raises(ValueError, match="exceeds the pool"):
        active_learning_loop(
            lambda *a: None,
            np.zeros((2, 1)),
            np.zeros(2),
            np.zeros((3, 1)),
            np.zeros(3),
            2,
            2,
            lambda X, y: None,
            lambda m: 0.0,
        )
