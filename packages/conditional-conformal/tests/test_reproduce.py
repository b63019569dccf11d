"""The claim gates (issue 16, item 6): each gated claim of the `ci` preset in its own test, with its margin,
and for each a deliberately broken variant of the method that the same gate rejects."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from iclr25.conditional_conformal import cp2
from iclr25.conditional_conformal.config import PRESETS
from iclr25.conditional_conformal.reproduce import (
    claims,
    measure_qhat,
    measure_synthetic,
    measure_validity,
    measure_wsc,
)

CI = PRESETS["ci"]


def _by_name(metrics, cfg=CI):
    return {c.name: c for c in claims(metrics, cfg)}


def _assert_all_hold(found, names):
    for name in names:
        c = found[name]
        assert c.gated and c.holds, f"{name}: ours {c.ours}, margin {c.margin}"


# ---------------------------------------------------------------------------------------- (a) validity
@pytest.mark.claims
def test_gate_marginal_validity():
    found = _by_name({"validity": measure_validity(CI)})
    _assert_all_hold(found, ["validity_n500_cp2L", "validity_n500_cp2D", "validity_n49_cp2L", "validity_n49_cp2D"])


@pytest.mark.claims
def test_gate_validity_rejects_plain_quantile(monkeypatch):
    """quantile(U, 1 − α) instead of the ⌈(1 − α)(n + 1)⌉-th order statistic: ≈ 0.887 at n = 49."""
    monkeypatch.setattr(cp2, "conformal_quantile", lambda s, a: float(np.quantile(s, 1 - a)))
    cfg = replace(CI, validity_n=(49,), validity_test=(500,), validity_reps=(1000,))
    found = _by_name({"validity": measure_validity(cfg)}, cfg)
    assert not found["validity_n49_cp2L"].holds and not found["validity_n49_cp2D"].holds


# ---------------------------------------------------------------------------------------- (b), (e) Π = P
@pytest.fixture(scope="module")
def oracle():
    return _by_name({"synthetic": measure_synthetic(CI, scales=(1.0,))})


@pytest.mark.claims
def test_gate_conditional_coverage_oracle(oracle):
    _assert_all_hold(oracle, ["cond_oracle_cp2l_bins", "cond_oracle_pcp_min_bin", "cond_oracle_cp_min_bin"])


@pytest.mark.claims
def test_gate_hpd_bins_and_length(oracle):
    _assert_all_hold(oracle, ["cond_oracle_hpd_bins", "hpd_length_ratio"])


@pytest.mark.claims
def test_gate_conditional_rejects_constant_tau(monkeypatch):
    """τ_x ≡ 1 turns CP²-PCP-L into PCP: one radius everywhere, some x-bin under-covered."""
    monkeypatch.setattr(cp2, "pcp_tau", lambda draws, alpha, chunk=2000: np.ones(len(draws)))
    found = _by_name({"synthetic": measure_synthetic(replace(CI, seeds=1), scales=(1.0,))})
    assert not found["cond_oracle_cp2l_bins"].holds


@pytest.mark.claims
def test_gate_hpd_rejects_global_level(monkeypatch):
    """One density level for every x (no per-x λ_x) covers the narrow region too much and the wide one too little."""
    original = cp2.CP2HPD.log_level

    def global_level(self, X, tilde=None):
        level = original(self, X, tilde)
        return np.full_like(level, np.median(level))

    monkeypatch.setattr(cp2.CP2HPD, "log_level", global_level)
    found = _by_name({"synthetic": measure_synthetic(replace(CI, seeds=1), scales=(1.0,))})
    assert not found["cond_oracle_hpd_bins"].holds


# ---------------------------------------------------------------------------------------- (c) misspecified Π
@pytest.mark.claims
def test_gate_misspecified_samplers():
    found = _by_name({"synthetic": measure_synthetic(CI, scales=(1.5, 0.7))})
    for key in ("sd_x1.5", "sd_x0.7"):
        _assert_all_hold(found, [f"misspec_{key}_cp2l_marginal", f"misspec_{key}_cp2l_bins", f"misspec_{key}_pi_off"])
        assert not found[f"misspec_{key}_cp2_d_bins"].gated  # reported only (spec §9.3)


@pytest.mark.claims
def test_gate_misspecified_rejects_uncalibrated(monkeypatch):
    """Q̂ ≡ 1 (the raw Π sets, no conformal step) misses 1 − α when Π is σ×1.5."""
    monkeypatch.setattr(cp2, "conformal_quantile", lambda s, a: 1.0)
    found = _by_name({"synthetic": measure_synthetic(replace(CI, seeds=1), scales=(1.5,))})
    assert not found["misspec_sd_x1.5_cp2l_marginal"].holds


# ---------------------------------------------------------------------------------------- (d) Q̂ reductions
@pytest.mark.claims
def test_gate_qhat_reductions():
    _assert_all_hold(_by_name({"qhat": measure_qhat(CI)}), ["qhat_linear", "qhat_difference"])


@pytest.mark.claims
def test_gate_qhat_rejects_tau_at_level_alpha(monkeypatch):
    """τ computed at level α instead of 1 − α: Q̂_L ≈ 31 and Q̂_D ≈ 0.09 (spec §9.4)."""
    original = cp2.pcp_tau
    monkeypatch.setattr(cp2, "pcp_tau", lambda draws, alpha, chunk=2000: original(draws, 1 - alpha, chunk))
    found = _by_name({"qhat": measure_qhat(replace(CI, seeds=1))})
    assert not found["qhat_linear"].holds and not found["qhat_difference"].holds


# ---------------------------------------------------------------------------------------- (f) WSC metric
@pytest.mark.claims
def test_gate_wsc_metric():
    _assert_all_hold(_by_name({"wsc": measure_wsc(CI)}), ["wsc_half_bad", "wsc_iid"])


@pytest.mark.claims
def test_gate_wsc_rejects_in_sample_slab():
    """Choosing and judging the slab on the same points biases WSC down (≈ 0.84 for iid 0.9)."""
    found = _by_name({"wsc": measure_wsc(CI, evaluate_on="selection")})
    assert not found["wsc_iid"].holds
