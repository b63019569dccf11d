"""FI against its closed forms, its slow reference, finite differences and Theorem 1 (spec 9, checks 1-3, 7)."""

from __future__ import annotations

import numpy as np
import pytest

from iclr25.influence_selection import fi as F
from iclr25.influence_selection import reference as R
from iclr25.influence_selection.data import two_gaussians
from iclr25.influence_selection.models import LogisticModel, MLPModel


@pytest.fixture(scope="module")
def binary():
    s = two_gaussians(3)
    m = LogisticModel(l2=1e-2, tol=1e-12).fit(s.X_train, s.y_train)
    return m, s


@pytest.fixture(scope="module")
def multi():
    rng = np.random.default_rng(1)
    y = rng.integers(0, 3, 60)
    X = rng.normal(size=(60, 4)) + 1.5 * np.eye(4)[y]
    yv = rng.integers(0, 3, 30)
    Xv = rng.normal(size=(30, 4)) + 1.5 * np.eye(4)[yv]
    return LogisticModel(l2=1e-2, tol=1e-12).fit(X, y), X, y, Xv, yv


def test_binary_generic_pinv_equals_closed_form(binary) -> None:
    m, s = binary
    gV = F.LogisticOps(m).grads(s.X_val, s.y_val).mean(0)
    closed = F.fi_binary_closed_form(m, s.X_train, s.y_train, gV)
    for backend in ("closed", "torch"):
        fi = F.fi_util(m, s.X_train, s.y_train, s.X_val, s.y_val, backend=backend)
        assert len(fi) == 150
        np.testing.assert_allclose(fi, closed, rtol=1e-10, atol=1e-10 * closed.max())


def test_fast_equals_reference_binary_and_multinomial(binary, multi) -> None:
    _m, s = binary
    X, y = s.X_train[:40], s.y_train[:40]
    m40 = LogisticModel(l2=1e-2, tol=1e-12).fit(X, y)
    g = F.LogisticOps(m40).grads(s.X_val, s.y_val).mean(0)
    np.testing.assert_allclose(F.fi_util(m40, X, y, s.X_val, s.y_val), R.reference_fi(m40, X, y, g), rtol=1e-8)
    mm, X, y, Xv, yv = multi
    g = F.LogisticOps(mm).grads(Xv, yv).mean(0)
    ref = R.reference_fi(mm, X, y, g)
    for backend in ("closed", "torch"):
        np.testing.assert_allclose(F.fi_util(mm, X, y, Xv, yv, backend=backend), ref, rtol=1e-7, atol=1e-9 * ref.max())


def test_multinomial_closed_form_derivatives_equal_autograd(multi) -> None:
    mm, X, y, _, _ = multi
    ops, tops = F.LogisticOps(mm), F.TorchOps(mm)
    p, d = mm.theta.size, X.shape[1]
    Xs, ys = X[:5], y[:5]
    M_ref = np.stack([R.reference_mixed(mm, Xs[i], ys[i]) for i in range(5)])  # (5, p, d) by jacrev
    M_vjp = ops.mixed_vjp(Xs, ys, np.broadcast_to(np.eye(p), (5, p, p)).copy())  # rows e_k^T M = M[k]
    M_jvp = np.transpose(ops.mixed_jvp(Xs, ys, np.broadcast_to(np.eye(d), (5, d, d)).copy()), (0, 2, 1))
    np.testing.assert_allclose(M_vjp, M_ref, atol=1e-8)
    np.testing.assert_allclose(M_jvp, M_ref, atol=1e-8)
    np.testing.assert_allclose(ops.grads(X, y), tops.grads(X, y), atol=1e-10)
    for a, b in zip(ops.logp_grads(X), tops.logp_grads(X), strict=True):
        np.testing.assert_allclose(a, b, atol=1e-10)
    np.testing.assert_allclose(ops.hessian(X, y), tops.hessian(X, y), atol=1e-10)
    np.testing.assert_allclose(ops.hessian(X, y), R.reference_hessian(mm, X, y), atol=1e-10)


@pytest.mark.parametrize("kind", ["binary", "multinomial"])
def test_jacobian_matches_finite_differences(kind, binary, multi) -> None:
    """J = -(1/n) H^{-1} M equals d theta_hat / d x_i by refitting with x_i moved by +-eps e_k (A.7)."""
    if kind == "binary":
        m, s = binary
        X, y = s.X_train, s.y_train
    else:
        m, X, y, _, _ = multi
    n, i, eps = len(X), 7, 1e-4
    ops = F.LogisticOps(m)
    M = ops.mixed_vjp(X[i : i + 1], y[i : i + 1], np.eye(m.theta.size)[None])[0]  # (p, d)
    J = -np.linalg.solve(ops.hessian(X, y), M) / n
    for k in range(X.shape[1]):
        th = []
        for sign in (1, -1):
            Xp = X.copy()
            Xp[i, k] += sign * eps
            th.append(LogisticModel(l2=m.l2, tol=1e-12, n_classes=m.n_classes).fit(Xp, y, theta0=m.theta).theta)
        fd = (th[0] - th[1]) / (2 * eps)
        assert np.linalg.norm(fd - J[:, k]) / np.linalg.norm(J[:, k]) < 1e-3


def test_fi_nonnegative_and_orthogonal_invariance(binary, multi) -> None:
    m, s = binary
    fi = F.fi_util(m, s.X_train, s.y_train, s.X_val, s.y_val)
    assert np.all(fi >= 0)
    Q = np.linalg.qr(np.random.default_rng(0).normal(size=(2, 2)))[0]
    np.testing.assert_allclose(F.fi_util(m, s.X_train, s.y_train, s.X_val, s.y_val, basis=Q), fi, rtol=1e-8)
    mm, X, y, Xv, yv = multi  # d = 4 > K - 1 = 2: G is singular, the pinv form is invariant under orthogonal Q
    fi = F.fi_util(mm, X, y, Xv, yv)
    Q = np.linalg.qr(np.random.default_rng(1).normal(size=(4, 4)))[0]
    np.testing.assert_allclose(F.fi_util(mm, X, y, Xv, yv, basis=Q), fi, rtol=1e-7, atol=1e-10 * fi.max())


def test_invariance_under_diagonal_scaling_when_g_is_full_rank() -> None:
    """3 classes on 2-D inputs: G has rank K - 1 = d, so FI is invariant under any invertible reparameterisation."""
    rng = np.random.default_rng(2)
    y = rng.integers(0, 3, 90)
    centers = np.array([[0, 0], [2.5, 0], [0, 2.5]])
    X = centers[y] + rng.normal(size=(90, 2))
    m = LogisticModel(l2=1e-2, tol=1e-12).fit(X, y)
    fi = F.fi_util(m, X, y, X[:20], y[:20])
    D = np.diag([3.0, 0.2])
    np.testing.assert_allclose(F.fi_util(m, X, y, X[:20], y[:20], basis=D), fi, rtol=1e-8, atol=1e-12 * fi.max())
    # ... which fails for the singular binary G with a non-orthogonal scaling: the pinv invariance is orthogonal only
    s = two_gaussians(0)
    mb = LogisticModel(l2=1e-2).fit(s.X_train, s.y_train)
    a = F.fi_util(mb, s.X_train, s.y_train, s.X_val, s.y_val)
    b = F.fi_util(mb, s.X_train, s.y_train, s.X_val, s.y_val, basis=D)
    assert not np.allclose(a, b, rtol=1e-3)


def test_fi_active_matrix_equals_pairwise_fi(multi) -> None:
    mm, X, y, Xv, _ = multi
    mat = F.fi_active_matrix(mm, X, y, Xv[:6])
    yhat = mm.predict(Xv[:6])
    pair = np.stack([F.fi_pair(mm, (Xv[u], yhat[u]), X, y) for u in range(6)])
    np.testing.assert_allclose(mat, pair, rtol=1e-8, atol=1e-12 * pair.max())
    sub = F.fi_active_matrix(mm, X, y, Xv[:6], sub=20, rng=np.random.default_rng(0))
    assert sub.shape == (6, 20)
    scores = F.fi_active(mm, X, y, Xv[:6])
    np.testing.assert_allclose(scores, F.trim_mean_10_90(pair))


def test_generic_torch_path_on_an_mlp_equals_reference() -> None:
    s = two_gaussians(1, n_train=30)
    m = MLPModel(hidden=(4,), steps=200, seed=0).fit(s.X_train, s.y_train)
    g = F.TorchOps(m).grads(s.X_val, s.y_val).mean(0)
    ref = R.reference_fi(m, s.X_train, s.y_train, g)
    np.testing.assert_allclose(F.fi_util(m, s.X_train, s.y_train, s.X_val, s.y_val), ref, rtol=1e-6)


def test_trimmed_mean_aggregate() -> None:
    assert F.trim_mean_10_90(np.arange(1, 101)) == pytest.approx(50.5)
    x = np.arange(1.0, 101.0)
    x[0], x[-1] = -1e9, 1e9  # the tails are ignored
    assert F.trim_mean_10_90(x) == pytest.approx(50.5)


def test_pinv_psd_matches_numpy_and_rcond_is_exposed() -> None:
    v = np.array([1.0, 2.0, 0.5])
    G = np.outer(v, v) + 1e-12 * np.outer([0, 1.0, -4], [0, 1.0, -4])
    np.testing.assert_allclose(F.pinv_psd(G, 1e-8), np.linalg.pinv(np.outer(v, v)), rtol=1e-6)
    assert np.abs(F.pinv_psd(G, 1e-20)).max() > 1e6  # with a tiny rcond the 1e-12 direction is inverted


def test_metric_form_ablation_and_bad_values(binary) -> None:
    m, s = binary
    a = F.fi_util(m, s.X_train, s.y_train, s.X_val, s.y_val)
    b = F.fi_util(m, s.X_train, s.y_train, s.X_val, s.y_val, metric_form="drop_n")
    assert not np.allclose(a / a.max(), b / b.max())
    with pytest.raises(ValueError, match="metric_form"):
        F.fi_util(m, s.X_train, s.y_train, s.X_val, s.y_val, metric_form="nope")
    with pytest.raises(ValueError, match="backend"):
        F.make_ops(m, "jax")
    with pytest.raises(ValueError, match="agg"):
        F.fi_active(m, s.X_train, s.y_train, s.X_val, agg="median")
