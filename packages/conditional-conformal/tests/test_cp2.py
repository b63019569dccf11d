"""CP²-PCP and CP²-HPD: quantile ranks, fast == reference, reductions, fresh test draws (spec §9.4, §9.5)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from iclr25.conditional_conformal import reference as ref
from iclr25.conditional_conformal.baselines import PCP
from iclr25.conditional_conformal.cp2 import (
    CP2HPD,
    CP2PCP,
    Draws,
    conformal_quantile,
    conformal_rank,
    draw,
    mc_rank,
    pcp_tau,
)
from iclr25.conditional_conformal.data import bimodal_hetero, ring2d, ring2d_law
from iclr25.conditional_conformal.sets import nearest_distance, union_length_1d


@pytest.mark.parametrize("n", [1, 8, 9, 19, 49, 50, 99, 500, 2000])
@pytest.mark.parametrize("alpha", [0.05, 0.1, 0.2, 0.5])
def test_conformal_quantile_matches_sorting(n, alpha):
    s = np.random.default_rng(n).standard_normal(n)
    assert conformal_quantile(s, alpha) == ref.conformal_quantile(s, alpha)


def test_conformal_rank_is_exact_at_float_edges():
    # (1 - 0.1) * 50 = 45 exactly; a naive float ceil can give 46
    assert conformal_rank(49, 0.1) == 45
    assert conformal_rank(9, 0.1) == 9
    assert conformal_rank(8, 0.1) == 9  # > n: infinite quantile
    assert math.isinf(conformal_quantile(np.arange(8.0), 0.1))
    assert mc_rank(100, 0.9) == 90 and mc_rank(100, 0.1) == 10


def test_scores_parity_with_algorithm_on_fixed_arrays():
    """Spec §9.5: the vectorised scores equal Alg. 1 written point by point (1-D and 2-D outputs)."""
    rng = np.random.default_rng(3)
    for q in (1, 2):
        centres, tilde = rng.standard_normal((40, 7, q)), rng.standard_normal((40, 13, q))
        y = rng.standard_normal((40, q))
        for adjust in ("linear", "difference"):
            u_ref, v_ref, t_ref = ref.cp2_pcp_scores(y, centres, tilde, 0.1, adjust)
            m = CP2PCP(None, 0.1, 7, 13, adjust)
            u = m.conformity_scores(None, y, draws=Draws(centres, tilde))
            np.testing.assert_allclose(u, u_ref, rtol=1e-12, atol=1e-12)
            np.testing.assert_allclose(pcp_tau(Draws(centres, tilde), 0.1), t_ref, rtol=1e-12)
            m.calibrate(np.zeros((40, 1)), y, draws=Draws(centres, tilde))
            assert m.qhat_ == ref.conformal_quantile(u_ref, 0.1)
            np.testing.assert_allclose(m.v_cal_, v_ref)


@pytest.mark.parametrize(("n", "k", "m", "q"), [(3, 5, 4, 1), (50, 100, 50, 1), (20, 9, 6, 2), (7, 3, 11, 3)])
def test_nearest_distance_fast_equals_brute_force(n, k, m, q):
    rng = np.random.default_rng(n * k)
    p, c = rng.standard_normal((n, k, q)) * 3, rng.standard_normal((n, m, q)) * 3
    brute = np.sqrt(((p[:, :, None, :] - c[:, None, :, :]) ** 2).sum(-1)).min(-1)
    np.testing.assert_allclose(nearest_distance(p, c, chunk=7), brute, atol=1e-9)


def test_union_length_equals_interval_merging():
    rng = np.random.default_rng(0)
    c = rng.standard_normal((30, 12))
    r = np.abs(rng.standard_normal(30)) * 0.3
    r[0], r[1] = -1.0, 0.0
    got = union_length_1d(c, r)
    np.testing.assert_allclose(got, [ref.union_length(c[j], r[j]) for j in range(30)], atol=1e-12)
    assert math.isinf(union_length_1d(c[:1], np.array([math.inf]))[0])


def test_constant_tau_makes_cp2_linear_equal_pcp(law, rng):
    """Spec §9.4: if τ_x is constant, CP²-PCP-L is PCP (same centres, same radius)."""
    Xc, Yc = bimodal_hetero(300, rng)
    Xt, _ = bimodal_hetero(50, rng)
    dc, dt = draw(law, Xc, 20, 10, rng), draw(law, Xt, 20, 10, rng)
    for d in (dc, dt):  # Ỹ = one centre repeated at distance 0.7: every d_j = 0.7, so τ ≡ 0.7
        d.tilde = np.repeat(d.centres[:, :1] + 0.7 * np.array([1.0]), 10, axis=1)
        d.centres[:, 1:] = np.where(
            np.abs(d.centres[:, 1:] - d.centres[:, :1]) < 1.5, d.centres[:, :1] + 5, d.centres[:, 1:]
        )
    cp2 = CP2PCP(law, 0.1, 20, 10, "linear").calibrate(Xc, Yc, draws=dc)
    pcp = PCP(law, 0.1, 20).calibrate(Xc, Yc, draws=dc)
    np.testing.assert_allclose(pcp_tau(dc, 0.1), 0.7)
    s1, s2 = cp2.predict_set(Xt, draws=dt), pcp.predict_set(Xt, draws=dt)
    np.testing.assert_allclose(s1.radius, s2.radius, rtol=1e-12)
    np.testing.assert_array_equal(s1.centres, s2.centres)


def test_test_draws_are_fresh_and_calibration_draws_kept(law, rng):
    Xc, Yc = bimodal_hetero(100, rng)
    m = CP2PCP(law, 0.1, 10, 20, seed=5).calibrate(Xc, Yc)
    kept = m.draws_.centres.copy()
    s1, s2 = m.predict_set(Xc), m.predict_set(Xc)
    assert not np.allclose(s1.centres, kept) and not np.allclose(s1.centres, s2.centres)
    np.testing.assert_array_equal(m.draws_.centres, kept)
    np.testing.assert_allclose(m.conformity_scores(Xc, Yc, draws=m.draws_), m.scores_)


def test_difference_radius_clipped_and_infinite_qhat(law, rng):
    X, Y = bimodal_hetero(8, rng)  # rank 9 > 8: Q̂ = ∞, sets are everything
    m = CP2PCP(law, 0.1, 5, 10, "difference").calibrate(X, Y)
    assert math.isinf(m.qhat_)
    s = m.predict_set(X)
    assert np.isinf(s.radius).all() and s.contains(Y + 100).all()
    m.qhat_ = -10.0
    assert (m.predict_set(X).radius == 0).all()


def test_multi_output_balls(rng):
    law = ring2d_law()
    Xc, Yc = ring2d(1000, rng)
    Xt, Yt = ring2d(1000, rng)
    m = CP2PCP(law, 0.1, 50, 100, seed=0).calibrate(Xc, Yc)
    s = m.predict_set(Xt)
    assert s.centres.shape == (1000, 50, 2) and 0.86 < s.contains(Yt).mean() < 0.94
    assert 0.9 < m.qhat_ < 1.2
    vol = type(s)(s.centres[:3], s.radius[:3]).volume(n_mc=2000)
    assert (vol > 0).all() and np.isfinite(vol).all()


def test_hpd_level_matches_reference_and_adjustments_agree(law, rng):
    X, Y = bimodal_hetero(400, rng)
    tilde = law.sample(X, 100, rng)
    lin = CP2HPD(law, 0.1, 100, "linear")
    lp = law.log_prob(X, tilde)
    np.testing.assert_allclose(lin.log_level(X, tilde), [ref.hpd_log_level(row, 0.1) for row in lp])
    lin.calibrate(X, Y, tilde=tilde)
    dif = CP2HPD(law, 0.1, 100, "difference").calibrate(X, Y, tilde=tilde)
    np.testing.assert_allclose(np.log(lin.scores_), dif.scores_, rtol=1e-9, atol=1e-12)
    Xt, _ = bimodal_hetero(300, rng)
    tt = law.sample(Xt, 100, rng)
    np.testing.assert_allclose(lin.predict_set(Xt, tt).log_level, dif.predict_set(Xt, tt).log_level, atol=1e-9)
    # Q̂ = 1 is the plain (1 − α)-HPD set of Π
    lin.qhat_ = 1.0
    np.testing.assert_allclose(lin.predict_set(Xt, tt).log_level, lin.log_level(Xt, tt))


def test_hpd_with_pi_equal_p_has_conditional_score_law(law):
    """If Π = P, U ≤ 1 with probability ≈ 1 − α at every x (exact λ_x up to the M̃ Monte Carlo error)."""
    rng = np.random.default_rng(1)
    x = np.full((20_000, 1), 2.5)
    y = law.sample(x, 1, rng)[:, 0]
    level = CP2HPD(law, 0.1, 20_000, seed=2).log_level(x[:1])  # λ_x from 20 000 draws
    assert abs((law.log_prob(x, y) >= level).mean() - 0.9) < 0.01


def test_bad_arguments():
    with pytest.raises(ValueError, match="alpha"):
        CP2PCP(None, alpha=1.5)
    with pytest.raises(ValueError, match="adjust"):
        CP2PCP(None, adjust="ratio")
    with pytest.raises(ValueError, match="n_samples"):
        CP2PCP(None, n_samples=0)
    with pytest.raises(RuntimeError, match="calibrate"):
        CP2PCP(None).predict_set(np.zeros((2, 1)))
