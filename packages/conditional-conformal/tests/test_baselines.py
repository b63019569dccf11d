"""Baselines: split CP, PCP / HD-PCP, Π-only, CQR, CQR2 (marginal validity on the oracle law, set shapes)."""

from __future__ import annotations

import numpy as np
import pytest

from iclr25.conditional_conformal.baselines import CQR, CQR2, PCP, PiOnly, QuantileNet, SplitCP
from iclr25.conditional_conformal.data import bimodal_hetero
from iclr25.conditional_conformal.metrics import coverage


@pytest.fixture(scope="module")
def split():
    X, Y = bimodal_hetero(6000, 11)
    return X[:2000], Y[:2000], X[2000:], Y[2000:]


def test_split_cp_and_pcp_marginal(law, split):
    Xc, Yc, Xt, Yt = split
    for m in (SplitCP(law, 0.1), PCP(law, 0.1, 30, seed=0), PCP(law, 0.1, 30, fr=0.2, seed=0)):
        s = m.calibrate(Xc, Yc).predict_set(Xt)
        assert 0.88 < coverage(s, Yt) < 0.92, type(m).__name__
    assert PCP(law, 0.1, 30, fr=0.2).centres(Xt[:3]).shape == (3, 24, 1)


def test_hd_pcp_keeps_highest_density(law):
    x = np.zeros((1, 1))
    m = PCP(law, 0.1, 10, fr=0.5, seed=0)
    draws = type("D", (), {"centres": law.sample(x, 10, np.random.default_rng(0))})()
    kept = m.centres(x, draws)
    lp_all = np.sort(law.log_prob(x, draws.centres)[0])[::-1]
    np.testing.assert_allclose(np.sort(law.log_prob(x, kept)[0])[::-1], lp_all[:5])
    with pytest.raises(ValueError, match="fr"):
        PCP(law, fr=1.0)


def test_pi_only_uses_tau(law, split):
    _, _, Xt, Yt = split
    s = PiOnly(law, 0.1, 50, 100, seed=0).predict_set(Xt)
    assert 0.87 < coverage(s, Yt) < 0.92  # Π = P: near 1 − α up to the finite-M̃ bias


def test_cqr_and_cqr2_small_net(split):
    Xc, Yc, Xt, Yt = split
    Xtr, Ytr = bimodal_hetero(3000, 5)
    t = np.linspace(0, 0.98, 10)[1:]
    levels = tuple(sorted(set(np.round(np.concatenate([(1 - t) / 2, [0.5], (1 + t) / 2, [0.05, 0.95]]), 6))))
    net = QuantileNet(levels, (32, 32), epochs=15, batch_size=250, lr=3e-3, seed=0).fit(Xtr, Ytr)
    q = net.predict(Xt[:10])
    assert q.shape == (10, 1, len(levels)) and (np.diff(q, axis=-1) >= 0).all()
    cqr = CQR(net, 0.1).calibrate(Xc, Yc)
    s = cqr.predict_set(Xt)
    assert 0.87 < coverage(s, Yt) < 0.93 and (s.length() > 0).all()
    c2 = CQR2(net, 0.1).calibrate(Xc, Yc)
    s2 = c2.predict_set(Xt)
    assert 0.87 < coverage(s2, Yt) < 0.93
    # the score is the band level: y at the median scores 0, y outside every band scores > t_max
    med = net.at(Xt[:5], 0.5)
    np.testing.assert_allclose(c2.conformity_scores(Xt[:5], med), 0.0, atol=1e-9)
    assert (c2.conformity_scores(Xt[:5], med + 100) > levels[-1] - levels[0]).all()
    with pytest.raises(ValueError, match="not trained"):
        net.at(Xt[:2], 0.3)
    with pytest.raises(RuntimeError, match="train"):
        CQR(None).calibrate(Xc, Yc)
