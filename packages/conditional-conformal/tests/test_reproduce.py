"""The claim gates (issue 16, item 6): each gated claim of the `ci` preset in its own test, with its margin,
and for each a deliberately broken variant of the method that the same gate rejects."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from iclr25.conditional_conformal import cp2
from iclr25.conditional_conformal.claims import declared
from iclr25.conditional_conformal.config import PRESETS
from iclr25.conditional_conformal.experiments import (
    measure_qhat,
    measure_synthetic,
    measure_validity,
    measure_wsc,
)
from iclr25.shared.claims import evaluate

CI = PRESETS["ci"]


def _by_name(metrics, cfg=CI):
    return {c.name: c for c in evaluate(declared(cfg), metrics, cfg)}


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


# ---------------------------------------------------------------------------------------- full-preset plumbing
def test_real_data_part_on_generated_files(tmp_path):
    """The `full` preset's real-data loop on tiny generated bio (1-D) and rf1 (8 outputs) files."""
    from iclr25.conditional_conformal.experiments import measure_real

    rng = np.random.default_rng(0)
    x = rng.standard_normal((240, 9))
    y = x[:, 0] + 0.3 * np.abs(x[:, 1]) * rng.standard_normal(240)
    rows = "\n".join(",".join(f"{v:.4f}" for v in (t, *r)) for t, r in zip(y, x, strict=True))
    (tmp_path / "CASP.csv").write_text("RMSD," + ",".join(f"F{i}" for i in range(1, 10)) + "\n" + rows + "\n")
    lines = ["@relation rf1"] + [f"@attribute a{i} numeric" for i in range(12)] + ["@data"]
    lines += [",".join(f"{v:.3f}" for v in r) for r in rng.standard_normal((160, 12))]
    (tmp_path / "rf1.arff").write_text("\n".join(lines) + "\n")
    cfg = replace(
        PRESETS["full"],
        data_dir=str(tmp_path),
        datasets=("bio", "rf1", "fb1"),
        splits=1,
        real_n_cal=60,
        real_n_test=60,
        real_ms=(5, 10),
        real_wsc_dirs=20,
        real_mdn_epochs=2,
        real_mdn_components=2,
        real_mdn_hidden=(8,),
        cqr_epochs=2,
        multi_samples=20,
        n_samples_tau=20,
    )
    out = measure_real(cfg)
    assert out["missing"] == ["fb1"]
    assert {"cp2_l@M5", "cp2_l@M10", "cqr@M10", "cp2_hpd@M10"} <= set(out["bio"])
    assert 0 < out["bio"]["cp2_l@M10"]["coverage"] <= 1 and out["bio"]["cp2_l@M10"]["size_over_sd"] > 0
    assert set(out["rf1"]) >= {"cp2_l@M20", "pcp@M20"} and "cqr@M20" not in out["rf1"]
    real = [c for c in evaluate(declared(cfg), {"real": out}, cfg) if c.name.startswith("real_")]
    assert real and all(c.name.startswith("real_fb1_") and not c.measured for c in real)  # no paper row for bio / rf1


def test_committed_claims_are_the_declared_claims():
    from iclr25.shared.claims import config_of, differences
    from iclr25.shared.results import Report

    report = Report.read(Path(__file__).resolve().parents[1] / "results" / "quick")
    cfg = config_of(PRESETS, report.scale, report.config)
    assert differences(report.claims, evaluate(declared(cfg), report.metrics, cfg)) == []
