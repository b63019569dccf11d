"""Claim gate: the `ci` preset (K in {1, 64} x seeds {0, 1}, the full §6a recipe) asserts every gated claim with
its margin (spec §9.3-9.6); a broken variant of the method (no causal mask) must fail the gate."""

from __future__ import annotations

import functools
import itertools
import json
from pathlib import Path

import pytest

from iclr25.icl_emergence.claims import declared
from iclr25.icl_emergence.config import PRESETS, Config
from iclr25.icl_emergence.reproduce import run
from iclr25.shared.claims import config_of, differences, evaluate
from iclr25.shared.results import Report

SMALL = dict(Ks=(64,), seeds=(0,), fresh=False, steps=300, log_every=100, ginc_prompts=60, ls_seqs=128, workers=1)


@pytest.mark.claims
def test_ci_claims(tmp_path):
    report = run("ci", tmp_path / "ci", device="cpu")
    m = report.metrics
    refs = m["references"]
    floor, zero = refs["floor"], refs["zero"]["late"]
    for s in (0, 1):
        hi, lo = m["runs"][f"K64/s{s}"], m["runs"][f"K1/s{s}"]
        assert hi["unseen_late"] <= 0.7 * lo["unseen_late"], s
        assert hi["unseen_late"] <= 0.1 * zero, s
        assert hi["unseen_late"] >= 0.8 * floor, s
        assert hi["G_top"] < lo["G_top"], s
        curve = hi["icl_curve"]
        assert sum(curve[4:]) / len(curve[4:]) <= 0.1 * curve[0], s
    acc = m["ginc"]["bayes_icl"]
    assert all(b >= a - 0.02 for a, b in itertools.pairwise(acc))
    assert acc[-1] >= 0.95 and acc[-1] >= acc[0] + 0.25
    assert m["ginc"]["true_hmm"] == [1.0] * len(acc)
    assert 0.8 <= refs["ls_check"]["ratio_to_floor"] <= 1.6
    assert all(m["bound_monotonicity"]["strictly_decreasing"].values())
    assert not report.failed_gated, [c.name for c in report.failed_gated]
    assert report.cpu_s <= 240, f"the gate used {report.cpu_s:.0f} CPU seconds (budget: 120 s on 2 cores)"
    saved = json.loads((tmp_path / "ci" / "results.json").read_text())
    assert {c["name"] for c in saved["claims"]} == {c.name for c in report.claims}


def test_the_gate_fails_without_the_causal_mask(tmp_path, monkeypatch):
    """Same budget, same seed: the correct model passes the ICL gates, the mask-less one (a leak of the next state
    into the input) fails them."""
    import iclr25.icl_emergence.model as model

    cfg = Config(**SMALL)
    good = run("quick", tmp_path / "good", device="cpu", config=cfg)
    assert good.claim("late_vs_zero_s0").holds and good.claim("icl_curve_drop_s0").holds
    monkeypatch.setattr(model, "ARTransformer", functools.partial(model.ARTransformer, causal=False))
    bad = run("quick", tmp_path / "bad", device="cpu", config=cfg)
    failed = {c.name for c in bad.failed_gated}
    assert failed & {"late_vs_zero_s0", "icl_curve_drop_s0", "late_above_floor_s0"}, failed


def test_tiny_run_writes_report_and_reported_claims(tmp_path):
    cfg = Config(Ks=(1, 4), seeds=(0,), steps=20, log_every=10, ginc_prompts=30, ls_seqs=64, workers=1)
    report = run("quick", tmp_path / "tiny", device="cpu", config=cfg)
    names = {c.name for c in report.claims}
    assert {"late_K4_vs_K1_s0", "bayes_icl_rise", "ls_near_floor", "fresh_vs_Kmax", "gtop_trend_s0"} <= names
    assert report.claim("late_vs_zero_s0").holds is False  # 20 steps learn no ICL
    assert report.claim("gtop_trend_s0").gated is False and report.claim("bayes_icl_rise").gated is True
    assert (tmp_path / "tiny" / "icl_emergence.png").stat().st_size > 1000
    assert report.throughput["train_tokens_per_s_per_run"] > 0
    with pytest.raises(FileExistsError):
        run("quick", tmp_path / "tiny", device="cpu", config=cfg)


def test_committed_claims_are_the_declared_claims():
    report = Report.read(Path(__file__).resolve().parents[1] / "results" / "quick")
    cfg = config_of(PRESETS, report.scale, report.config)
    assert differences(report.claims, evaluate(declared(cfg), report.metrics, cfg)) == []


def test_presets_and_bad_values():
    assert set(PRESETS) == {"ci", "quick", "full"}
    q = PRESETS["quick"]
    assert (q.prior, q.d, q.sigma, q.T, q.Ks, q.N, q.steps, q.lr, q.n_layers, q.d_model) == (
        "rotation2d", 2, 0.05, 32, (1, 4, 16, 64), 64, 1200, 1e-3, 2, 64,
    )  # fmt: skip
    assert PRESETS["ci"].Ks == (1, 64) and PRESETS["ci"].seeds == (0, 1) and PRESETS["ci"].steps == 1200
    with pytest.raises(ValueError, match="scale"):
        run("medium")
    with pytest.raises(ValueError, match="increasing"):
        Config(Ks=(4, 1))
    with pytest.raises(ValueError, match="d = 2"):
        Config(d=3)


def test_full_preset_extras_run_tiny():
    """The full preset's GINC pre-training and SGLD paths, at toy size."""
    from iclr25.icl_emergence.pretraining import ginc_training, sgld_run

    cfg = Config(ginc_Ks=(2,), ginc_N=4, ginc_T=48, ginc_steps=3, ginc_d_model=16, ginc_layers=1, ginc_prompts=5)
    acc = ginc_training(cfg, 0, "cpu")["2"]
    assert set(acc) == {"3", "5", "8", "10"} and "8" in acc["3"] and "16" not in acc["3"]
    assert all(0 <= v <= 1 for row in acc.values() for v in row.values())
    s = sgld_run(Config(Ks=(2,), N=4, T=8, steps=3, d_model=16, n_heads=2, sgld_beta=1e4), 0, "cpu")
    assert s["K_J"] == 1 and s["langevin_kl"] > 0 and s["bound"]["bound"] > s["bound"]["emp_loss"]
