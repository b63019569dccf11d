"""IV against the InfDataSel definition (spec 9, check 4), BALD / entropy, and the Sec. 5 approximations."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import spearmanr

from iclr25.influence_selection import baselines as B
from iclr25.influence_selection import fi as F
from iclr25.influence_selection.approx import TruncatedMOps, kfac_hessian, subsample_rank_forest
from iclr25.influence_selection.data import two_gaussians, two_moons
from iclr25.influence_selection.models import LogisticModel, MLPModel
from iclr25.influence_selection.reference import reference_hessian, reference_iv
from iclr25.influence_selection.threads import SCORE_DIGITS, quantize


def test_iv_equals_infdatasel_definition_without_intercept() -> None:
    from sklearn.linear_model import LogisticRegression

    s = two_gaussians(4)
    X, Xv = s.X_train - 4.75, s.X_val - 4.75  # centred: no intercept needed (InfDataSel's default)
    lam, n = 1e-2, len(X)
    m = LogisticModel(l2=lam, fit_intercept=False, tol=1e-12).fit(X, s.y_train)
    sk = LogisticRegression(C=1 / (n * lam), fit_intercept=False, tol=1e-12, max_iter=10000).fit(X, s.y_train)
    np.testing.assert_allclose(m.theta, sk.coef_.ravel(), rtol=1e-5)  # InfDataSel's lambda is n * ours
    iv = B.iv_scores(m, X, s.y_train, Xv, s.y_val)
    ref = reference_iv(m, X, s.y_train, Xv, s.y_val, l2_sum=n * lam)
    np.testing.assert_allclose(iv, ref, rtol=1e-8, atol=1e-12)
    assert spearmanr(iv, ref).statistic == pytest.approx(1.0)


def test_bald_and_entropy() -> None:
    s = two_gaussians(2)
    m = LogisticModel(l2=1e-2).fit(s.X_train, s.y_train)
    ent = B.entropy_scores(m, s.X_test)
    P = m.predict_proba(s.X_test)
    np.testing.assert_allclose(ent, -(P * np.log(P)).sum(1), rtol=1e-9)
    bald = B.bald_laplace_scores(m, s.X_train, s.y_train, s.X_test, samples=50)
    assert bald.shape == (600,) and np.all(bald >= -1e-12)
    assert np.all(bald <= ent + 1e-9)  # mutual information <= predictive entropy
    far = np.array([[4.75, 4.75], [-5.0, -5.0]])  # on the boundary vs far away: more disagreement on the boundary
    b = B.bald_laplace_scores(m, s.X_train, s.y_train, far, samples=200)
    assert b[0] > b[1]
    mc = B.bald_mc_dropout_scores(lambda X: np.tile([0.5, 0.5], (len(X), 1)), s.X_test[:5], passes=3)
    np.testing.assert_allclose(mc, 0.0, atol=1e-12)  # identical passes carry no parameter information


def test_iv_active_uses_a_tree_on_the_labelled_set() -> None:
    s = two_gaussians(5)
    m = LogisticModel(l2=1e-2).fit(s.X_train, s.y_train)
    pred = B.iv_active_scores(m, s.X_train, s.y_train, s.X_train, s.X_val, s.y_val)
    iv = B.iv_scores(m, s.X_train, s.y_train, s.X_val, s.y_val)
    np.testing.assert_array_equal(pred, quantize(iv))  # a full tree interpolates the (rounded) IV
    np.testing.assert_allclose(pred, iv, rtol=0, atol=10.0 ** (1 - SCORE_DIGITS) * np.abs(iv).max())


def test_kfac_is_exact_for_one_layer_and_one_point() -> None:
    m = MLPModel(hidden=(), n_classes=3, weight_decay=1e-3, steps=50).fit(np.array([[0.3, -1.0]]), np.array([1]))
    x, y = np.array([[0.3, -1.0]]), np.array([1])
    np.testing.assert_allclose(kfac_hessian(m, x, y), reference_hessian(m, x, y), atol=1e-10)


def test_truncated_m_is_exact_at_full_rank_and_close_at_rank_one() -> None:
    s = two_moons(0, n_train=60, n_val=30, n_test=10)
    m = MLPModel(steps=300).fit(s.X_train, s.y_train)
    exact = F.fi_util(m, s.X_train, s.y_train, s.X_val, s.y_val)
    full = F.fi_util(m, s.X_train, s.y_train, s.X_val, s.y_val, ops=TruncatedMOps(F.make_ops(m), rank=2))
    np.testing.assert_allclose(full, exact, rtol=1e-6, atol=1e-10 * exact.max())
    H = kfac_hessian(m, s.X_train, s.y_train)
    approx = F.fi_util(m, s.X_train, s.y_train, s.X_val, s.y_val, hessian=H, ops=TruncatedMOps(F.make_ops(m), 1))
    assert approx.shape == exact.shape and np.all(approx >= 0)
    same = F.fi_util(m, s.X_train, s.y_train, s.X_val, s.y_val, hessian="kfac", svd_rank=1)
    np.testing.assert_allclose(same, approx, rtol=1e-10)
    with pytest.raises(ValueError, match="rank"):
        TruncatedMOps(F.make_ops(m), 0)
    with pytest.raises(ValueError, match="hessian must be"):
        F.fi_util(m, s.X_train, s.y_train, s.X_val, s.y_val, hessian="diag")


def test_subsample_rank_forest_recovers_a_smooth_ranking() -> None:
    rng = np.random.default_rng(0)
    X = rng.uniform(-1, 1, (500, 2))
    score = X[:, 0] + 0.5 * X[:, 1]
    idx = rng.choice(500, 100, replace=False)
    pred = subsample_rank_forest(score[idx], X[idx], X)
    assert pred.shape == (500,)
    assert spearmanr(pred, score).statistic > 0.9
