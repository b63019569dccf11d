"""Scores are rounded before ranking, so last-bit noise (another BLAS thread count or CPU) cannot reorder them."""

from __future__ import annotations

import numpy as np
import pytest

from iclr25.influence_selection import baselines, experiments
from iclr25.influence_selection.selection import trim_dataset
from iclr25.influence_selection.threads import SCORE_DIGITS, quantize


def test_quantize_keeps_the_significant_digits_and_merges_last_bit_noise() -> None:
    s = np.array([3.0, -1.25, 0.0, 1e-12, np.nan])
    q = quantize(s)
    assert np.allclose(q[:4], s[:4], rtol=0, atol=10.0 ** (1 - SCORE_DIGITS)) and np.isnan(q[4])
    assert q[3] == 0.0  # below the grid of the largest score
    noisy = s[:4] * (1 + 1e-15)
    assert np.array_equal(quantize(noisy), q[:4])
    assert np.array_equal(quantize(np.zeros(3)), np.zeros(3))


def test_near_ties_go_to_the_lower_index() -> None:
    s = np.array([1.0, 2.0, 2.0 * (1 + 4e-16), 0.5])
    assert trim_dataset(s, 1, "top").tolist() == [0, 2, 3]  # index 1 removed, not the one 2 ulp larger


_REAL_IV = baselines.iv_scores


def _iv_curve(monkeypatch: pytest.MonkeyPatch, noise_seed: int | None) -> list[float]:
    real = _REAL_IV

    def noisy(*a, **k):  # two ulp of relative noise: what another BLAS thread count does to IV
        v = real(*a, **k)
        return v if noise_seed is None else v * (1 + 4e-16 * np.random.default_rng(noise_seed).standard_normal(len(v)))

    monkeypatch.setattr(baselines, "iv_scores", noisy)
    return experiments.digits_al_seed(0, ("iv",), 4, 30, 60, 1000, 1e-2, 120)["iv"]["curve"]


def test_the_iv_arm_ignores_last_bit_noise_and_would_not_without_rounding(monkeypatch: pytest.MonkeyPatch) -> None:
    """The tree of the IV arm splits on exact ties: 2 ulp of noise in IV move its curve unless IV is rounded."""
    base = _iv_curve(monkeypatch, None)
    assert all(_iv_curve(monkeypatch, s) == base for s in range(3))
    monkeypatch.setattr(baselines, "quantize", lambda s: np.asarray(s, float))  # the broken variant
    assert any(_iv_curve(monkeypatch, s) != base for s in range(3))
