"""Calibration rules: exact rank (spec §9.2), marginal / Mondrian / smoothed / ESS against loop forms."""

from __future__ import annotations

import math

import numpy as np
import pytest

from iclr25.fair_conformal_sets import calibrate, data, metrics, scores
from iclr25.fair_conformal_sets.reference import ess_ref, mondrian_ref, quantile_ref, smoothed_pvalue_ref


@pytest.mark.parametrize("n", [1, 5, 9, 19, 100, 4000])
@pytest.mark.parametrize("alpha", [0.05, 0.1, 0.2, 0.5])
def test_exact_rank_rule(n, alpha):
    s = np.random.default_rng(n).random(n)
    rank = math.ceil((1 - alpha) * (n + 1) - 1e-9)
    expected = math.inf if rank > n else np.sort(s)[rank - 1]
    assert calibrate.conformal_quantile(s, alpha) == expected == quantile_ref(s, alpha)


def test_rank_rule_edge_cases():
    assert calibrate.conformal_rank(9, 0.1) == 9  # (0.9)(10) = 9 exactly, not 10
    assert calibrate.conformal_quantile(np.arange(9.0), 0.1) == 8.0
    assert calibrate.conformal_quantile(np.arange(8.0), 0.1) == math.inf  # rank 9 > n = 8
    assert calibrate.marginal(np.arange(8.0), np.full((2, 3), 1e9), 0.1).all()  # q = inf: every label
    with pytest.raises(ValueError, match="alpha"):
        calibrate.conformal_quantile(np.arange(5.0), 1.0)


def test_mondrian_matches_reference():
    rng = np.random.default_rng(3)
    cal, g_cal = rng.random(60), rng.integers(3, size=60)
    S, g = rng.random((25, 4)), rng.integers(3, size=25)
    assert (calibrate.mondrian(cal, g_cal, S, g, 0.1) == mondrian_ref(cal, g_cal, S, g, 0.1)).all()
    with pytest.raises(ValueError, match="no calibration points"):
        calibrate.mondrian(cal, g_cal, S, np.full(25, 7), 0.1)


def test_smoothed_pvalues_match_counting():
    rng = np.random.default_rng(4)
    cal = rng.integers(0, 6, size=30).astype(float)  # many ties
    S = rng.integers(0, 7, size=(10, 3)).astype(float)
    u = rng.random(10)
    fast = calibrate.smoothed_pvalues(cal, S, u)
    for i in range(10):
        for y in range(3):
            assert abs(fast[i, y] - smoothed_pvalue_ref(cal, S[i, y], u[i])) < 1e-12
    C = calibrate.marginal(cal, S, 0.2, smoothing=True, rng=np.random.default_rng(0))
    assert C.shape == S.shape and C.dtype == bool


def test_smoothed_marginal_coverage_is_exact():
    """Smoothed p-values give coverage 1 - alpha exactly in expectation (no +1/(n+1) slack)."""
    rng = np.random.default_rng(5)
    cover = []
    for _ in range(300):
        s = rng.random(51)
        C = calibrate.marginal(s[:50], s[50:, None], 0.1, smoothing=True, rng=rng)
        cover.append(C[0, 0])
    assert abs(np.mean(cover) - 0.9) < 0.05


@pytest.mark.parametrize("score", ["lac", "aps"])
def test_ess_matches_reference(score):
    rng = np.random.default_rng(6)
    d = data.synthetic(140, rng, K=4)
    S = scores.score_matrix(d.probs(), score, rng=rng)
    c, t = slice(0, 100), slice(100, None)
    in_a = calibrate.stratified_split(d.groups[c], 0.5, np.random.default_rng(11))
    fast = calibrate.equalized_set_size(
        S[c], d.labels[c], d.groups[c], S[t], d.groups[t], 0.1, grid_size=50, rng=np.random.default_rng(11)
    )
    slow = ess_ref(S[c], d.labels[c], d.groups[c], in_a, S[t], d.groups[t], 0.1, grid_size=50)
    assert (fast == slow).all()


def test_ess_equalises_size_and_keeps_coverage():
    cal, test, rng = data.synthetic_split(0, 4000, 20_000)
    Sc, St = scores.lac(cal.probs()), scores.lac(test.probs())
    s = scores.true_label(Sc, cal.labels)
    ess = metrics.group_report(
        calibrate.equalized_set_size(Sc, cal.labels, cal.groups, St, test.groups, 0.1, rng=rng),
        test.labels,
        test.groups,
    )
    marg = metrics.group_report(calibrate.marginal(s, St, 0.1), test.labels, test.groups)
    assert ess["gaps"]["size"] < 0.1 < marg["gaps"]["size"]
    assert ess["overall"]["coverage"] > 0.885


def test_ess_variants():
    cal, test, rng = data.synthetic_split(1, 3000, 6000)
    Sc, St = scores.lac(cal.probs()), scores.lac(test.probs())
    single = calibrate.fit_equalized_set_size(Sc, cal.labels, cal.groups, 0.1, variant="single_split", rng=rng)
    C = single.predict(St, test.groups)
    assert abs(metrics.covered(C, test.labels).mean() - 0.9) < 0.02
    fit = calibrate.fit_equalized_set_size(Sc, cal.labels, cal.groups, 0.1, variant="singleton", rng=rng)
    C = fit.predict(St, test.groups)
    multi = [(C[test.groups == g].sum(axis=1) >= 2).mean() for g in (0, 1)]
    assert abs(multi[0] - multi[1]) < 0.05 and fit.k_hat <= 1
    with pytest.raises(ValueError, match="variant must be one of"):
        calibrate.fit_equalized_set_size(Sc, cal.labels, cal.groups, 0.1, variant="best")


def test_ess_infinite_khat_gives_full_sets():
    rng = np.random.default_rng(2)
    S = rng.random((6, 3))
    fit = calibrate.fit_equalized_set_size(S, np.zeros(6, int), np.zeros(6, int), 0.1, rng=rng)  # n_B = 3
    assert math.isinf(fit.k_hat)
    assert fit.predict(rng.random((4, 3)), np.zeros(4, int)).all()


def test_fill_empty_with_top1():
    sets = np.array([[False, False, False], [True, False, True]])
    S = np.array([[0.5, 0.1, 0.9], [0.1, 0.2, 0.3]])
    filled = calibrate.fill_empty_with_top1(sets, S)
    assert filled.tolist() == [[False, True, False], [True, False, True]]
    assert not sets[0].any()  # input untouched


def test_conformal_sets_are_the_single_mode_sets():
    cal, test, _ = data.synthetic_split(3, 600, 300)
    Sc, St = scores.lac(cal.probs()), scores.lac(test.probs())
    s_true = scores.true_label(Sc, cal.labels)
    got = calibrate.conformal_sets(Sc, cal.labels, cal.groups, St, test.groups, 0.1, rng=np.random.default_rng(1))
    assert list(got) == list(calibrate.MODES)
    assert (got["marginal"] == calibrate.marginal(s_true, St, 0.1)).all()
    assert (got["mondrian"] == calibrate.mondrian(s_true, cal.groups, St, test.groups, 0.1)).all()
    ess = calibrate.equalized_set_size(Sc, cal.labels, cal.groups, St, test.groups, 0.1, rng=np.random.default_rng(1))
    assert (got["ess"] == ess).all()
    only = calibrate.conformal_sets(Sc, cal.labels, cal.groups, St, test.groups, 0.1, modes=("mondrian",))
    assert list(only) == ["mondrian"] and (only["mondrian"] == got["mondrian"]).all()
    with pytest.raises(ValueError, match="unknown modes"):
        calibrate.conformal_sets(Sc, cal.labels, cal.groups, St, test.groups, 0.1, modes=("equalized",))
