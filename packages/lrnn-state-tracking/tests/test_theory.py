"""Spec §9.2-9.4: GH spectra, Proposition 1 constructions, hand-built LRNNs, the Theorem-1 demonstration."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from iclr25.lrnn_state_tracking import theory
from iclr25.lrnn_state_tracking.data import permutations, word_problem


def test_householder_spectrum():
    g = torch.Generator().manual_seed(0)
    for beta in torch.linspace(0, 2, 9, dtype=torch.float64):
        k = torch.randn(6, generator=g, dtype=torch.float64)
        H = theory.householder(k, beta)
        eig = torch.linalg.eigvalsh(H)
        expected = torch.tensor(sorted([1 - beta.item()] + [1.0] * 5), dtype=torch.float64)
        assert torch.allclose(eig, expected, atol=1e-12)
        assert torch.linalg.matrix_norm(H, ord=2) <= 1 + 1e-12


def test_permutations_as_at_most_n_minus_1_reflections():
    rng = np.random.default_rng(0)
    for _ in range(50):
        p = rng.permutation(5)
        factors = theory.permutation_to_householders(p)
        assert len(factors) <= 4
        assert (theory.product(factors, 5) - theory.permutation_matrix(p)).abs().max() <= 1e-12
        for f in factors:  # each factor is a reflection: eigenvalues {-1, 1, 1, 1, 1}
            assert torch.allclose(torch.linalg.eigvalsh(f), torch.tensor([-1.0, 1, 1, 1, 1], dtype=torch.float64))


def test_identity_needs_no_factor_and_bad_permutation_rejected():
    assert theory.permutation_to_householders([0, 1, 2]) == []
    with pytest.raises(ValueError, match="not a permutation"):
        theory.permutation_matrix([0, 0, 1])
    with pytest.raises(ValueError, match="distinct"):
        theory.swap_reflection(1, 1, 3)


@pytest.mark.parametrize("m", [3, 5, 60])
def test_rotation_as_two_reflections(m):
    R = theory.product(theory.rotation_as_two_reflections(2 * math.pi / m))
    assert (R - theory.rotation(2 * math.pi / m)).abs().max() <= 1e-12
    counts = theory.cyclic_counter([1] * (3 * m + 1), m)
    assert counts.tolist() == [(i + 1) % m for i in range(3 * m + 1)]


def test_parity_lrnn_exact():
    bits = torch.tensor(list(np.ndindex(*(2,) * 12)))  # all 2^12 strings of length 12
    assert torch.equal(theory.parity_lrnn(bits), bits.double().cumsum(1) % 2)
    long = torch.from_numpy(np.random.default_rng(1).integers(0, 2, 10_000))
    assert torch.equal(theory.parity_lrnn(long), long.double().cumsum(0) % 2)
    # with a positive eigenvalue in place of -1 the construction is no longer parity
    assert not torch.equal(theory.parity_lrnn(long, a_neg=0.5), long.double().cumsum(0) % 2)


@pytest.mark.parametrize("a", [0.3, 0.9, 0.999])
def test_theorem1_positive_eigenvalue_state_freezes(a):
    orbit = theory.finite_precision_orbit(a, 1.0, 100_000, np.float32)
    k_bar = theory.first_constant_step(orbit)
    assert k_bar is not None and k_bar <= 100_000
    assert len(set(orbit[k_bar - 1 :].tolist())) == 1


def test_theorem1_negative_eigenvalue_alternates():
    orbit = theory.finite_precision_orbit(-1.0, 1.0, 100_000, np.float32)
    assert (orbit == np.arange(1, 100_001) % 2).all()
    assert theory.first_constant_step(orbit) is None


def test_s5_lrnn_solves_word_problem():
    x, y = word_problem(32, 40, "all", seed=3)
    assert torch.equal(theory.s5_lrnn(x, permutations()), y)
