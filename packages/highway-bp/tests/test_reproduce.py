"""The reproduction: report structure on a tiny config, and the claim gate on the `ci` preset (spec §9 checks 5–6)."""

import dataclasses
from pathlib import Path

import pytest

from iclr25.highway_bp.claims import declared
from iclr25.highway_bp.reproduce import PRESETS, Config, run
from iclr25.shared.claims import config_of, differences, evaluate
from iclr25.shared.results import Report

RESULTS = Path(__file__).resolve().parents[1] / "results" / "quick"


def test_tiny_run_writes_report(tmp_path):
    config = Config(
        mlp_depth=3,
        mlp_width=8,
        mlp_hidden=8,
        mlp_epochs=1,
        mlp_batch=512,
        gru_hidden=8,
        gru_epochs=1,
        gru_batch=512,
        gru_hbp_ks=(0, 2, 10),
        gru_fpi_ks=(2, 10),
        fidelity_batch=16,
        seeds=1,
        mlp_ks=(0, 4),
        lm_hidden=8,
        lm_length=8,
        lm_batch=4,
        lm_steps=3,
        lm_valid_windows=4,
    )
    report = run("quick", tmp_path / "r", config=config)
    again = Report.read(tmp_path / "r")
    assert again.claims == report.claims
    names = {c.name for c in report.claims}
    assert {"cosine_k0_below_0.9", "cosine_kL_exact", "gru_hbp_k10_beats_fpi", "mlp_hbp_k4_matches_bp"} <= names
    assert report.claim("cosine_kL_exact").holds  # exact at k = L whatever the size
    assert "gru_bptt_ms_per_step" in report.throughput and "lm_gru_hbp_k2_ms_per_step" in report.throughput
    assert {"gru_hbp_beats_fpi_every_k", "gru_hbp_k10_near_bptt_every_seed", "lm_gru_hbp_k2_beats_fpi"} <= names
    assert len(report.metrics["gru"]["gap_hbp_k10_to_bptt"]["per_seed"]) == 1
    assert (tmp_path / "r" / "fidelity_cosine.png").is_file()
    with pytest.raises(FileExistsError, match="already holds a complete run"):
        run("quick", tmp_path / "r", config=config)
    lean = dataclasses.replace(config, mlp=False, fidelity_fpi=False, gru_bptt=False, lm=False, figures=False)
    names = {c.name for c in run("ci", tmp_path / "lean", config=lean).claims}
    assert "gru_hbp_k10_beats_fpi" in names and "gru_hbp_k10_near_bptt" not in names


def test_config_validation(tmp_path):
    with pytest.raises(ValueError, match="seeds"):
        Config(seeds=0)
    with pytest.raises(ValueError, match="gate_k"):
        Config(gru_hbp_ks=(2,))
    with pytest.raises(ValueError, match="scale must be one of"):
        run("huge", tmp_path / "huge")
    with pytest.raises(ValueError, match="data_dir"):
        run("full", tmp_path / "full", config=dataclasses.replace(PRESETS["full"], fidelity=False, mlp=False))
    assert not (tmp_path / "huge").exists() and not (tmp_path / "full").exists()  # refused before a folder is made


def test_committed_claims_are_the_declared_claims():
    """The declared claims, evaluated again on the committed quick metrics, are the committed claims."""
    report = Report.read(RESULTS)
    cfg = config_of(PRESETS, report.scale, report.config)
    assert differences(report.claims, evaluate(declared(cfg), report.metrics, cfg)) == []


def test_claims_fail_on_a_broken_measurement():
    metrics = Report.read(RESULTS).metrics
    broken = {**metrics, "fidelity": {"hbp": {k: 1.0 for k in metrics["fidelity"]["hbp"]}}}  # "exact" at every k
    broken["gru"] = {**metrics["gru"], "acc": {**metrics["gru"]["acc"], "hbp_k10": metrics["gru"]["acc"]["fpi_k10"]}}
    failed = {c.name for c in evaluate(declared(PRESETS["quick"]), broken, PRESETS["quick"]) if c.gated and not c.holds}
    assert failed == {"cosine_k0_below_0.9", "gru_hbp_k10_beats_fpi"}


def test_gate_fails_when_the_method_is_broken(tmp_path, monkeypatch):
    """A Highway-BP that silently returns the exact gradient (k replaced by L) fails the gated claims."""
    from iclr25.highway_bp import highway, rnn

    def exact(e, K, vjp, k, mode="identity", parallel=True, _real=highway.highway_iterate):
        return _real(e, K, vjp, e.shape[0] - 1, mode, parallel=parallel)

    monkeypatch.setattr(highway, "highway_iterate", exact)
    monkeypatch.setattr(rnn, "highway_iterate", exact)
    tiny = dataclasses.replace(
        PRESETS["ci"], mlp_depth=6, mlp_width=8, mlp_hidden=8, mlp_epochs=1, mlp_batch=512, fidelity_batch=16
    )
    tiny = dataclasses.replace(tiny, gru_hidden=8, gru_epochs=1, gru_batch=512)
    report = run("ci", tmp_path / "broken", config=tiny)
    failed = {c.name for c in report.failed_gated}
    assert {"cosine_k0_below_0.9", "gru_hbp_k10_beats_fpi"} <= failed


@pytest.mark.claims
def test_ci_claims(tmp_path):
    report = run("ci", tmp_path / "ci")
    cos_k0 = report.claim("cosine_k0_below_0.9").ours
    cos_k4 = report.claim("cosine_k4_near_1").ours
    cos_kL = report.claim("cosine_kL_exact").ours
    assert cos_k0 < 0.9, "k=0 must be a clear approximation (an exact-gradient bug would give 1)"
    assert cos_k4 >= 0.98
    assert abs(cos_kL - 1.0) <= 1e-10
    gap = report.claim("gru_hbp_k10_beats_fpi").ours
    assert gap >= 0.08, f"HBP(k=10) - FPI(k=10) accuracy = {gap:.3f} < 0.08"
    assert report.claim("mlp_hbp_k4_matches_bp").ours >= -0.02
    assert report.claim("mlp_hbp_k0_reasonable").ours >= 0.85
    assert not report.failed_gated
