"""The analysis (spec §3.3-3.4) against its closed forms, its slow reference forms and the spec §9 checks."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from iclr25.ensemble_homogeneity import analysis as A
from iclr25.ensemble_homogeneity import metrics
from iclr25.ensemble_homogeneity import reference as R


def collapse_probs(correct: np.ndarray, y: np.ndarray, n_classes: int = 2) -> np.ndarray:
    """One-hot members: the true class where `correct`, the next class otherwise. (M, N, C)."""
    pred = np.where(correct, y, (y + 1) % n_classes)
    return np.eye(n_classes)[pred]


def test_tiny_exact_example():
    """Spec §9.4: f̂ = [1,1,0,0,1], ĝ = [1,0,1,0,1] => B̂∞ = 0.2, V̂ = 0.2, L̂ at M = 1, 4, ∞ = 0.4, 0.25, 0.2."""
    y = np.zeros(5, dtype=int)
    f = collapse_probs(np.array([1, 1, 0, 0, 1], bool), y)
    g = collapse_probs(np.array([1, 0, 1, 0, 1], bool), y)
    est = A.estimate_from_two(f, g, y, [1, 4, 10**12])
    assert est["B_inf"] == pytest.approx(0.2, abs=1e-15)
    assert est["V"] == pytest.approx(0.2, abs=1e-15)
    np.testing.assert_allclose(est["curve"], [0.4, 0.25, 0.2], atol=1e-12)
    soft = np.where(f > 0, 0.9, 0.1)  # the collapse option reads soft members by their argmax
    est_c = A.estimate_from_two(soft, np.where(g > 0, 0.8, 0.2), y, [1, 4], collapse=True)
    np.testing.assert_allclose(est_c["curve"], [0.4, 0.25], atol=1e-12)
    b, v, l4 = R.two_model_loop([1, 1, 0, 0, 1], [1, 0, 1, 0, 1], 4)
    assert (b, v, l4) == pytest.approx((0.2, 0.2, 0.25))


def test_collapse_closed_form_matches_simulation():
    """Spec §9.1: q ~ Beta(2, 0.5), 400 collapsed members: random M-subsets' Brier = B∞ + V/M within 2%."""
    rng = np.random.default_rng(0)
    N, P = 20_000, 400
    q = rng.beta(2, 0.5, N)
    correct = rng.random((P, N)) < q  # (P, N) member correctness ~ Bernoulli(q(x))
    theory = A.collapse_brier_closed_form(q, [1, 2, 5, 10, 50])
    for M, expected in zip([1, 2, 5, 10, 50], theory["curve"], strict=True):
        vals = []
        for _ in range(8):
            idx = rng.choice(P, M, replace=False)
            vals.append(np.mean((1 - correct[idx].mean(0)) ** 2))
        assert np.mean(vals) == pytest.approx(expected, rel=0.02), M


@pytest.mark.parametrize("M", [1, 2, 3, 7, 16])
def test_binomial_form_equals_closed_form(M):
    """(R1) with φ = Brier equals (R4) to 1e-12 for any q, and the loop form."""
    q = np.random.default_rng(M).random(50)
    r1 = A.collapse_theory_curve(q, [M], "brier_true")[0]
    r4 = A.collapse_brier_closed_form(q, [M])["curve"][0]
    assert r1 == pytest.approx(r4, abs=1e-12)
    assert r1 == pytest.approx(R.collapse_curve_loop(q, M, lambda p: (1 - p) ** 2), abs=1e-12)


def test_superiority_and_monotonicity_under_collapse():
    """(R2)/(R3): for convex φ (NLL smoothed) E L_M <= L_1 and non-increasing in M."""
    q = np.random.default_rng(1).beta(3, 1, 500)
    curve = A.collapse_theory_curve(q, [1, 2, 4, 8, 16], "nll", eps=1e-3, n_classes=10)
    assert np.all(np.diff(curve) <= 1e-12)
    err = A.collapse_theory_curve(q, [1, 3, 5, 9], "error_binary")
    assert err[0] == pytest.approx(np.mean(1 - q))
    assert np.all(np.diff(err) <= 1e-12)  # odd M, q mostly > 1/2: majority error falls


@pytest.mark.parametrize("soft", [False, True], ids=["collapse", "soft"])
def test_two_model_estimator_is_unbiased(soft):
    """Spec §9.2: averaged over all pairs, the estimate matches the measured curve (1% collapse, 2% soft)."""
    rng = np.random.default_rng(2)
    N, P = 4000, 30
    y = rng.integers(0, 3, N)
    if soft:  # per member true-class score ~ Beta around a per-point mean; the rest split evenly
        mu = rng.beta(4, 1.5, N)
        s = rng.beta(8 * mu, 8 * (1 - mu) + 1e-3, size=(P, N))
        probs = np.empty((P, N, 3))
        probs[...] = ((1 - s) / 2)[..., None]
        probs[:, np.arange(N), y] = s
    else:
        q = rng.beta(2, 0.5, N)
        probs = collapse_probs(rng.random((P, N)) < q, y, 3)
    sizes = [1, 2, 4, 8, 16]
    est = A.estimate_from_pairs(probs, y, sizes)
    measured = A.subset_mean_curve(probs, y, sizes)
    np.testing.assert_allclose(est["curve"], measured, rtol=0.02 if soft else 0.01)
    if not soft:  # collapsed members read as collapsed: the same numbers
        np.testing.assert_allclose(A.estimate_from_pairs(probs, y, sizes, collapse=True)["curve"], est["curve"])


def test_subset_mean_curve_equals_enumeration(small_pool):
    probs, y = small_pool
    sizes = [1, 2, 3, 5, 6]
    for loss, multi in (("brier_true", False), ("brier_multiclass", True)):
        fast = A.subset_mean_curve(probs, y, sizes, loss)
        slow = R.subset_curve_enumerate(probs, y, sizes, multiclass=multi)
        np.testing.assert_allclose(fast, slow, rtol=1e-12, atol=1e-14)
    # endpoints: M = 1 is the mean member, M = P the full ensemble
    assert A.subset_mean_curve(probs, y, [1])[0] == pytest.approx(metrics.brier_true(probs, y).mean(), abs=1e-14)
    ens = metrics.brier_true(probs.mean(0), y)
    assert A.subset_mean_curve(probs, y, [6])[0] == pytest.approx(ens, abs=1e-14)


def test_curve_is_exactly_linear_in_inverse_m(small_pool):
    """The identity that makes the B∞ + V/M fit no evidence: exact curve = all-pairs B∞ + V/M for any pool."""
    probs, y = small_pool
    sizes = [1, 2, 3, 4, 5, 6]
    for loss in ("brier_true", "brier_multiclass"):
        bv = A.bias_variance(probs, y, loss)
        np.testing.assert_allclose(
            A.subset_mean_curve(probs, y, sizes, loss), bv["B_inf"] + bv["V"] / np.array(sizes), rtol=1e-12
        )
        fit = A.fit_bias_variance_curve(sizes, A.subset_mean_curve(probs, y, sizes, loss))
        assert fit["r2"] == pytest.approx(1.0, abs=1e-12)


def test_bias_variance_equals_mean_over_pairs(small_pool):
    probs, y = small_pool
    for loss in ("brier_true", "brier_multiclass"):
        bv = A.bias_variance(probs, y, loss)
        pairs = A.estimate_from_pairs(probs, y, [1], loss=loss)
        assert bv["B_inf"] == pytest.approx(pairs["B_inf"], rel=1e-12)
        assert bv["V"] == pytest.approx(pairs["V"], rel=1e-12)
        assert pairs["n_pairs"] == 15


@pytest.mark.parametrize("loss", ["brier_true", "brier_multiclass", "nll"])
def test_jensen_identity(small_pool, loss):
    """Spec §9.3: ensemble loss <= mean member loss (convex losses), exactly."""
    probs, y = small_pool
    j = A.jensen_gap(probs, y, loss)
    assert j["ensemble"] <= j["mean_member"] + 1e-12
    assert j["gap"] >= -1e-12
    assert j["best_member"] <= j["mean_member"] <= j["worst_member"]


def test_distributional_equivalence_stats(small_pool):
    probs, y = small_pool
    de = A.distributional_equivalence(probs, y)
    s = metrics.true_class_scores(probs, y)
    assert len(de["ks_p"]) == 15
    for k, (i, j) in enumerate(de["pairs"]):
        assert de["ks_stat"][k] == pytest.approx(R.ks_statistic(list(s[i]), list(s[j])), abs=1e-12)
        assert de["w1"][k] == pytest.approx(stats.wasserstein_distance(s[i], s[j]))
        assert de["disagreement"][k] == pytest.approx(np.mean(probs[i].argmax(-1) != probs[j].argmax(-1)))
    # identical members: no disagreement, KS p = 1
    same = np.repeat(probs[:1], 4, axis=0)
    de = A.distributional_equivalence(same, y)
    assert de["mean_disagreement"] == 0 and de["median_ks_p"] == pytest.approx(1.0)


def test_de_detects_shifted_member():
    """A member with systematically lower confidence fails the KS test although it agrees in argmax."""
    rng = np.random.default_rng(3)
    N = 800
    y = np.zeros(N, dtype=int)
    s = rng.beta(5, 1, size=(3, N))
    s[2] = 0.6 + 0.4 * (s[2] - 0.6)  # shrink member 2 towards 0.6: still right wherever s > 0.5
    probs = np.stack([s, 1 - s], -1)
    de = A.distributional_equivalence(probs, y)
    p = dict(zip(map(tuple, de["pairs"]), de["ks_p"], strict=True))
    assert p[(0, 1)] > 0.01 and p[(0, 2)] < 1e-6 and p[(1, 2)] < 1e-6


def test_beta_fit_recovers_moments():
    a, b = A.beta_fit_q(0.8, 0.8**2 + 0.02)
    mean = a / (a + b)
    var = a * b / ((a + b) ** 2 * (a + b + 1))
    assert mean == pytest.approx(0.8) and var == pytest.approx(0.02)
    acc = A.beta_majority_accuracy(a, b, [1, 5, 25])
    assert acc[0] == pytest.approx(0.8) and acc[1] > acc[0]
    with pytest.raises(ValueError, match="no Beta fit"):
        A.beta_fit_q(0.8, 0.8**2 - 0.01)


def test_vote_accuracy_and_random_pairs():
    y = np.array([0, 1, 2])
    probs = np.eye(3)[np.array([[0, 1, 0], [0, 2, 2], [1, 1, 2]])]
    assert A.vote_accuracy(probs, y) == pytest.approx(1.0)
    pairs = A.random_pairs(5, 10, np.random.default_rng(0))
    assert sorted(pairs) == A.all_pairs(5)
    with pytest.raises(ValueError, match="only 10"):
        A.random_pairs(5, 11, np.random.default_rng(0))


def test_curve_input_checks(small_pool):
    probs, y = small_pool
    with pytest.raises(ValueError, match="subset sizes"):
        A.subset_mean_curve(probs, y, [7])
    with pytest.raises(ValueError, match="exact curve supports"):
        A.subset_mean_curve(probs, y, [1], "nll")
    with pytest.raises(ValueError, match="unknown loss"):
        metrics.get_loss("hinge")
    with pytest.raises(ValueError, match="sum to 1"):
        metrics.check_probs(probs * 2, y)


def test_heldout_best_member_removes_the_selection_bias():
    """Identical-in-law members: the in-sample best beats the ensemble's member-level loss by selection alone,
    the held-out best does not; an ensemble of one member repeated gains nothing."""
    rng = np.random.default_rng(4)
    M, N = 32, 400
    y = np.zeros(N, dtype=int)
    s = np.clip(rng.normal(0.8, 0.05, size=(M, N)), 0, 1)  # pure noise around one mean: no member is better
    probs = np.stack([s, 1 - s], -1)
    held = A.heldout_best_member(probs, y, "brier_true", n_splits=30)
    assert held["mean_gain"] > 0 and held["win_rate"] == 1.0
    same = A.heldout_best_member(np.repeat(probs[:1], 4, 0), y, "brier_true", n_splits=5)
    assert same["mean_gain"] == pytest.approx(0.0, abs=1e-15)
