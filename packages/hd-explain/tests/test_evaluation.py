"""Evaluation protocol: probes, perturbations, hit rate / coverage (one method or several), mislabel recall."""

from __future__ import annotations

import numpy as np
import pytest

from iclr25.hd_explain import (
    HDExplainer,
    evaluate_explainers,
    flip_labels,
    hit_rate_coverage,
    make_explainer,
    mislabel_detection,
    mislabel_recall_curves,
    perturb_flip,
    perturb_noise,
    probe_indices,
    probe_sets,
    suspicion_scores,
)


def test_probe_indices_match_official_draw():
    np.random.seed(7)  # noqa: NPY002 - the official protocol's legacy global draw
    expected = np.random.choice(50, 100)  # noqa: NPY002
    assert np.array_equal(probe_indices(50, 100, seed=7), expected)
    assert len(np.unique(probe_indices(50, 100, 0))) < 100  # with replacement


def test_perturb_noise_bounds_and_determinism():
    X = np.random.default_rng(0).normal(size=(20, 3, 4, 4)).astype(np.float32)
    Z = perturb_noise(X, seed=1)
    v = 0.01 * X.var(ddof=1)
    assert Z.shape == X.shape and Z.dtype == np.float32
    assert np.abs(Z - X).max() <= v * (1 + 1e-5)
    assert Z.min() >= X.min() and Z.max() <= X.max()
    assert np.array_equal(Z, perturb_noise(X, seed=1)) and not np.array_equal(Z, perturb_noise(X, seed=2))


def test_perturb_flip():
    X = np.arange(2 * 3 * 2 * 4, dtype=np.float32).reshape(2, 3, 2, 4)
    assert np.array_equal(perturb_flip(X)[..., 0], X[..., -1])
    with pytest.raises(ValueError, match="images"):
        perturb_flip(np.zeros((3, 2)))


class _Fixed:
    def __init__(self, idx):
        self.idx = np.asarray(idx)

    def explain(self, X, k=3):
        return self.idx[:, :k], None


def test_hit_rate_and_coverage():
    probes = np.array([0, 1, 2, 2])
    ex = _Fixed([[0, 5, 6], [7, 8, 9], [2, 5, 6], [5, 6, 2]])
    hit, cov = hit_rate_coverage(ex, probes, np.zeros((4, 2)), k=3)
    assert hit == 0.75
    assert cov == len({0, 5, 6, 7, 8, 9, 2}) / 12
    with pytest.raises(ValueError, match="probe"):
        hit_rate_coverage(ex, probes[:3], np.zeros((4, 2)))


def test_mislabel_detection():
    flipped = np.array([True, False, True, False, False])
    scores = np.array([0.9, 0.8, 0.1, 0.7, 0.0])
    out = mislabel_detection(scores, flipped, ks=[1, 2, 3, 5])
    assert np.allclose(out["recall"], [0.5, 0.5, 0.5, 1.0])
    assert np.allclose(out["precision"], [1.0, 0.5, 1 / 3, 0.4])
    assert out["ndcg"][0] == 1.0
    perfect = mislabel_detection(flipped.astype(float), flipped)
    assert np.array_equal(perfect["k"], [1, 2, 3, 4]) and perfect["recall"][1] == 1.0
    with pytest.raises(ValueError, match="no flipped"):
        mislabel_detection(scores, np.zeros(5, bool))


def test_evaluate_explainers_is_the_protocol_per_method(rect_model, rect_data):
    X, y = rect_data
    probes = probe_sets(X, 20, [0, 1])
    assert [len(i) for i, _ in probes] == [20, 20]
    idx, noisy = probes[1]
    assert np.array_equal(idx, probe_indices(len(X), 20, 1)) and np.array_equal(noisy, perturb_noise(X[idx], 1))
    methods = {"hd": ("hd", {}), "if": ("if", {}), "sim": ("sim", {})}
    times: dict = {}
    out = evaluate_explainers(rect_model, X, y, 4, methods, probes, 3, temperatures=(0.5,), times=times)
    assert list(out) == ["hd", "hd_T0.5", "if", "sim"]  # the sweep runs on RBF hd/hd* only
    for name, (method, options) in methods.items():
        ex = make_explainer(method, rect_model, 4, **options).fit(X, y)
        assert out[name] == [list(hit_rate_coverage(ex, i, xp, 3)) for i, xp in probes]
    hot = HDExplainer(rect_model, 4, temperature=0.5).fit(X, y)
    assert out["hd_T0.5"] == [list(hit_rate_coverage(hot, i, xp, 3)) for i, xp in probes]
    assert times["hd"]["explained"] == 40 and times["if"]["fit_s"] > 0
    scores = suspicion_scores("hd", rect_model, 4, X, y)
    assert np.array_equal(scores, make_explainer("hd", rect_model, 4).fit(X, y).debug_scores().numpy())
    with pytest.raises(ValueError, match="perturbation"):
        probe_sets(X, 5, [0], "blur")


def test_mislabel_recall_curves(rect_model, rect_data):
    X, y = rect_data
    y_bad, flipped = flip_labels(y, 10, 4, 0)
    curves = mislabel_recall_curves({"a": rect_model}, X, y_bad, flipped, 4, {"hd": ("hd", {}), "rps": ("rps", {})})
    assert list(curves) == ["a"] and list(curves["a"]) == ["hd", "rps"]
    expected = mislabel_detection(suspicion_scores("hd", rect_model, 4, X, y_bad), flipped)["recall"]
    assert np.array_equal(curves["a"]["hd"], expected) and len(expected) == 20
