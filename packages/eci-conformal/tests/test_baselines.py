"""Baselines (baselines.py) against the loop-over-time reference forms of the official functions."""

from __future__ import annotations

import bisect
import time

import numpy as np
import pytest

from iclr25.eci_conformal.baselines import (
    ACI,
    SFOGD,
    ConformalPID,
    DtACI,
    ThetaScorecaster,
    _SortedWindow,
    aci,
    conformal_pid,
    decay_ogd,
    dtaci,
    ogd,
    sf_ogd,
    trailing_window,
)
from iclr25.eci_conformal.methods import run_online
from iclr25.eci_conformal.reference import aci_reference, ogd_reference, pid_reference, trailing_reference


def _same(a, b):
    np.testing.assert_array_equal(np.isinf(a), np.isinf(b))
    np.testing.assert_allclose(a[np.isfinite(a)], b[np.isfinite(b)], rtol=0, atol=1e-8)


@pytest.mark.parametrize("lr", [0.5, 5.0])
def test_ogd_family_matches_reference(scores, signed_scores, lr):
    for s in (scores, signed_scores):
        _same(ogd(s, 0.1, lr), ogd_reference(s, 0.1, lr, "fixed"))
        _same(decay_ogd(s, 0.1, lr), ogd_reference(s, 0.1, lr, "decay"))
        _same(sf_ogd(s, 0.1, lr, official_quirk=True), ogd_reference(s, 0.1, lr, "sf_quirk"))
        _same(sf_ogd(s, 0.1, lr), ogd_reference(s, 0.1, lr, "sf"))
    assert not np.allclose(sf_ogd(scores, 0.1, lr), sf_ogd(scores, 0.1, lr, official_quirk=True))


@pytest.mark.parametrize(("KI", "Csat"), [(0.0, 1.0), (10.0, 5.0), (200.0, 1.0)], ids=["P", "PI-10", "PI-200"])
def test_pid_matches_reference(scores, signed_scores, KI, Csat):
    for s in (scores, signed_scores):
        _same(conformal_pid(s, 0.05, 0.3, KI=KI, Csat=Csat), pid_reference(s, 0.05, 0.3, 100, KI, Csat))


@pytest.mark.parametrize("window_length", [10**7, 60])
@pytest.mark.parametrize("clip", [False, True], ids=["aci", "aci-clipped"])
@pytest.mark.parametrize("lr", [0.1, 0.005])
@pytest.mark.parametrize("alpha", [0.05, 0.1])
def test_aci_matches_reference(scores, signed_scores, window_length, clip, lr, alpha):
    for s in (scores, signed_scores):
        fast = aci(s, alpha, lr, window_length=window_length, clip=clip)
        _same(fast, aci_reference(s, alpha, lr, window_length, 100, clip))
    assert np.isinf(aci(scores, 0.05, lr)[:21]).all()  # +inf while t <= ceil(1/alpha)


def test_trailing_matches_reference(scores):
    for w in (5, 50, 200):
        _same(trailing_window(scores, 0.1, window=w), trailing_reference(scores, 0.1, w))


@pytest.mark.parametrize("window", [1, 7, 60, 10**9])
def test_sorted_window_matches_flat_sorted_list(monkeypatch, window):
    monkeypatch.setattr(_SortedWindow, "LOAD", 3)  # tiny blocks: many splits and emptied blocks
    rng = np.random.default_rng(window)
    win, flat, fifo = _SortedWindow(window), [], []
    for v in np.round(rng.standard_normal(1500), 1).tolist():  # rounded: many ties
        win.push(v)
        bisect.insort(flat, v)
        fifo.append(v)
        if len(fifo) > window:
            flat.remove(fifo.pop(0))
        assert len(win) == len(flat) and win.max() == flat[-1]
        for i in (0, len(flat) - 1, int(rng.integers(len(flat)))):
            assert win[i] == flat[i]
        u = float(np.round(rng.standard_normal(), 1))
        assert win.count_less(u) == bisect.bisect_left(flat, u)


def test_aci_speed_long_stream():
    """ACI's running quantile must not cost O(t) per step: 3 * 10^5 steps in a few CPU seconds."""
    x = np.random.default_rng(0).standard_normal(300_000)
    start = time.process_time()
    q = aci(x, 0.1, 0.01)
    assert time.process_time() - start < 5.0
    assert abs(np.mean(x[1000:] <= q[1000:]) - 0.9) < 0.01


def test_dtaci_covers_iid_stream():
    s = np.abs(np.random.default_rng(2).standard_normal(4000))
    q = dtaci(s, 0.1)
    assert abs(np.mean(s[100:] <= q[100:]) - 0.9) < 0.02
    assert np.isinf(q[0])
    assert DtACI(0.1, eta=2.72, sigma=1e-3).eta == 2.72


def test_scorecaster_pid_tracks_trend():
    t = np.arange(600)
    s = 0.01 * t + np.random.default_rng(0).standard_normal(600) * 0.1
    m = ConformalPID(0.1, 0.1, KI=0.0, scorecaster=ThetaScorecaster, burn_in=100)
    q = run_online(m, s)
    assert abs(np.mean(s[200:] <= q[200:]) - 0.9) < 0.05
    caster = ThetaScorecaster()
    for v in 2.0 * np.arange(50):
        caster.push(v)
    assert caster.forecast() > caster.level + 1.5  # adds the (halved) trend on top of the lagging SES level


@pytest.mark.parametrize(
    ("factory", "match"),
    [
        (lambda: ACI(0.1, -1.0), "lr"),
        (lambda: ACI(0.1, 0.1, burn_in=-1), "burn_in"),
        (lambda: SFOGD(2.0, 1.0), "alpha"),
        (lambda: ConformalPID(0.1, 0.1, Csat=0.0), "Csat"),
        (lambda: DtACI(0.1, gammas=[]), "gammas"),
        (lambda: ThetaScorecaster(0.0), "ses_alpha"),
    ],
)
def test_bad_arguments(factory, match):
    with pytest.raises(ValueError, match=match):
        factory()
