"""HD-Explain: batched scores == one-at-a-time reference, label conventions (spec checks 4 and 8), API errors."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from iclr25.hd_explain import HDExplainer, stein_kernel_rbf
from iclr25.hd_explain.explainer import augmented_scores, predict_labels
from iclr25.hd_explain.models import MLP
from iclr25.hd_explain.reference import scores_loop


def test_batched_scores_match_loop(rect_model, rect_data):
    X, y = rect_data
    D, S = augmented_scores(rect_model, X[:37], y[:37], 4, batch_size=8)
    Dr, Sr = scores_loop(
        lambda x: torch.log_softmax(rect_model(x), 1), torch.as_tensor(X[:37]), torch.as_tensor(y[:37]), 4
    )
    torch.testing.assert_close(D, Dr.double())
    torch.testing.assert_close(S, Sr.double(), atol=1e-6, rtol=1e-5)
    assert D.shape == (37, 6)


def test_representation_scores_match_loop(rect_model, rect_data):
    X, y = rect_data
    D, S = augmented_scores(rect_model, X[:20], y[:20], 4, representation=True)
    with torch.no_grad():
        H = rect_model.representation(torch.as_tensor(X[:20]))
    Dr, Sr = scores_loop(lambda h: torch.log_softmax(rect_model.head(h), 1), H, torch.as_tensor(y[:20]), 4)
    torch.testing.assert_close(D, Dr.double())
    torch.testing.assert_close(S, Sr.double(), atol=1e-6, rtol=1e-5)
    assert D.shape == (20, 10 + 4)


def test_label_block_is_softmax_not_log(rect_model, rect_data):
    X, y = rect_data
    _, S = augmented_scores(rect_model, X[:10], y[:10], 4)
    p = rect_model.predict_proba(torch.as_tensor(X[:10])).double()
    torch.testing.assert_close(S[:, 2:], p, atol=1e-6, rtol=1e-6)
    torch.testing.assert_close(S[:, 2:].sum(1), torch.ones(10, dtype=torch.float64))


def test_explain_sorted_topk_and_bandwidth(rect_model, rect_data):
    X, y = rect_data
    ex = HDExplainer(rect_model, 4, bandwidth="dim_x").fit(X, y)
    assert ex.h == 2.0 and HDExplainer(rect_model, 4).fit(X, y).h == 6.0
    idx, scores = ex.explain(X[:7], k=5)
    assert idx.shape == (7, 5) and scores.shape == (7, 500)
    top = np.take_along_axis(scores, idx, 1)
    assert np.all(np.diff(top, axis=1) <= 0)
    assert np.allclose(top[:, 0], scores.max(1))
    assert HDExplainer(rect_model, 4, temperature=0.5, bandwidth="dim_d").fit(X, y).h == 3.0


def test_test_points_use_predicted_label(rect_data):
    """Spec check 4: a model whose argmax differs from the true label; the explainer must use the argmax."""
    X, y = rect_data
    torch.manual_seed(3)
    model = MLP(2, (10, 10), 4)  # untrained: its predictions disagree with most labels
    with torch.no_grad():
        model.head.bias.copy_(torch.tensor([0.0, 3.0, 0.0, 0.0]))
    Xt, yt = X[:50], y[:50]
    y_hat = predict_labels(model, Xt).numpy()
    assert (y_hat != yt).mean() > 0.5
    ex = HDExplainer(model, 4, bandwidth="dim_x").fit(X, y)
    _, scores = ex.explain(Xt, k=3)
    D, S = augmented_scores(model, X, y, 4)
    Dp, Sp = augmented_scores(model, Xt, y_hat, 4)
    Dt, St = augmented_scores(model, Xt, yt, 4)
    np.testing.assert_allclose(scores, stein_kernel_rbf(Dp, D, Sp, S, 2.0).numpy(), rtol=1e-10, atol=1e-12)
    wrong = y_hat != yt
    assert not np.allclose(scores[wrong], stein_kernel_rbf(Dt, D, St, S, 2.0).numpy()[wrong])


def test_training_points_use_given_label(rect_model, rect_data):
    """Spec check 8: self-scores change when only the given label changes (training points use the given label)."""
    X, y = rect_data
    a = HDExplainer(rect_model, 4).fit(X, y).debug_scores()
    y2 = y.copy()
    y2[:5] = (y2[:5] + 1) % 4
    b = HDExplainer(rect_model, 4).fit(X, y2).debug_scores()
    assert torch.all(a[:5] != b[:5]) and torch.equal(a[5:], b[5:])
    ex = HDExplainer(rect_model, 4).fit(X, y)
    torch.testing.assert_close(ex.debug_scores(), (ex.S * ex.S).sum(1) + 6 / 6.0)


@pytest.mark.parametrize("kernel", ["rbf", "imq", "linear"])
@pytest.mark.parametrize("representation", [False, True], ids=["hd", "hd*"])
def test_every_variant_runs(rect_model, rect_data, kernel, representation):
    X, y = rect_data
    ex = HDExplainer(rect_model, 4, kernel=kernel, representation=representation).fit(X[:100], y[:100])
    idx, scores = ex.explain(X[:4], k=3)
    assert idx.shape == (4, 3) and np.isfinite(scores).all()
    assert ex.debug_scores().shape == (100,)


def test_errors(rect_model, rect_data):
    X, y = rect_data
    with pytest.raises(ValueError, match="kernel must be one of"):
        HDExplainer(rect_model, 4, kernel="poly")
    with pytest.raises(ValueError, match="bandwidth"):
        HDExplainer(rect_model, 4, bandwidth="wide")
    with pytest.raises(ValueError, match="fit"):
        HDExplainer(rect_model, 4).explain(X[:2])
    ex = HDExplainer(rect_model, 4).fit(X[:10], y[:10])
    with pytest.raises(ValueError, match="k must be"):
        ex.explain(X[:2], k=11)
    with pytest.raises(ValueError, match="labels must lie"):
        HDExplainer(rect_model, 4).fit(X[:10], y[:10] + 4)
    with pytest.raises(ValueError, match="model protocol"):
        HDExplainer(torch.nn.Linear(2, 4), 4)
    with pytest.raises(ValueError, match="n_classes"):
        HDExplainer(rect_model, 1)
