"""Baselines: closed-form last-layer gradients/Hessians == autograd, IF tracks leave-one-out (spec check 7), RPS, LiSSA."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from iclr25.hd_explain import InfluenceExplainer, RepresenterExplainer, SimilarityExplainer, TracInExplainer
from iclr25.hd_explain.baselines import features, last_layer_grads, last_layer_hessian, lissa, make_explainer
from iclr25.hd_explain.models import MLP
from iclr25.hd_explain.reference import last_layer_grads_autograd


@pytest.mark.parametrize("loss", ["ce", "neg_prob"])
def test_grads_match_autograd(rect_model, rect_data, loss):
    X, y = rect_data
    H, _ = features(rect_model, X[:30])
    yt = torch.as_tensor(y[:30])
    head = torch.nn.Linear(10, 4).double()
    head.load_state_dict({k: v.double() for k, v in rect_model.head.state_dict().items()})
    P = torch.softmax(head(H), 1).detach()
    ref = last_layer_grads_autograd(head, H, yt, loss)
    torch.testing.assert_close(last_layer_grads(H, P, yt, loss), ref, atol=1e-10, rtol=1e-8)


@pytest.mark.parametrize("loss", ["ce", "neg_prob"])
def test_hessian_matches_autograd(rect_model, rect_data, loss):
    X, y = rect_data
    H, _ = features(rect_model, X[:40])
    yt = torch.as_tensor(y[:40])
    W0 = torch.cat([rect_model.head.weight, rect_model.head.bias[:, None]], 1).detach().double()
    Ht = torch.cat([H, torch.ones(len(H), 1, dtype=H.dtype)], 1)
    P = torch.softmax(Ht @ W0.T, 1)

    def mean_loss(theta):
        z = Ht @ theta.reshape(W0.shape).T
        picked = (torch.log_softmax(z, 1) if loss == "ce" else torch.softmax(z, 1)).gather(1, yt[:, None])
        return -picked.mean()

    ref = torch.autograd.functional.hessian(mean_loss, W0.reshape(-1))
    torch.testing.assert_close(last_layer_hessian(H, P, yt, loss, chunk=7), ref, atol=1e-10, rtol=1e-8)


def _newton(X, y, lam, theta0, C=3, tol=1e-13, iters=50):
    """Minimise mean CE + lam/2 |[W|b]|^2 of multinomial logistic regression by Newton's method (own closed form)."""
    Xt = torch.cat([X, torch.ones(len(X), 1, dtype=X.dtype)], 1)  # (n, m + 1)
    Y = torch.nn.functional.one_hot(y, C).double()
    theta = theta0.clone()
    eye = torch.eye(theta.numel(), dtype=X.dtype)
    for _ in range(iters):
        p = torch.softmax(Xt @ theta.reshape(C, -1).T, 1)
        g = ((p - Y).T @ Xt / len(X)).reshape(-1) + lam * theta
        if float(g.abs().max()) < tol:
            break
        A = torch.diag_embed(p) - p[:, :, None] * p[:, None, :]
        Hm = torch.einsum("nab,ni,nj->aibj", A, Xt, Xt).reshape(theta.numel(), -1) / len(X) + lam * eye
        theta = theta - torch.linalg.solve(Hm, g)
    return theta


@pytest.mark.parametrize("seed", [0, 1])
def test_influence_tracks_leave_one_out(seed):
    """Spec check 7: Pearson >= 0.95 between (1/n) g_test^T H^-1 g_i and the actual leave-one-out change."""
    g = torch.Generator().manual_seed(seed)
    n, dim, C, lam = 200, 5, 3, 0.01
    means = torch.randn(C, dim, generator=g, dtype=torch.float64)
    y = torch.randint(0, C, (n,), generator=g)
    X = means[y] + torch.randn(n, dim, generator=g, dtype=torch.float64)
    x_test = means[0:1] + torch.randn(1, dim, generator=g, dtype=torch.float64)
    theta = _newton(X, y, lam, torch.zeros(C * (dim + 1), dtype=torch.float64))
    model = MLP(dim, (), C).double()
    with torch.no_grad():
        model.head.weight.copy_(theta.reshape(C, -1)[:, :dim])
        model.head.bias.copy_(theta.reshape(C, -1)[:, dim])
    # the damping equals the L2 term, so (H + 0.01 I) is the Hessian of the regularised objective
    ex = InfluenceExplainer(model, C, damping=lam).fit(X, y)
    predicted = ex.score(x_test)[0].numpy()
    y_test = int(model(x_test).argmax())

    def test_loss(th):
        z = torch.cat([x_test, torch.ones(1, 1, dtype=X.dtype)], 1) @ th.reshape(C, -1).T
        return float(torch.nn.functional.cross_entropy(z, torch.tensor([y_test])))

    base = test_loss(theta)
    actual = np.empty(n)
    for i in range(n):
        keep = torch.arange(n) != i
        actual[i] = test_loss(_newton(X[keep], y[keep], lam, theta)) - base
    assert np.corrcoef(predicted, actual)[0, 1] >= 0.95
    no_hessian = TracInExplainer(model, C).fit(X, y).score(x_test)[0].numpy()
    assert np.corrcoef(no_hessian, actual)[0, 1] < np.corrcoef(predicted, actual)[0, 1]


def test_lissa_fixed_point():
    g = torch.Generator().manual_seed(0)
    A = torch.randn(6, 6, generator=g, dtype=torch.float64)
    Hm = A @ A.T / 6 + 0.1 * torch.eye(6, dtype=torch.float64)
    V = torch.randn(6, 2, generator=g, dtype=torch.float64)
    est = lissa(Hm, V, damp=0.01, scale=25.0, depth=4000) / 25.0  # -> (H + damp scale I)^-1 V
    torch.testing.assert_close(est, torch.linalg.solve(Hm + 0.25 * torch.eye(6, dtype=torch.float64), V))
    ex = InfluenceExplainer(MLP(6, (), 3), 3, solver="lissa")
    assert ex.solver == "lissa"


def test_tracin_and_if_scores(rect_model, rect_data):
    X, y = rect_data
    tr = TracInExplainer(rect_model, 4).fit(X, y)
    Gt = tr.test_grads(X[:5])
    torch.testing.assert_close(tr.score(X[:5]), Gt @ tr.G.T / 500)
    inf = InfluenceExplainer(rect_model, 4).fit(X, y)
    A = inf.hessian + 0.01 * torch.eye(inf.hessian.shape[0], dtype=torch.float64)
    torch.testing.assert_close(inf.score(X[:5]), (inf.G @ torch.linalg.solve(A, Gt.T)).T / 500)
    assert inf.debug_scores().shape == (500,) and torch.all(inf.debug_scores() >= 0)


def test_representer_refit(rect_model, rect_data):
    X, y = rect_data
    rps = RepresenterExplainer(rect_model, 4).fit(X, y)
    assert rps.iterations < 3000  # the official stopping rule was reached
    W = rps.W.clone().requires_grad_(True)
    (grad,) = torch.autograd.grad(rps._objective(W), W)
    W0 = rect_model.head.weight.detach().double().requires_grad_(True)
    (grad0,) = torch.autograd.grad(rps._objective(W0), W0)
    assert float(grad.abs().mean()) < float(grad0.abs().mean()) / 200
    # representer decomposition of the refit (mean BCE over N x C entries + lambda |W|^2):
    # grad = sum_i (sigma_i - f_i) h_i^T / (N C) + 2 lambda W, so alpha^T H / C = W - grad / (2 lambda)
    torch.testing.assert_close(rps.alpha.T @ rps.H / 4, rps.W - grad / (2 * 0.003))
    s = rps.score(X[:3])
    y_hat = rect_model(torch.as_tensor(X[:3])).argmax(1)
    Ht, _ = features(rect_model, X[:3])
    torch.testing.assert_close(s, rps.alpha[:, y_hat].T * (Ht @ rps.H.T))
    torch.testing.assert_close(rps.debug_scores(), -rps.alpha[torch.arange(500), torch.as_tensor(y)])


def test_similarity_finds_itself(rect_model, rect_data):
    X, y = rect_data
    for space in ("input", "representation"):
        idx, _ = SimilarityExplainer(rect_model, 4, space=space).fit(X, y).explain(X[:10], k=1)
        if space == "input":
            assert np.array_equal(idx[:, 0], np.arange(10))
    _, s = SimilarityExplainer(rect_model, 4, metric="cosine").fit(X, y).explain(X[:2], k=1)
    assert np.all(s <= 1 + 1e-9)


def test_registry_and_errors(rect_model):
    for method in ("hd", "hd*", "if", "tracin", "rps", "sim"):
        assert make_explainer(method, rect_model, 4).name == method
    with pytest.raises(ValueError, match="method must be one of"):
        make_explainer("shap", rect_model, 4)
    with pytest.raises(ValueError, match="loss must be one of"):
        TracInExplainer(rect_model, 4, loss="mse")
    with pytest.raises(ValueError, match="space"):
        SimilarityExplainer(rect_model, 4, space="pixel")
    with pytest.raises(NotImplementedError):
        SimilarityExplainer(rect_model, 4).debug_scores()
