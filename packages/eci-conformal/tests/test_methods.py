"""ECI (methods.py) against the loop-over-time reference and the spec's hand-checkable values."""

from __future__ import annotations

import math
import time

import numpy as np
import pytest

from iclr25.eci_conformal.data import make_bounded_stream
from iclr25.eci_conformal.methods import ECI, RunningRange, eci, eq_term, run_online, sigmoid, sigmoid_prime
from iclr25.eci_conformal.reference import eci_reference, ogd_reference, pid_reference

VARIANTS = ["basic", "cutoff", "integral", "smoothed", "smoothed_ogd"]


@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("eq_mode", ["official", "accumulate"])
@pytest.mark.parametrize("proportional_lr", [True, False], ids=["adaptive-lr", "fixed-lr"])
@pytest.mark.parametrize("lr", [0.05, 1.0])
def test_eci_matches_reference(scores, signed_scores, variant, eq_mode, proportional_lr, lr):
    for s, window in ((scores, 100), (signed_scores, 37)):
        fast = eci(s, 0.05, lr, window=window, variant=variant, eq_mode=eq_mode, proportional_lr=proportional_lr)
        ref = eci_reference(s, 0.05, lr, window, variant, eq_mode, proportional_lr)
        np.testing.assert_allclose(fast, ref, rtol=0, atol=1e-8)


def test_hand_checked_first_thresholds():
    s0 = 0.7
    s = np.array([s0, 0.3, 0.2, 0.1])
    fp = math.exp(-s0) / (1 + math.exp(-s0)) ** 2
    q = eci(s, 0.1, 0.5)
    assert q[0] == 0.0
    assert q[1] == pytest.approx(0.45 + 0.5 * s0 * fp, abs=1e-12)
    assert q[2] == pytest.approx(0.45, abs=1e-12)  # eta_1 = 0: the step-0 EQ correction is dropped
    assert eci(s, 0.1, 0.5, variant="cutoff")[1:3].tolist() == [0.0, 0.0]
    np.testing.assert_allclose(eci(s, 0.1, 0.5, variant="integral")[1:3], [0.45, 0.45], atol=1e-12)
    np.testing.assert_allclose(pid_reference(s, 0.1, 0.5)[1:3], [0.45, 0.45], atol=1e-12)


def test_c_zero_reduces_to_conformal_p_and_ogd(scores):
    np.testing.assert_array_equal(eci(scores, 0.1, 0.3, c=0.0), pid_reference(scores, 0.1, 0.3))
    np.testing.assert_allclose(
        eci(scores, 0.1, 0.3, c=0.0, proportional_lr=False), ogd_reference(scores, 0.1, 0.3), atol=1e-12
    )
    assert not np.allclose(eci(scores, 0.1, 0.3), pid_reference(scores, 0.1, 0.3))


def test_integral_include_current_flag(scores):
    a = eci(scores, 0.1, 0.5, variant="integral")
    b = eci(scores, 0.1, 0.5, variant="integral", include_current=True)
    assert not np.allclose(a, b)
    # with include_current the first update uses EQ_0 itself: the same q_1 as basic ECI
    assert b[1] == pytest.approx(eci(scores, 0.1, 0.5)[1])


def test_streaming_equals_functional(signed_scores):
    m = ECI(0.1, 0.2, variant="integral")
    qs = []
    for s in signed_scores:
        qs.append(m.threshold)
        nxt = m.update(s)
        assert nxt == m.threshold
    np.testing.assert_array_equal(qs, eci(signed_scores, 0.1, 0.2, variant="integral"))
    m.reset()
    assert m.threshold == 0.0
    np.testing.assert_array_equal(run_online(m, signed_scores), qs)


@pytest.mark.parametrize("lr", [0.05, 0.2])
def test_long_run_validity_official_vs_accumulate(lr):
    """Spec 9.3: the official form is valid to 0.005; the accumulating form is visibly biased."""
    s = make_bounded_stream(20000, seed=3)
    cov_official = np.mean(s <= eci(s, 0.1, lr, proportional_lr=False))
    cov_accumulate = np.mean(s <= eci(s, 0.1, lr, proportional_lr=False, eq_mode="accumulate"))
    assert abs(cov_official - 0.9) <= 0.005
    assert cov_accumulate <= 0.88


def test_eq_term_shape():
    xs = np.linspace(-20, 20, 4001)
    for c in (0.5, 1.0, 3.0):
        vals = np.array([eq_term(x, 0.0, c) for x in xs])
        assert np.abs(vals).max() == pytest.approx(0.2239, abs=2e-3)
        assert xs[np.argmax(vals)] == pytest.approx(1.543 / c, abs=0.02)
        assert np.all(np.sign(vals) == np.sign(xs))
    assert sigmoid_prime(1e4) == 0.0 and sigmoid_prime(-1e4) == 0.0  # no overflow
    assert sigmoid(-1e4) == 0.0 and sigmoid(1e4) == 1.0
    assert sigmoid_prime(0.3) == pytest.approx(math.exp(-0.3) / (1 + math.exp(-0.3)) ** 2)


def test_running_range_matches_rescan():
    rng = np.random.default_rng(5)
    x = rng.standard_normal(500)
    r = RunningRange(17)
    for t, v in enumerate(x):
        r.push(v)
        w = x[max(0, t - 16) : t + 1]
        assert r.value == w.max() - w.min()


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"alpha": 0.0}, "alpha"),
        ({"alpha": 1.5}, "alpha"),
        ({"lr": -1.0}, "lr"),
        ({"variant": "nope"}, "variant"),
        ({"eq_mode": "x"}, "eq_mode"),
        ({"window": 0}, "window"),
        ({"decay": 0.0}, "decay"),
        ({"c": -1.0}, "c must"),
    ],
)
def test_bad_arguments(kwargs, match):
    with pytest.raises(ValueError, match=match):
        ECI(**kwargs)


def test_run_online_rejects_2d_and_non_finite():
    with pytest.raises(ValueError, match="1-D"):
        run_online(ECI(), np.zeros((3, 2)))
    with pytest.raises(ValueError, match="finite; got nan at index 2"):
        run_online(ECI(), np.array([0.1, 0.2, np.nan, np.inf]))


@pytest.mark.parametrize("variant", ["basic", "integral"])
def test_speed_1e5_steps(variant):
    """CPU time, not wall clock: 10^5 steps well under 2 s (ECI-integral by its O(1) recursion)."""
    x = np.random.default_rng(0).standard_normal(100_000)
    start = time.process_time()
    eci(x, 0.1, 0.1, variant=variant)
    assert time.process_time() - start < 2.0
