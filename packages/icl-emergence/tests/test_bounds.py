"""PAC-Bayes terms, the two-level bound, Gaussian KLs and the Langevin KL (spec §9.5)."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
import torch

from iclr25.icl_emergence.bounds import (
    clip_loss,
    data_dependent_bound,
    effective_n,
    gaussian_kl,
    isotropic_gaussian_kl,
    langevin_kl,
    pac_bayes_term,
    two_level_bound,
)


def test_closed_form():
    kl, K, N, T, delta, c = 12.0, 4, 8, 16, 0.05, 2.0
    out = two_level_bound(0.3, kl, K, N, T, delta, c)
    n = K * N * T
    seq = c * math.sqrt((kl + math.log(2 * math.sqrt(n) / (delta / 2))) / (2 * n))
    top = c * math.sqrt((kl + math.log(2 * math.sqrt(K) / (delta / 2))) / (2 * K))
    assert out["seq_term"] == pytest.approx(seq, rel=1e-12) and out["topic_term"] == pytest.approx(top, rel=1e-12)
    assert out["bound"] == pytest.approx(0.3 + seq + top, rel=1e-12)


def test_strictly_decreasing_in_K_N_T():
    grid = [1, 2, 3, 8, 100, 10_000]
    for kl in (0.0, 5.0, 1e4):
        for vary in ("K", "N", "T"):
            vals = []
            for v in grid:
                args = {"K": 8, "N": 8, "T": 8, vary: v}
                vals.append(two_level_bound(0.1, kl, **args)["bound"])
            assert all(a > b for a, b in itertools.pairwise(vals)), (kl, vary)
    seq = [two_level_bound(0.1, 5.0, 8, 8, T, n_eff="sequence")["bound"] for T in grid]
    assert max(seq) == min(seq)  # n_eff = K N: no dependence on T
    assert effective_n(2, 3, 4) == 24 and effective_n(2, 3, 4, "sequence") == 6
    with pytest.raises(ValueError, match="n_eff"):
        effective_n(1, 1, 1, "word")


def test_data_dependent_prior_uses_the_remaining_topics():
    a = data_dependent_bound(0.1, 3.0, K=10, K_J=4, N=5, T=6)
    assert a == two_level_bound(0.1, 3.0, 6, 5, 6)
    with pytest.raises(ValueError, match="K_J"):
        data_dependent_bound(0.1, 3.0, K=4, K_J=4, N=5, T=6)


def test_gaussian_kls():
    mq, mp = np.array([0.3, -1.0]), np.array([0.0, 0.5])
    sq, sp = np.array([0.5, 2.0]), np.array([1.0, 1.5])
    ref = torch.distributions.kl_divergence(
        torch.distributions.Normal(torch.tensor(mq), torch.tensor(sq)),
        torch.distributions.Normal(torch.tensor(mp), torch.tensor(sp)),
    ).sum()
    assert gaussian_kl(mq, sq, mp, sp) == pytest.approx(float(ref), rel=1e-10)
    assert isotropic_gaussian_kl(mq, mp, 0.1) == pytest.approx(gaussian_kl(mq, 0.1, mp, 0.1), rel=1e-10)
    with pytest.raises(ValueError, match="deviations"):
        gaussian_kl(mq, 0.0, mp, 1.0)


def test_langevin_kl_on_a_quadratic_pair():
    """Spec §9.5: L = a/2 (theta - m)^2 vs L_J = a/2 (theta - m_J)^2, a=1, m=0, m_J=1, beta=100, tau=5, eta=1e-3:
    simulate SGLD, log ||g - g_J||^2 along the path; (beta/4) a^2 (m - m_J)^2 tau = 125."""
    a, m, mJ, beta, tau, eta = 1.0, 0.0, 1.0, 100.0, 5.0, 1e-3
    rng = np.random.default_rng(0)
    theta, diffs = 2.0, []
    for _ in range(int(tau / eta)):
        g, gJ = a * (theta - m), a * (theta - mJ)
        diffs.append((g - gJ) ** 2)
        theta += -eta * g + math.sqrt(2 * eta / beta) * rng.standard_normal()
    kl = langevin_kl(diffs, eta, beta)
    assert kl == pytest.approx(beta / 4 * a**2 * (m - mJ) ** 2 * tau, rel=0.01)
    # exact KL between the two OU marginals at tau (same start theta_0, same variance)
    var = (1 - math.exp(-2 * a * tau)) / (a * beta)
    mean_gap = (m - mJ) * (1 - math.exp(-a * tau))
    assert kl > mean_gap**2 / (2 * var)
    with pytest.raises(ValueError, match="beta"):
        langevin_kl([1.0], 1e-3, 0.0)


def test_pac_bayes_term_and_clipping():
    assert pac_bayes_term(0.0, 100, 0.05, 1.0) < pac_bayes_term(0.0, 10, 0.05, 1.0)
    assert pac_bayes_term(1.0, 100, 0.05, 2.0) == pytest.approx(2 * pac_bayes_term(1.0, 100, 0.05, 1.0))
    assert np.array_equal(clip_loss(np.array([0.5, 3.0]), 1.0), np.array([0.5, 1.0]))
    for bad in ({"kl": -1.0}, {"n": 0}, {"delta": 1.5}, {"c": 0.0}):
        with pytest.raises(ValueError, match=next(iter(bad))):
            pac_bayes_term(**{"kl": 1.0, "n": 10, "delta": 0.05, "c": 1.0, **bad})
