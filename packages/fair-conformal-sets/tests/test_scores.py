"""Score parity with the §3.2 formulas (spec §9.5) and basic properties."""

from __future__ import annotations

import numpy as np
import pytest

from iclr25.fair_conformal_sets import calibrate, scores
from iclr25.fair_conformal_sets.reference import score_ref


@pytest.mark.parametrize("name", ["lac", "aps", "raps", "saps"])
@pytest.mark.parametrize(("k_reg", "lam"), [(3, 0.5), (1, 2.0)], ids=["default", "strong"])
def test_scores_match_reference(probs, uniforms, name, k_reg, lam):
    fast = scores.score_matrix(probs, name, k_reg=k_reg, lam=lam, u=uniforms)
    slow = score_ref(probs, uniforms, name, k_reg=k_reg, lam=lam)
    np.testing.assert_allclose(fast, slow, atol=1e-12, rtol=0)


def test_official_calibration_form_on_true_label(probs, uniforms):
    """Official calibration form: sum_{j<r} p_(j) + U p_(r) (+ reg) at the true label, one U per item."""
    y = np.random.default_rng(2).integers(6, size=len(probs))
    u_item = uniforms[:, 0]
    s = scores.true_label(scores.raps(probs, k_reg=2, lam=0.3, u=u_item), y)
    order = np.argsort(-probs, axis=1, kind="stable")
    for i in range(len(probs)):
        r = int(np.flatnonzero(order[i] == y[i])[0])
        expected = probs[i, order[i, :r]].sum() + u_item[i] * probs[i, y[i]] + 0.3 * max(r + 1 - 2, 0)
        assert abs(s[i] - expected) < 1e-12


def test_non_randomized_aps_set_is_smallest_prefix(probs):
    """At threshold q, the non-randomised APS set is the smallest top-probability prefix whose mass reaches q."""
    s_all = scores.aps(probs, randomized=False)
    q = 0.9
    C = s_all <= q
    order = np.argsort(-probs, axis=1, kind="stable")
    for i in range(len(probs)):
        cum = np.cumsum(probs[i, order[i]])
        size = int(np.searchsorted(cum, q, side="right"))  # labels whose inclusive mass <= q
        assert set(np.flatnonzero(C[i])) == set(order[i, :size].tolist())
    # with the conformal quantile of some calibration scores
    q_hat = calibrate.conformal_quantile(s_all[:20, 0], 0.1)
    assert ((s_all[20:] <= q_hat) == calibrate.marginal(s_all[:20, 0], s_all[20:], 0.1)).all()


def test_saps_ranks_and_randomisation(probs, uniforms):
    S = scores.saps(probs, lam=0.5, u=uniforms)
    r = scores.ranks(probs)
    top = probs.max(axis=1, keepdims=True)
    assert np.allclose(S[r == 0], (uniforms * top)[r == 0])
    assert (S[r >= 1] >= np.broadcast_to(top, S.shape)[r >= 1] - 1e-12).all()
    # randomized=False is U = 1
    np.testing.assert_allclose(scores.saps(probs, randomized=False), scores.saps(probs, u=np.ones_like(probs)))


def test_softmax_and_temperature():
    z = np.array([[1.0, 2.0, 3.0], [0.0, 0.0, 1000.0]])
    p = scores.softmax(z)
    assert np.allclose(p.sum(axis=1), 1) and np.isfinite(p).all()
    sharp = scores.softmax(z, 0.5)
    assert sharp[0, 2] > p[0, 2]
    with pytest.raises(ValueError, match="temperature"):
        scores.softmax(z, 0.0)


def test_ranks_break_ties_by_index(probs):
    r = scores.ranks(probs)
    assert sorted(r[0]) == list(range(6))
    assert r[3, 2] < r[3, 4]  # tied labels: lower index first


@pytest.mark.parametrize("bad", [np.ones(5), np.ones((4, 1))])
def test_bad_shapes(bad):
    with pytest.raises(ValueError, match=r"\(n, K\)"):
        scores.lac(bad)


def test_unknown_score_and_bad_u(probs):
    with pytest.raises(ValueError, match="score must be one of"):
        scores.score_matrix(probs, "thr")
    with pytest.raises(ValueError, match="u must have shape"):
        scores.aps(probs, u=np.ones(3))
